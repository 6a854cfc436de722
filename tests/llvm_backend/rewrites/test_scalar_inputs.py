"""0-d inputs as native scalars: the graph function's parameters, the thunk's call and ``jit_fn``'s entry, and
``ExposeScalarInputs``, which lets PyTensor's scalarization hand them to scalar math, joins and fused loops as
scalars."""

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.scalar import ScalarType
from pytensor.scan.op import Scan
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise

import llvm_backend  # noqa: F401
from llvm_backend.codegen import SCALAR_PACK_MIN, zero_d_array
from llvm_backend.linker import graph_caller
from llvm_backend.tools.graphs import logp_grad, regression
from llvm_backend.tools.measure import allocations_per_call
from llvm_backend.tools.testing import assert_same_result, compare_llvm_numba_and_py, rewritten_graph
from llvm_backend_intrinsics.scalarpack import ScalarPackType


def _nodes(fgraph, op_type):
    return [node for node in fgraph.apply_nodes if isinstance(node.op, op_type)]


def test_graph_caller_reads_the_current_values_and_converts_scalars():
    cells = [[np.arange(2.0)], [np.asarray(1.5)], [np.asarray(7)]]
    call = graph_caller(lambda *args: args, cells, [None, "float64", "int64"])
    array, x, n = call()
    assert array is cells[0][0]
    assert (type(x), type(n)) == (float, int)
    assert (x, n) == (1.5, 7)
    cells[1][0] = np.asarray(-2.0)
    assert call()[1] == -2.0


def test_0d_inputs_of_float64_and_int64_are_native_scalars():
    x, n, b, v = pt.dscalar("x"), pt.lscalar("n"), pt.scalar("b", dtype="bool"), pt.dvector("v")
    outputs = [pt.exp(x) * n, pt.switch(b, x, -x), (v * x).sum() + n, v + n]
    values = [np.asarray(0.3), np.asarray(4), np.asarray(True), np.arange(3.0)]
    fn, results = compare_llvm_numba_and_py([x, n, b, v], outputs, values)
    graph = fn.vm.graph_source
    assert graph.scalar_sources == {0: "float64", 1: "int64"}
    assert graph.parameter_scalars == ["float64", "int64", None, None]
    # jit_fn keeps PyTensor's contract: it takes the 0-d arrays
    for got, want in zip(fn.vm.jit_fn(*values), results, strict=True):
        assert_same_result(got, want, "jit_fn")


def test_a_float32_0d_input_stays_an_array():
    x = pt.fscalar("x")
    fn, result = compare_llvm_numba_and_py([x], pt.exp(x) + 1, [np.float32(0.5)])
    assert fn.vm.graph_source.scalar_sources == {}
    assert result.dtype == np.float32


@pytest.mark.parametrize(
    "build",
    [lambda x, y: [pt.exp(x) * y + x], lambda x, y: [pt.stack([pt.exp(x) * y, x + y])]],
    ids=["elemwise", "stack"],
)
def test_scalar_inputs_unbox_nothing_and_are_never_made_arrays(build):
    x, y = pt.dscalar("x"), pt.dscalar("y")
    values = [0.5, 2.0]
    counts = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([x, y], build(x, y), mode=mode)
        counts[mode] = allocations_per_call(fn, values)
    assert counts["NUMBA"].unboxing == 2
    assert counts["LLVM"].unboxing == 0
    assert counts["LLVM"].total == counts["NUMBA"].total - 2
    assert zero_d_array not in [call.function for call in fn.vm.graph_source.plan.calls]


def test_a_node_taking_the_input_as_an_array_gets_one_made_for_it():
    x = pt.dscalar("x")
    value = np.asarray(1.25)
    fn, (same, row) = compare_llvm_numba_and_py([x], [x, pt.expand_dims(x, 0) * 2], [value])
    assert fn.vm.graph_source.scalar_sources == {0: "float64"}
    functions = [call.function for call in fn.vm.graph_source.plan.calls]
    assert functions.count(zero_d_array) == 1
    assert same is not value
    assert "x_0d = zero_d_array(x)" in fn.vm.graph_source.listing()
    np.testing.assert_array_equal(row, [2.5])


def test_jit_fn_takes_0d_arrays_from_nopython_code():
    x, n = pt.dscalar("x"), pt.lscalar("n")
    jit_fn = pytensor.function([x, n], pt.exp(x) * n, mode="LLVM").vm.jit_fn

    @numba.cfunc("float64(float64)")
    def logp(value):
        return jit_fn(np.asarray(value), np.asarray(3))[0][()]

    assert logp.ctypes(0.5) == pytest.approx(np.exp(0.5) * 3)


def test_scalar_math_reads_inputs_without_squeezing_expanded_copies():
    """Scalarization leaves ``ScalarFromTensor(Squeeze(ExpandDims(x)))`` beside the fused loop reading
    ``ExpandDims(x)``; under LLVM both read ``x`` itself, and no input is unboxed but the vector."""
    graph = logp_grad(n_scalars=5)
    stock = pytensor.function(graph.inputs, graph.outputs, mode="NUMBA")
    fn, _ = compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)
    assert _nodes(stock.maker.fgraph, DimShuffle)
    assert not _nodes(fn.maker.fgraph, DimShuffle)
    counts = {mode: allocations_per_call(f, graph.values) for mode, f in (("NUMBA", stock), ("LLVM", fn))}
    assert counts["NUMBA"].unboxing == len(graph.inputs)
    assert counts["LLVM"].unboxing == 1
    assert counts["LLVM"].total <= counts["NUMBA"].total - (len(graph.inputs) - 1)


def test_fused_loops_take_broadcast_inputs_as_scalars():
    v, beta, gamma = pt.dvector("v"), pt.dscalar("beta"), pt.dscalar("gamma")
    outputs = [(v * beta).sum(), pt.exp(v * gamma - beta).sum(), v * gamma]
    values = [np.linspace(0.1, 1.0, 7), np.asarray(0.4), np.asarray(-1.5)]
    stock = rewritten_graph(outputs, [v, beta, gamma], mode="NUMBA")
    fn, _ = compare_llvm_numba_and_py([v, beta, gamma], outputs, values)
    [stock_loop] = _nodes(stock, FusedElemwise)
    [loop] = _nodes(fn.maker.fgraph, FusedElemwise)
    assert not any(isinstance(i.type, ScalarType) for i in stock_loop.inputs)
    assert sum(isinstance(i.type, ScalarType) for i in loop.inputs) == 2
    assert allocations_per_call(fn, values).unboxing == 1


@pytest.mark.slow
def test_the_regression_allocates_only_what_it_returns():
    graph = regression(n_cols=6, n_obs=20, n_groups=2)
    fn, _ = compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)
    counts = allocations_per_call(fn, graph.values)
    assert counts.unboxing == 0
    assert counts.total == len(graph.outputs)


def test_a_scan_inner_graph_keeps_its_inputs_arrays():
    """Stock's functions run a Scan's inner graph, on arrays: its 0-d inputs are not exposed as scalars (PyTensor's
    own ``test_inner_graph_optimized`` failed when they were)."""
    xs = pt.dvector("xs")
    seq = pytensor.scan(fn=lambda x: pt.log(1 + x), sequences=[xs], return_updates=False)
    fn = pytensor.function([xs], seq, mode=pytensor.compile.mode.get_mode("LLVM").excluding("scan_pushout"))
    [scan] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, Scan)]
    [inner] = scan.op.fgraph.apply_nodes
    assert isinstance(inner.op, Elemwise)
    np.testing.assert_allclose(fn(np.arange(3.0)), np.log1p(np.arange(3.0)))


def _wide_scalar_graph():
    """``SCALAR_PACK_MIN`` float64 inputs (one scalar pack), one int64 fewer (taken one by one), a bool and a
    vector."""
    xs = [pt.dscalar(f"x{k}") for k in range(SCALAR_PACK_MIN)]
    ns = [pt.lscalar(f"n{k}") for k in range(SCALAR_PACK_MIN - 1)]
    b, v = pt.scalar("b", dtype="bool"), pt.dvector("v")
    outputs = [
        pt.add(*(pt.exp(x) * n for x, n in zip(xs, ns, strict=False))) + xs[-1],
        pt.switch(b, xs[0], -xs[1]) * (v * xs[2]).sum(),
        pt.stack([x * 2 for x in xs]) + pt.add(*ns),
        v + xs[3],
    ]
    return [*xs, *ns, b, v], outputs


def _wide_scalar_values(seed):
    rng = np.random.default_rng(seed)
    xs = [np.asarray(x) for x in rng.normal(size=SCALAR_PACK_MIN)]
    ns = [np.asarray(n) for n in rng.integers(-5, 5, size=SCALAR_PACK_MIN - 1)]
    return [*xs, *ns, np.asarray(bool(seed % 2)), rng.normal(size=4)]


def test_many_0d_inputs_of_a_dtype_are_one_scalar_pack_read_from_their_cells():
    inputs, outputs = _wide_scalar_graph()
    fn, _ = compare_llvm_numba_and_py(inputs, outputs, _wide_scalar_values(0))
    graph = fn.vm.graph_source
    [pack] = graph.packs
    assert pack.scalar and pack.numba_type == ScalarPackType.of("float64", SCALAR_PACK_MIN)
    assert pack.positions == tuple(range(SCALAR_PACK_MIN))
    assert graph.parameter_scalars == [*["int64"] * (SCALAR_PACK_MIN - 1), None, None, None]
    assert len(graph.scalar_sources) == 2 * SCALAR_PACK_MIN - 1
    # later calls read the new values of the cells the thunk's pack holds
    stock = pytensor.function(inputs, outputs, mode="NUMBA")
    for seed in (1, 2):
        values = _wide_scalar_values(seed)
        for got, want in zip(fn(*values), stock(*values), strict=True):
            assert_same_result(got, want, f"call {seed}")
    counts = {mode: allocations_per_call(f, _wide_scalar_values(3)) for mode, f in (("NUMBA", stock), ("LLVM", fn))}
    assert counts["LLVM"].unboxing == 2  # the bool and the vector
    assert counts["LLVM"].total <= counts["NUMBA"].total - (2 * SCALAR_PACK_MIN - 1)


def test_jit_fn_of_a_scalar_pack_graph_takes_0d_arrays_from_python_and_nopython_code():
    xs = [pt.dscalar(f"x{k}") for k in range(SCALAR_PACK_MIN)]
    total = pt.add(*(pt.exp(x) * k for k, x in enumerate(xs)))
    fn = pytensor.function(xs, total, mode="LLVM")
    assert [p.scalar for p in fn.vm.graph_source.packs] == [True]
    values = [np.asarray(0.1 * k) for k in range(SCALAR_PACK_MIN)]
    want = sum(np.exp(0.1 * k) * k for k in range(SCALAR_PACK_MIN))
    assert fn.vm.jit_fn(*values)[0] == pytest.approx(want)
    arguments = ", ".join(f"np.asarray(scale * {k})" for k in range(SCALAR_PACK_MIN))
    namespace = {"jit_fn": fn.vm.jit_fn, "np": np}
    exec(f"def logp(scale):\n    return jit_fn({arguments})[0][()]\n", namespace)
    logp = numba.cfunc("float64(float64)")(namespace["logp"])
    assert logp.ctypes(0.1) == pytest.approx(want)


def test_unfiltered_scalar_pack_inputs_are_read_as_float_reads_them():
    """With ``trust_input`` the cells hold what the caller gave: Python numbers are read as ``float`` reads them,
    and what it cannot take raises its TypeError from the thunk (stock's jit_fn fails to type such values)."""
    xs = [pt.dscalar(f"x{k}") for k in range(SCALAR_PACK_MIN)]
    fn = pytensor.function(xs, pt.add(*xs), mode="LLVM")
    values = [np.asarray(1.0)] * (SCALAR_PACK_MIN - 2)
    with pytest.raises(TypeError):
        fn(*values, 1.0, None)
    fn.trust_input = True
    assert fn(*values, 2.0, 3) == SCALAR_PACK_MIN + 3
    with pytest.raises(TypeError):
        fn(*values, 2.0, None)
    assert fn(*values, np.float32(0.5), np.asarray(0.25)) == SCALAR_PACK_MIN - 2 + 0.75
