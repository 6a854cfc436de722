"""The bench's ``pymc_limit`` family (needs the ``pymc`` extra): its references compute what PyMC does, and it is
measured through the bench."""

import inspect
import json

import numpy as np
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.tools.measurements import FUNCTION_CALL, NUMBA_CALL
from llvm_backend_bench.cases import CASES, FLOOR, MODES, REFERENCE, select_cases
from llvm_backend_bench.pymc_limit import (
    CALL_MODES,
    CHECK_POINTS,
    CHECK_TOLERANCE,
    DATA,
    JIT_FN_REFERENCE,
    LIMIT_MODELS,
    REFERENCES,
    as_jit_fn,
    check_reference,
    limit_graph,
    logistic_5p,
    main,
    measure_calls,
    reference_arguments,
)
from llvm_backend_bench.pymc_models import pymc_compile
from llvm_backend_bench.run import run_bench


@pytest.mark.slow
@pytest.mark.parametrize("name", LIMIT_MODELS)
def test_the_reference_returns_pymcs_logp_and_gradient(name):
    graph = limit_graph(name)
    expected = pymc_compile(graph, "NUMBA")
    x0, *data = reference_arguments(name, graph)
    rng = np.random.default_rng(0)
    points = [x0, *(x0 + rng.normal(0, 1, size=x0.size) for _ in range(CHECK_POINTS))]
    for x in points:
        logp, grad = expected(x)
        got_logp, got_grad = REFERENCES[name](x, *data)
        assert isinstance(got_logp, float) and got_grad.shape == x.shape
        np.testing.assert_allclose(got_logp, logp, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE)
        np.testing.assert_allclose(got_grad, grad, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE)


def test_the_graph_is_what_logp_dlogp_function_computes_for_the_logistic_model():
    logp_dlogp = logistic_5p().logp_dlogp_function(mode="NUMBA", ravel_inputs=True)
    logp_dlogp.set_extra_values({})
    graph = limit_graph("logistic_5p")
    assert [v.name for v in logistic_5p().value_vars] == ["intercept", "beta"] and graph.values[0].shape == (6,)
    for got, want in zip(pymc_compile(graph, "NUMBA")(*graph.values), logp_dlogp(graph.values[0]), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_a_wrong_reference_fails_the_check_loudly(monkeypatch):
    graph = limit_graph("eight_schools")
    y, sigma = DATA["eight_schools"]()
    monkeypatch.setitem(DATA, "eight_schools", lambda: (y, sigma * (1 + 1e-9)))
    with pytest.raises(AssertionError, match="the @njit reference of eight_schools disagrees"):
        check_reference("eight_schools", graph)


@pytest.mark.slow
def test_the_family_is_registered_and_its_cases_build():
    cases = select_cases(pattern="^pymc_limit/")
    assert [c.name for c in cases] == [f"pymc_limit/{name}" for name in LIMIT_MODELS]
    for case in cases:
        assert case.requires == "pymc" and case.reference is not None
        graph = case.build()
        assert len(graph.inputs) == 1 and len(graph.outputs) == 2
        x, *_ = case.reference_args(graph)
        assert x is graph.values[0]


@pytest.mark.slow
def test_the_reference_allocates_its_gradient_and_the_regression_its_residuals():
    from llvm_backend.tools.measure import nrt_allocations_per_call

    for name in LIMIT_MODELS:
        args = reference_arguments(name, limit_graph(name))
        unboxed = sum(isinstance(a, np.ndarray) for a in args)
        own = 2 if name == "regression_65p" else 1
        assert nrt_allocations_per_call(lambda args=args, name=name: REFERENCES[name](*args)) == unboxed + own


@pytest.mark.slow
@pytest.mark.parametrize("name", LIMIT_MODELS)
def test_jit_fn_allocates_at_most_one_array_more_than_the_reference(name):
    # besides the unboxed vector: the joined gradient and the 0-d logp; the regression's reference allocates
    # its residuals too; the hierarchical model's indexed gradient is written within the joined gradient; the
    # regression's linear predictor is a matrix-vector product (data_columns), whose vector stock's fused loop
    # does not allocate: one more than stock there; the logistic's products by its design matrix, checks and
    # gradient by its coefficients are one loop and scalars (data_columns, sum_of_scalar_switch, made_vectors)
    from llvm_backend.tools.measure import nrt_allocations_per_call

    graph = limit_graph(name)
    x = graph.values[0]
    own, more_than_stock = (2, 1) if name == "regression_65p" else (1, 0)
    llvm, stock = (pymc_compile(graph, mode).vm.jit_fn for mode in ("LLVM", "NUMBA"))
    np.testing.assert_allclose(llvm(x)[1], stock(x)[1], rtol=1e-12)
    assert nrt_allocations_per_call(lambda: llvm(x)) - 1 <= own + 1
    assert nrt_allocations_per_call(lambda: llvm(x)) <= nrt_allocations_per_call(lambda: stock(x)) + more_than_stock


@pytest.mark.slow
def test_a_quick_bench_run_measures_every_mode_and_the_reference():
    run = run_bench([CASES["pymc_limit/logistic_5p"]], quick=True, progress=lambda _: None)
    assert [r.mode for r in run.results] == [*MODES, REFERENCE, FLOOR]
    assert run.cases["pymc_limit/logistic_5p"]["family"] == "pymc"


@pytest.mark.slow
def test_the_calls_are_measured_against_the_reference():
    measured, description = measure_calls("eight_schools", rounds=1, progress=lambda _: None)
    labels = [
        REFERENCE,
        JIT_FN_REFERENCE,
        *(f"{mode} {call}" for mode in CALL_MODES for call in ("jit_fn", "Function")),
    ]
    assert [m.mode for m in measured] == labels and "eight_schools" in description
    for m in measured:
        assert m.us_per_call > 0
        assert m.timed == (FUNCTION_CALL if m.mode.endswith("Function") else NUMBA_CALL)
        assert (m.allocs_per_call is not None) == (m.timed == NUMBA_CALL)
        assert (m.kernel_ir_instructions is not None) == (m.mode == REFERENCE)
    reference, as_jit_fn_called = measured[:2]
    assert reference.net_allocs_per_call == 1  # the gradient
    assert as_jit_fn_called.net_allocs_per_call == 2  # and the 0-d logp


@pytest.mark.slow
@pytest.mark.parametrize("name", LIMIT_MODELS)
def test_the_reference_as_jit_fn_returns_what_jit_fn_returns(name):
    from llvm_backend.tools.measure import nrt_allocations_per_call

    graph = limit_graph(name)
    args = reference_arguments(name, graph)
    reference, called_as_jit_fn = REFERENCES[name], as_jit_fn(REFERENCES[name])
    parameters = inspect.signature(called_as_jit_fn.py_func).parameters
    assert list(parameters) == list(inspect.signature(reference.py_func).parameters)
    logp, grad = called_as_jit_fn(*args)
    jit_fn_logp, jit_fn_grad = pymc_compile(graph, "LLVM").vm.jit_fn(graph.values[0])
    assert type(logp) is type(jit_fn_logp) is np.ndarray and logp.shape == jit_fn_logp.shape == ()
    np.testing.assert_array_equal(logp, reference(*args)[0])
    np.testing.assert_array_equal(grad, reference(*args)[1])
    np.testing.assert_allclose(logp, jit_fn_logp, rtol=CHECK_TOLERANCE)
    np.testing.assert_allclose(grad, jit_fn_grad, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE)
    allocations = nrt_allocations_per_call(lambda: called_as_jit_fn(*args))
    assert allocations == nrt_allocations_per_call(lambda: reference(*args)) + 1


@pytest.mark.slow
def test_the_command_prints_the_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "run" / "calls.json"
    assert main(["--model", "eight_schools", "--rounds", "1", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "| pymc_limit/eight_schools | LLVM jit_fn |" in table and "| pymc_limit/eight_schools | @njit |" in table
    payload = json.loads(out.read_text())
    assert set(payload) == {"versions", "footnote", "cases", "results"}
    assert list(payload["cases"]) == ["pymc_limit/eight_schools"]
    assert {row["graph"] for row in payload["results"]} == {"pymc_limit/eight_schools"}


@pytest.mark.slow
@pytest.mark.parametrize("name", LIMIT_MODELS)
def test_the_llvm_modes_logp_and_gradient_are_stocks_and_the_references(name):
    graph = limit_graph(name)
    llvm, stock = pymc_compile(graph, "LLVM"), pymc_compile(graph, "NUMBA")
    x0, *data = reference_arguments(name, graph)
    rng = np.random.default_rng(1)
    for x in [x0, *(x0 + rng.normal(0, 2, size=x0.size) for _ in range(CHECK_POINTS))]:
        for got, want, reference in zip(llvm(x), stock(x), REFERENCES[name](x, *data), strict=True):
            np.testing.assert_allclose(got, want, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE)
            np.testing.assert_allclose(got, reference, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE)


@pytest.mark.slow
def test_the_regressions_linear_predictor_is_one_matrix_vector_product_of_a_view():
    # a loop of ours over the 48 columns as rows (400 observations: no Dot, whose BLAS code takes a second to
    # compile), reading the coefficients as a view of the parameters
    from pytensor.tensor.basic import Join
    from pytensor.tensor.math import Dot
    from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
    from pytensor.tensor.variable import TensorConstant

    nodes = pymc_compile(limit_graph("regression_65p"), "LLVM").maker.fgraph.apply_nodes
    [product] = [n for n in nodes if any(isinstance(i, TensorConstant) and i.type.ndim == 2 for i in n.inputs)]
    assert isinstance(product.op, FusedElemwise)
    assert [i.type.shape for i in product.inputs if isinstance(i, TensorConstant)] == [(48, 400)]
    assert not any(isinstance(node.op, Dot | Join) for node in nodes)


def test_the_logistics_products_by_its_design_matrix_are_fused_into_its_loops():
    from pytensor.tensor.math import Dot

    def dots(mode):
        nodes = pymc_compile(limit_graph("logistic_5p"), mode).maker.fgraph.apply_nodes
        return [node for node in nodes if isinstance(node.op, Dot)]

    assert not dots("LLVM")
    assert len(dots("NUMBA")) == 2
