"""The Alloc fill (`llvm_backend_intrinsics.alloc`) against numpy's broadcasting, and stock's errors, called from
``@njit`` code as the graph function calls it."""

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend_intrinsics.alloc import (
    MISMATCH_ERROR,
    NEGATIVE_SIZE_ERROR,
    RUNTIME_BROADCAST_ERROR,
    STEP_ERROR,
    alloc_empty,
    alloc_fill,
    alloc_range,
)


@functools.cache
def filler(broadcast: tuple, n_sizes: int):
    fill = alloc_fill(broadcast)
    names = ", ".join(f"s{k}" for k in range(n_sizes))
    namespace = {"fill": fill}
    exec(f"def filled(value, {names}):\n    return fill(value, {names})\n", namespace)
    return numba.njit(cache=False)(namespace["filled"])


@st.composite
def fills(draw):
    out_shape = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    ndim = draw(st.integers(0, len(out_shape)))
    broadcast = tuple(draw(st.lists(st.booleans(), min_size=ndim, max_size=ndim)))
    tail = out_shape[len(out_shape) - ndim :]
    shape = [1 if flag else length for flag, length in zip(broadcast, tail, strict=True)]
    value = np.arange(float(np.prod(shape))).reshape(shape) - 2.5
    if ndim and draw(st.booleans()):
        value = np.ascontiguousarray(value.T).T  # the same values in Fortran order
    return value, broadcast, out_shape


@settings(max_examples=60, deadline=None)
@given(fills())
def test_a_fill_is_numpys_broadcast(case):
    value, broadcast, out_shape = case
    got = filler(broadcast, len(out_shape))(value, *out_shape)
    assert got.flags.c_contiguous and got.dtype == value.dtype
    np.testing.assert_array_equal(got, np.broadcast_to(value, out_shape))


def test_scalars_and_0d_sizes_and_dtypes():
    got = filler((), 2)(np.int8(3), np.array(2), np.int32(3))
    assert got.dtype == np.int8 and got.shape == (2, 3) and (got == 3).all()
    np.testing.assert_array_equal(filler((), 1)(True, 2), [True, True])


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (np.zeros((2, 3)), MISMATCH_ERROR),
        (np.zeros((1, 3)), RUNTIME_BROADCAST_ERROR),
        (np.zeros((2, 1)), RUNTIME_BROADCAST_ERROR),
    ],
)
def test_a_value_that_does_not_fit_is_stocks_value_error(value, message):
    with pytest.raises(ValueError) as raised:
        filler((False, False), 2)(value, 4, 3)
    assert str(raised.value) == message


def test_a_negative_size_is_a_value_error():
    with pytest.raises(ValueError, match="negative dimensions"):
        filler((), 2)(1.0, -1, 3)


@pytest.mark.parametrize(
    ("broadcast", "value", "match"),
    [((False,), np.zeros((2, 2)), "2 axes with 1 broadcast flags"), ((), "a", "value must be a number")],
)
def test_bad_arguments_are_typing_errors(broadcast, value, match):
    with pytest.raises(errors.TypingError, match=match):
        filler(broadcast, 1)(value, 2)


def test_a_call_allocates_its_output_only():
    fill, value = filler((False,), 2), np.arange(3.0)
    fill(value, 4, 3)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        fill(value, 4, 3)
    after = rtsys.get_allocation_stats()
    assert after.mi_alloc - before.mi_alloc == 10 * 2  # the value's meminfo (numba's unboxing) and the output
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_])
def test_an_empty_array_has_the_shape_and_dtype_asked_for(dtype):
    empty = alloc_empty(np.dtype(dtype))
    made = numba.njit(cache=False)(lambda n, m: empty(n, m))(3, np.array(2, dtype=np.int8))
    assert made.shape == (3, 2) and made.dtype == dtype and made.flags.c_contiguous


def test_an_empty_array_of_a_negative_size_is_numbas_value_error_and_a_float_size_a_typing_error():
    empty = alloc_empty(np.dtype(np.float64))
    made = numba.njit(cache=False)(lambda n: empty(n, 2))
    with pytest.raises(ValueError, match=NEGATIVE_SIZE_ERROR):
        made(-1)
    with pytest.raises(errors.TypingError, match="alloc_empty: size 0"):
        made(1.5)


def test_a_negative_size_is_a_value_error_in_a_function_called_from_another():
    """numba's allocator, given a negative size, left an error its caller's caller reported as a SystemError."""
    empty, fill = alloc_empty(np.dtype(np.float64)), alloc_fill(())

    @numba.njit(cache=False)
    def inner(n):
        return empty(n, 2), fill(1.0, 2, n)

    outer = numba.njit(cache=False)(lambda n: inner(n))
    with pytest.raises(ValueError, match=NEGATIVE_SIZE_ERROR):
        outer(-1)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(-20, 20),
    st.integers(-20, 20),
    st.integers(-7, 7).filter(bool),
    st.sampled_from(["int64", "int32", "int8", "float64", "float32"]),
)
def test_a_range_is_numpys(start, stop, step, dtype):
    got = _arange(np.dtype(dtype))(start, np.array(stop, dtype=np.int32), np.int16(step))
    want = np.arange(start, stop, step, dtype=dtype)
    assert got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


def test_a_zero_step_is_numbas_value_error_and_unsigned_bounds_a_typing_error():
    with pytest.raises(ValueError, match=STEP_ERROR):
        _arange(np.dtype("int64"))(0, 3, 0)
    with pytest.raises(errors.TypingError, match="alloc_range: stop must be a signed integer"):
        _arange(np.dtype("int64"))(0, np.uint64(3), 1)


@functools.cache
def _arange(dtype):
    return numba.njit(lambda start, stop, step, arange=alloc_range(dtype): arange(start, stop, step))
