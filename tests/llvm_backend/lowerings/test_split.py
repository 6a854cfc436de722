"""``Split`` under the LLVM mode (`llvm_backend.lowerings.split`): the py linker's and stock NUMBA's values, stock's
ValueErrors, and an intrinsic of the graph function where stock compiles a function per node."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.tensor.basic import Split

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

x = pt.dvector("x")
m = pt.dmatrix("m")
sizes = pt.lvector("sizes")
MATRIX = np.arange(12.0).reshape(2, 6)

CASES = {
    "constant sizes": ([x], [a * 2 for a in pt.split(x, [2, 3], n_splits=2)], [np.arange(5.0)]),
    "sizes along columns": (
        [m, sizes],
        [a + 1 for a in pt.split(m, sizes, n_splits=3, axis=1)],
        [MATRIX, np.array([1, 2, 3])],
    ),
    "an empty part": ([m, sizes], [a.sum() for a in pt.split(m, sizes, n_splits=2)], [MATRIX, np.array([0, 2])]),
    "a negative axis": (
        [m, sizes],
        [pt.exp(a) for a in pt.split(m, sizes, n_splits=2, axis=-1)],
        [MATRIX, np.array([4, 2])],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_splits_are_ours(name):
    inputs, outputs, values = CASES[name]
    fn, _ = compare_llvm_numba_and_py(inputs, outputs, values)
    plan = plan_graph(fn.maker.fgraph)
    splits = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, Split)]
    assert splits, "the rewritten graph kept no Split"
    assert all(plan[node].lowering is LOWERINGS[Split] for node in splits)


@pytest.mark.parametrize("given", [[1, 2], [7, -1], [1, 1, 0]])
def test_bad_sizes_are_stocks_value_errors(given):
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([m, sizes], [a * 2 for a in pt.split(m, sizes, n_splits=2, axis=1)], mode=mode)
        with pytest.raises(ValueError) as raised:
            fn.vm.jit_fn(MATRIX, np.array(given))
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]


def test_a_split_is_an_intrinsic_of_the_graph_function():
    fn = pytensor.function([m, sizes], [a * 2 for a in pt.split(m, sizes, n_splits=2)], mode="LLVM")
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), Split)]
    assert len(calls) == 1 and isinstance(calls[0].function, _Intrinsic)
