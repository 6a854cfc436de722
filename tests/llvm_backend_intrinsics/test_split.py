"""Split views (`llvm_backend_intrinsics.split`) against ``np.split`` and stock's checks, called from ``@njit``
code as the graph function calls them."""

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend_intrinsics.split import COUNT_ERROR, NEGATIVE_ERROR, split_sum_message, split_views


@functools.cache
def splitter(axis: int, count: int):
    split = split_views(axis, count)
    return numba.njit(cache=False)(lambda x, sizes: split(x, sizes))


@st.composite
def splits(draw):
    ndim = draw(st.integers(1, 3))
    axis = draw(st.integers(0, ndim - 1))
    sizes = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    shape = [draw(st.integers(0, 3)) for _ in range(ndim)]
    shape[axis] = sum(sizes)
    x = np.arange(float(np.prod(shape))).reshape(shape)
    x = x.T.copy().T if draw(st.booleans()) else x  # Fortran order
    x = x[(slice(None, None, -1),) * ndim] if draw(st.booleans()) else x
    return x, axis, np.array(sizes, dtype=draw(st.sampled_from([np.int64, np.int32, np.int8])))


@settings(max_examples=60, deadline=None)
@given(splits())
def test_the_views_are_np_splits(case):
    x, axis, sizes = case
    got = splitter(axis, len(sizes))(x, sizes)
    want = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert len(got) == len(want)
    for view, expected in zip(got, want, strict=True):
        np.testing.assert_array_equal(view, expected)
        assert view.size == 0 or np.shares_memory(view, x)


def test_a_view_writes_through_to_x():
    x = np.zeros((4, 3))
    splitter(0, 2)(x, np.array([1, 3]))[1][0, 2] = 5.0
    assert x[1, 2] == 5.0


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ([1, 2, 1], COUNT_ERROR),
        ([-1, 5], NEGATIVE_ERROR),
        ([5, -1], NEGATIVE_ERROR),
        ([1, 2], split_sum_message(3, 4)),
    ],
)
def test_bad_sizes_are_stocks_value_errors(sizes, message):
    with pytest.raises(ValueError) as raised:
        splitter(0, 2)(np.zeros((4, 3)), np.array(sizes))
    assert raised.value.args == (message,)


@pytest.mark.parametrize(
    ("axis", "x", "sizes", "match"),
    [
        (2, np.zeros((2, 2)), np.array([1, 1]), "with axis 2"),
        (0, np.zeros(2), np.array([1.0, 1.0]), "integer vector"),
        (0, np.zeros(2), 2, "integer vector"),
    ],
)
def test_bad_arguments_are_typing_errors(axis, x, sizes, match):
    with pytest.raises(errors.TypingError, match=match):
        splitter(axis, 2)(x, sizes)


def test_a_call_allocates_nothing_but_numbas_unboxing():
    split, x, sizes = splitter(1, 2), np.zeros((3, 4)), np.array([1, 3])
    split(x, sizes)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        split(x, sizes)
    after = rtsys.get_allocation_stats()
    assert after.mi_alloc - before.mi_alloc == 10 * 2  # x's and sizes' meminfos; the views are x's
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
