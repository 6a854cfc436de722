"""``Dot`` under the LLVM mode (`llvm_backend.lowerings.dot`): the py linker's and stock NUMBA's values, stock's
ValueError, an intrinsic of the graph function for float products and stock's function for the others."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.tensor.math import Dot

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

X = pt.dmatrix("X")
W = pt.dmatrix("W")
beta = pt.dvector("beta")
F = pt.fmatrix("F")
rng = np.random.default_rng(3)
x_value, w_value, beta_value = rng.normal(size=(20, 3)), rng.normal(size=(3, 4)), rng.normal(size=3)

CASES = {
    "matrix times vector": ([X, beta], pt.dot(X, beta), [x_value, beta_value]),
    "a transposed matrix times a vector": ([X, beta], pt.dot(X.T, pt.dot(X, beta)), [x_value, beta_value]),
    "vector times matrix": ([X, beta], pt.dot(pt.dot(X, beta), X), [x_value, beta_value]),
    "matrix times matrix": ([X, W], X @ W, [x_value, w_value]),
    "a reversed operand": ([X, W], X[::-1] @ W[:, ::-1], [x_value, w_value]),
    "a strided operand": ([X, W], X[::2, ::2] @ W[::2], [x_value, w_value]),
    "a gradient": (
        [X, W, beta],
        pt.grad(pt.log1p((X @ W).sum() ** 2) + pt.dot(X, beta).sum(), [W, beta]),
        [x_value, w_value, beta_value],
    ),
    "float32": ([F], F @ F.T, [x_value.astype(np.float32)]),
    "empty rows": ([X, W], X @ W, [np.zeros((0, 3)), w_value]),
    "an empty contraction": ([X, W], X @ W, [np.zeros((4, 0)), np.zeros((0, 2))]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_products_are_ours(name):
    inputs, output, values = CASES[name]
    rtol = 1e-5 if name == "float32" else None
    fn, _ = compare_llvm_numba_and_py(inputs, output, values, rtol=rtol)
    plan = plan_graph(fn.maker.fgraph)
    dots = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, Dot)]
    assert dots, "the rewritten graph kept no Dot"
    assert all(plan[node].lowering is LOWERINGS[Dot] for node in dots)


def test_a_product_of_integers_is_stocks_function():
    A, B = pt.lmatrix("A"), pt.imatrix("B")
    values = [np.arange(6).reshape(2, 3), np.arange(6, dtype=np.int32).reshape(3, 2)]
    fn, _ = compare_llvm_numba_and_py([A, B], A @ B, values)
    plan = plan_graph(fn.maker.fgraph)
    [dot] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, Dot)]
    assert plan[dot].lowering is None


def test_mismatched_matrices_are_stocks_value_error():
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([X, W], X @ W, mode=mode)
        with pytest.raises(ValueError) as raised:
            fn.vm.jit_fn(np.ones((2, 3)), np.ones((4, 2)))
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]


def test_a_product_is_an_intrinsic_of_the_graph_function():
    fn = pytensor.function([X, W, beta], [X @ W, pt.dot(X, beta)], mode="LLVM")
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), Dot)]
    assert len(calls) == 2
    assert all(isinstance(call.function, _Intrinsic) for call in calls)
