"""scipy's special functions called straight from the graph's module (`llvm_backend_intrinsics.special`): the
values of ``scipy.special`` to the bit (the same ``cython_special`` routines), called from ``@njit`` code."""

import numba
import numpy as np
import pytest
import scipy.special
from numba.core import errors

from llvm_backend_intrinsics.special import double_routine, special_function

psi, gammainc = special_function("psi"), special_function("gammainc")


@numba.njit(cache=False)
def values(x, a):
    out = np.empty((2, x.size))
    for k in range(x.size):
        out[0, k] = psi(x[k])
        out[1, k] = gammainc(a, x[k])
    return out


def test_the_values_are_scipys_to_the_bit():
    x = np.array([1e-8, 0.5, 1.0, 3.7, 250.0, -1.5, 0.0, np.inf, np.nan])
    got = values(x, 2.5)
    np.testing.assert_array_equal(got[0], scipy.special.psi(x))
    np.testing.assert_array_equal(got[1], scipy.special.gammainc(2.5, x))


def test_a_routine_is_found_only_for_doubles_in_and_out():
    assert double_routine("psi", 1) is not None and double_routine("psi", 1).skip_dispatch
    assert double_routine("psi", 2) is None
    assert double_routine("no_such_function", 1) is None


@pytest.mark.parametrize(("function", "argument"), [(psi, np.float32(1.0)), (special_function("nope"), 1.0)])
def test_other_arguments_or_routines_are_a_typing_error(function, argument):
    with pytest.raises(errors.TypingError):
        numba.njit(cache=False)(lambda x: function(x))(argument)
