"""Writes through a basic index (`llvm_backend_intrinsics.updates`) against numpy's ``z[indices] = y`` and
``+= y``, with numba's bounds checks and stock's ValueError, called from ``@njit`` code as the graph function calls
them."""

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend_intrinsics.updates import VALUE_BROADCAST_ERROR, basic_update


@functools.cache
def updater(entries: tuple, kind: str, inplace: bool):
    update = basic_update(entries, kind, inplace)
    return numba.njit(cache=False)(lambda x, y, arguments: update(x, y, *arguments))


@st.composite
def updates(draw):
    """``(x, entries, arguments, numpy's index)``: per axis of ``x`` taken, an integer or a slice of bounds and a
    step that may be absent."""
    shape = tuple(draw(st.integers(1, 4)) for _ in range(draw(st.integers(1, 3))))
    x = np.arange(float(np.prod(shape))).reshape(shape)
    x = np.asfortranarray(x) if draw(st.booleans()) else x
    entries, arguments, index = [], [], []
    for length in shape[: draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()):
            position = draw(st.integers(-length, length - 1))
            entries.append(len(arguments))
            arguments.append(position)
            index.append(position)
            continue
        parts = [draw(st.none() | st.integers(-5, 5)) for _ in range(2)] + [
            draw(st.none() | st.sampled_from([-2, -1, 1, 2]))
        ]
        entry = []
        for part in parts:
            entry.append(None if part is None else len(arguments))
            if part is not None:
                arguments.append(part)
        entries.append(tuple(entry))
        index.append(slice(*parts))
    return x, tuple(entries), tuple(arguments), tuple(index)


@settings(max_examples=100, deadline=None)
@given(updates(), st.sampled_from(["set", "inc"]), st.sampled_from(["scalar", "array", "broadcast row"]), st.booleans())
def test_an_update_is_numpys(case, kind, value, inplace):
    x, entries, arguments, index = case
    view = x[index]
    y = {"scalar": 2.5, "array": np.arange(1.0, 1.0 + np.size(view)).reshape(np.shape(view))}.get(value)
    if y is None:
        y = np.arange(1.0, 1.0 + np.shape(view)[-1]) if np.ndim(view) else 4.0
    want = x.copy()
    if kind == "set":
        want[index] = y
    else:
        want[index] += y
    buffer = x.copy(order="A")
    got = updater(entries, kind, inplace)(buffer, y, arguments)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(buffer, want if inplace else x)
    assert np.shares_memory(got, buffer) == inplace


def test_an_integer_out_of_bounds_is_numbas_index_error_and_nothing_is_written():
    x = np.zeros((3, 2))
    with pytest.raises(IndexError, match="index is out of bounds"):
        updater(((None, None, None), 0), "set", True)(x, 1.0, (2,))
    with pytest.raises(IndexError, match="index is out of bounds"):
        updater((0,), "inc", True)(x, np.ones(2), (-4,))
    np.testing.assert_array_equal(x, 0.0)


def test_a_value_that_does_not_fit_is_stocks_value_error_and_nothing_is_written():
    x = np.zeros((3, 2))
    with pytest.raises(ValueError, match=VALUE_BROADCAST_ERROR):
        updater(((0, None, None),), "inc", True)(x, np.ones((3, 2)), (1,))
    np.testing.assert_array_equal(x, 0.0)


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.zeros(3, dtype=bool), 1.0, "x must be an array of numbers"),
        (np.zeros(3), np.ones((2, 2)), "y must be"),
        (np.zeros(3), "a", "y must be"),
    ],
)
def test_other_arguments_are_a_typing_error(x, y, message):
    with pytest.raises(errors.TypingError, match=message):
        updater((0,), "set", False)(x, y, (1,))


@pytest.mark.parametrize(("inplace", "allocations"), [(True, 2), (False, 3)])
def test_an_update_allocates_only_the_copy_it_writes_into(inplace, allocations):
    update, x, y = updater(((0, None, None),), "inc", inplace), np.zeros(5), np.ones(3)
    update(x, y, (2,))
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        update(x, y, (2,))
    after = rtsys.get_allocation_stats()
    assert after.mi_alloc - before.mi_alloc == 10 * allocations  # the two unboxed arrays, and the copy
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
