"""A product's factors that do not vary along the loop multiplied together once (`llvm_backend.rewrites.products`)
and kept so by the loop (its float scalar inputs through ``llvm.arithmetic.fence``, `llvm_backend_intrinsics.loops`):
the py linker's and stock NUMBA's values; one multiply per item in the optimized loop; what is left alone."""

import re

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.products import product_of_invariant_factors
from llvm_backend.tools.inspect_ir import Inspection
from llvm_backend.tools.testing import compare_llvm_numba_and_py

N = 37


def _rewritten(inputs, output):
    """What `product_of_invariant_factors` makes of ``output``'s own node, on the graph as built."""
    fgraph = FunctionGraph(inputs, [output], clone=False)
    return product_of_invariant_factors.transform(fgraph, output.owner)


def _vector_ops(fn, opcode: str) -> int:
    """The vector ``opcode`` instructions of ``fn``'s optimized kernel."""
    text = Inspection(fn).text("llvm-opt", kernel_only=True)
    return len(re.findall(rf"= {opcode} [a-z ]*<\d+ x double>", text))


def _vector_stores(fn) -> int:
    text = Inspection(fn).text("llvm-opt", kernel_only=True)
    return len(re.findall(r"store <\d+ x double>", text))


def test_a_scatter_of_scaled_residuals_multiplies_once_per_item():
    """PyTensor's gradient by a hierarchical model's offsets: ``(r * sigma_a) / sigma_y``."""
    r, a, b = pt.dvector("r"), pt.dscalar("a"), pt.dscalar("b")
    output = (r * a) / b
    [rewritten] = _rewritten([r, a, b], output)
    assert isinstance(rewritten.owner.op.scalar_op, ps.Mul)
    values = np.linspace(-2.0, 3.0, N)
    fn, _ = compare_llvm_numba_and_py([r, a, b], output, [values, 1.3, 0.7], rtol=1e-14)
    assert _vector_stores(fn) > 0
    assert _vector_ops(fn, "fmul") == _vector_stores(fn)
    assert _vector_ops(fn, "fdiv") == 0


def test_nested_products_and_quotients():
    x, y, a, b, c = pt.dvector("x"), pt.dvector("y"), pt.dscalar("a"), pt.dscalar("b"), pt.dscalar("c")
    output = ((x * a) * (y / b)) / (c * x)
    assert _rewritten([x, y, a, b, c], output)
    values = [np.linspace(1.0, 3.0, N), np.linspace(-1.0, 2.0, N), 1.5, -0.25, 4.0]
    compare_llvm_numba_and_py([x, y, a, b, c], output, values, rtol=1e-13)


def test_a_matrix_by_a_row_of_invariants_along_its_loop():
    """Factors broadcastable along every axis the product is not: a ``(1, 1)`` factor of an ``(n, m)`` product."""
    m, s, t = pt.matrix("m", shape=(5, 3)), pt.matrix("s", shape=(1, 1)), pt.dscalar("t")
    output = m * s * t
    assert _rewritten([m, s, t], output)
    rng = np.random.default_rng(3)
    compare_llvm_numba_and_py([m, s, t], output, [rng.normal(size=(5, 3)), rng.normal(size=(1, 1)), 2.0], rtol=1e-14)


def test_float32():
    r, a, b = pt.fvector("r"), pt.fscalar("a"), pt.fscalar("b")
    output = (r * a) / b
    assert _rewritten([r, a, b], output)
    values = [np.linspace(-2.0, 3.0, N, dtype="float32"), np.float32(1.3), np.float32(0.7)]
    compare_llvm_numba_and_py([r, a, b], output, values, rtol=1e-5)


@pytest.mark.slow
def test_what_is_left_alone():
    """One invariant factor, a factor product used besides, factors varying along an axis, integers, a product
    already grouped (so the rewrite never rewrites what it wrote); each compiled to py's and stock's values."""
    x, a, b = pt.dvector("x"), pt.dscalar("a"), pt.dscalar("b")
    m, row = pt.dmatrix("m"), pt.row("row")
    shared = x * a
    quotient = shared / b
    one, along_axis, grouped = x * a, m * row * a, x * (a / b)
    left_alone = [
        ([x, a], one, one, [np.linspace(0, 1, N), 2.0]),
        ([x, a, b], quotient, quotient + shared, [np.linspace(0, 1, N), 2.0, 3.0]),
        ([m, row, a], along_axis, along_axis, [np.ones((4, 3)), np.full((1, 3), 2.0), 3.0]),
        ([x, a, b], grouped, grouped, [np.linspace(0, 1, N), 2.0, 3.0]),
    ]
    for inputs, product, output, values in left_alone:
        fgraph = FunctionGraph(inputs, [output], clone=False)
        assert not product_of_invariant_factors.transform(fgraph, product.owner)
        compare_llvm_numba_and_py(inputs, output, values, rtol=1e-14)
    k, j, i = pt.lvector("k"), pt.lscalar("j"), pt.lscalar("i")
    product = k * j * i
    assert not _rewritten([k, j, i], product)
    compare_llvm_numba_and_py([k, j, i], product, [np.arange(N), np.int64(3), np.int64(-2)])
