"""Shape reads and checks (`llvm_backend_intrinsics.shapes`) against numpy and against stock's SpecifyShape
message, called from ``@njit`` code as the graph function calls them."""

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend_intrinsics.shapes import array_shape, shape_entry, specify_shape, specify_shape_message


@numba.njit(cache=False)
def checked_matrix(x, rows, columns):
    return specify_shape(x, rows, columns)


@numba.njit(cache=False)
def checked_rows(x, rows):
    return specify_shape(x, rows, None)


@functools.cache
def shapes_reader(ndim: int):
    first, last = shape_entry(0), shape_entry(ndim - 1)

    @numba.njit(cache=False)
    def shapes_of(x):
        return array_shape(x), first(x), last(x)

    return shapes_of


def shapes_of(x):
    return shapes_reader(x.ndim)(x)


def test_a_matching_array_comes_back_itself():
    x = np.arange(6.0).reshape(2, 3)
    assert checked_matrix(x, 2, 3) is x
    assert checked_rows(x, np.array(2)) is x
    view = x[:, ::2]
    assert checked_matrix(view, np.int32(2), np.int8(2)) is view


@pytest.mark.parametrize(("rows", "columns", "dim", "expected"), [(3, 3, 0, 3), (2, 4, 1, 4), (5, 7, 0, 5)])
def test_the_first_dimension_that_differs_raises_stocks_assertion(rows, columns, dim, expected):
    x = np.zeros((2, 3))
    with pytest.raises(AssertionError) as raised:
        checked_matrix(x, rows, columns)
    assert raised.value.args == (specify_shape_message(dim, x.shape[dim], expected),)


def test_a_dimension_given_none_is_not_checked():
    x = np.zeros((4, 9))
    assert checked_rows(x, 4) is x
    with pytest.raises(AssertionError, match="dim 0 of input has shape 4, expected 3"):
        checked_rows(x, np.array(3, dtype=np.int32))


def test_the_message_is_stocks_wording():
    assert specify_shape_message(1, 4, 5) == "SpecifyShape: dim 1 of input has shape 4, expected 5."


@pytest.mark.parametrize(
    ("function", "arguments", "match"),
    [
        (lambda x, a: specify_shape(x, a), (np.zeros((2, 2)), 2), "1 sizes for an array of 2 dimensions"),
        (lambda x, a: specify_shape(x, a), (np.zeros(2), 2.0), "dim 0 \\(or None\\) must be an integer"),
        (lambda x, a: specify_shape(x, a), (2.0, 2), "x must be an array"),
        (lambda x, a: shape_entry(2)(x), (np.zeros((2, 2)), 0), "with axis 2"),
        (lambda x, a: array_shape(a), (np.zeros(2), 1), "x must be an array"),
    ],
)
def test_bad_arguments_are_typing_errors(function, arguments, match):
    with pytest.raises(errors.TypingError, match=match):
        numba.njit(cache=False)(function)(*arguments)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=4), st.booleans())
def test_shapes_are_numpys(dims, reverse):
    x = np.zeros(dims)
    x = x.transpose() if reverse else x
    shape, first, last = shapes_of(x)
    assert shape.dtype == np.int64 and shape.flags.c_contiguous
    np.testing.assert_array_equal(shape, np.asarray(x.shape))
    assert first.shape == () and first.dtype == np.int64 and first == x.shape[0]
    assert last.shape == () and last == x.shape[-1]


def test_the_shape_of_a_0d_array_is_an_empty_int64_vector():
    @numba.njit(cache=False)
    def shape(x):
        return array_shape(x)

    got = shape(np.array(1.5))
    assert got.shape == (0,) and got.dtype == np.int64


def test_calls_allocate_only_what_they_return_and_free_it():
    x = np.zeros((3, 2))

    def calls():
        checked_matrix(x, 3, 2)
        shapes_of(x)

    calls()
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(20):
        calls()
    after = rtsys.get_allocation_stats()
    # per round: x's meminfo for each call's argument (numba's unboxing), shapes_of's vector and two boxes
    assert after.mi_alloc - before.mi_alloc == 20 * 5
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
