"""Bounds checks of index arrays (`llvm_backend_intrinsics.bounds`) against numpy's IndexError for the same
update: same message, for every integer dtype, layout and rank of index, and for boolean masks."""

import numba
import numpy as np
import pytest
from numba.core import errors

from llvm_backend_intrinsics.bounds import IndexCheck, check_indices

X = np.zeros((3, 4, 2))


def _checker(checks):
    check = check_indices(tuple(checks))

    @numba.njit
    def run(x, *indices):
        check(x, *indices)
        return 0

    return run


def _numpy_error(index) -> str | None:
    try:
        X.copy()[index] = 1.0
    except IndexError as error:
        return str(error)
    return None


INDICES = {
    "in range, negatives": np.array([0, -3, 2, -1]),
    "past the end": np.array([0, 3]),
    "below -n": np.array([-4, 0]),
    "uint8 past the end": np.array([1, 200], dtype=np.uint8),
    "uint64 past intp, -1 to numpy": np.array([2**64 - 1], dtype=np.uint64),
    "uint64 2**63, below -n to numpy": np.array([2**63], dtype=np.uint64),
    "int16 in range": np.array([-3, 2], dtype=np.int16),
    "strided": np.arange(8)[::2],
    "reversed matrix": np.array([[0, 1], [2, 5]])[::-1],
    "fortran matrix": np.asfortranarray(np.array([[0, -1], [-4, 2]])),
    "0-d array": np.array(-4),
    "empty": np.array([], dtype=np.int64),
}


@pytest.mark.parametrize("name", list(INDICES))
def test_an_index_on_axis_0_raises_as_numpy(name):
    index = INDICES[name]
    expected = _numpy_error((index,))
    run = _checker([IndexCheck(0, 0, False)])
    if expected is None:
        assert run(X, index) == 0
        return
    with pytest.raises(IndexError) as caught:
        run(X, index)
    assert str(caught.value) == expected


def test_a_native_integer_and_later_axes_are_checked():
    run = _checker([IndexCheck(0, 0, False), IndexCheck(2, 2, False)])  # x[k, :stop, i]
    assert run(X, -3, 2, np.array([1, -2])) == 0
    with pytest.raises(IndexError, match=r"^index 3 is out of bounds for axis 0 with size 3$"):
        run(X, 3, 2, np.array([0]))
    with pytest.raises(IndexError) as caught:
        run(X, 0, 2, np.array([1, 2]))
    assert str(caught.value) == _numpy_error((0, slice(None), np.array([1, 2])))


@pytest.mark.parametrize("shape", [(3, 4), (3, 5), (2, 4), (4,)])
def test_a_mask_of_the_wrong_shape_raises_as_numpy(shape):
    mask = np.ones(shape, dtype=bool)
    run = _checker([IndexCheck(0, 0, True)] if len(shape) == 2 else [IndexCheck(1, 1, True)])
    index = (mask,) if len(shape) == 2 else (slice(None), mask)
    arguments = (mask,) if len(shape) == 2 else (0, mask)
    expected = _numpy_error(index)
    if expected is None:
        assert run(X, *arguments) == 0
        return
    with pytest.raises(IndexError) as caught:
        run(X, *arguments)
    assert str(caught.value) == expected


def test_a_float_index_or_an_axis_past_x_is_a_typing_error():
    with pytest.raises(errors.TypingError, match="must be an integer array"):
        _checker([IndexCheck(0, 0, False)])(X, np.zeros(2))
    with pytest.raises(errors.TypingError, match="indexes past the 3 axes"):
        _checker([IndexCheck(0, 2, True)])(X, np.ones((2, 2), dtype=bool))
