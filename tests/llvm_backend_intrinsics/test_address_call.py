"""`llvm_backend_intrinsics.functions.address_call`: a compiled function called through its address, not linked."""

import numba
import numpy as np
import pytest
from numba.core import errors

from llvm_backend_intrinsics.functions import address_call


@numba.njit
def _kernel(x, y):
    if x.shape != y.shape:
        raise ValueError("kernel: shapes differ")
    return (x * y).sum(), x + y


_call_kernel = address_call(_kernel)


@numba.njit
def _through_address(x, y):
    return _call_kernel((x, y))


def test_the_call_returns_what_a_direct_call_returns():
    x, y = np.arange(4.0), np.linspace(0.0, 1.0, 4)
    got, want = _through_address(x, y), _kernel(x, y)
    assert got[0] == want[0]
    np.testing.assert_array_equal(got[1], want[1])


def test_the_callee_raising_raises_in_the_caller():
    with pytest.raises(ValueError, match="kernel: shapes differ"):
        _through_address(np.ones(3), np.ones(2))


def test_the_caller_defines_none_of_the_callee():
    x = np.ones(3)
    _through_address(x, x)
    [caller] = _through_address.overloads.values()
    [callee] = _kernel.overloads.values()
    defined = {f.name for f in caller.library._final_module.functions if not f.is_declaration}
    assert callee.fndesc.llvm_func_name not in defined
    assert callee.fndesc.llvm_func_name not in str(caller.library._final_module)


def test_arguments_not_in_a_tuple_are_a_typing_error():
    @numba.njit
    def bad(x):
        return _call_kernel(x)

    with pytest.raises(errors.TypingError, match="must be a tuple"):
        bad(np.ones(2))


def test_a_callee_with_star_arguments_is_a_typing_error():
    @numba.njit
    def star(*xs):
        return xs[0]

    call = address_call(star)

    @numba.njit
    def bad(x):
        return call((x,))

    with pytest.raises(errors.TypingError, match="one by one"):
        bad(np.ones(2))
