"""Diagonals (`llvm_backend_intrinsics.diagonal`) against ``np.diagonal`` over shapes, axes, offsets and the
layouts numba types, called from ``@njit`` code as the graph function calls them."""

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors

from llvm_backend_intrinsics.diagonal import diagonal


@st.composite
def diagonals(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=2, max_size=4)))
    axis1, axis2 = sorted(draw(st.lists(st.integers(0, len(shape) - 1), min_size=2, max_size=2, unique=True)))
    x = np.arange(np.prod(shape), dtype=draw(st.sampled_from([np.float64, np.float32, np.int64]))).reshape(shape)
    layout = draw(st.sampled_from(["C", "F", "reversed", "strided"]))
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "reversed":
        x = x[::-1]
    elif layout == "strided":
        x = np.repeat(x, 2, axis=axis2)[(slice(None),) * axis2 + (slice(None, None, 2),)]
    return x, draw(st.integers(-5, 5)), axis1, axis2


@settings(max_examples=150, deadline=None)
@given(diagonals())
def test_a_diagonal_is_numpys_in_a_new_c_contiguous_array(case):
    x, offset, axis1, axis2 = case
    before = x.copy()
    got = numba.njit(lambda x, take=diagonal(offset, axis1, axis2): take(x))(x)
    want = np.diagonal(x, offset, axis1, axis2)
    assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    assert not np.may_share_memory(got, x)
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize(("x", "axes"), [(np.ones(3), (0, 1)), (np.ones((2, 2)), (0, 2)), (np.ones((2, 2)), (1, 0))])
def test_axes_the_array_does_not_have_in_order_are_a_typing_error(x, axes):
    with pytest.raises(errors.TypingError, match="extract_diag"):
        numba.njit(lambda x, take=diagonal(0, *axes): take(x))(x)
