"""The linear regression family: ``y ~ Normal(intercept + X beta, sigma)``, 500 observations of 4 predictors.

Forms: the design matrix as a NumPy constant multiplied with ``@``; and as PyMC's documentation writes it, the
design and the outcome in ``pm.Data`` with ``dims`` and ``coords``, multiplied with ``pt.dot`` (reference
`linear_data_logp`).
"""

import numpy as np

from llvm_backend_bench.corpus.model import CorpusModel
from llvm_backend_bench.pymc_limit import LOG_10
from llvm_backend_bench.references import HALF_LOG_2PI, fast_njit

__all__ = ["MODELS", "linear_data_logp"]

N_OBS, N_PREDICTORS = 500, 4
HALF_LOG_2_OVER_PI = 0.5 * np.log(2.0 / np.pi)


def _data() -> tuple:
    rng = np.random.default_rng(41)
    X = rng.normal(size=(N_OBS, N_PREDICTORS))
    y = 0.5 + X @ rng.normal(0, 1, size=N_PREDICTORS) + rng.normal(0, 0.8, size=N_OBS)
    return X, y


def linear_constant():
    import pymc as pm

    X, y = _data()
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 10)
        beta = pm.Normal("beta", 0, 1, shape=N_PREDICTORS)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", intercept + X @ beta, sigma, observed=y)
    return model


def linear_data():
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _data()
    coords = {"obs": range(N_OBS), "predictor": [f"x{i}" for i in range(N_PREDICTORS)]}
    with pm.Model(coords=coords) as model:
        X_data = pm.Data("X", X, dims=("obs", "predictor"))
        y_data = pm.Data("y_obs", y, dims="obs")
        intercept = pm.Normal("intercept", 0, 10)
        beta = pm.Normal("beta", 0, 1, dims="predictor")
        sigma = pm.HalfNormal("sigma", 1)
        mu = pm.Deterministic("mu", intercept + pt.dot(X_data, beta), dims="obs")
        pm.Normal("y", mu, sigma, observed=y_data, dims="obs")
    return model


@fast_njit
def linear_data_logp(x, X, y):
    """``[intercept, beta (4), log sigma]``: intercept ~ Normal(0, 10), beta ~ Normal(0, 1), sigma ~
    HalfNormal(1), y ~ Normal(intercept + X beta, sigma)."""
    n_predictors = X.shape[1]
    intercept, log_sigma = x[0], x[1 + n_predictors]
    sigma = np.exp(log_sigma)
    logp = -0.5 * (intercept / 10.0) ** 2 - LOG_10 - HALF_LOG_2PI
    logp += HALF_LOG_2_OVER_PI - 0.5 * sigma * sigma + log_sigma
    grad = np.zeros(x.size)
    for j in range(n_predictors):
        logp += -0.5 * x[1 + j] * x[1 + j] - HALF_LOG_2PI
    sum_r2 = sum_r = 0.0
    for n in range(y.size):
        mu = intercept
        for j in range(n_predictors):
            mu += X[n, j] * x[1 + j]
        r = (y[n] - mu) / sigma
        sum_r2 += r * r
        sum_r += r
        for j in range(n_predictors):
            grad[1 + j] += r * X[n, j]
    for j in range(n_predictors):
        grad[1 + j] = grad[1 + j] / sigma - x[1 + j]
    logp += -0.5 * sum_r2 - y.size * (log_sigma + HALF_LOG_2PI)
    grad[0] = sum_r / sigma - intercept / 100.0
    grad[1 + n_predictors] = sum_r2 - y.size + 1.0 - sigma * sigma
    return logp, grad


MODELS = [
    CorpusModel("linear_constant", "linear regression", "constant data, X @ beta", linear_constant),
    CorpusModel(
        "linear_data",
        "linear regression",
        "pm.Data, dims and coords, pt.dot",
        linear_data,
        linear_data_logp,
        _data,
    ),
]
