"""``Alloc``, ``AllocEmpty`` and ``ARange`` under the LLVM mode (`llvm_backend.lowerings.alloc`): the py linker's and
stock NUMBA's values, stock's ValueErrors, and an intrinsic of the graph function where stock compiles a function
per node."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.tensor.basic import Alloc, AllocEmpty, ARange

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

s = pt.dscalar("s")
n = pt.lscalar("n")
k = pt.iscalar("k")
v = pt.dvector("v")
c = pt.tensor("c", shape=(None, 1))
b = pt.tensor("b", dtype="bool", shape=(1,))

CASES = {
    "a scalar": ([s, n], pt.alloc(s, n, 3), [1.5, 4]),
    "a vector into rows": ([v, n], pt.alloc(v, n, 3), [np.arange(3.0), 2]),
    "a column, int32 size": ([c, n, k], pt.alloc(c, n, 4, k), [np.arange(4.0).reshape(4, 1), 2, np.int32(3)]),
    "zeros plus one": ([n], pt.zeros((n, 2)) + 1, [3]),
    "a reversed vector": ([v, n], pt.alloc(v[::-1], n, 3) * 2, [np.arange(3.0), 2]),
    "a bool": ([b, n], pt.alloc(b, n, 1), [np.array([True]), 2]),
    "an empty output": ([v, n], pt.alloc(v, n, 3), [np.arange(3.0), 0]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_allocs_are_ours(name):
    inputs, output, values = CASES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, output, values)
    plan = plan_graph(fn.maker.fgraph)
    allocs = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, Alloc)]
    assert allocs, "the rewritten graph kept no Alloc"
    assert all(plan[node].lowering is LOWERINGS[Alloc] for node in allocs)


@pytest.mark.parametrize("value", [np.zeros(2), np.zeros(1), np.zeros(5)])
def test_a_value_that_does_not_fit_is_stocks_value_error(value):
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([v, n], pt.alloc(v, n, 3), mode=mode)
        with pytest.raises(ValueError) as raised:
            fn.vm.jit_fn(value, np.array(2))
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]


def test_an_alloc_is_an_intrinsic_of_the_graph_function():
    fn = pytensor.function([s, n, v], [pt.alloc(s, n, 3), pt.alloc(v, 2, n)], mode="LLVM")
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), Alloc)]
    assert len(calls) == 2
    assert all(isinstance(call.function, _Intrinsic) for call in calls)


def test_an_alloc_empty_is_an_intrinsic_with_stocks_shape_dtype_and_error():
    made = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([n], pt.empty((n, 3), dtype="float32"), mode=mode)
        value = fn(2)
        made[mode] = (value.shape, value.dtype)
        with pytest.raises(ValueError) as raised:
            fn(-1)
        made[mode] += (str(raised.value),)
    assert made["LLVM"] == made["NUMBA"] == ((2, 3), np.float32, made["NUMBA"][2])
    [node] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, AllocEmpty)]
    assert plan_graph(fn.maker.fgraph)[node].lowering is LOWERINGS[AllocEmpty]
    [call] = [call for call in graph_source(fn.maker.fgraph).plan.calls if call.label is node]
    assert isinstance(call.function, _Intrinsic)


RANGES = {
    "arange(n)": ([n], pt.arange(n), [5]),
    "start, stop and step": ([n, k], pt.arange(k, n, 3), [11, np.int32(2)]),
    "a negative step": ([n, k], pt.arange(n, k, -2), [7, np.int32(-4)]),
    "an empty range": ([n, k], pt.arange(n, k), [7, np.int32(2)]),
    "float64 values": ([n], pt.arange(n, dtype="float64") / 2, [5]),
    "a categorical's rows": ([n, v], v[pt.arange(n)] * 2, [3, np.arange(4.0)]),
}


@pytest.mark.parametrize("name", list(RANGES))
def test_ranges_match_py_and_stock_and_are_ours(name):
    inputs, output, values = RANGES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, output, values)
    ranges = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, ARange)]
    assert ranges, "the rewritten graph kept no ARange"
    assert all(plan_graph(fn.maker.fgraph)[node].lowering is LOWERINGS[ARange] for node in ranges)


def test_a_range_of_float_bounds_is_stocks_function():
    fn, _ = compare_llvm_numba_and_py([s], pt.arange(0.0, s, 0.5), [2.0])
    [node] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, ARange)]
    assert plan_graph(fn.maker.fgraph)[node].lowering is None


def test_a_zero_step_is_stocks_value_error_from_an_intrinsic():
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([n, k], pt.arange(0, n, k), mode=mode)
        with pytest.raises(ValueError) as raised:
            fn(3, np.int32(0))
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]
    [node] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, ARange)]
    [call] = [call for call in graph_source(fn.maker.fgraph).plan.calls if call.label is node]
    assert isinstance(call.function, _Intrinsic)
