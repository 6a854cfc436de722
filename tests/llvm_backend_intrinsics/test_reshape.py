"""Reshape views (`llvm_backend_intrinsics.reshape`) against stock's ``np.reshape(np.ascontiguousarray(x), shape)``
in numba (whose inference differs from numpy's for an empty array) and numba's errors, called from ``@njit`` code as
the graph function calls them."""

import functools
import re

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys
from numba.np.unsafe.ndarray import to_fixed_tuple

from llvm_backend_intrinsics.reshape import ITEM_ERROR, LENGTH_ERROR, NEGATIVE_ERROR, SIZE_ERROR, reshape_view


@functools.cache
def reshaper(ndim: int):
    reshape = reshape_view(ndim)
    return numba.njit(cache=False)(lambda x, shape: reshape(x, shape))


@functools.cache
def stock(ndim: int):
    return numba.njit(cache=False)(lambda x, shape: np.reshape(np.ascontiguousarray(x), to_fixed_tuple(shape, ndim)))


@st.composite
def reshapes(draw):
    shape = tuple(draw(st.integers(0, 4)) for _ in range(draw(st.integers(0, 3))))
    x = np.arange(float(np.prod(shape))).reshape(shape)
    layout = draw(st.sampled_from(["C", "F", "reversed", "strided"]))
    if layout == "F":
        x = np.asfortranarray(x)
    elif layout == "reversed" and x.ndim:
        x = x[::-1]
    elif layout == "strided" and x.ndim:
        x = np.repeat(x, 2, axis=-1)[..., ::2]
    new = list(draw(st.permutations(_factors(x.size, draw(st.integers(1, 3))))))
    if new and draw(st.booleans()):
        new[draw(st.integers(0, len(new) - 1))] = -1
    return x, np.array(new, dtype=draw(st.sampled_from([np.int64, np.int32])))


def _factors(size: int, count: int) -> list[int]:
    """``count`` sizes whose product is ``size``."""
    sizes = [1] * count
    for p in (2, 3, 5, 7):
        while size % p == 0 and size > 1:
            sizes[size % count] *= p
            size //= p
    sizes[0] *= size
    return sizes


@settings(max_examples=100, deadline=None)
@given(reshapes())
def test_the_result_is_nps_reshape_and_a_view_of_a_contiguous_x(case):
    x, shape = case
    got = reshaper(len(shape))(x, shape)
    want = stock(len(shape))(x, shape)
    assert got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    if x.size and x.flags.c_contiguous:
        assert np.shares_memory(got, x)
    elif x.size > 1:
        assert not np.shares_memory(got, x)


def test_a_view_writes_through_to_x():
    x = np.zeros(6)
    reshaper(2)(x, np.array([2, 3]))[1, 2] = 5.0
    assert x[5] == 5.0


def test_a_0d_result_reads_the_one_element():
    assert reshaper(0)(np.array([[[7.5]]])[:, ::-1], np.zeros(0, np.int64)) == 7.5
    with pytest.raises(ValueError, match=re.escape(ITEM_ERROR)):
        reshaper(0)(np.zeros(2), np.zeros(0, np.int64))


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ([5, -1], SIZE_ERROR),
        ([4, 4], SIZE_ERROR),
        ([0, -1], SIZE_ERROR),
        ([-1, -1], NEGATIVE_ERROR),
        ([12], LENGTH_ERROR),
    ],
)
def test_a_shape_that_does_not_fit_is_numbas_value_error(shape, message):
    with pytest.raises(ValueError, match=message):
        reshaper(2)(np.arange(12.0), np.array(shape))


@pytest.mark.parametrize(("x", "shape"), [(np.zeros(3), np.zeros(1)), ([1.0], np.zeros(1, np.int64))])
def test_other_arguments_are_a_typing_error(x, shape):
    with pytest.raises(errors.TypingError, match="reshape_view"):
        reshaper(1)(x, shape)


@pytest.mark.parametrize(("x", "allocations"), [(np.zeros((3, 4)), 2), (np.zeros((4, 3)).T, 3)])
def test_a_call_allocates_only_the_copy_of_a_non_contiguous_x(x, allocations):
    reshape, shape = reshaper(1), np.array([-1])
    reshape(x, shape)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        reshape(x, shape)
    after = rtsys.get_allocation_stats()
    assert after.mi_alloc - before.mi_alloc == 10 * allocations  # two unboxed arguments, and the copy
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
