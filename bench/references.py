"""Hand-written ``@njit`` references: what a careful numba user would write for each benchmark graph.

Each takes the graph's example values (joins take their arrays as one tuple) and returns what the
graph returns; ``tests/llvm_backend/test_bench.py`` checks they agree. They compile with the fast-math
flags PyTensor's numba backend uses by default (``numba__fastmath=True``), so the comparison is fair.
"""

import numpy as np
from numba import njit

__all__ = [
    "concatenate",
    "index_into_scalar_math",
    "logp_grad",
    "max_into_scalar_math",
    "prod_into_scalar_math",
    "sum_into_scalar_math",
]

HALF_LOG_2PI = 0.5 * np.log(2 * np.pi)
FASTMATH = {"arcp", "contract", "afn", "reassoc", "nsz"}
"""``pytensor.link.numba.dispatch.basic.numba_njit``'s flags under ``numba__fastmath=True``."""
fast_njit = njit(fastmath=FASTMATH)
"""``@njit`` with those flags."""


@fast_njit
def concatenate(arrays, axis):
    """``np.concatenate`` of a tuple of arrays."""
    return np.concatenate(arrays, axis=axis)


@fast_njit
def sum_into_scalar_math(x):
    r = x.sum()
    return np.sqrt(r * r + 1.0)


@fast_njit
def max_into_scalar_math(x):
    r = x.max()
    return np.sqrt(r * r + 1.0)


@fast_njit
def prod_into_scalar_math(x):
    r = x.prod()
    return np.sqrt(r * r + 1.0)


@fast_njit
def index_into_scalar_math(x):
    xi = x[3]
    return np.exp(xi) * xi + 1.0


@fast_njit
def _standard_normal_logp(x):
    return -0.5 * x * x - HALF_LOG_2PI


@fast_njit
def logp_grad(mu, log_tau, log_scale, offsets, theta, y, sigma, data):
    """Log-density and gradient of ``llvm_backend.graphs.logp_grad``, one pass, one output allocation.

    The gradient vector is ``[d mu, d log_tau, d log_scale, d offsets..., d theta...]``.
    """
    tau, scale = np.exp(log_tau), np.exp(log_scale)
    location = mu + offsets.sum()
    logp = _standard_normal_logp(mu / 5.0) - np.log(5.0)
    logp += _standard_normal_logp(log_tau) + _standard_normal_logp(log_scale)
    d_location, d_log_tau, d_log_scale = 0.0, -log_tau, -log_scale
    grad = np.empty(3 + offsets.size + theta.size)
    for o in offsets:
        logp += _standard_normal_logp(o)
    for j in range(theta.size):
        s = sigma[j] * scale
        r = (y[j] - location - tau * theta[j]) / s
        logp += _standard_normal_logp(theta[j]) + _standard_normal_logp(r) - np.log(s)
        d_location += r / s
        d_log_tau += r * theta[j] * tau / s
        d_log_scale += r * r - 1.0
        grad[3 + offsets.size + j] = r * tau / s - theta[j]
    sum_r = sum_r2 = 0.0
    for x in data:
        r = (x - location) / scale
        sum_r += r
        sum_r2 += r * r
    logp += -0.5 * sum_r2 - data.size * (log_scale + HALF_LOG_2PI)
    d_location += sum_r / scale
    d_log_scale += sum_r2 - data.size
    grad[0] = d_location - mu / 25.0
    grad[1] = d_log_tau
    grad[2] = d_log_scale
    grad[3 : 3 + offsets.size] = d_location - offsets
    return logp, grad
