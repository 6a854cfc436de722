"""Sigmoids and softpluses of one value sharing one exp and one log1p (`llvm_backend.rewrites.logistic`): the py
linker's and stock NUMBA's values at ordinary and extreme points, one exp and one log1p per value in the
Composite and in the optimized kernel, lone ones left as stock writes them."""

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytensor.scalar.math import Sigmoid, Softplus
from pytensor.tensor.elemwise import Elemwise

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.logistic import share_exponentials
from llvm_backend.tools.inspect_ir import Inspection
from llvm_backend.tools.testing import compare_llvm_numba_and_py, rewritten_graph

EXTREMES = [-800.0, -40.0, -37.5, -20.0, -1.0, -0.0, 0.0, 1e-20, 1.0, 17.9, 18.1, 33.0, 34.0, 700.0, 800.0]
SPECIAL = [np.inf, -np.inf, np.nan]

z = pt.dvector("z")
y = pt.lvector("y")
GRAPHS = {
    "Bernoulli logit and its gradient": lambda z: [
        pt.switch(pt.eq(y, 1), -pt.softplus(-z), -pt.softplus(z)).sum(),
        y - pt.sigmoid(z) + pt.sigmoid(-z) * 0.5,
    ],
    "sigmoid and softplus of z": lambda z: pt.sigmoid(z) * pt.softplus(z),
    "of -z": lambda z: pt.sigmoid(-z) + pt.softplus(-z),
    "all four": lambda z: [pt.sigmoid(z), pt.sigmoid(-z), pt.softplus(z), pt.softplus(-z)],
}


def _composites(fgraph):
    return [
        node.op.scalar_op
        for node in fgraph.apply_nodes
        if isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, ps.Composite)
    ] + [
        inner.op.scalar_op
        for node in fgraph.apply_nodes
        if hasattr(node.op, "fgraph")
        for inner in node.op.fgraph.apply_nodes
        if isinstance(inner.op, Elemwise) and isinstance(inner.op.scalar_op, ps.Composite)
    ]


def _count(composite, op_type) -> int:
    return sum(isinstance(node.op, op_type) for node in composite.fgraph.apply_nodes)


@pytest.mark.parametrize("name", list(GRAPHS))
def test_shared_forms_match_py_and_stock_at_extremes(name):
    values = np.array(EXTREMES + SPECIAL)
    outputs = GRAPHS[name](z)
    inputs = [z, y] if name.startswith("Bernoulli") else [z]
    arguments = [values, np.arange(values.size) % 2] if name.startswith("Bernoulli") else [values]
    # the gradient's y - sigmoid(z) cancels: there stock's own values are 1e-16 from py's
    tolerance = {"rtol": 1e-12, "atol": 1e-15} if name.startswith("Bernoulli") else {"rtol": 1e-13, "atol": 1e-300}
    fn, _ = compare_llvm_numba_and_py(inputs, outputs, arguments, **tolerance)
    [composite] = [c for c in _composites(fn.maker.fgraph) if _count(c, ps.Exp)]
    assert _count(composite, ps.Exp) == 1 and _count(composite, ps.Log1p) <= 1
    assert _count(composite, Sigmoid) == _count(composite, Softplus) == 0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-750, 750), min_size=1, max_size=20))
def test_shared_forms_match_py_and_stock_anywhere(values):
    compare_llvm_numba_and_py([z], GRAPHS["all four"](z), [np.array(values)], rtol=1e-13, atol=1e-300)


def test_float32_values_match_stock():
    x = pt.fvector("x")
    values = np.array([-90.0, -20.0, -1.0, 0.0, 0.5, 10.0, 90.0], dtype="float32")
    compare_llvm_numba_and_py([x], pt.sigmoid(x) + pt.softplus(-x), [values])


def test_a_lone_sigmoid_and_an_unsigned_input_keep_stocks_forms():
    a, b, u = ps.float64("a"), ps.float64("b"), ps.uint8("u")
    assert share_exponentials(ps.Composite([a, b], [ps.sigmoid(a) + ps.softplus(b)])) is None
    assert share_exponentials(ps.Composite([u], [ps.sigmoid(u) + ps.softplus(u)])) is None
    shared = share_exponentials(ps.Composite([a], [ps.sigmoid(a) * ps.softplus(-a) - ps.sigmoid(-a)]))
    assert _count(shared, ps.Exp) == 1 and _count(shared, ps.Log1p) == 1


def test_stock_numba_is_not_rewritten():
    output = pt.sigmoid(z) * pt.softplus(z)
    assert any(_count(c, Sigmoid) for c in _composites(rewritten_graph(output, [z], mode="NUMBA")))
    assert not any(_count(c, Sigmoid) for c in _composites(rewritten_graph(output, [z])))


def test_the_optimized_kernel_calls_exp_and_log1p_once():
    outputs = GRAPHS["Bernoulli logit and its gradient"](z)
    stats = Inspection(pytensor.function([z, y], outputs, mode="LLVM")).stats("llvm-opt", kernel_only=True)
    exps = sum(n for callee, n in stats.calls.items() if callee in ("exp", "llvm.exp.f64"))
    log1ps = sum(n for callee, n in stats.calls.items() if callee == "log1p")
    assert (exps, log1ps) == (1, 1), stats.calls
