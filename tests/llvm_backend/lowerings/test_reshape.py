"""``Reshape`` under the LLVM mode (`llvm_backend.lowerings.shapes`): the py linker's and stock NUMBA's values,
stock's ValueErrors, and an intrinsic of the graph function where stock compiles a function per node."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.tensor.shape import Reshape

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

m = pt.dmatrix("m")
v = pt.dvector("v")
n = pt.lscalar("n")
MATRIX = np.arange(12.0).reshape(3, 4)

CASES = {
    "a vector to rows": ([v, n], lambda: (v.reshape((n, -1)) ** 2).sum(1), [np.arange(12.0), 3]),
    "a transposed matrix flattened": ([m], lambda: m.T.reshape((-1,)) + 1, [MATRIX]),
    "a reversed matrix to 3-d": ([m, n], lambda: m[::-1].reshape((n, 2, -1)), [MATRIX, 2]),
    "the gradient of a reshape": ([v], lambda: pt.grad((v.reshape((2, -1)) ** 3).sum(), v), [np.arange(6.0)]),
    "an empty matrix": ([m, n], lambda: m.reshape((n, -1)), [np.zeros((0, 3)), 4]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_reshapes_are_ours(name):
    inputs, build, values = CASES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, build(), values)
    plan = plan_graph(fn.maker.fgraph)
    nodes = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, Reshape)]
    assert nodes, "the rewritten graph kept no Reshape"
    assert all(plan[node].lowering is LOWERINGS[Reshape] for node in nodes)
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), Reshape)]
    assert calls and all(isinstance(call.function, _Intrinsic) for call in calls)


@pytest.mark.parametrize("size", [5, 7])
def test_a_shape_that_does_not_fit_is_stocks_value_error(size):
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([v, n], v.reshape((n, -1)) * 2, mode=mode)
        with pytest.raises(ValueError) as raised:
            fn(np.arange(float(size)), 2)
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]
