import numba
import pytest
from numba.core import errors

from llvm_backend_intrinsics.tuples import flatten_tuple


@numba.njit
def flattened(nested):
    return flatten_tuple(nested)


def test_groups_flatten_in_order():
    assert flattened(((1.5, 2), (True,), ())) == (1.5, 2, True)


@pytest.mark.parametrize(
    "nested, message",
    [
        (1.5, "flatten_tuple: expected a tuple of tuples, got float64"),
        (((1, 2), 3.0), "flatten_tuple: item 1 of the tuple is float64, not a tuple"),
    ],
)
def test_a_bad_argument_is_a_typing_error_naming_it(nested, message):
    with pytest.raises(errors.TypingError, match=message):
        flattened(nested)
