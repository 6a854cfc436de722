"""Every user error of the ``llvm-backend`` command is one line on stderr and exit status 2; errors of the
code a target runs are raised as they are."""

import pytest

from llvm_backend.tools.cli import main

BROKEN_MODULE = "import no_such_dependency_of_a_target\n"
FAILING_MODULE = "def graph():\n    raise ZeroDivisionError('inside the target')\n"


def error_line(capsys, *argv):
    """The one line ``llvm-backend *argv`` prints on stderr; it must exit with status 2."""
    code = main(list(argv))
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1, err
    return err.rstrip("\n")


USER_ERRORS = [
    (("ir", "full_reduction", "--mode", "BAD"), "unknown mode 'BAD' (modes: "),
    (("ir", "full_reduction", "--diff", "NOSUCH"), "unknown mode 'NOSUCH' (modes: "),
    (("ir", "full_reduction", "--diff", "LLVM"), "--diff LLVM compares LLVM with itself"),
    (("ir", "no_such_graph"), "TARGET 'no_such_graph' is none of: a built-in graph"),
    (("ir", "nosuchmodule:fn"), "no module named nosuchmodule"),
    (("ir", "nosuchpackage.module:fn"), "no module named nosuchpackage"),
    (("ir", "llvm_backend.nosuch:fn"), "no module named llvm_backend.nosuch"),
    (("ir", "/no/such/model.py:fn"), "no file /no/such/model.py"),
    (("ir", "llvm_backend.tools.graphs:nosuch"), "llvm_backend.tools.graphs has no function nosuch"),
    (("ir", "llvm_backend.tools.graphs:GRAPHS"), "llvm_backend.tools.graphs has no function GRAPHS"),
    (("ir", "os:getcwd"), "os:getcwd returned str, not (inputs, outputs) or a Graph"),
    (("ir", "full_reduction", "--stage", "llvm", "--mode", "CVM"), "is not a Numba linker"),
    (("ir", "full_reduction", "--stage", "asm", "--stats"), "stats count LLVM IR: stage 'asm'"),
    (("report", "--graph", "full_reduction", "--mode", "BAD"), "unknown mode 'BAD' (modes: "),
    (("bench", "--filter", "(", "--quick"), "--filter '(' is not a regular expression: missing )"),
    (("bench", "--filter", "no_such_case", "--quick"), "no case matches 'no_such_case'"),
    (("bench", "--quick", "--mode", "BAD"), "unknown mode BAD (modes: "),
]
"""``llvm-backend`` arguments and what their error line says."""


@pytest.mark.parametrize("argv, message", USER_ERRORS, ids=[" ".join(argv) for argv, _ in USER_ERRORS])
def test_a_user_error_is_one_line_and_status_2(capsys, argv, message):
    line = error_line(capsys, *argv)
    assert line.startswith(f"llvm-backend {argv[0]}: error: ")
    assert message in line


def test_a_missing_module_the_target_imports_is_raised(tmp_path, monkeypatch):
    (tmp_path / "broken_target.py").write_text(BROKEN_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_of_a_target"):
        main(["ir", "broken_target:graph"])
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_of_a_target"):
        main(["ir", f"{tmp_path / 'broken_target.py'}:graph"])


def test_an_error_inside_the_target_function_is_raised(tmp_path):
    path = tmp_path / "failing_target.py"
    path.write_text(FAILING_MODULE)
    with pytest.raises(ZeroDivisionError, match="inside the target"):
        main(["ir", f"{path}:graph"])
