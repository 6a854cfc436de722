"""``SpecifyShape``, ``Shape_i`` and ``Shape`` under the LLVM mode (`llvm_backend.lowerings.shapes`): the py linker's
and stock NUMBA's values, stock's AssertionError and message, and intrinsics of the graph function where stock
compiles a function per node."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.compile.mode import get_mode
from pytensor.tensor.shape import Shape, Shape_i, SpecifyShape, specify_shape

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

SHAPE_OPS = (SpecifyShape, Shape_i, Shape)

m = pt.dmatrix("m")
t = pt.tensor3("t")
n = pt.lscalar("n")
k = pt.iscalar("k")
MATRIX = np.arange(12.0).reshape(3, 4)
CUBE = np.arange(24.0).reshape(2, 3, 4)

CASES = {
    "rows given, columns free": ([m, n], lambda: pt.exp(specify_shape(m, (n, None))).sum(0), [MATRIX, 3]),
    "both given, int32": ([m, k], lambda: specify_shape(m, (3, k)) * 2, [MATRIX, np.int32(4)]),
    "a 3-d array's middle": ([t, n], lambda: specify_shape(t, (None, n, None)).sum(), [CUBE, 3]),
    "a transposed view": ([m, n], lambda: specify_shape(m.T, (n, None))[1:] + 1, [MATRIX, 4]),
    "shape entries": ([t], lambda: [t.shape[0] * 2, t.shape[2] + t.shape[1]], [CUBE]),
    "an empty axis": ([m, n], lambda: [specify_shape(m, (n, None)).sum(), m.shape[0]], [np.zeros((0, 2)), 0]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_nodes_are_ours(name):
    inputs, build, values = CASES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, build(), values)
    plan = plan_graph(fn.maker.fgraph)
    shape_nodes = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, SHAPE_OPS)]
    assert shape_nodes, "the rewritten graph kept no shape node"
    assert all(plan[node].lowering is LOWERINGS[type(node.op)] for node in shape_nodes)


def test_a_shape_vector_kept_whole_matches_py_and_stock():
    """PyTensor rewrites most ``Shape`` nodes into ``Shape_i``\\ s; one it keeps (a PyMC graph's ``Shape(X)`` read
    through ``ScalarSubtensor``) is stock's vector."""
    kept_whole = get_mode("LLVM").excluding("local_shape_to_shape_i")
    outputs = [pt.shape(t) + 1, pt.shape(t)[1] * 2.5]
    fn, _ = compare_llvm_numba_and_py([t], outputs, [CUBE], llvm_mode=kept_whole)
    shapes = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, Shape)]
    assert shapes and all(plan_graph(fn.maker.fgraph)[node].lowering is LOWERINGS[Shape] for node in shapes)


@pytest.mark.parametrize(("rows", "columns"), [(4, 4), (3, 5), (0, 0)])
def test_a_wrong_size_raises_stocks_assertion_with_its_message(rows, columns):
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([m, n, k], specify_shape(m, (n, k)) * 2, mode=mode)
        np.testing.assert_array_equal(fn(MATRIX, 3, np.int32(4)), MATRIX * 2)
        with pytest.raises(AssertionError) as raised:
            fn.vm.jit_fn(MATRIX, np.array(rows), np.array(columns, dtype=np.int32))
        messages[mode] = raised.value.args
    assert messages["LLVM"] == messages["NUMBA"]


def test_data_of_a_new_shape_raises_as_under_stock():
    """A ``pm.Data``-like shared matrix of recorded shape: a value of another shape set later is caught."""
    for mode in ("NUMBA", "LLVM"):
        data = pytensor.shared(MATRIX.copy(), name="data")
        fn = pytensor.function([n], (specify_shape(data, (n, 4)) ** 2).sum(), mode=mode)
        assert fn(3) == (MATRIX**2).sum()
        data.set_value(np.ones((5, 4)))
        assert fn(5) == 20.0
        with pytest.raises(AssertionError, match="dim 0 of input has shape 5, expected 3"):
            fn(3)


def test_the_shape_nodes_are_intrinsics_of_the_graph_function():
    y = specify_shape(m, (n, None))
    outputs = [pt.exp(y).sum(), y * m.shape[1], pt.shape(m)[0] * 1.5]
    calls = []
    for mode in (get_mode("LLVM"), get_mode("LLVM").excluding("local_shape_to_shape_i")):
        source = graph_source(pytensor.function([m, n], outputs, mode=mode).maker.fgraph)
        calls += [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), SHAPE_OPS)]
    assert {type(call.label.op) for call in calls} == set(SHAPE_OPS)
    assert all(isinstance(call.function, _Intrinsic) for call in calls)
