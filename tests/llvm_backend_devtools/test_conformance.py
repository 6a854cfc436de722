"""The conformance runner and its pytest plugin, on a small synthetic PyTensor-like repository.

The synthetic suite reaches the numba backend the ways PyTensor's ``tests/link/numba`` does: a
``numba_mode`` global and ``compare_numba_and_py`` default in ``test_basic.py`` (also imported by
another module), ``mode="NUMBA"``, ``get_mode("NUMBA")``, ``Mode("numba")`` and ``NumbaLinker()``.
"""

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pytensor.compile.mode import get_mode
from pytensor.link.numba.linker import NumbaLinker

from llvm_backend.linker import LLVMLinker
from llvm_backend.rewrites.registry import REWRITE_TAG
from llvm_backend_devtools.conformance.junit import count, read_outcomes
from llvm_backend_devtools.conformance.plugin import stock_equivalent
from llvm_backend_devtools.conformance.runner import import_path, main, regressions, table
from llvm_backend_devtools.conformance.suite import (
    MissingTag,
    extract_suite,
    missing_tag,
    pytest_ini,
    suite_environment,
)

TAG = "rel-0.0.0"

CONFTEST = """
import os


def pytest_sessionstart(session):
    os.environ["PYTENSOR_FLAGS"] = ",".join([os.environ.setdefault("PYTENSOR_FLAGS", ""), "on_opt_error=raise"])
"""

PYPROJECT = """
[tool.pytest.ini_options]
addopts = "--doctest-modules"
testpaths = ["pytensor/"]
xfail_strict = true
filterwarnings = ["ignore:^Numba will use object mode:UserWarning"]
"""

TEST_BASIC = """
import numpy as np
import pytest
import pytensor.tensor as pt
from pytensor import function
from pytensor.compile.mode import Mode, get_mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.link.numba.linker import NumbaLinker

opts = RewriteDatabaseQuery(include=[None], exclude=["cxx_only", "BlasOpt"])
numba_mode = Mode(NumbaLinker(), opts.including("numba"))
py_mode = Mode("py", opts)


def graph():
    x = pt.dvector("x")
    return [x], x + 1


def compare_numba_and_py(inputs, output, values, *, numba_mode=numba_mode, py_mode=py_mode):
    numba_fn = function(inputs, output, mode=numba_mode)
    np.testing.assert_allclose(numba_fn(*values), function(inputs, output, mode=py_mode)(*values))
    return numba_fn


def test_compare_default():
    assert isinstance(compare_numba_and_py(*graph(), [np.arange(3.0)]).maker.linker, NumbaLinker)


def test_mode_string():
    assert function(*graph(), mode="NUMBA")(np.zeros(2)).tolist() == [1.0, 1.0]


def test_linker_class_in_test():
    fn = function(*graph(), mode=Mode(linker=NumbaLinker(), optimizer=None))
    assert fn(np.zeros(1)).tolist() == [1.0]


def test_stock_only():
    assert type(get_mode("NUMBA").linker).__name__ == "NumbaLinker"


@pytest.mark.xfail(raises=ZeroDivisionError)
def test_xfail():
    assert 1 / 0


def test_skip():
    pytest.skip("skipped in both runs")
"""

TEST_USER = """
import numpy as np
from pytensor import function
from pytensor.compile.mode import Mode, get_mode

from tests.link.numba.test_basic import graph, numba_mode


def test_imported_mode():
    assert function(*graph(), mode=numba_mode.including("fast_run"))(np.ones(1)).tolist() == [2.0]


def test_get_mode():
    assert function(*graph(), mode=get_mode("NUMBA"))(np.ones(1)).tolist() == [2.0]


def test_linker_string():
    assert function(*graph(), mode=Mode("numba", optimizer=None))(np.ones(1)).tolist() == [2.0]
"""

COMPILING_TESTS = 6
"""Synthetic tests compiling one numba-mode function each."""

FILES = {
    "conftest.py": CONFTEST,
    "pyproject.toml": PYPROJECT,
    "tests/__init__.py": "",
    "tests/link/__init__.py": "",
    "tests/link/numba/__init__.py": "",
    "tests/link/numba/test_basic.py": TEST_BASIC,
    "tests/link/numba/test_user.py": TEST_USER,
}

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="tests.link.numba.test_a" name="test_ok" time="0.1"/>
  <testcase classname="tests.link.numba.test_a" name="test_bad[1]"><failure message="boom"/></testcase>
  <testcase classname="tests.link.numba.test_a" name="test_torn"><error message="teardown"/></testcase>
  <testcase classname="tests.link.numba.test_a" name="test_both"><failure/><error/></testcase>
  <testcase classname="tests.link.numba.test_a" name="test_skip"><skipped type="pytest.skip" message="no"/></testcase>
  <testcase classname="tests.link.numba.test_a" name="test_xf"><skipped type="pytest.xfail" message="bug"/></testcase>
  <testcase classname="" name="tests.link.numba.test_b"><error message="collection failure"/></testcase>
  <testcase classname="tests.link.numba.test_c" name="test_fn[&lt;function &lt;lambda&gt; at 0x7f885061f2e0&gt;-2]"/>
  <testcase classname="tests.link.numba.test_c" name="test_fn[&lt;function &lt;lambda&gt; at 0x7f885061f380&gt;-2]">
    <failure/>
  </testcase>
</testsuite></testsuites>
"""


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A git repository holding the synthetic suite at ``TAG``."""
    root = tmp_path_factory.mktemp("pytensor")
    for name, text in FILES.items():
        Path(root, name).parent.mkdir(parents=True, exist_ok=True)
        Path(root, name).write_text(textwrap.dedent(text))
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "suite"], ["tag", TAG]):
        subprocess.run(git + args, check=True)
    return root


def run_plugin(tree: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """pytest with the plugin in ``--llvm-mode`` on the synthetic suite in ``tree``."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-p",
        "llvm_backend_devtools.conformance.plugin",
    ]
    return subprocess.run([*command, "--llvm-mode", *args], cwd=tree, env=env, capture_output=True, text=True)


def test_read_outcomes_and_count(tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    outcomes = read_outcomes(path)
    assert outcomes == {
        "tests.link.numba.test_a::test_ok": "passed",
        "tests.link.numba.test_a::test_bad[1]": "failed",
        "tests.link.numba.test_a::test_torn": "error",
        "tests.link.numba.test_a::test_both": "failed",
        "tests.link.numba.test_a::test_skip": "skipped",
        "tests.link.numba.test_a::test_xf": "xfailed",
        "::tests.link.numba.test_b": "error",
        "tests.link.numba.test_c::test_fn[<function <lambda> at 0x…>-2]": "passed",
        "tests.link.numba.test_c::test_fn[<function <lambda> at 0x…>-2] #2": "failed",
    }
    assert count(outcomes) == {"passed": 2, "failed": 3, "xfailed": 1, "skipped": 1, "error": 2}


def test_regressions_and_table():
    stock = {"a": "passed", "b": "passed", "c": "passed", "d": "failed"}
    llvm = {"a": "passed", "b": "error", "d": "passed"}
    assert regressions(stock, llvm) == {"b": "error", "c": "missing"}
    assert table({"NUMBA": stock, "LLVM": llvm}).splitlines()[2:] == [
        "| NUMBA | 3 | 1 | 0 | 0 | 0 | 4 |",
        "| LLVM | 2 | 0 | 0 | 0 | 1 | 3 |",
    ]


def test_pytest_ini_keeps_suite_options_only():
    assert pytest_ini(PYPROJECT) == (
        "[pytest]\nxfail_strict = true\nfilterwarnings =\n    ignore:^Numba will use object mode:UserWarning\n"
    )


@pytest.mark.slow
@pytest.mark.parametrize("concurrent", [False, True], ids=["sequential", "concurrent"])
def test_runner_substitutes_llvm_everywhere(repo, tmp_path, capsys, concurrent):
    """Every synthetic path compiles through LLVMLinker, none through stock; only the stock-only test regresses."""
    cache = tmp_path / "cache"
    options = ["--concurrent"] if concurrent else []
    code = main(
        [
            "--pytensor-repo",
            str(repo),
            "--tag",
            TAG,
            "--cache-dir",
            str(cache),
            *options,
            "test_basic.py",
            "test_user.py",
        ]
    )
    out = capsys.readouterr().out
    assert "| NUMBA | 7 | 0 | 1 | 1 | 0 | 9 |" in out
    assert "| LLVM | 6 | 1 | 1 | 1 | 0 | 9 |" in out
    assert f"llvm-mode: LLVMLinker compiled {COMPILING_TESTS} graphs, stock NumbaLinker compiled 0" in out
    # the substituted modes carry our linker, so their graphs go through the rewrite cache (a Mode built inside
    # a test, with optimizer=None, does not)
    assert re.search(r"llvm-mode: rewrite cache: .*\b(hit|stored) [1-9]", out)
    assert "Passing under NUMBA, not under LLVM: 1\n  failed   tests.link.numba.test_basic::test_stock_only" in out
    assert code == 1
    assert not Path(cache, "pytensor-tests", TAG, "pyproject.toml").exists()

    # the stock run's JUnit report is all it reuses (a run stopped before its log was written leaves none)
    Path(cache, "conformance-logs", TAG, "NUMBA.log").unlink()
    again = main(
        [
            "--pytensor-repo",
            str(repo),
            "--tag",
            TAG,
            "--cache-dir",
            str(cache),
            "--reuse-stock",
            "test_basic.py",
            "test_user.py",
        ]
    )
    out = capsys.readouterr().out
    assert "== NUMBA: reusing" in out and "== LLVM: " in out
    assert "| NUMBA | 7 | 0 | 1 | 1 | 0 | 9 |" in out and "| LLVM | 6 | 1 | 1 | 1 | 0 | 9 |" in out
    assert again == 1


def test_stock_only_runs_numba_alone(repo, tmp_path, capsys):
    """``--stock-only`` writes the stock report (what ``--reuse-stock`` reuses) and log and runs no LLVM."""
    cache = tmp_path / "cache"
    code = main(
        ["--pytensor-repo", str(repo), "--tag", TAG, "--cache-dir", str(cache), "--stock-only", "test_basic.py"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "== NUMBA: " in out and "== LLVM" not in out and "| LLVM |" not in out
    assert "| NUMBA | 4 | 0 | 1 | 1 | 0 | 6 |" in out and "Failing under NUMBA: 0" in out
    logs = cache / "conformance-logs" / TAG
    assert {path.name for path in logs.iterdir()} == {"NUMBA.log", "NUMBA.xml"}


def test_missing_tag_is_a_clear_error(repo, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        main(["--pytensor-repo", str(repo), "--tag", "rel-0.0.1", "--cache-dir", str(tmp_path), "--stock-only"])
    assert str(exit_info.value) == (
        f"error: {repo} has no tag rel-0.0.1; its newest release tag is {TAG}. Pass e.g. --tag {TAG},"
        " or fetch the tag into the repository."
    )
    assert not Path(tmp_path, "pytensor-tests", "rel-0.0.1").exists()


def test_missing_tag_suggests_the_newest_release_not_after_it():
    tags = ["rel-3.2.4", "rel-3.3.0", "rel-3.10.0", "v1.0", "rel-4.0.0"]
    message = str(missing_tag("repo", "rel-3.3.8", tags))
    assert "repo has no tag rel-3.3.8" in message
    assert "its newest release tag is rel-4.0.0. Pass e.g. --tag rel-3.3.0," in message
    assert "Pass e.g. --tag rel-3.2.4," in str(missing_tag("repo", "rel-3.2.9", tags))
    assert "it has no release (rel-X.Y.Z) tags" in str(missing_tag("repo", "rel-1.0.0", ["v1.0"]))
    assert isinstance(missing_tag("repo", "x", []), MissingTag)


def test_plugin_fails_a_session_that_compiles_nothing(repo, tmp_path):
    tree = extract_suite(str(repo), TAG, tmp_path)
    env = suite_environment(tree) | {"PYTHONPATH": import_path(tmp_path)}
    result = run_plugin(tree, env, "-k", "test_skip", "tests/link/numba/test_basic.py")
    assert "LLVMLinker compiled 0 graphs" in result.stdout
    assert "FAILED: fewer than --llvm-min-compiled=1 graphs went through LLVMLinker" in result.stdout
    assert result.returncode == pytest.ExitCode.TESTS_FAILED


def test_plugin_stops_when_suite_flags_come_after_pytensor(repo, tmp_path):
    tree = extract_suite(str(repo), TAG, tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTENSOR_FLAGS"} | {"PYTHONPATH": import_path(tmp_path)}
    result = run_plugin(tree, env, "tests/link/numba/test_basic.py")
    assert "were set after PyTensor was imported" in result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.USAGE_ERROR


def test_python_only_evaluation_is_sent_to_stock_numba():
    derived = get_mode("LLVM").including("specialize")
    stock = stock_equivalent(derived)
    assert type(stock.linker) is NumbaLinker and not isinstance(stock.linker, LLVMLinker)
    assert REWRITE_TAG in stock.provided_optimizer.exclude
    assert "specialize" in stock.provided_optimizer.include
    assert stock_equivalent("FAST_RUN") is get_mode("FAST_RUN")
