"""Basic indexing, dimension shuffles, scalar <-> 0-d array nodes and lone scalar ops under the LLVM mode
(`llvm_backend.lowerings.views`): the py linker's and stock NUMBA's values, stock's errors, and intrinsics
emitted in the graph function where stock compiles a function per node."""

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.graph.fg import FunctionGraph
from pytensor.scalar.basic import ScalarOp
from pytensor.tensor.basic import ScalarFromTensor, TensorFromScalar
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.rewriting.scalarize import ScalarSubtensor
from pytensor.tensor.subtensor import Subtensor

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.graphs import logp_grad
from llvm_backend.tools.testing import compare_llvm_numba_and_py

VIEW_OPS = (Subtensor, ScalarSubtensor, DimShuffle, TensorFromScalar, ScalarFromTensor)

x = pt.dvector("x")
m = pt.dmatrix("m")
i = pt.lscalar("i")
j = pt.iscalar("j")
VECTOR = np.arange(7.0) - 2.5
MATRIX = np.arange(20.0).reshape(4, 5)

INDEXINGS = {
    "x[1:]": ([x], x[1:], [VECTOR]),
    "x[:-1] * 2": ([x], x[:-1] * 2, [VECTOR]),
    "x[::-2]": ([x], x[::-2], [VECTOR]),
    "x[i:]": ([x, i], x[i:], [VECTOR, np.int64(-3)]),
    "x[i] as a 0-d array": ([x, i], x[i], [VECTOR, np.int64(-1)]),
    "m[j, 1:i]": ([m, i, j], m[j, 1:i], [MATRIX, np.int64(4), np.int32(2)]),
    "m[:, j]": ([m, j], m[:, j], [MATRIX, np.int32(-2)]),
    "m[1:, ::2].T": ([m], m[1:, ::2].T, [MATRIX]),
    "m[i, j] in scalar math": ([m, i, j], pt.exp(m[i, j] / 10) + m[0, 0], [MATRIX, np.int64(3), np.int32(4)]),
    "x[0] * x[1] + x[-1]": ([x], x[0] * x[1] + x[-1], [VECTOR]),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(INDEXINGS))
def test_indexing_matches_py_and_stock(name):
    inputs, output, values = INDEXINGS[name]
    fn, _ = compare_llvm_numba_and_py(inputs, output, values)
    plan = plan_graph(fn.maker.fgraph)
    lowered = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, VIEW_OPS)]
    assert lowered, "the graph has no node of those lowered here"
    assert all(plan[node].lowering is not None for node in lowered)


SHUFFLES = {
    "transpose": (pt.tensor3("t"), lambda t: t.dimshuffle(2, 0, 1), np.arange(24.0).reshape(2, 3, 4)),
    "expand": (pt.dvector("v"), lambda v: v.dimshuffle("x", 0, "x") + 1, np.arange(3.0)),
    "squeeze": (pt.tensor("s", shape=(1, None)), lambda s: s.squeeze(0) * 2, np.arange(3.0).reshape(1, 3)),
    "squeeze to 0-d": (pt.tensor("s", shape=(1, 1)), lambda s: s.squeeze() + 1, np.ones((1, 1))),
    "scalar expanded": (pt.dscalar("c"), lambda c: c.dimshuffle("x", "x") * np.ones((2, 2)), np.float64(1.5)),
}


@pytest.mark.parametrize("name", list(SHUFFLES))
def test_dimshuffle_matches_py_and_stock(name):
    variable, build, value = SHUFFLES[name]
    compare_llvm_numba_and_py([variable], build(variable), [value])


def test_an_index_out_of_bounds_is_stocks_index_error():
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([x, i], x[i] * 2, mode=mode)
        with pytest.raises(IndexError, match="out of bounds"):
            fn(VECTOR, 7)
        scalar_read = pytensor.function([x, i], pt.exp(x[i]) + 1, mode=mode)
        with pytest.raises(IndexError, match="out of bounds"):
            scalar_read(VECTOR, -8)


def test_a_zero_slice_step_is_stocks_value_error():
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([x, i], x[::i], mode=mode)
        np.testing.assert_array_equal(fn(VECTOR, -3), VECTOR[::-3])
        with pytest.raises(ValueError, match="slice step cannot be zero"):
            fn(VECTOR, 0)


def test_squeezing_an_axis_longer_than_one_is_stocks_value_error():
    s = pt.tensor("s", shape=(1, None))
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([s], s.squeeze(0) * 2, mode=mode)
        with pytest.raises(ValueError, match="squeeze axes with size not equal to one"):
            fn.vm.jit_fn(np.ones((2, 3)))  # jit_fn checks no static shape: the node's own check raises


@pytest.mark.parametrize(
    ("dtype", "build"),
    [
        ("int64", lambda v: pt.exp(v[0]) * v[1]),
        ("int8", lambda v: v[0] * v[1] + v[2]),
        ("float32", lambda v: pt.switch(v[0] > 0, pt.log1p(v[1]), v[2])),
        ("bool", lambda v: pt.and_(v[0], v[1]) * 1.5),
    ],
)
def test_lone_scalar_ops_match_py_and_stock(dtype, build):
    v = pt.vector("v", dtype=dtype)
    values = np.array([1, 2, 3], dtype=dtype)
    fn, _ = compare_llvm_numba_and_py([v], build(v), [values])
    plan = plan_graph(fn.maker.fgraph)
    scalar_nodes = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, ScalarOp)]
    assert all(plan[node].lowering is not None for node in scalar_nodes)


def test_a_scalar_op_stock_must_compute_keeps_stocks_function():
    a = ps.float64("a")
    cast, exp = ps.Cast(ps.float32)(a), ps.exp(a)
    plan = plan_graph(FunctionGraph([a], [cast, exp], clone=False))
    assert plan[cast.owner].lowering is None
    assert plan[exp.owner].lowering is LOWERINGS[ScalarOp]


def test_a_logp_graphs_views_and_boxes_are_intrinsics_of_the_graph_function():
    graph = logp_grad(3, 8)
    fn = pytensor.function(graph.inputs, graph.outputs, mode="LLVM")
    source = graph_source(fn.maker.fgraph)
    ours = [call for call in source.plan.calls if isinstance(call.label.op, (*VIEW_OPS, ScalarOp))]
    assert ours
    assert all(isinstance(call.function, _Intrinsic) for call in ours), [
        (call.label, type(call.function)) for call in ours if not isinstance(call.function, _Intrinsic)
    ]
