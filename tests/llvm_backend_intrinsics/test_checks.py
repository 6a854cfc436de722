"""Checked conditions (`llvm_backend_intrinsics.checks`): the value when every condition holds, else the given
exception and message for the first false one, called from ``@njit`` code as the graph function calls them."""

import numba
import numpy as np
import pytest
from numba.core import errors

from llvm_backend_intrinsics.checks import check_and_raise


class ParameterError(ValueError):
    """An exception class of a library's own, as PyMC's ``ParameterValueError``."""


first, second = check_and_raise(ParameterError, "first"), check_and_raise(TypeError, "second")


@numba.njit(cache=False)
def checked(x, a, b):
    return second(first(x, a, b), b)


@pytest.mark.parametrize("a", [True, np.array(True), 2.0, np.array(1, dtype=np.int8)])
def test_the_value_comes_back_when_every_condition_holds(a):
    x = np.arange(3.0)
    assert checked(x, a, np.array(True)) is x


@pytest.mark.parametrize(
    ("a", "b", "error", "message"),
    [
        (False, np.array(True), ParameterError, "first"),
        (np.array(False), np.array(False), ParameterError, "first"),
        (0.0, np.array(True), ParameterError, "first"),
        (True, np.array(False), ParameterError, "first"),
    ],
)
def test_the_first_false_condition_raises_its_exception(a, b, error, message):
    with pytest.raises(error, match=message):
        checked(np.zeros(2), a, b)


def test_a_condition_that_is_not_a_scalar_is_a_typing_error():
    with pytest.raises(errors.TypingError, match="condition 0 must be a scalar"):
        checked(np.zeros(2), np.ones(2), True)
