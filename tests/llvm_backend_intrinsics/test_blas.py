"""Matrix products and triangular solves through BLAS (`llvm_backend_intrinsics.blas`) against numpy's ``@`` and
scipy's ``solve_triangular``, over the layouts numba types and the strides BLAS cannot read, called from ``@njit``
code as the graph function calls them."""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys
from scipy import linalg

from llvm_backend_intrinsics.blas import (
    BLAS_SYMBOLS,
    CONFORM_ERROR,
    MISMATCH_ERROR,
    SQUARE_ERROR,
    _capsule,
    matmul,
    triangular_solver,
)


@numba.njit(cache=False)
def product(a, b):
    return matmul(a, b)


def _laid_out(draw, matrix: np.ndarray) -> np.ndarray:
    """``matrix``'s values in one of the layouts a graph hands a product: C or Fortran order, a view reversed or
    strided along an axis, or a row broadcast."""
    rows, cols = matrix.shape
    layout = draw(st.sampled_from(["C", "F", "reversed rows", "reversed columns", "every other column", "broadcast"]))
    if layout == "F":
        return np.asfortranarray(matrix)
    if layout == "reversed rows":
        return np.ascontiguousarray(matrix[::-1])[::-1]
    if layout == "reversed columns":
        return np.ascontiguousarray(matrix[:, ::-1])[:, ::-1]
    if layout == "every other column":
        wide = np.zeros((rows, 2 * cols), dtype=matrix.dtype)
        wide[:, ::2] = matrix
        return wide[:, ::2]
    if layout == "broadcast" and rows > 0:
        return np.broadcast_to(matrix[:1], (rows, cols))
    return matrix


@st.composite
def products(draw):
    m, k, n = (draw(st.integers(0, 6)) for _ in range(3))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = _laid_out(draw, rng.normal(size=(m, k)).astype(dtype))
    b = _laid_out(draw, rng.normal(size=(k, n)).astype(dtype))
    return a, b


@settings(max_examples=120, deadline=None)
@given(products())
def test_the_product_is_numpys(case):
    a, b = case
    got = product(a, b)
    want = a @ b
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    tolerance = 1e-5 if a.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(("m", "k", "n"), [(5, 4, 1), (1, 4, 5), (1, 3, 1), (5, 4, 3)])
def test_the_operands_are_not_written_and_a_nan_output_buffer_does_not_leak_in(m, k, n):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(m, k)), rng.normal(size=(k, n))
    a_before, b_before = a.copy(), b.copy()
    for _ in range(3):  # outputs reuse freed buffers: an uninitialized read would show as a wrong value
        np.testing.assert_allclose(product(a, b), a @ b, rtol=1e-12)
        np.full((m, n), np.nan) @ np.ones((n, n))
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)


@pytest.mark.parametrize(("a", "b"), [(np.ones((2, 3)), np.ones((4, 2))), (np.ones((2, 0)), np.ones((1, 2)))])
def test_mismatched_matrices_are_stocks_value_error(a, b):
    with pytest.raises(ValueError, match=MISMATCH_ERROR):
        product(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (np.ones((2, 3)), np.ones((3, 2), dtype=np.float32)),
        (np.ones((2, 3), dtype=np.int64), np.ones((3, 2), dtype=np.int64)),
        (np.ones(3), np.ones((3, 2))),
    ],
)
def test_other_operands_are_a_typing_error(a, b):
    with pytest.raises(errors.TypingError, match="matmul"):
        product(a, b)


def test_the_symbols_are_scipys_routines():
    for routine, symbol in BLAS_SYMBOLS.items():
        address, signature = _capsule(routine)
        assert numba.core.codegen.ll.address_of_symbol(symbol) == address
        assert signature.startswith("void (char *")
    assert set(BLAS_SYMBOLS) == {"dgemm", "sgemm", "dgemv", "sgemv", "dtrsm", "strsm"}


SOLVERS = {
    (lower, unit): numba.njit(cache=False)(lambda a, b, solver=triangular_solver(lower, unit): solver(a, b))
    for lower in (True, False)
    for unit in (True, False)
}


@st.composite
def triangular_systems(draw):
    n, k = draw(st.integers(0, 6)), draw(st.integers(0, 4))
    dtype = draw(st.sampled_from([np.float64, np.float32]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    a = _laid_out(draw, (rng.normal(size=(n, n)) + 4 * np.eye(n)).astype(dtype))
    b = rng.normal(size=(n, k) if draw(st.booleans()) else n).astype(dtype)
    b = _laid_out(draw, b) if b.ndim == 2 else b[:: draw(st.sampled_from([1, -1]))]
    return a, b, draw(st.booleans()), draw(st.booleans())


@settings(max_examples=150, deadline=None)
@given(triangular_systems())
def test_a_triangular_solve_is_scipys_and_writes_neither_operand(case):
    a, b, lower, unit = case
    a_before, b_before = a.copy(), b.copy()
    got = SOLVERS[lower, unit](a, b)
    want = linalg.solve_triangular(a, b, lower=lower, unit_diagonal=unit)
    assert got.dtype == a.dtype and got.shape == b.shape and got.flags.c_contiguous
    tolerance = 1e-4 if a.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(a, a_before)
    np.testing.assert_array_equal(b, b_before)


@pytest.mark.parametrize("unit", [False, True])
def test_a_zero_pivot_is_all_nan_unless_the_diagonal_is_taken_as_ones(unit):
    a = np.tril(np.ones((3, 3)))
    a[1, 1] = 0.0
    got = SOLVERS[True, unit](a, np.ones((3, 2)))
    if unit:
        np.testing.assert_allclose(got, linalg.solve_triangular(a, np.ones((3, 2)), lower=True, unit_diagonal=True))
    else:
        assert got.shape == (3, 2) and np.isnan(got).all()


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        (np.eye(3), np.ones((2, 2)), CONFORM_ERROR),
        (np.ones((3, 2)), np.ones(2), CONFORM_ERROR),
        (np.ones((3, 2)), np.ones(3), SQUARE_ERROR),
    ],
)
def test_a_system_of_the_wrong_shape_is_stocks_linalg_error(a, b, message):
    with pytest.raises(np.linalg.LinAlgError, match=message):
        SOLVERS[True, False](a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [(np.eye(2), np.ones(2, dtype=np.float32)), (np.eye(2, dtype=np.int64), np.ones(2, dtype=np.int64))],
)
def test_a_system_of_other_dtypes_is_a_typing_error(a, b):
    with pytest.raises(errors.TypingError, match="solve_triangular"):
        SOLVERS[True, False](a, b)


@pytest.mark.parametrize(
    ("call", "a", "b", "allocations"),
    [
        ("product", np.ones((4, 3)), np.ones((3, 2)), 3),  # two unboxed arguments and the output
        ("product", np.ones((4, 6))[:, ::2], np.ones((3, 2)), 4),  # and a copy of the strided operand, released
        ("product", np.ones((4, 6))[:, ::2], np.ones((6, 2))[::-2], 5),  # a copy of each
        ("solve", np.eye(3), np.ones((3, 2)), 3),  # the arguments and the output
        ("solve", np.eye(6)[::2, ::2], np.ones((3, 2)), 4),  # and a copy of the strided system
    ],
)
def test_a_call_allocates_its_output_and_the_copies_blas_needs_only(call, a, b, allocations):
    function = product if call == "product" else SOLVERS[False, False]
    function(a, b)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        function(a, b)
    after = rtsys.get_allocation_stats()
    assert after.mi_alloc - before.mi_alloc == 10 * allocations
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
