"""Hand-written ``@njit`` references: what a careful numba user would write for each benchmark graph.

Each takes the graph's example values (joins take their arrays as one tuple) and returns what the
graph returns; ``tests/llvm_backend_bench/test_bench.py`` checks they agree. They compile with the fast-math
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
    "regression",
    "sum_into_scalar_math",
    "sum_of_sums",
    "times_two",
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
def times_two(arrays):
    """``x * 2`` of each array of a tuple, as a list."""
    return [x * 2.0 for x in arrays]


@fast_njit
def sum_of_sums(arrays):
    """The sum of every array's sum, over a tuple of arrays."""
    total = 0.0
    for x in arrays:
        total += x.sum()
    return np.asarray(total)


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
def fused_sum(x):
    total = 0.0
    for v in x:
        total += v * 2.0 + 1.0
    return np.asarray(total)


@fast_njit
def multi_sum(x, ys):
    """One tight loop per sum, accumulating in a register (the data fits in cache)."""
    out = []
    for y in ys:
        total = 0.0
        for j in range(x.shape[0]):
            total += x[j] * y[j]
        out.append(np.asarray(total))
    return out


@fast_njit
def index_into_scalar_math(x):
    xi = x[3]
    return np.exp(xi) * xi + 1.0


@fast_njit
def _standard_normal_logp(x):
    return -0.5 * x * x - HALF_LOG_2PI


@fast_njit
def logp_grad(mu, log_tau, log_scale, offsets, theta, y, sigma, data):
    """Log-density and gradient of ``llvm_backend.tools.graphs.logp_grad``, one pass, one output allocation.

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


@fast_njit
def regression(intercept, log_sigma, mu_beta, log_tau, log_taus, betas, design, y):
    """Log-density and gradient of ``llvm_backend.tools.graphs.regression``, in its parameter order:
    ``[intercept, log_sigma, mu_beta, log_tau, log_taus..., betas...]``."""
    n_groups, n_cols = log_taus.size, betas.size
    grad = np.zeros(4 + n_groups + n_cols)
    logp = _standard_normal_logp(intercept / 10.0) - np.log(10.0)
    logp += _standard_normal_logp(log_sigma) + _standard_normal_logp(mu_beta) + _standard_normal_logp(log_tau)
    grad[0], grad[1], grad[2], grad[3] = -intercept / 100.0, -log_sigma, -mu_beta, -log_tau
    for k in range(n_groups):
        r = log_taus[k] - log_tau
        logp += _standard_normal_logp(r)
        grad[4 + k] = -r
        grad[3] += r
    for i in range(n_cols):
        k = i % n_groups
        tau = np.exp(log_taus[k])
        r = (betas[i] - mu_beta) / tau
        logp += _standard_normal_logp(r) - log_taus[k]
        grad[4 + n_groups + i] = -r / tau
        grad[2] += r / tau
        grad[4 + k] += r * r - 1.0
    sigma = np.exp(log_sigma)
    residuals = y - intercept - design @ betas
    sum_r2 = (residuals * residuals).sum() / (sigma * sigma)
    logp += -0.5 * sum_r2 - y.size * (log_sigma + HALF_LOG_2PI)
    grad[0] += residuals.sum() / (sigma * sigma)
    grad[1] += sum_r2 - y.size
    grad[4 + n_groups :] += (design.T @ residuals) / (sigma * sigma)
    return logp, grad
