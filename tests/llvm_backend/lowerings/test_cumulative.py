"""``CumOp`` under the LLVM mode (`llvm_backend.lowerings.cumulative`): the py linker's and stock NUMBA's values,
and an intrinsic of the graph function for float inputs, stock's function for the others."""

import numpy as np
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.tensor.extra_ops import CumOp

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

v = pt.dvector("v")
m = pt.dmatrix("m")
f = pt.fmatrix("f")

CASES = {
    "a cumulative sum": ([v], lambda: pt.cumsum(v) * 2, [np.arange(1.0, 6.0)]),
    "a cumulative product along rows": ([m], lambda: pt.cumprod(m, axis=1), [np.arange(1.0, 7.0).reshape(2, 3)]),
    "a transposed float32 matrix": (
        [f],
        lambda: pt.cumsum(f.T, axis=0),
        [np.arange(6.0, dtype="float32").reshape(2, 3)],
    ),
    "ordered cutpoints and their gradient": (
        [v],
        lambda: [pt.cumsum(pt.exp(v)), pt.grad(pt.log(pt.cumsum(pt.exp(v))).sum(), v)],
        [np.array([0.1, -0.3, 0.5])],
    ),
    "an empty axis": ([m], lambda: pt.cumsum(m, axis=0), [np.zeros((0, 2))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_cumulative_ops_are_ours(name):
    inputs, build, values = CASES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, build(), values)
    nodes = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, CumOp)]
    assert nodes, "the rewritten graph kept no CumOp"
    plan = plan_graph(fn.maker.fgraph)
    assert all(plan[node].lowering is LOWERINGS[CumOp] for node in nodes)
    calls = [
        call for call in graph_source(fn.maker.fgraph).plan.calls if isinstance(getattr(call.label, "op", None), CumOp)
    ]
    assert calls and all(isinstance(call.function, _Intrinsic) for call in calls)


def test_a_cumulative_sum_of_integers_keeps_stocks_function():
    i = pt.lvector("i")
    fn, _ = compare_llvm_numba_and_py([i], pt.cumsum(i), [np.arange(4)])
    [node] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, CumOp)]
    assert plan_graph(fn.maker.fgraph)[node].lowering is None
