"""Cumulative sums and products (`llvm_backend_intrinsics.cumulative`) against ``np.cumsum`` and ``np.cumprod``,
to the bit, over layouts and axes, called from ``@njit`` code as the graph function calls them."""

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors

from llvm_backend_intrinsics.cumulative import cumulative


@functools.cache
def cumulator(axis: int, mode: str):
    cumulate = cumulative(axis, mode)
    return numba.njit(cache=False)(lambda x: cumulate(x))


@st.composite
def arrays(draw):
    shape = tuple(draw(st.integers(0, 4)) for _ in range(draw(st.integers(1, 3))))
    x = np.random.default_rng(draw(st.integers(0, 2**16))).normal(size=shape)
    x = x.astype(draw(st.sampled_from([np.float64, np.float32])))
    layout = draw(st.sampled_from(["C", "F", "reversed"]))
    x = np.asfortranarray(x) if layout == "F" else x[::-1] if layout == "reversed" else x
    return x, draw(st.integers(0, x.ndim - 1))


@settings(max_examples=100, deadline=None)
@given(arrays(), st.sampled_from(["add", "mul"]))
def test_the_values_are_numpys_to_the_bit(case, mode):
    x, axis = case
    got = cumulator(axis, mode)(x)
    want = (np.cumsum if mode == "add" else np.cumprod)(x, axis=axis)
    assert got.dtype == x.dtype and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(("axis", "mode", "x"), [(1, "add", np.zeros(3)), (0, "max", np.zeros(3)), (0, "add", [1.0])])
def test_other_arguments_are_a_typing_error(axis, mode, x):
    with pytest.raises(errors.TypingError, match="cumulative"):
        cumulator(axis, mode)(x)
