import operator
from functools import reduce

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.rewriting.scalarize import ScalarizedElemwise

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.hoist import split_invariant
from llvm_backend.tools.graphs import logp_grad
from llvm_backend.tools.testing import compare_llvm_numba_and_py, rewritten_graph


def _loops(fn):
    """Elemwise-like nodes of ``fn``'s graph with a non-broadcastable input (the ones with a loop)."""
    return [
        node
        for node in fn.maker.fgraph.apply_nodes
        if isinstance(node.op, Elemwise | ScalarizedElemwise | FusedElemwise)
        and any(not all(getattr(i.type, "broadcastable", (True,))) for i in node.inputs)
    ]


def test_invariant_math_leaves_the_loop():
    a, b, c = pt.dscalars("a", "b", "c")
    x = pt.dvector("x")
    out = (a * b + pt.exp(c)) * x + pt.log(a)
    fn, _ = compare_llvm_numba_and_py([a, b, c, x], out, [1.5, -2.0, 0.25, np.linspace(-1, 1, 7)])
    [loop] = _loops(fn)
    assert len(loop.inputs) == 3  # x and the two hoisted values


def test_invariant_operands_of_a_flattened_add_are_grouped():
    # A chain: the py reference keeps it (numpy ufuncs take at most 32 operands); fusion flattens it.
    scalars = pt.dscalars(*(f"s{i}" for i in range(40)))
    x = pt.dvector("x")
    out = reduce(operator.add, [*scalars, x]) * x
    values = [0.1 * i for i in range(40)] + [np.arange(5.0)]
    fn, _ = compare_llvm_numba_and_py([*scalars, x], out, values, rtol=1e-12)
    [loop] = _loops(fn)
    assert len(loop.inputs) == 2
    stock = rewritten_graph(out, [*scalars, x], mode="NUMBA")
    assert max(len(n.inputs) for n in stock.apply_nodes if isinstance(n.op, Elemwise)) == 41


def test_mixed_dtypes_are_not_regrouped():
    i, j = pt.iscalars("i", "j")
    x = pt.fvector("x")
    out = (i + j + x) * x
    compare_llvm_numba_and_py([i, j, x], out, [np.int32(3), np.int32(-7), np.arange(4, dtype="float32")])


@pytest.mark.slow
def test_the_60_scalar_model_loop_takes_few_inputs():
    graph = logp_grad(n_scalars=60)
    fn, _ = compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values, rtol=1e-10)
    assert max(len(node.inputs) for node in _loops(fn)) <= 10


def _composite():
    i0, i1, i2 = ps.float64("i0"), ps.float64("i1"), ps.float64("i2")
    shared = i0 * i1
    return ps.Composite([i0, i1, i2], [ps.exp(shared) + i2, shared, i2 * i2 + i0])


@pytest.mark.slow
@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=3, max_size=3))
def test_split_computes_the_same_outputs(values):
    composite = _composite()
    hoisted, hoisted_inputs, loop, loop_inputs = split_invariant(composite, {0, 1})
    assert hoisted_inputs == [0, 1] and loop_inputs == [0, 2]
    assert hoisted.nout == 2  # exp(i0 * i1) for the loop and i0 * i1, an output
    invariant = hoisted.impl(*(values[i] for i in hoisted_inputs))
    got = loop.impl(*(values[i] for i in loop_inputs), *invariant)
    np.testing.assert_allclose(got, composite.impl(*values), rtol=1e-15)


def test_nothing_to_hoist_is_none():
    i0, i1 = ps.float64("i0"), ps.float64("i1")
    assert split_invariant(ps.Composite([i0, i1], [i0 * i1 + i1]), {0}) is None


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 31])
def test_broadcast_matrix_invariants(n):
    scalars = [pt.dscalar(f"s{i}") for i in range(n)]
    row = pt.row("row")
    m = pt.dmatrix("m")
    out = pt.exp(pt.add(*scalars) * row) * m + pt.sqr(scalars[0])
    values = [0.01 * i for i in range(n)] + [np.ones((1, 3)), np.arange(6.0).reshape(2, 3)]
    compare_llvm_numba_and_py([*scalars, row, m], out, values, rtol=1e-12)
