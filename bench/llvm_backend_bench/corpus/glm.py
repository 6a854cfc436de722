"""The generalized linear model family: a linear predictor ``intercept + X beta`` through a link to a non-normal
likelihood, 400 to 800 observations of 3 to 5 predictors.

Models and forms:

- logistic regression, ``Bernoulli(logit_p=...)``, 800 observations of 5 predictors: the design as a NumPy
  constant multiplied with ``@``; and in ``pm.Data`` with ``dims`` and ``coords``, through ``pt.dot`` (reference
  `logistic_data_logp`);
- Poisson regression with a log link, ``Poisson(exp(eta))``, 600 observations of 4 predictors: the same two forms
  (reference `poisson_data_logp` for the ``pm.Data`` one);
- negative-binomial regression, ``NegativeBinomial(mu=exp(eta), alpha)`` with alpha ~ Exponential(0.5), 500
  observations of 4 predictors, in ``pm.Data`` (reference `negbin_data_logp`);
- robust regression, ``StudentT(nu, mu, sigma)`` with nu ~ Gamma(2, 0.1), 400 observations of 3 predictors, as
  NumPy constants;
- zero-inflated Poisson regression, ``ZeroInflatedPoisson(psi, exp(eta))`` with psi ~ Beta(2, 2) (log-odds
  transform), 700 observations of 4 predictors, in ``pm.Data``.
"""

import math

import numpy as np

from llvm_backend_bench.corpus.model import CorpusModel
from llvm_backend_bench.corpus.special import digamma
from llvm_backend_bench.pymc_limit import LOG_2, LOG_5
from llvm_backend_bench.references import HALF_LOG_2PI, fast_njit

__all__ = ["MODELS", "logistic_data_logp", "negbin_data_logp", "poisson_data_logp"]

LOGISTIC_OBS, LOGISTIC_PREDICTORS = 800, 5
POISSON_OBS, POISSON_PREDICTORS = 600, 4
NEGBIN_OBS, NEGBIN_PREDICTORS = 500, 4
STUDENT_T_OBS, STUDENT_T_PREDICTORS = 400, 3
ZIP_OBS, ZIP_PREDICTORS = 700, 4
LOG_HALF = float(np.log(np.float32(0.5)))
"""log(0.5) as PyTensor computes it for ``pm.Normal(..., 0.5)``: in float32."""


def _coords(n_obs: int, n_predictors: int) -> dict:
    return {"obs": range(n_obs), "predictor": [f"x{i}" for i in range(n_predictors)]}


def _logistic_data() -> tuple:
    rng = np.random.default_rng(801)
    X = rng.normal(size=(LOGISTIC_OBS, LOGISTIC_PREDICTORS))
    logit = -0.4 + X @ rng.normal(0, 1, size=LOGISTIC_PREDICTORS)
    y = (rng.random(LOGISTIC_OBS) < 1.0 / (1.0 + np.exp(-logit))).astype("int64")
    return X, y


def _poisson_data() -> tuple:
    rng = np.random.default_rng(602)
    X = rng.normal(size=(POISSON_OBS, POISSON_PREDICTORS))
    y = rng.poisson(np.exp(1.0 + X @ rng.normal(0, 0.3, size=POISSON_PREDICTORS)))
    return X, y


def _negbin_data() -> tuple:
    rng = np.random.default_rng(503)
    X = rng.normal(size=(NEGBIN_OBS, NEGBIN_PREDICTORS))
    mu, alpha = np.exp(1.5 + X @ rng.normal(0, 0.3, size=NEGBIN_PREDICTORS)), 2.0
    y = rng.negative_binomial(alpha, alpha / (alpha + mu))
    return X, y


def _student_t_data() -> tuple:
    rng = np.random.default_rng(404)
    X = rng.normal(size=(STUDENT_T_OBS, STUDENT_T_PREDICTORS))
    y = 1.0 + X @ rng.normal(0, 1, size=STUDENT_T_PREDICTORS) + 0.7 * rng.standard_t(4, size=STUDENT_T_OBS)
    return X, y


def _zip_data() -> tuple:
    rng = np.random.default_rng(705)
    X = rng.normal(size=(ZIP_OBS, ZIP_PREDICTORS))
    counts = rng.poisson(np.exp(1.2 + X @ rng.normal(0, 0.3, size=ZIP_PREDICTORS)))
    y = np.where(rng.random(ZIP_OBS) < 0.3, 0, counts)
    return X, y


def logistic_constant():
    """Logistic regression, the design a NumPy constant: ``Bernoulli(logit_p=intercept + X @ beta)``."""
    import pymc as pm

    X, y = _logistic_data()
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 2)
        beta = pm.Normal("beta", 0, 1, shape=LOGISTIC_PREDICTORS)
        pm.Bernoulli("y", logit_p=intercept + X @ beta, observed=y)
    return model


def logistic_data():
    """Logistic regression in ``pm.Data`` with ``dims``, the linear predictor through ``pt.dot``, and the
    probabilities a ``pm.Deterministic``."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _logistic_data()
    with pm.Model(coords=_coords(LOGISTIC_OBS, LOGISTIC_PREDICTORS)) as model:
        X_data = pm.Data("X", X, dims=("obs", "predictor"))
        y_data = pm.Data("y_obs", y, dims="obs")
        intercept = pm.Normal("intercept", 0, 2)
        beta = pm.Normal("beta", 0, 1, dims="predictor")
        eta = intercept + pt.dot(X_data, beta)
        pm.Deterministic("p", pm.math.invlogit(eta), dims="obs")
        pm.Bernoulli("y", logit_p=eta, observed=y_data, dims="obs")
    return model


def poisson_constant():
    """Poisson regression with a log link, the design a NumPy constant: ``Poisson(exp(intercept + X @ beta))``."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _poisson_data()
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 5)
        beta = pm.Normal("beta", 0, 0.5, shape=POISSON_PREDICTORS)
        pm.Poisson("y", pt.exp(intercept + X @ beta), observed=y)
    return model


def poisson_data():
    """Poisson regression with a log link in ``pm.Data`` with ``dims``, the linear predictor a
    ``pm.Deterministic`` through ``pt.dot``."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _poisson_data()
    with pm.Model(coords=_coords(POISSON_OBS, POISSON_PREDICTORS)) as model:
        X_data = pm.Data("X", X, dims=("obs", "predictor"))
        y_data = pm.Data("y_obs", y, dims="obs")
        intercept = pm.Normal("intercept", 0, 5)
        beta = pm.Normal("beta", 0, 0.5, dims="predictor")
        eta = pm.Deterministic("eta", intercept + pt.dot(X_data, beta), dims="obs")
        pm.Poisson("y", pt.exp(eta), observed=y_data, dims="obs")
    return model


def negbin_data():
    """Negative-binomial regression with a log link in ``pm.Data`` with ``dims``: ``NegativeBinomial(mu=exp(eta),
    alpha)``, alpha ~ Exponential(0.5), the mean a ``pm.Deterministic``."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _negbin_data()
    with pm.Model(coords=_coords(NEGBIN_OBS, NEGBIN_PREDICTORS)) as model:
        X_data = pm.Data("X", X, dims=("obs", "predictor"))
        y_data = pm.Data("y_obs", y, dims="obs")
        intercept = pm.Normal("intercept", 0, 5)
        beta = pm.Normal("beta", 0, 0.5, dims="predictor")
        alpha = pm.Exponential("alpha", 0.5)
        mu = pm.Deterministic("mu", pt.exp(intercept + pt.dot(X_data, beta)), dims="obs")
        pm.NegativeBinomial("y", mu=mu, alpha=alpha, observed=y_data, dims="obs")
    return model


def student_t_constant():
    """Robust regression, the design a NumPy constant: ``StudentT(nu, intercept + X @ beta, sigma)``, nu ~
    Gamma(2, 0.1)."""
    import pymc as pm

    X, y = _student_t_data()
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 10)
        beta = pm.Normal("beta", 0, 1, shape=STUDENT_T_PREDICTORS)
        sigma = pm.HalfNormal("sigma", 1)
        nu = pm.Gamma("nu", alpha=2, beta=0.1)
        pm.StudentT("y", nu=nu, mu=intercept + X @ beta, sigma=sigma, observed=y)
    return model


def zip_data():
    """Zero-inflated Poisson regression in ``pm.Data`` with ``dims``: ``ZeroInflatedPoisson(psi, exp(eta))``,
    psi ~ Beta(2, 2), the linear predictor through ``pt.dot``."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _zip_data()
    with pm.Model(coords=_coords(ZIP_OBS, ZIP_PREDICTORS)) as model:
        X_data = pm.Data("X", X, dims=("obs", "predictor"))
        y_data = pm.Data("y_obs", y, dims="obs")
        intercept = pm.Normal("intercept", 0, 5)
        beta = pm.Normal("beta", 0, 0.5, dims="predictor")
        psi = pm.Beta("psi", 2, 2)
        eta = intercept + pt.dot(X_data, beta)
        pm.ZeroInflatedPoisson("y", psi=psi, mu=pt.exp(eta), observed=y_data, dims="obs")
    return model


@fast_njit
def logistic_data_logp(x, X, y):
    """``[intercept, beta (5)]``: intercept ~ Normal(0, 2), beta ~ Normal(0, 1), y ~ Bernoulli(logit_p=intercept +
    X beta); log p(y) is -softplus(-eta) for y = 1 and -softplus(eta) for y = 0, one exp per observation."""
    n_predictors = X.shape[1]
    intercept = x[0]
    logp = -0.5 * (intercept / 2.0) ** 2 - LOG_2 - HALF_LOG_2PI
    grad = np.empty(x.size)
    grad[0] = -intercept / 4.0
    for j in range(n_predictors):
        logp += -0.5 * x[1 + j] * x[1 + j] - HALF_LOG_2PI
        grad[1 + j] = -x[1 + j]
    for n in range(y.size):
        eta = intercept
        for j in range(n_predictors):
            eta += X[n, j] * x[1 + j]
        e = np.exp(-abs(eta))
        signed = -eta if y[n] == 1 else eta
        logp -= max(signed, 0.0) + np.log1p(e)
        p = 1.0 / (1.0 + e) if eta >= 0.0 else e / (1.0 + e)
        residual = y[n] - p
        grad[0] += residual
        for j in range(n_predictors):
            grad[1 + j] += residual * X[n, j]
    return logp, grad


@fast_njit
def poisson_data_logp(x, X, y):
    """``[intercept, beta (4)]``: intercept ~ Normal(0, 5), beta ~ Normal(0, 0.5), y ~ Poisson(exp(intercept +
    X beta)); log p(y) = y eta - exp(eta) - lgamma(y + 1)."""
    n_predictors = X.shape[1]
    intercept = x[0]
    logp = -0.5 * (intercept / 5.0) ** 2 - LOG_5 - HALF_LOG_2PI
    grad = np.empty(x.size)
    grad[0] = -intercept / 25.0
    for j in range(n_predictors):
        logp += -0.5 * (x[1 + j] / 0.5) ** 2 - LOG_HALF - HALF_LOG_2PI
        grad[1 + j] = -x[1 + j] / 0.25
    for n in range(y.size):
        eta = intercept
        for j in range(n_predictors):
            eta += X[n, j] * x[1 + j]
        mu = np.exp(eta)
        logp += y[n] * eta - mu - math.lgamma(y[n] + 1.0)
        residual = y[n] - mu
        grad[0] += residual
        for j in range(n_predictors):
            grad[1 + j] += residual * X[n, j]
    return logp, grad


@fast_njit
def negbin_data_logp(x, X, y):
    """``[intercept, beta (4), log alpha]``: intercept ~ Normal(0, 5), beta ~ Normal(0, 0.5), alpha ~
    Exponential(0.5), y ~ NegativeBinomial(mu=exp(intercept + X beta), alpha); with p = sigmoid(log alpha - eta),
    log p(y) = lgamma(y + alpha) - lgamma(alpha) - lgamma(y + 1) + alpha log p + y log(1 - p)."""
    n_predictors = X.shape[1]
    intercept, log_alpha = x[0], x[1 + n_predictors]
    alpha = np.exp(log_alpha)
    logp = -0.5 * (intercept / 5.0) ** 2 - LOG_5 - HALF_LOG_2PI - LOG_2 - 0.5 * alpha + log_alpha
    grad = np.empty(x.size)
    grad[0] = -intercept / 25.0
    for j in range(n_predictors):
        logp += -0.5 * (x[1 + j] / 0.5) ** 2 - LOG_HALF - HALF_LOG_2PI
        grad[1 + j] = -x[1 + j] / 0.25
    lgamma_alpha, digamma_alpha = math.lgamma(alpha), digamma(alpha)
    d_alpha = 0.0
    for n in range(y.size):
        eta = intercept
        for j in range(n_predictors):
            eta += X[n, j] * x[1 + j]
        d = log_alpha - eta
        e = np.exp(-abs(d))
        log1p_e = np.log1p(e)
        log_p, log_q = -(max(-d, 0.0) + log1p_e), -(max(d, 0.0) + log1p_e)
        p = 1.0 / (1.0 + e) if d >= 0.0 else e / (1.0 + e)
        logp += math.lgamma(y[n] + alpha) - lgamma_alpha - math.lgamma(y[n] + 1.0) + alpha * log_p + y[n] * log_q
        d_eta = y[n] * p - alpha * (1.0 - p)
        d_alpha += alpha * (digamma(y[n] + alpha) - digamma_alpha + log_p) - d_eta
        grad[0] += d_eta
        for j in range(n_predictors):
            grad[1 + j] += d_eta * X[n, j]
    grad[1 + n_predictors] = d_alpha + 1.0 - 0.5 * alpha
    return logp, grad


MODELS = [
    CorpusModel("logistic_constant", "logistic regression", "constant data, X @ beta", logistic_constant),
    CorpusModel(
        "logistic_data",
        "logistic regression",
        "pm.Data, dims and coords, pt.dot",
        logistic_data,
        logistic_data_logp,
        _logistic_data,
    ),
    CorpusModel("poisson_constant", "Poisson regression", "constant data, X @ beta", poisson_constant),
    CorpusModel(
        "poisson_data",
        "Poisson regression",
        "pm.Data, dims and coords, pt.dot",
        poisson_data,
        poisson_data_logp,
        _poisson_data,
    ),
    CorpusModel(
        "negbin_data",
        "negative-binomial regression",
        "pm.Data, dims and coords, pt.dot",
        negbin_data,
        negbin_data_logp,
        _negbin_data,
    ),
    CorpusModel("student_t_constant", "Student-t robust regression", "constant data, X @ beta", student_t_constant),
    CorpusModel("zip_data", "zero-inflated Poisson regression", "pm.Data, dims and coords, pt.dot", zip_data),
]
