"""``IncSubtensor`` under the LLVM mode (`llvm_backend.lowerings.updates`): the py linker's and stock NUMBA's
values, stock's errors, and an intrinsic of the graph function where stock compiles a function per node."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.compile.io import In
from pytensor.tensor.subtensor import IncSubtensor

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

v = pt.dvector("v")
m = pt.dmatrix("m")
s = pt.dscalar("s")
n = pt.lscalar("n")
bools = pt.vector("bools", dtype="bool")

CASES = {
    "inc a tail": ([v, n], lambda: pt.inc_subtensor(v[n:], v[:-n] * 2), [np.arange(5.0), 2]),
    "set an element": ([v, s, n], lambda: pt.set_subtensor(v[n], s) + 1, [np.arange(3.0), 4.5, -1]),
    "set a column to a scalar": ([m, s], lambda: pt.set_subtensor(m[:, 1], s), [np.zeros((3, 2)), 2.0]),
    "inc every other row": ([m, v], lambda: pt.inc_subtensor(m[::2], v), [np.ones((5, 2)), np.arange(2.0)]),
    "the gradient of a slice": ([v], lambda: pt.grad((v[1:] ** 2).sum() + v[0], v), [np.arange(4.0)]),
    "a cumulative gradient": ([v], lambda: pt.grad(pt.cumsum(v)[2:].sum() * v[-1], v), [np.arange(1.0, 6.0)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_updates_are_ours(name):
    inputs, build, values = CASES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, build(), values)
    plan = plan_graph(fn.maker.fgraph)
    nodes = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, IncSubtensor)]
    assert nodes, "the rewritten graph kept no IncSubtensor"
    assert all(plan[node].lowering is LOWERINGS[IncSubtensor] for node in nodes)
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), IncSubtensor)]
    assert calls and all(isinstance(call.function, _Intrinsic) for call in calls)


def test_an_update_of_booleans_keeps_stocks_function():
    fn, _ = compare_llvm_numba_and_py([bools], pt.set_subtensor(bools[1:], np.array(True)), [np.zeros(3, bool)])
    [node] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, IncSubtensor)]
    assert plan_graph(fn.maker.fgraph)[node].lowering is None


@pytest.mark.parametrize(
    ("output", "values", "error"),
    [
        (lambda: pt.set_subtensor(v[n], s), [np.zeros(3), 1.0, 3], IndexError),
        (lambda: pt.inc_subtensor(v[:n], v), [np.zeros(3), 1.0, 2], ValueError),
    ],
)
def test_bad_input_is_stocks_error_and_an_inplace_update_writes_nothing(output, values, error):
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([In(v, mutable=True), s, n], output(), mode=mode, on_unused_input="ignore")
        buffer = values[0].copy()
        with pytest.raises(error) as raised:
            fn(buffer, *values[1:])
        np.testing.assert_array_equal(buffer, values[0])
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]
