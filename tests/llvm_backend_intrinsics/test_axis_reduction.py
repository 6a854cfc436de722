"""Reductions over axes (`llvm_backend_intrinsics.axis_reduction`) against numpy, in both loop orders, on arrays of
any layout, called from ``@njit`` code as the graph function calls them."""

import functools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend_intrinsics.axis_reduction import axis_reduce

NUMPY = {"add": np.add, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum, "or": np.bitwise_or}
IDENTITY = {"add": 0, "mul": 1, "maximum": -np.inf, "minimum": np.inf, "or": False}


@functools.cache
def reducer(axes, op, identity, acc_dtype, out_dtype):
    reduce = axis_reduce(axes, op, identity, acc_dtype, out_dtype)
    return numba.njit(cache=False)(lambda x: reduce(x))


def expected(x, axes, op, acc_dtype, out_dtype):
    return NUMPY[op].reduce(x.astype(acc_dtype), axis=axes, initial=IDENTITY[op]).astype(out_dtype)


@st.composite
def reductions(draw):
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    x = draw(hnp.arrays(np.float64, shape, elements=st.floats(-4, 4, allow_nan=False)))
    order = draw(st.permutations(range(ndim)))
    x = x.transpose(order) if draw(st.booleans()) else x
    x = x[(slice(None, None, -1),) * ndim] if draw(st.booleans()) else x
    axes = tuple(sorted(draw(st.sets(st.integers(0, ndim - 1), min_size=1))))
    return x, axes, draw(st.sampled_from(["add", "mul", "maximum", "minimum"]))


@settings(max_examples=60, deadline=None)
@given(reductions())
def test_float_reductions_are_numpys_in_any_layout(case):
    x, axes, op = case
    got = reducer(axes, op, float(IDENTITY[op]), "float64", "float64")(x)
    want = expected(x, axes, op, "float64", "float64")
    assert got.flags.c_contiguous and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("axes", [(0,), (1,), (0, 1)])
def test_an_accumulator_of_another_dtype_is_cast_once_at_the_end(axes):
    x = np.arange(-6, 6, dtype=np.int8).reshape(3, 4) * 20  # int8 sums would wrap
    got = reducer(axes, "add", 0, "int64", "int16")(x)
    assert got.dtype == np.int16
    np.testing.assert_array_equal(got, expected(x, axes, "add", "int64", "int16"))


@pytest.mark.parametrize("axes", [(0,), (2,), (0, 2)])
def test_bool_reductions_are_numpys(axes):
    x = np.random.default_rng(3).random((3, 4, 2)) > 0.7
    got = reducer(axes, "or", False, "bool", "bool")(x)
    np.testing.assert_array_equal(got, x.any(axis=axes))


def test_nan_propagates_through_max_as_numpys_does():
    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(reducer((1,), "maximum", -np.inf, "float64", "float64")(x), [np.nan, 6.0])
    np.testing.assert_array_equal(reducer((0,), "maximum", -np.inf, "float64", "float64")(x), [4.0, np.nan, 6.0])


def test_an_empty_reduced_extent_gives_the_identity():
    got = reducer((0,), "add", 0.0, "float64", "float64")(np.zeros((0, 3)))
    np.testing.assert_array_equal(got, np.zeros(3))
    assert reducer((1,), "mul", 1.0, "float64", "float64")(np.zeros((0, 3))).shape == (0,)


@pytest.mark.parametrize(
    ("axes", "argument", "match"),
    [((2,), np.zeros((2, 2)), "not distinct axes"), ((0, 0), np.zeros(2), "not distinct axes"), ((0,), 1.0, "array")],
)
def test_bad_arguments_are_typing_errors(axes, argument, match):
    with pytest.raises(errors.TypingError, match=match):
        reducer(axes, "add", 0.0, "float64", "float64")(argument)


@pytest.mark.parametrize("axes", [(0,), (1,)])
def test_a_call_allocates_its_output_only(axes):
    x, reduce = np.ones((5, 3)), reducer(axes, "add", 0.0, "float64", "float64")
    reduce(x)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(10):
        reduce(x)
    after = rtsys.get_allocation_stats()
    assert after.mi_alloc - before.mi_alloc == 10 * 2  # x's meminfo (numba's unboxing) and the output
    assert after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free
