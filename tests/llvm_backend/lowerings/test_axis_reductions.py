"""``CAReduce`` nodes left in a graph (reductions over some axes, into an array) under the LLVM mode
(`llvm_backend.lowerings.reduction.lower_careduce`): the py linker's and stock NUMBA's values, and an intrinsic of
the graph function where stock compiles a generated function per node."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.tensor.elemwise import CAReduce

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

x = pt.tensor3("x")
m = pt.dmatrix("m")
b = pt.tensor3("b", dtype="bool")
i = pt.imatrix("i")
f = pt.fmatrix("f")
RNG = np.random.default_rng(0)
CUBE = RNG.normal(size=(3, 4, 5))
MATRIX = RNG.normal(size=(6, 4))

CASES = {
    "sum over the last axis": ([m], m.sum(axis=1), [MATRIX]),
    "sum over the first axis": ([m], m.sum(axis=0), [MATRIX]),
    "max over two axes": ([x], x.max(axis=(0, 2)), [CUBE]),
    "prod of a transposed cube": ([x], x.dimshuffle(2, 0, 1).prod(axis=1), [CUBE]),
    "min over the first axis": ([x], x.min(axis=0), [CUBE]),
    "any over the last axis": ([b], b.any(axis=2), [CUBE > 0]),
    "all over the first axis": ([b], b.all(axis=0), [CUBE > -1]),
    "an int32 sum into int64": ([i], i.sum(axis=0), [(MATRIX * 10).astype("int32")]),
    "a float32 sum": ([f], f.sum(axis=1), [MATRIX.astype("float32")]),
    "softmax": ([m], pt.special.softmax(m, axis=1), [MATRIX]),
    "logsumexp": ([m], pt.logsumexp(m, axis=0), [MATRIX]),
    "an empty reduced axis": ([m], m.sum(axis=0) + m.prod(axis=0), [np.zeros((0, 3))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_reductions_are_ours(name):
    inputs, output, values = CASES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, output, values, rtol=1e-6 if name == "a float32 sum" else None)
    plan = plan_graph(fn.maker.fgraph)
    reductions = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, CAReduce)]
    assert reductions, "the rewritten graph kept no CAReduce"
    assert all(plan[node].lowering is LOWERINGS[CAReduce] for node in reductions)


def test_max_over_an_empty_axis_is_stocks_identity():
    results = {}
    for mode in ("NUMBA", "LLVM"):
        results[mode] = pytensor.function([m], m.max(axis=0), mode=mode)(np.zeros((0, 3)))
    np.testing.assert_array_equal(results["LLVM"], results["NUMBA"])


def test_a_reduction_is_an_intrinsic_of_the_graph_function():
    fn = pytensor.function([m], [m.sum(axis=1), m.max(axis=0)], mode="LLVM")
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), CAReduce)]
    assert len(calls) == 2
    assert all(isinstance(call.function, _Intrinsic) for call in calls)
