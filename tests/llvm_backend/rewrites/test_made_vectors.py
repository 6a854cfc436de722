"""Elementwise ops and joins of vectors made of scalars, item by item (`llvm_backend.rewrites.made_vectors`): the
py linker's and stock NUMBA's values, one allocation for a gradient assembled from scalars, what is left alone."""

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.fg import FunctionGraph

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.made_vectors import MAX_ITEMS, elemwise_of_make_vector, join_of_make_vector
from llvm_backend.tools.measure import nrt_allocations_per_call
from llvm_backend.tools.testing import compare_llvm_numba_and_py

VALUES = [-np.inf, -2.5, -0.0, 0.0, 1.5, np.inf, np.nan]


def _sums_minus(beta, v, k: int):
    """A logistic regression's gradient by its coefficients: k sums (of ``v`` times a column each) made into a
    vector, minus the coefficients; joined after a length-1 vector of the intercept's."""
    columns = np.arange(k * v.type.shape[0], dtype=float).reshape(k, -1) / 10.0
    made = pt.stack([pt.sum(v * pt.constant(column)) for column in columns])
    return pt.join(0, beta[:1] * 2.0, made - beta[1:] + beta[:1])


def test_a_gradient_assembled_from_scalars_matches_and_allocates_one_vector():
    beta, v = pt.vector("beta", shape=(6,)), pt.vector("v", shape=(30,))
    output = _sums_minus(beta, v, 5)
    rng = np.random.default_rng(2)
    for value in VALUES:
        point = rng.normal(size=6)
        point[3] = value
        compare_llvm_numba_and_py([beta, v], output, [point, rng.normal(size=30)])
    counts = {}
    arguments = (np.linspace(-1, 1, 6), np.linspace(0, 1, 30))
    for mode in ("LLVM", "NUMBA"):
        jit_fn = pytensor.function([beta, v], output, mode=mode).vm.jit_fn
        counts[mode] = nrt_allocations_per_call(lambda jit_fn=jit_fn: jit_fn(*arguments))
    # the two unboxed arguments and the gradient
    assert counts["LLVM"] == 3 < counts["NUMBA"]


def _applies(rewriter, output) -> bool:
    inputs = [var for var in pytensor.graph.traversal.graph_inputs([output]) if var.owner is None and var.name]
    fgraph = FunctionGraph(inputs, [output], clone=False)
    return bool(rewriter.transform(fgraph, output.owner))


def test_what_is_rewritten_and_what_is_left_alone():
    a, b = pt.dscalars("a", "b")
    short, unknown = pt.vector("short", shape=(2,)), pt.dvector("unknown")
    one = pt.vector("one", shape=(1,))
    made = pt.stack([a, b])
    assert _applies(elemwise_of_make_vector, made * short)
    assert _applies(elemwise_of_make_vector, made * one)
    assert not _applies(elemwise_of_make_vector, made * unknown)
    assert not _applies(elemwise_of_make_vector, short * short)
    many = pt.stack([a + i for i in range(MAX_ITEMS + 1)])
    assert not _applies(elemwise_of_make_vector, many * 2.0)
    assert _applies(join_of_make_vector, pt.join(0, one, made))
    assert not _applies(join_of_make_vector, pt.join(0, short, made))
    assert not _applies(join_of_make_vector, pt.join(0, one, short))


def test_values_where_left_alone_and_rewritten():
    a, b = pt.dscalars("a", "b")
    unknown, one = pt.dvector("unknown"), pt.vector("one", shape=(1,))
    made = pt.stack([a, b])
    outputs = [made * unknown, pt.join(0, one, made * one), pt.exp(made) - one]
    for x, y in [(0.5, -1.5), (np.inf, np.nan), (-0.0, 3.0)]:
        compare_llvm_numba_and_py([a, b, unknown, one], outputs, [x, y, np.array([2.0, -1.0]), np.array([0.25])])
