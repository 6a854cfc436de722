"""Reads and updates by leading integer index arrays (`llvm_backend_intrinsics.indexed`) against numpy's indexing
and ``np.add.at``, with stock's errors, called from ``@njit`` code as the graph function calls them."""

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend_intrinsics.bounds import IndexCheck
from llvm_backend_intrinsics.indexed import INDEX_BROADCAST_ERROR, VALUE_BROADCAST_ERROR, indexed_access


@functools.cache
def accessor(kind: str, count: int, inplace: bool = False, checked: bool = True):
    checks = tuple(IndexCheck(k, k, False) for k in range(count)) if checked else ()
    access = indexed_access(kind, checks, inplace)
    if kind == "read":
        return numba.njit(cache=False)(lambda x, indices: access(x, *indices))
    return numba.njit(cache=False)(lambda x, y, indices: access(x, y, *indices))


@st.composite
def accesses(draw, unique: bool = False):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    count = draw(st.integers(1, ndim))
    index_ndim = draw(st.integers(1, 2))
    broadcast = tuple(draw(st.integers(0, 3)) for _ in range(index_ndim))
    dtype = draw(st.sampled_from([np.int64, np.int32, np.uint8, np.int8]))
    indices = []
    for k in range(count):
        index_shape = tuple(1 if draw(st.booleans()) else n for n in broadcast)
        low = 0 if np.dtype(dtype).kind == "u" else -shape[k]
        seed = draw(st.integers(0, 2**16))
        indices.append(np.random.default_rng(seed).integers(low, shape[k], size=index_shape).astype(dtype))
    x = np.arange(float(np.prod(shape))).reshape(shape)
    x = x.T.copy().T if draw(st.booleans()) else x
    if unique:  # one index array of distinct positions: numpy's set has no order to follow
        indices = [np.random.default_rng(0).permutation(shape[0])[: draw(st.integers(0, shape[0]))]]
    return x, tuple(indices)


@settings(max_examples=80, deadline=None)
@given(accesses())
def test_a_read_is_numpys_indexing(case):
    x, indices = case
    got = accessor("read", len(indices))(x, indices)
    want = x[indices]
    assert got.shape == want.shape and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


@settings(max_examples=80, deadline=None)
@given(accesses(), st.booleans(), st.booleans())
def test_an_increment_is_add_at_duplicates_included(case, scalar, inplace):
    x, indices = case
    shape = x[indices].shape
    y = 1.5 if scalar else np.arange(1.0, 1.0 + shape[-1]) if shape and shape[-1] else np.ones(shape)
    want = x.copy()
    np.add.at(want, indices, np.broadcast_to(y, shape))  # numpy 2.5's add.at misreads a y it must broadcast
    buffer = x.copy()
    got = accessor("inc", len(indices), inplace)(buffer, y, indices)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(buffer, want if inplace else x)
    assert np.shares_memory(got, buffer) == (inplace and got.size > 0)


@settings(max_examples=40, deadline=None)
@given(accesses(unique=True))
def test_a_set_is_numpys_assignment(case):
    x, indices = case
    y = np.arange(100.0, 100.0 + x[indices].size).reshape(x[indices].shape)
    want = x.copy()
    want[indices] = y
    np.testing.assert_array_equal(accessor("set", 1)(x, y, indices), want)


@pytest.mark.parametrize("kind", ["read", "inc"])
def test_an_index_out_of_range_is_numpys_index_error_and_nothing_is_written(kind):
    x = np.zeros((3, 2))
    before = x.copy()
    arguments = (x,) if kind == "read" else (x, 1.0)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        accessor(kind, 1, inplace=True)(*arguments, (np.array([0, 3]),))
    with pytest.raises(IndexError, match="index -3 is out of bounds for axis 1 with size 2"):
        accessor(kind, 2, inplace=True)(*arguments, (np.array([0, 1]), np.array([1, -3])))
    np.testing.assert_array_equal(x, before)


def test_indices_that_do_not_broadcast_and_a_value_that_does_not_fit_are_stocks_value_errors():
    x = np.zeros((3, 3))
    with pytest.raises(ValueError, match=INDEX_BROADCAST_ERROR):
        accessor("read", 2)(x, (np.array([0, 1]), np.array([0, 1, 2])))
    with pytest.raises(ValueError, match=VALUE_BROADCAST_ERROR):
        accessor("inc", 1, inplace=True)(x, np.ones(2), (np.array([0, 1]),))
    np.testing.assert_array_equal(x, 0.0)


@pytest.mark.parametrize(
    ("kind", "arguments", "message"),
    [
        ("read", (np.zeros(3), (np.array([0.0]),)), "must be an integer array"),
        ("read", (np.zeros((3, 3)), (np.array([0]), np.array([[0]]))), "one ndim"),
        ("read", (np.zeros(3), (np.array([0]), np.array([0]))), "2 index arrays for the 1 axes"),
        ("inc", (np.zeros(3), np.ones((2, 2)), (np.array([0, 1]),)), "y must be"),
    ],
)
def test_other_arguments_are_a_typing_error(kind, arguments, message):
    with pytest.raises(errors.TypingError, match=message):
        accessor(kind, len(arguments[-1]), checked=False)(*arguments)


def test_a_read_allocates_its_output_only():
    read, x, indices = accessor("read", 2), np.zeros((4, 3)), (np.array([[0], [1]]), np.array([[2], [0]]))
    read(x, indices)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        read(x, indices)
    after = rtsys.get_allocation_stats()
    assert after.mi_alloc - before.mi_alloc == 10 * 4  # three unboxed arguments and the output
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
