import math

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors

from llvm_backend_intrinsics.select import select

DTYPES = ["bool", "int8", "uint8", "int16", "int32", "int64", "uint64", "float32", "float64", "complex128"]


@numba.njit(cache=False)
def selected(condition, x, y):
    return select(condition, x, y)


@numba.njit(cache=False)
def branched(condition, x, y):
    return x if condition else y


def _scalar(dtype, draw):
    kind = np.dtype(dtype).kind
    if kind == "b":
        return np.bool_(draw(st.booleans()))
    if kind in "iu":
        info = np.iinfo(dtype)
        return np.dtype(dtype).type(draw(st.integers(int(info.min), int(info.max))))
    if kind == "c":
        return np.complex128(draw(st.sampled_from([0j, 1 + 2j, -0.0 + 0j])))
    return np.dtype(dtype).type(draw(st.sampled_from([0.0, -0.0, 1.5, -2.25, math.nan, math.inf, 1e30])))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.data())
def test_value_and_type_are_those_of_numbas_conditional_expression(data):
    dtypes = [data.draw(st.sampled_from(DTYPES)) for _ in range(3)]
    condition, x, y = (_scalar(dtype, data.draw) for dtype in dtypes)
    got, want = selected(condition, x, y), branched(condition, x, y)
    assert type(got) is type(want), dtypes
    np.testing.assert_array_equal(got, want, err_msg=str(dtypes))


def test_nan_and_negative_zero_conditions_read_as_python_reads_them():
    assert selected(math.nan, 1, 2) == 1
    assert selected(-0.0, 1, 2) == 2
    assert selected(np.uint64(2**63), 1.5, 2.5) == 1.5


def _unoptimized_body(function) -> str:
    """The body of ``function(float64, int64, float32)`` as numba emits it, before LLVM optimizes it."""
    compiled = numba.njit("float64(float64, int64, float32)", cache=False, _dbg_optnone=True)(function.py_func)
    module = compiled.inspect_llvm(compiled.signatures[0])
    name = function.py_func.__name__
    headers = {f.split("(")[0]: f for f in module.split("\ndefine ")[1:]}
    (body,) = [f for h, f in headers.items() if name in h and "cpython" not in h and "cfunc." not in h]
    return body[: body.index("\n}")]


def test_the_result_is_one_select_without_a_branch():
    body = _unoptimized_body(selected)
    assert body.count(" select ") == 1, body
    assert "br i1" not in body, body
    # what the conditional expression is before LLVM optimizes it
    assert "br i1" in _unoptimized_body(branched)


@pytest.mark.parametrize(
    "args, message",
    [
        ((np.zeros(2), 1.0, 2.0), "select: condition must be a scalar, got array"),
        ((True, (1, 2), 2.0), r"select: x must be a scalar, got UniTuple"),
    ],
)
def test_a_non_scalar_argument_is_a_typing_error_naming_it(args, message):
    with pytest.raises(errors.TypingError, match=message):
        selected(*args)
