"""A sum's terms that do not vary along its axes added once (`llvm_backend.rewrites.sums`): the py linker's and
stock NUMBA's values for a Normal log-density, nested differences, a partial sum, an infinity and float32; the
loop that sums a Normal log-density computes only the residual's square; a constant factor taken out is folded;
what is left alone."""

from collections import Counter

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.traversal import applys_between
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Sum
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.variable import TensorConstant

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.sums import sum_of_invariant_terms
from llvm_backend.tools.testing import compare_llvm_numba_and_py

N = 50
HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)


def _normal_logp(y, mu, sigma):
    """PyMC's Normal log-density of observations ``y``, summed."""
    return pt.sum(-0.5 * ((y - mu) / sigma) ** 2 - pt.log(sigma) - HALF_LOG_2PI)


def _rewritten(inputs, output):
    """What `sum_of_invariant_terms` makes of ``output``'s own node (a Sum), on the graph as built."""
    fgraph = FunctionGraph(inputs, [output], clone=False)
    return sum_of_invariant_terms.transform(fgraph, output.owner)


def _loop_scalar_ops(fn) -> Counter:
    """The names of the scalar ops computed inside the compiled graph's fused loops, counted."""
    names = Counter()
    for node in fn.maker.fgraph.apply_nodes:
        if isinstance(node.op, FusedElemwise):
            for inner in node.op.fgraph.apply_nodes:
                if isinstance(inner.op, Elemwise) and isinstance(inner.op.scalar_op, ps.Composite):
                    names.update(type(n.op).__name__ for n in inner.op.scalar_op.fgraph.apply_nodes)
    return names


def test_normal_logp_matches_py_and_stock_and_its_loop_sums_squares_only():
    y, mu, sigma = pt.vector("y", shape=(N,)), pt.dscalar("mu"), pt.dscalar("sigma")
    output = _normal_logp(y, mu, sigma)
    [rewritten] = _rewritten([y, mu, sigma], output)
    [total] = [v for v in rewritten.owner.inputs if v.owner is not None and isinstance(v.owner.op, Sum)]
    assert isinstance(total.owner.inputs[0].owner.op.scalar_op, ps.Mul)
    values = np.random.default_rng(0).normal(1.0, 2.0, size=N)
    for m, s in [(0.5, 1.7), (-3.0, 0.2)]:
        fn, _ = compare_llvm_numba_and_py([y, mu, sigma], output, [values, m, s], rtol=1e-13)
    # per observation: the residual, its square and the add into the sum; the constants are added once
    assert _loop_scalar_ops(fn) == Counter(["Sub", "TrueDiv", "Sqr"])


def test_a_factor_taken_out_of_the_sum_is_folded_when_constant():
    y, mu, sigma = pt.vector("y", shape=(N,)), pt.dscalar("mu"), pt.dscalar("sigma")
    values = np.random.default_rng(1).normal(size=N)
    fn, _ = compare_llvm_numba_and_py([y, mu, sigma], _normal_logp(y, mu, sigma), [values, 0.3, 1.1], rtol=1e-13)
    # PyTensor's local_sum_prod_of_mul_or_div takes -0.5 out as Squeeze([-0.5]), which the same pass folds
    constant_only = [
        node
        for node in fn.maker.fgraph.apply_nodes
        if node.inputs and all(isinstance(v, TensorConstant) for v in node.inputs)
    ]
    assert constant_only == []


def test_constant_terms_are_summed_when_rewritten():
    """The eight schools' likelihood: observed scales, whose logs PyTensor folds into one constant vector."""
    y, mu = pt.vector("y", shape=(8,)), pt.dscalar("mu")
    scales = pt.constant(np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]))
    output = _normal_logp(y, mu, scales)
    values = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    fn, _ = compare_llvm_numba_and_py([y, mu], output, [values, 4.4], rtol=1e-13)
    assert _loop_scalar_ops(fn) == Counter(["Sub", "TrueDiv", "Sqr"])
    [rewritten] = _rewritten([y, mu], pt.sum(y * 2.0 - pt.constant(np.arange(8.0)) + 1.5))
    assert isinstance(rewritten.owner.inputs[-1], TensorConstant)
    assert rewritten.owner.inputs[-1].data == -28.0


def test_nested_differences_and_negations():
    v, a, b = pt.vector("v", shape=(N,)), pt.dscalar("a"), pt.dscalar("b")
    output = pt.sum(-(v * 2.0 - a) + (b - pt.exp(v)))
    assert _rewritten([v, a, b], output)
    compare_llvm_numba_and_py([v, a, b], output, [np.linspace(-1, 1, N), 0.3, -4.0], rtol=1e-13)


def test_only_invariant_terms():
    a, b = pt.dscalar("a"), pt.dscalar("b")
    output = pt.sum(pt.constant(np.zeros(7)) + a - b)
    assert _rewritten([a, b], output)
    compare_llvm_numba_and_py([a, b], output, [0.25, 3.0], rtol=1e-14)


def test_a_sum_along_one_axis_of_a_matrix():
    x, row, column = pt.matrix("x", shape=(4, 6)), pt.row("row", shape=(1, 6)), pt.col("column", shape=(4, 1))
    output = pt.sum(x + row - column, axis=0)
    [rewritten] = _rewritten([x, row, column], output)
    assert rewritten.type == output.type
    rng = np.random.default_rng(1)
    values = [rng.normal(size=(4, 6)), rng.normal(size=(1, 6)), rng.normal(size=(4, 1))]
    compare_llvm_numba_and_py([x, row, column], output, values, rtol=1e-13)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_an_infinity_or_nan_among_the_invariant_terms(bad):
    y, mu, sigma = pt.vector("y", shape=(N,)), pt.dscalar("mu"), pt.dscalar("sigma")
    output = pt.sum(-0.5 * (y - mu) ** 2 + pt.log(sigma))
    values = np.linspace(-1, 1, N)
    _, got = compare_llvm_numba_and_py([y, mu, sigma], output, [values, 0.0, bad if bad != -np.inf else 0.0])
    assert not np.isfinite(got)


def test_float32():
    y, mu, sigma = pt.vector("y", shape=(N,), dtype="float32"), pt.fscalar("mu"), pt.fscalar("sigma")
    output = pt.sum(-0.5 * ((y - mu) / sigma) ** 2 - pt.log(sigma))
    assert output.type.dtype == "float32"
    values = np.linspace(-1, 1, N, dtype="float32")
    compare_llvm_numba_and_py([y, mu, sigma], output, [values, np.float32(0.1), np.float32(0.7)], rtol=1e-5)


def test_a_term_of_a_narrower_dtype():
    """A float32 scalar, float32 constants and an int64 scalar in a float64 sum: cast as the sum's ``Add`` casts
    them; a float32 ``Add`` under it kept whole (it rounds in float32)."""
    w, a, j = pt.vector("w", shape=(N,)), pt.dscalar("a"), pt.lscalar("j")
    u, b = pt.vector("u", shape=(N,), dtype="float32"), pt.fscalar("b")
    a32 = pt.cast(a, "float32")
    output = pt.sum(w + a32 - pt.constant(np.linspace(0, 1, N, dtype="float32")) + 1.5 - j + (u + b))
    [rewritten] = _rewritten([w, a, j, u, b], output)
    kept = [n for n in applys_between([w, a, j, u, b], [rewritten]) if n.outputs[0].type.dtype == "float32"]
    assert any(n.op == pt.add and u in n.inputs for n in kept)
    values = [np.linspace(-3, 1, N), 0.1, np.int64(7), np.linspace(0, 1, N, dtype="float32"), np.float32(0.3)]
    # stock NUMBA and py differ by 2e-10 on this mixture of float32 and float64
    compare_llvm_numba_and_py([w, a, j, u, b], output, values, rtol=1e-9)


def test_what_is_left_alone():
    """A length not known statically or 0, a difference used besides the sum, integers, no invariant term; each
    compiled to py's and stock's values."""
    v, w, e, a = pt.dvector("v"), pt.vector("w", shape=(N,)), pt.vector("e", shape=(0,)), pt.dscalar("a")
    j = pt.lscalar("j")
    difference = w - a
    used_besides = pt.sum(difference)
    alone = [
        ([v, a], pt.sum(v - a), [np.linspace(0, 1, 9), 2.0]),
        ([e, a], pt.sum(e - a), [np.zeros(0), 2.0]),
        ([w, a], pt.sum(pt.exp(w) * a), [np.linspace(0, 1, N), 2.0]),
    ]
    left_alone = [(inputs, total, total, values) for inputs, total, values in alone]
    left_alone += [([w, a], used_besides, used_besides * pt.max(difference), [np.linspace(0, 1, N), 2.0])]
    for inputs, total, output, values in left_alone:
        fgraph = FunctionGraph(inputs, [output], clone=False)
        assert not sum_of_invariant_terms.transform(fgraph, total.owner)
        compare_llvm_numba_and_py(inputs, output, values, rtol=1e-13)
    k = pt.vector("k", shape=(N,), dtype="int64")
    assert not _rewritten([k, j], pt.sum(k + j))
    compare_llvm_numba_and_py([k, j], pt.sum(k + j), [np.arange(N), np.int64(3)])
