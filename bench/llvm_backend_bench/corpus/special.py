"""Special functions the references need that numba lacks."""

import numpy as np

from llvm_backend_bench.references import fast_njit

__all__ = ["digamma"]


@fast_njit
def digamma(x):
    """The digamma function of ``x > 0``: the recurrence ``psi(x) = psi(x + 1) - 1 / x`` up to 10, then the
    asymptotic series in ``1 / x**2`` to its ``x**-14`` term (truncation error below 1e-15 there)."""
    result = 0.0
    while x < 10.0:
        result -= 1.0 / x
        x += 1.0
    r = 1.0 / x
    result += np.log(x) - 0.5 * r
    r = r * r
    series = 1.0 / 132 - r * (691.0 / 32760 - r / 12)
    series = 1.0 / 12 - r * (1.0 / 120 - r * (1.0 / 252 - r * (1.0 / 240 - r * series)))
    return result - r * series
