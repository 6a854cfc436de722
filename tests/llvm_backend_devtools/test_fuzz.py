"""The differential fuzzer: a bounded run, the oracle catching planted bugs, reproducers that rebuild graphs."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import HealthCheck, find, settings
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.basic import Apply, equal_computations
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import numba_funcify
from pytensor.link.numba.dispatch.basic import numba_njit

import llvm_backend  # noqa: F401  (registers the LLVM mode)
from llvm_backend import rewrite_cache
from llvm_backend.dispatch import LOWERINGS, register_lowering
from llvm_backend.rewrite_cache.install import install
from llvm_backend.tools.cli import main
from llvm_backend_devtools.fuzz.generator import FAMILIES, graphs
from llvm_backend_devtools.fuzz.isolated import WorkerError, run_isolated
from llvm_backend_devtools.fuzz.oracle import (
    CACHED,
    Run,
    _jit_fn_findings,
    _retyped_jit_fn_findings,
    check,
    reporting_stages,
)
from llvm_backend_devtools.fuzz.reproducer import write_reproducer
from llvm_backend_devtools.fuzz.runner import PENDING, TRACKED, graph_coverage, run

BOUNDED_SEED = 5
BOUNDED_GRAPHS = 35


@pytest.mark.slow
def test_bounded_run_has_no_mismatch_or_crash(tmp_path):
    summary = run(BOUNDED_SEED, BOUNDED_GRAPHS, out=tmp_path)
    assert summary.failures == [], summary.format()
    assert summary.graphs == BOUNDED_GRAPHS
    assert [f for f in FAMILIES if not summary.families[f]] == [], summary.format()
    assert summary.tracked["Join"] and summary.tracked["ScalarCAReduce"], summary.format()


@pytest.mark.parametrize(
    "flag, value", [("--minutes", "-1"), ("--minutes", "0"), ("--graphs", "0"), ("--graphs", "-3")]
)
def test_the_command_refuses_a_run_that_checks_nothing(tmp_path, capsys, flag, value):
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        main(["fuzz", flag, value, "--out", str(out)])
    assert stop.value.code == 2
    assert f"llvm-backend fuzz: error: argument {flag}: must be positive, not {value}" in capsys.readouterr().err
    assert not out.exists()


ROOT = Path(__file__).parents[2]


@pytest.fixture
def importable_tests(monkeypatch):
    """The child processes of an isolated run can import ``tests.llvm_backend_devtools.dying_oracle``."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))


@pytest.mark.slow
def test_isolated_run_records_a_graph_that_kills_the_process_and_goes_on(tmp_path, importable_tests):
    """Each child aborts on its second graph: the run counts both deaths as crashes, writes the graphs they
    died on as reproducers that name the signal and the last words, and goes on until its budget is spent."""
    summary = run_isolated(0, graphs=4, out=tmp_path, check="tests.llvm_backend_devtools.dying_oracle:check")
    assert summary.graphs == 4, summary.format()
    assert [kind for kind, _ in summary.failures] == ["crash", "crash"], summary.format()
    assert summary.run_seed == 1
    assert summary.op_classes["Exp"], summary.format()  # the children's op classes come back
    assert not (tmp_path / PENDING).exists()
    reproducer = summary.failures[0][1]
    source = reproducer.read_text()
    assert "SIGABRT" in source and "LLVM ERROR: planted abort" in source
    # the graph itself is fine under the real oracle: the reproducer runs and exits 0
    subprocess.run([sys.executable, str(reproducer)], check=True, capture_output=True, timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("oracle", "limits", "stop"),
    [
        ("hang_under_stock", {"graph_seconds": 5}, " s on one mode"),
        ("grow_under_stock", {"graph_bytes": 2**28}, " GB on one mode"),
    ],
    ids=["time", "memory"],
)
def test_isolated_run_stops_a_graph_stock_numba_hangs_on_and_records_it_as_stock(
    tmp_path, importable_tests, oracle, limits, stop
):
    summary = run_isolated(
        0, graphs=3, out=tmp_path, check=f"tests.llvm_backend_devtools.dying_oracle:{oracle}", **limits
    )
    assert summary.graphs == 3 and summary.failures == [], summary.format()
    stopped = [(message, path) for message, path in summary.stock if stop in message]
    assert len(stopped) == 1, summary.format()
    assert stopped[0][1].parent == tmp_path / "stock" and "under NUMBA" in stopped[0][1].read_text()
    assert not (tmp_path / PENDING).exists()


@pytest.mark.slow
def test_isolated_run_counts_a_hang_of_stock_judging_llvm_as_unjudged(tmp_path, importable_tests):
    check = "tests.llvm_backend_devtools.dying_oracle:hang_judging_llvm"
    summary = run_isolated(0, graphs=3, out=tmp_path, check=check, graph_seconds=5)
    assert [kind for kind, _ in summary.failures] == ["unjudged"], summary.format()
    assert (summary.unjudged, summary.crashes) == (1, 0)
    assert summary.failures[0][1].name.startswith("unjudged-")
    assert "to judge LLVM's disagreement" in summary.failures[0][1].read_text()
    assert "unjudged: 1" in summary.format()


def test_isolated_run_reports_a_worker_that_fails_outside_any_graph(tmp_path, importable_tests):
    with pytest.raises(WorkerError, match="AttributeError"):
        run_isolated(0, graphs=2, out=tmp_path, check="tests.llvm_backend_devtools.dying_oracle:no_such_oracle")


class Planted(Op):
    """``x -> x`` (py linker and stock NUMBA); the LLVM lowering below does the planted wrong thing."""

    __props__ = ("bug",)

    def __init__(self, bug: str):
        self.bug = bug

    def make_node(self, x):
        x = pt.as_tensor(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        [x] = inputs
        if self.bug == "exception" and x[0] < 0:
            raise IndexError("negative")
        outputs[0][0] = x.copy()
        if self.bug == "py_value":
            outputs[0][0][-1] += 1.0


@numba_funcify.register(Planted)
def _stock_planted(op, node, **kwargs):
    if op.bug == "stock_compile":
        raise NotImplementedError("planted: stock cannot compile this node")
    raises = op.bug == "exception"

    @numba_njit
    def planted(x):
        if raises and x[0] < 0:
            raise IndexError("negative")
        return x.copy()

    return planted


def _planted_lowering(context):
    bug = context.op.bug

    @numba_njit
    def planted(x):
        if bug == "exception" and x[0] < 0:
            raise ValueError("negative")
        if bug == "mutation":
            x[0] = 99.0
        y = x.copy()
        if bug == "value":
            y[-1] += 1.0
        return y

    return planted, None


@pytest.fixture
def planted_lowering():
    register_lowering(Planted, _planted_lowering)(_planted_lowering)
    yield
    del LOWERINGS[Planted]


def _check_planted(bug: str, value: np.ndarray):
    x = pt.dvector("x")
    return check([x], [Planted(bug)(x)], lambda: [value.copy()])


def test_oracle_agrees_without_a_bug(planted_lowering):
    outcome = _check_planted("none", np.array([1.0, 2.0]))
    assert outcome.findings == [], outcome.report()


def test_oracle_catches_a_wrong_answer(planted_lowering):
    outcome = _check_planted("value", np.array([1.0, 2.0]))
    assert [f.kind for f in outcome.failures] == ["mismatch"], outcome.report()
    assert "output 0: at (1,)" in outcome.failures[0].message


@pytest.mark.parametrize(
    ("bug", "numba_stage"), [("none", "NUMBA"), ("value", "NUMBA, to judge LLVM's disagreement with py")]
)
def test_oracle_reports_each_mode_before_it_compiles_the_graph(planted_lowering, bug, numba_stage):
    stages = []
    with reporting_stages(stages.append):
        _check_planted(bug, np.array([1.0, 2.0]))
    assert stages == ["py", "LLVM", CACHED, CACHED, numba_stage]


def test_oracle_runs_llvm_from_the_rewrite_cache_too(planted_lowering):
    outcome = _check_planted("none", np.array([1.0, 2.0]))
    assert CACHED in outcome.runs
    assert outcome.runs[CACHED].outputs[0].tolist() == outcome.runs["LLVM"].outputs[0].tolist()


def test_oracle_catches_a_graph_the_rewrite_cache_serves_wrong(monkeypatch):
    def install_wrong(fgraph, entry):
        install(fgraph, entry)
        (output,) = fgraph.outputs
        fgraph.replace(output, output + 1, import_missing=True)

    monkeypatch.setattr(rewrite_cache.rewriter, "install", install_wrong)
    x = pt.dvector("x")
    outcome = check([x], [pt.exp(x) * 2], lambda: [np.array([0.0, 1.0])])
    assert [f.message.split(":")[0] for f in outcome.failures] == ["LLVM from the rewrite cache vs LLVM"]


def test_oracle_catches_a_wrong_exception_type(planted_lowering):
    outcome = _check_planted("exception", np.array([-1.0, 2.0]))
    assert [f.kind for f in outcome.failures] == ["mismatch"], outcome.report()
    assert "raised ValueError instead of IndexError" in outcome.failures[0].message


def test_oracle_catches_an_input_mutation(planted_lowering):
    outcome = _check_planted("mutation", np.array([1.0, 2.0]))
    messages = [f.message for f in outcome.failures]
    assert "LLVM modified input(s) [0]" in messages, outcome.report()
    assert "jit_fn modified input(s) [0]" in messages, outcome.report()


def _vector_values():
    return [np.arange(3.0)]


def _run_of(jit_fn) -> Run:
    return Run(outputs=list(jit_fn(*_vector_values())), function=SimpleNamespace(vm=SimpleNamespace(jit_fn=jit_fn)))


@numba.njit
def _takes_any_number(*args):
    return (args[0] * 2,)


@numba.njit
def _takes_one(x):
    return (x * 2,)


@numba.njit
def _converts_first(x):
    return (x.astype(np.float64) * 2,)


@numba.njit
def _rounds_first(x):
    return (np.round(x) * 2,)


def test_oracle_wants_a_type_error_for_an_argument_too_many():
    [lenient] = _jit_fn_findings(_run_of(_takes_any_number), _vector_values)
    assert lenient.message == "jit_fn given one argument too many returned, not Python's TypeError"
    assert _jit_fn_findings(_run_of(_takes_one), _vector_values) == []
    x = pt.dvector("x")
    ours = pytensor.function([x], [x * 2], mode="LLVM")
    assert _jit_fn_findings(_run_of(ours.vm.jit_fn), _vector_values) == []


def test_oracle_compares_jit_fn_on_the_other_float_dtype_with_stock():
    def values():
        return [np.linspace(0.0, 1.0, 5)]

    [finding] = _retyped_jit_fn_findings(_run_of(_rounds_first), _run_of(_takes_one), values)
    assert finding.kind == "mismatch"
    assert "output 0: at (1,)" in finding.message
    # the float dtype of an output is not compared: only its values, as float32
    assert _retyped_jit_fn_findings(_run_of(_converts_first), _run_of(_takes_one), values) == []


def test_oracle_reports_a_stock_only_discrepancy_apart():
    """Where stock NUMBA disagrees with the py linker and LLVM follows it (here: the max of an empty array,
    which the py linker refuses), the finding is a stock discrepancy, not a failure; an op LLVM leaves to
    stock (no lowering) raising as the py linker does is no finding at all."""
    x = pt.dvector("x")
    outcome = check([x], [Planted("exception")(x)], lambda: [np.array([-1.0, 2.0])])
    assert outcome.findings == []
    outcome = check([x], [pt.max(x)], lambda: [np.array([], dtype="float64")])
    assert outcome.failures == []
    assert [f.kind for f in outcome.stock] == ["stock"], outcome.report()


@pytest.mark.parametrize("stock", [True, False])
def test_oracle_judges_llvm_with_stock_on_the_outputs_it_disagrees_on_alone(planted_lowering, stock):
    """The py linker is wrong on the first output, where LLVM and stock agree; stock cannot compile the second,
    on which LLVM and py agree. Stock compiles the first alone, so the finding is stock's, not a failure (with
    the whole graph, the failed compile made it a mismatch; a wide graph stock took gigabytes over made it a
    crash, fuzz seed 41)."""
    x = pt.dvector("x")
    outputs = [Planted("py_value")(x), Planted("stock_compile")(x)]
    outcome = check([x], outputs, lambda: [np.array([1.0, 2.0])], stock=stock)
    assert outcome.failures == [], outcome.report()
    [finding] = outcome.stock
    assert finding.message.startswith("NUMBA and LLVM vs py (outputs [0], compiled alone under NUMBA): output 0")


@pytest.mark.parametrize("stock", [True, False])
def test_oracle_tells_a_py_linker_quirk_from_a_mismatch(stock):
    """The py linker's Composite raises OverflowError on ``~~x`` of unsigned integers (a Python int -2); stock
    NUMBA agrees with LLVM, also when it is run only to break the tie (``stock=False``, as for wide graphs)."""
    x = pt.tensor("x", dtype="uint8", shape=(None,))
    outcome = check([x], [pt.invert(pt.invert(x))], lambda: [np.arange(3, dtype="uint8")], stock=stock)
    assert outcome.failures == [], outcome.report()
    assert len(outcome.stock) == 1, outcome.report()
    assert "NUMBA and LLVM vs py: returned where the reference raised OverflowError" in outcome.stock[0].message


def test_oracle_finds_no_reference_where_the_py_linker_cannot_run_the_graph():
    """The py linker's Elemwise.perform refuses more than 32 operands (``NotImplementedError``) after fusion
    made one of them: the graph is invalid, not a "crash" of LLVM's (fuzz seed 42)."""
    xs = [pt.dvector(f"x{i}") for i in range(40)]
    out = xs[0]
    for x in xs[1:]:
        out = out * x + 1.0
    outcome = check(xs, [out], lambda: [np.ones(2) for _ in xs])
    assert outcome.invalid
    assert list(outcome.runs) == ["py"]
    assert outcome.report().startswith("invalid graph: the py linker cannot call it (NotImplementedError(")


@pytest.mark.parametrize("stock", [True, False])
def test_oracle_judges_a_py_linker_error_with_stock_on_the_output_it_raises_on(planted_lowering, stock):
    """The py linker raises on the max of an empty array, where LLVM and stock return the identity; stock
    cannot compile the other output. Stock compiles the max alone, so the finding is stock's, not a failure
    (compiled whole, a wide graph took stock gigabytes and minutes, fuzz seed 42)."""
    x = pt.dvector("x")
    outputs = [pt.max(x), Planted("stock_compile")(x)]
    stages = []
    with reporting_stages(stages.append):
        outcome = check([x], outputs, lambda: [np.array([], dtype="float64")], stock=stock)
    assert outcome.failures == [], outcome.report()
    [finding] = outcome.stock
    assert finding.message.startswith(
        "NUMBA and LLVM vs py (outputs [0], compiled alone under NUMBA): returned where the reference raised ValueError"
    )
    assert stages[-2:] == ["py, for the output it raises on", "NUMBA, to judge LLVM's disagreement with py"]


@pytest.mark.slow
def test_oracle_leaves_the_values_undefined_where_the_py_linker_overflowed():
    """The py linker raises OverflowError casting a float32 infinity to int16; stock and LLVM return values
    of an out-of-range cast, which differ: the finding is stock's, not a mismatch (fuzz seed 48)."""
    x, n = pt.tensor("x", dtype="float32", shape=(None, 1)), pt.iscalar("n")
    below = pt.lt(x, n)
    flag = below.type()
    outputs = [OpFromGraph([flag], [pt.bitwise_or(pt.invert(flag), flag)])(below), pt.cast(x, "int16")]
    values = [np.array([[np.inf], [1.5], [-np.inf], [np.nan]], dtype="float32"), np.asarray(3, dtype="int32")]
    outcome = check([x, n], outputs, lambda: [v.copy() for v in values])
    assert outcome.failures == [], outcome.report()
    [finding] = outcome.stock
    assert "returned where the reference raised OverflowError" in finding.message


def _a_graph_with(families: set[str]):
    """A graph drawing ``families`` (at most 30 wide), found by hypothesis among up to 2,000 (and shrunk)."""
    return find(
        graphs(max_nodes=6),
        lambda spec: families <= set(spec.families) and not spec.wide,
        settings=settings(max_examples=2000, database=None, deadline=None, suppress_health_check=list(HealthCheck)),
    )


@pytest.mark.slow
def test_reproducer_runs_and_rebuilds_the_graph(tmp_path):
    spec = _a_graph_with({"join", "reduce"})
    inputs, outputs = spec.build()
    outcome = check(inputs, outputs, spec.values)
    path = write_reproducer(tmp_path, "agree", spec, outcome)

    namespace = {"__name__": "reproducer"}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    rebuilt_inputs, rebuilt_outputs = namespace["build"]()
    assert equal_computations(rebuilt_outputs, outputs, rebuilt_inputs, inputs)
    for rebuilt, value in zip(namespace["values"](), spec.values(), strict=True):
        np.testing.assert_array_equal(rebuilt, value)
        assert rebuilt.strides == value.strides

    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == outcome.report()


def test_tracked_names_the_lowerings_and_scalarize_ops():
    for name in ("Join", "MakeVector", "ScalarCAReduce", "ScalarizedJoin", "ScalarSubtensor", "FusedElemwise"):
        assert name in TRACKED
    assert "hoist_invariants" in TRACKED
    assert "filled_join" in TRACKED


@pytest.mark.parametrize(("joined", "filled"), [("map", 1), ("input", 0)])
def test_coverage_counts_the_joins_a_loop_fills(joined, filled):
    x, a = pt.dvector("x"), pt.dscalar("a")
    entry = pt.exp(x) if joined == "map" else x
    fn = pytensor.function([x, a], pt.concatenate([pt.atleast_1d(a), entry]), mode="LLVM")
    _, tracked = graph_coverage(fn.maker.fgraph)
    assert ("filled_join" in tracked) == bool(filled) and tracked["filled_join"] == filled
