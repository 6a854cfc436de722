"""Division by a loop invariant inside our loops: LLVM itself makes it one reciprocal before the loop and a
multiply per element, under the fast-math flags PyTensor's numba backend compiles with (``arcp``), so no rewrite
of ours does it. This checks that property of the optimized kernel, which a change of flags or of our loops'
IR could lose."""

import numpy as np
import pytensor
import pytensor.tensor as pt

import llvm_backend  # noqa: F401
from llvm_backend.tools.inspect_ir import Inspection
from llvm_backend.tools.testing import compare_llvm_numba_and_py

y = pt.dvector("y")
mu, sigma = pt.dscalars("mu", "sigma")
OUT = (y - mu) / sigma + pt.exp(y) / sigma + pt.log1p(y**2) / sigma


def test_three_divisions_by_an_invariant_leave_one_division_in_the_optimized_kernel():
    fdivs = {}
    for fastmath in (True, False):
        with pytensor.config.change_flags(numba__fastmath=fastmath):
            compare_llvm_numba_and_py([y, mu, sigma], OUT, [np.linspace(-2.0, 3.0, 13), 0.3, 1.7], rtol=1e-12)
            inspection = Inspection(pytensor.function([y, mu, sigma], OUT, mode="LLVM"))
            fdivs[fastmath] = inspection.stats("llvm-opt", kernel_only=True).opcodes.get("fdiv", 0)
    assert fdivs == {True: 1, False: 3}
