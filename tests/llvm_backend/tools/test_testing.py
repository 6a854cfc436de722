import numpy as np
import pytensor.tensor as pt
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.tools.testing import assert_same_result, compare_llvm_numba_and_py


def test_same_result_accepts_equal_values_and_nan():
    assert_same_result(np.array([1.0, np.nan]), np.array([1.0, np.nan]), "nan")


@pytest.mark.parametrize(
    "actual, expected, message",
    [
        (np.array(1.0), np.float64(1.0), "ndarray instead of numpy scalar"),
        (np.array([1.0], dtype="float32"), np.array([1.0]), "dtype float32 instead of float64"),
        (np.zeros((2, 1)), np.zeros((2,)), r"shape \(2, 1\) instead of \(2,\)"),
        (np.array([1.0, 2.0]), np.array([1.0, 2.1]), "Not equal to tolerance"),
        (np.array([1, 2]), np.array([1, 3]), "Arrays are not equal"),
    ],
)
def test_same_result_rejects_differences(actual, expected, message):
    with pytest.raises(AssertionError, match=message):
        assert_same_result(actual, expected, "out")


def test_compare_returns_llvm_results_for_single_and_multiple_outputs():
    x = pt.lvector("x")
    _, single = compare_llvm_numba_and_py([x], x.sum(), [np.arange(5)])
    assert single == 10 and single.dtype == np.int64
    _, (total, doubled) = compare_llvm_numba_and_py([x], [x.sum(), x * 2], [np.arange(3)])
    assert total == 3 and doubled.tolist() == [0, 2, 4]
