"""Bad input reaches the LLVM mode's functions as it reaches stock's: same exception types, no crash."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.tools.testing import PY_MODE, assert_same_result

MODES = ["NUMBA", "LLVM"]


def _outcome(fn, value):
    try:
        return fn(value)
    except Exception as error:  # the exception's type is the outcome under comparison
        return type(error)


@pytest.mark.parametrize(
    "value",
    [np.arange(3), np.ones((2, 2)), "abc", np.ones(3, dtype="float32"), [1.0, 2.0], np.array([np.nan, np.inf])],
    ids=["int64", "matrix", "string", "float32", "list", "nan-inf"],
)
def test_wrong_arguments_behave_as_under_stock(value):
    x = pt.dvector("x")
    outcomes = [
        _outcome(pytensor.function([x], pt.concatenate([x, x[::-1]]) * x.sum(), mode=mode), value) for mode in MODES
    ]
    if isinstance(outcomes[0], type):
        assert outcomes[1] is outcomes[0]
    else:
        assert_same_result(outcomes[1], outcomes[0], f"argument {value!r}")


def test_join_of_500_inputs():
    xs = [pt.dvector(f"x{i}") for i in range(500)]
    values = [np.full(i % 3, float(i)) for i in range(500)]
    out = pt.concatenate(xs) * 2
    got = pytensor.function(xs, out, mode="LLVM")(*values)
    assert_same_result(got, pytensor.function(xs, out, mode=PY_MODE)(*values), "500-input join")
