"""The powi builtins (``llvm_backend.builtins``): a float raised to a cast integer under fast-math compiles to a
call of ``__powidf2``/``__powisf2``, which numba's JIT cannot resolve (the process aborts, under stock NUMBA
too). Found by the fuzzer (seed 7, graph 176: ``pt.pow(v8, pt.cast(x0, "float64"))`` of an int8 ``x0``)."""

import subprocess
import sys
import textwrap

import llvmlite.binding as llvm
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.builtins import POWI, powi_symbols

POW_OF_A_CAST = textwrap.dedent(
    """
    import numpy as np, pytensor, pytensor.tensor as pt
    from pytensor.compile.mode import Mode
    import llvm_backend

    k = pt.vector("k", dtype="{integer}")
    x = pt.cast(k, "{real}")
    out = (x + 1.5) ** x
    values = np.array([1, 2, 3, -2, 0], dtype="{integer}")
    expected = pytensor.function([k], out, mode=Mode(linker="py"))(values)
    for mode in ("LLVM", "NUMBA"):
        got = pytensor.function([k], out, mode=mode)(values)
        assert got.dtype == expected.dtype, (mode, got.dtype)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    print("computed")
    """
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("integer", "real"), [("int8", "float64"), ("int32", "float64"), ("int8", "float32"), ("int16", "float32")]
)
def test_a_float_raised_to_a_cast_integer_computes_instead_of_aborting(integer, real):
    # in a child process: without the builtins the process aborts, which would take pytest with it
    source = POW_OF_A_CAST.format(integer=integer, real=real)
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "computed"


def test_the_builtins_resolve_once_provided():
    assert all(llvm.address_of_symbol(name) for name in POWI)
    assert powi_symbols() == {}
