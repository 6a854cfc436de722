"""Division by a loop invariant inside our loops: LLVM itself makes it one reciprocal before the loop and a
multiply per element, under the fast-math flags PyTensor's numba backend compiles with (``arcp``), so no rewrite
of ours does it. This checks that property of the optimized kernel, which a change of flags or of our loops'
IR could lose."""

import re

import numpy as np
import pytensor
import pytensor.tensor as pt

import llvm_backend  # noqa: F401
from llvm_backend.tools.inspect_ir import Inspection
from llvm_backend.tools.testing import compare_llvm_numba_and_py

y = pt.dvector("y")
mu, sigma = pt.dscalars("mu", "sigma")
OUT = (y - mu) / sigma + pt.exp(y) / sigma + pt.log1p(y**2) / sigma


def test_three_divisions_by_an_invariant_leave_one_reciprocal_per_copy_of_the_loop():
    """Without fast-math each copy of the loop LLVM makes (a vector body and its scalar remainder, where it
    vectorizes) divides three times per element; with it, each copy computes one reciprocal of ``sigma``."""
    fdivs = {}
    for fastmath in (True, False):
        with pytensor.config.change_flags(numba__fastmath=fastmath):
            compare_llvm_numba_and_py([y, mu, sigma], OUT, [np.linspace(-2.0, 3.0, 13), 0.3, 1.7], rtol=1e-12)
            inspection = Inspection(pytensor.function([y, mu, sigma], OUT, mode="LLVM"))
            kernel = inspection.text("llvm-opt", kernel_only=True)
            fdivs[fastmath] = [line for line in kernel.splitlines() if " fdiv " in line]
    assert fdivs[True] and len(fdivs[False]) == 3 * len(fdivs[True])
    assert all(re.search(r"fdiv [^\n]*(1\.000000e\+00|splat \(double 1\.0+e\+00\)), ", line) for line in fdivs[True])
