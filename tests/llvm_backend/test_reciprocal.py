"""Divisions by loop invariants, made multiplies by one hoisted reciprocal under fast-math
(``_reciprocal_divisions`` in ``llvm_backend.rewrites.hoist``)."""

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.graph.traversal import explicit_graph_inputs
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.rewriting.scalarize import ScalarizedElemwise

import llvm_backend  # noqa: F401
from llvm_backend import rewrite_cache
from llvm_backend.rewrite_cache import RewriteCache
from llvm_backend.tools.inspect_ir import Inspection
from llvm_backend.tools.testing import assert_same_result, compare_llvm_numba_and_py

y, x = pt.dvectors("y", "x")
mu, sigma, tau = pt.dscalars("mu", "sigma", "tau")
VALUES = {y: np.linspace(-2.0, 3.0, 13), x: np.linspace(0.5, 4.0, 13), mu: 0.3, sigma: 1.7, tau: 0.45}


def _compare(out, rtol):
    """`compare_llvm_numba_and_py` of ``out`` on the inputs it uses."""
    inputs = [var for var in VALUES if var in set(explicit_graph_inputs(out))]
    return compare_llvm_numba_and_py(inputs, out, [VALUES[var] for var in inputs], rtol=rtol)


def _composites(fn):
    """``(ops, in_loop)`` per Composite of ``fn``'s graph: the scalar ops of its inner graph, and whether it is
    the body of a loop (an Elemwise-like node with a non-broadcastable input) or a node computed once."""
    found = []
    for node in fn.maker.fgraph.apply_nodes:
        in_loop = any(not all(getattr(i.type, "broadcastable", (True,))) for i in node.inputs)
        inner = node.op.fgraph.apply_nodes if isinstance(node.op, ScalarizedElemwise | FusedElemwise) else [node]
        for each in inner:
            op = each.op.scalar_op if isinstance(each.op, Elemwise) else each.op
            if isinstance(op, ps.Composite):
                found.append(([type(n.op) for n in op.fgraph.apply_nodes], in_loop))
    return found


def _count(fn, op: type, in_loop: bool) -> int:
    return sum(ops.count(op) for ops, loop in _composites(fn) if loop == in_loop)


@pytest.mark.parametrize(
    "out",
    [
        ((y - mu) / sigma) ** 2,
        (y - mu) / sigma + pt.exp(y) / sigma + pt.log1p(y**2) / sigma,
        pt.exp(y) / (sigma * tau) + (y - mu) / (sigma * tau),
    ],
    ids=["squared_z", "three_divisions", "divisor_expression"],
)
def test_divisions_by_an_invariant_share_one_hoisted_reciprocal(out):
    fn, _ = _compare(out, rtol=1e-12)
    assert _count(fn, ps.TrueDiv, in_loop=True) == 0
    assert _count(fn, ps.Reciprocal, in_loop=True) == 0
    assert _count(fn, ps.Reciprocal, in_loop=False) == 1


@pytest.mark.parametrize(
    "out", [(y - mu) / x, sigma / x + y], ids=["per_element_divisor", "invariant_numerator_per_element_divisor"]
)
def test_a_per_element_divisor_keeps_its_division(out):
    fn, _ = _compare(out, rtol=1e-12)
    assert _count(fn, ps.TrueDiv, in_loop=True) == 1
    assert _count(fn, ps.Reciprocal, in_loop=True) + _count(fn, ps.Reciprocal, in_loop=False) == 0


def test_integer_divisions_keep_their_division():
    i, j = pt.lvectors("i", "j")
    k = pt.lscalar("k")
    out = [(i - j) / k + i, (i - j) // k + i]
    values = [np.arange(-6, 7), np.arange(13)[::-1].copy(), np.int64(3)]
    fn, _ = compare_llvm_numba_and_py([i, j, k], out, values)
    assert _count(fn, ps.TrueDiv, in_loop=True) == 1
    assert _count(fn, ps.IntDiv, in_loop=True) == 1
    assert _count(fn, ps.Reciprocal, in_loop=False) == 0


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, empty rewrite cache for the LLVM mode, turned on."""
    fresh = RewriteCache(tmp_path / "rewrites")
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", fresh)
    monkeypatch.delenv("LLVM_BACKEND_REWRITE_CACHE", raising=False)
    return fresh


def test_without_fastmath_divisions_stay_even_when_the_graph_was_cached_with_it(cache):
    out = ((y - mu) / sigma) ** 2 + pt.exp(y) / sigma
    fast = pytensor.function([y, mu, sigma], out, mode="LLVM")
    assert _count(fast, ps.TrueDiv, in_loop=True) == 0
    with pytensor.config.change_flags(numba__fastmath=False):
        fn, _ = _compare(out, rtol=1e-15)
    assert _count(fn, ps.TrueDiv, in_loop=True) == 2
    assert _count(fn, ps.Reciprocal, in_loop=False) == 0
    assert len(cache.entries()) == 2  # numba__fastmath is in the key: the second graph was rewritten anew


def test_the_graph_function_leaves_no_division_to_the_loop():
    """The kernel's own IR, before LLVM optimizes it, divides in the loop only without fast-math. LLVM would
    hoist a reciprocal out of the loop itself under ``arcp``: optimized, one division is left either way."""
    out = (y - mu) / sigma + pt.exp(y) / sigma + pt.log1p(y**2) / sigma
    fdivs = {}
    for fastmath in (True, False):
        with pytensor.config.change_flags(numba__fastmath=fastmath):
            inspection = Inspection(pytensor.function([y, mu, sigma], out, mode="LLVM"))
            fdivs[fastmath] = [
                inspection.stats(stage, kernel_only=True).opcodes.get("fdiv", 0) for stage in ("llvm", "llvm-opt")
            ]
    assert fdivs == {True: [0, 1], False: [3, 3]}


@pytest.mark.parametrize("name", ["eight_schools", "regression_65p"])
def test_a_pymc_log_density_and_gradient_equal_stock(name):
    pytest.importorskip("pymc")
    from llvm_backend_bench.pymc_models import logp_dlogp_graph, pymc_compile

    graph = logp_dlogp_graph(name)
    llvm_fn, numba_fn = pymc_compile(graph, "LLVM"), pymc_compile(graph, "NUMBA")
    [x0] = graph.values
    rng = np.random.default_rng(33)
    for point in (x0, x0 + 0.3, x0 + rng.normal(0, 0.5, x0.size)):
        for got, want in zip(llvm_fn(point), numba_fn(point), strict=True):
            assert_same_result(got, want, name, rtol=1e-12)
