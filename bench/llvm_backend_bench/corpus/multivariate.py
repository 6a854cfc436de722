"""Multivariate families: the distributions and transforms of PyMC's multivariate and mixture models.

- Multinomial logit: 4 classes (the first the pivot, its coefficients zero), 3 predictors, 500 observations, the
  softmax of a linear predictor into a Categorical. Forms: the design and the classes in ``pm.Data`` with ``dims``
  and ``coords``, ``pt.dot`` and ``pm.math.softmax`` (reference `multinomial_logit_logp`); the design as a NumPy
  constant, ``X @ beta`` and ``logit_p`` (the same reference).
- Ordered logistic: 3 cutpoints under the ``ordered`` transform, 2 predictors, 500 observations as NumPy constants.
- LKJ covariance: ``LKJCholeskyCov`` (3 dimensions, Exponential standard deviations) and an ``MvNormal`` observed
  200 times, with ``dims`` and ``coords``.
- Normal mixture: ``NormalMixture`` of 3 components, weights under the ``simplex`` transform (``Dirichlet``), means
  ``ordered``, 500 observations in ``pm.Data``.
- Beta-binomial groups: 40 group rates ``theta ~ Beta(phi kappa, (1 - phi) kappa)`` under the ``logodds``
  transform, 480 Binomial counts gathered by index (``theta[group_idx]``), NumPy constants (reference
  `beta_binomial_groups_logp`).
"""

import math

import numpy as np

from llvm_backend_bench.corpus.model import CorpusModel
from llvm_backend_bench.corpus.special import digamma
from llvm_backend_bench.pymc_limit import LOG_5
from llvm_backend_bench.references import HALF_LOG_2PI, fast_njit

__all__ = [
    "MODELS",
    "beta_binomial_groups",
    "beta_binomial_groups_logp",
    "lkj_mvnormal",
    "multinomial_logit_constant",
    "multinomial_logit_data",
    "multinomial_logit_logp",
    "normal_mixture_data",
    "ordered_logistic_constant",
]

N_CLASSES, N_PREDICTORS, N_OBS = 4, 3, 500
N_CUTPOINTS, N_ORDINAL_PREDICTORS = 3, 2
N_DIMS, N_MV_OBS = 3, 200
N_COMPONENTS = 3
N_GROUPS, N_PER_GROUP = 40, 12
LOG_BETA_2_2 = -float(np.float32(math.lgamma(4.0)))
"""log B(2, 2) as ``Beta("phi", 2, 2)``'s graph holds it: gammaln of integer constants, folded in float32."""


def _multinomial_data() -> tuple:
    rng = np.random.default_rng(71)
    X = rng.normal(size=(N_OBS, N_PREDICTORS))
    alpha = np.concatenate([[0.0], rng.normal(0, 1, size=N_CLASSES - 1)])
    beta = np.concatenate([np.zeros((N_PREDICTORS, 1)), rng.normal(0, 1, size=(N_PREDICTORS, N_CLASSES - 1))], 1)
    eta = alpha + X @ beta
    p = np.exp(eta - eta.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (rng.random((N_OBS, 1)) > p.cumsum(axis=1)).sum(axis=1).astype("int64")
    return X, y


def _ordinal_data() -> tuple:
    rng = np.random.default_rng(72)
    X = rng.normal(size=(N_OBS, N_ORDINAL_PREDICTORS))
    latent = X @ np.array([1.0, -0.7]) + rng.logistic(size=N_OBS)
    y = np.searchsorted(np.array([-1.5, 0.0, 1.2]), latent).astype("int64")
    return X, y


def _mv_data() -> np.ndarray:
    rng = np.random.default_rng(73)
    sd = np.array([1.0, 2.0, 0.5])
    corr = np.array([[1.0, 0.5, -0.3], [0.5, 1.0, 0.2], [-0.3, 0.2, 1.0]])
    return rng.multivariate_normal([0.5, -1.0, 2.0], corr * np.outer(sd, sd), size=N_MV_OBS)


def _mixture_data() -> np.ndarray:
    rng = np.random.default_rng(74)
    component = rng.choice(N_COMPONENTS, size=N_OBS, p=[0.3, 0.5, 0.2])
    return rng.normal(np.array([-3.0, 0.0, 3.5])[component], np.array([1.0, 0.7, 1.2])[component])


def _groups_data() -> tuple:
    rng = np.random.default_rng(75)
    group_idx = np.repeat(np.arange(N_GROUPS), N_PER_GROUP)
    theta = rng.beta(3.0, 12.0, size=N_GROUPS)
    trials = rng.integers(10, 60, size=group_idx.size)
    return group_idx, trials, rng.binomial(trials, theta[group_idx])


def multinomial_logit_data():
    """Multinomial logit as PyMC's documentation writes a model: ``pm.Data``, ``dims``, ``pt.dot``, the softmax."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _multinomial_data()
    coords = {
        "obs": range(N_OBS),
        "predictor": [f"x{i}" for i in range(N_PREDICTORS)],
        "class": [f"c{k}" for k in range(N_CLASSES)],
        "free_class": [f"c{k}" for k in range(1, N_CLASSES)],
    }
    with pm.Model(coords=coords) as model:
        X_data = pm.Data("X", X, dims=("obs", "predictor"))
        y_data = pm.Data("y_obs", y, dims="obs")
        alpha_free = pm.Normal("alpha_free", 0, 5, dims="free_class")
        beta_free = pm.Normal("beta_free", 0, 1, dims=("predictor", "free_class"))
        alpha = pm.Deterministic("alpha", pt.concatenate([pt.zeros(1), alpha_free]), dims="class")
        beta = pm.Deterministic("beta", pt.concatenate([pt.zeros((N_PREDICTORS, 1)), beta_free], axis=1))
        eta = alpha + pt.dot(X_data, beta)
        p = pm.Deterministic("p", pm.math.softmax(eta, axis=-1), dims=("obs", "class"))
        pm.Categorical("y", p=p, observed=y_data, dims="obs")
    return model


def multinomial_logit_constant():
    """Multinomial logit with the design a NumPy constant, ``X @ beta`` and the linear predictor as ``logit_p``."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y = _multinomial_data()
    with pm.Model() as model:
        alpha_free = pm.Normal("alpha_free", 0, 5, shape=N_CLASSES - 1)
        beta_free = pm.Normal("beta_free", 0, 1, shape=(N_PREDICTORS, N_CLASSES - 1))
        alpha = pt.concatenate([pt.zeros(1), alpha_free])
        beta = pt.concatenate([pt.zeros((N_PREDICTORS, 1)), beta_free], axis=1)
        pm.Categorical("y", logit_p=alpha + X @ beta, observed=y)
    return model


@fast_njit
def multinomial_logit_logp(x, X, y):
    """``[alpha_free (K - 1), beta_free (predictors x (K - 1), row-major)]``: alpha_free ~ Normal(0, 5), beta_free
    ~ Normal(0, 1), y ~ Categorical(softmax(alpha + X beta)), class 0's intercept and coefficients zero."""
    n_free, n_predictors = x.size // (1 + X.shape[1]), X.shape[1]
    grad = np.empty(x.size)
    logp = 0.0
    for k in range(n_free):
        logp += -0.5 * (x[k] / 5.0) ** 2 - LOG_5 - HALF_LOG_2PI
        grad[k] = -x[k] / 25.0
    for i in range(n_free, x.size):
        logp += -0.5 * x[i] * x[i] - HALF_LOG_2PI
        grad[i] = -x[i]
    eta = np.empty(n_free + 1)
    for n in range(y.size):
        eta[0], top = 0.0, 0.0
        for k in range(n_free):
            e = x[k]
            for j in range(n_predictors):
                e += X[n, j] * x[n_free + j * n_free + k]
            eta[1 + k] = e
            top = max(top, e)
        total = 0.0
        for k in range(n_free + 1):
            eta[k] = np.exp(eta[k] - top)
            total += eta[k]
        logp += math.log(eta[y[n]]) - math.log(total)
        for k in range(n_free):
            residual = (1.0 if y[n] == k + 1 else 0.0) - eta[1 + k] / total
            grad[k] += residual
            for j in range(n_predictors):
                grad[n_free + j * n_free + k] += residual * X[n, j]
    return logp, grad


def ordered_logistic_constant():
    """Ordered logistic regression: cutpoints under the ``ordered`` transform, NumPy constant data."""
    import pymc as pm

    X, y = _ordinal_data()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=N_ORDINAL_PREDICTORS)
        cutpoints = pm.Normal(
            "cutpoints",
            0,
            5,
            shape=N_CUTPOINTS,
            transform=pm.distributions.transforms.ordered,
            initval=np.linspace(-1.5, 1.5, N_CUTPOINTS),
        )
        pm.OrderedLogistic("y", eta=X @ beta, cutpoints=cutpoints, observed=y)
    return model


def lkj_mvnormal():
    """A 3-dimensional MvNormal with an LKJ Cholesky covariance (correlations and standard deviations computed)."""
    import pymc as pm

    data = _mv_data()
    coords = {"obs": range(N_MV_OBS), "axis": ["x", "y", "z"], "axis_bis": ["x", "y", "z"]}
    with pm.Model(coords=coords) as model:
        chol, _, _ = pm.LKJCholeskyCov(
            "chol", n=N_DIMS, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=N_DIMS), compute_corr=True
        )
        pm.Deterministic("cov", chol @ chol.T, dims=("axis", "axis_bis"))
        mu = pm.Normal("mu", 0, 1.5, dims="axis")
        pm.MvNormal("y", mu, chol=chol, observed=data, dims=("obs", "axis"))
    return model


def normal_mixture_data():
    """A 3-component NormalMixture: Dirichlet weights (``simplex``), ordered means, the data in ``pm.Data``."""
    import pymc as pm

    y = _mixture_data()
    coords = {"obs": range(N_OBS), "component": range(N_COMPONENTS)}
    with pm.Model(coords=coords) as model:
        y_data = pm.Data("y_obs", y, dims="obs")
        w = pm.Dirichlet("w", a=np.ones(N_COMPONENTS), dims="component")
        mu = pm.Normal(
            "mu",
            0,
            10,
            dims="component",
            transform=pm.distributions.transforms.ordered,
            initval=np.linspace(-2.0, 2.0, N_COMPONENTS),
        )
        sigma = pm.HalfNormal("sigma", 2, dims="component")
        pm.NormalMixture("y", w=w, mu=mu, sigma=sigma, observed=y_data, dims="obs")
    return model


def beta_binomial_groups():
    """Hierarchical Binomial rates: ``theta ~ Beta(phi kappa, (1 - phi) kappa)`` per group, gathered by index."""
    import pymc as pm

    group_idx, trials, successes = _groups_data()
    coords = {"group": range(N_GROUPS), "obs": range(group_idx.size)}
    with pm.Model(coords=coords) as model:
        phi = pm.Beta("phi", 2, 2)
        kappa = pm.Exponential("kappa", 0.1)
        theta = pm.Beta("theta", alpha=phi * kappa, beta=(1 - phi) * kappa, dims="group")
        pm.Binomial("y", n=trials, p=theta[group_idx], observed=successes, dims="obs")
    return model


@fast_njit
def _log_sigmoids(z):
    """``log(sigmoid(z))`` and ``log(1 - sigmoid(z))``, without overflow."""
    softplus = max(z, 0.0) + math.log1p(math.exp(-abs(z)))
    return z - softplus, -softplus


@fast_njit
def beta_binomial_groups_logp(x, group_idx, trials, successes):
    """``[logodds phi, log kappa, logodds theta (groups)]``: phi ~ Beta(2, 2), kappa ~ Exponential(0.1), theta ~
    Beta(phi kappa, (1 - phi) kappa), successes ~ Binomial(trials, theta[group_idx])."""
    n_groups = x.size - 2
    phi, kappa = 1.0 / (1.0 + math.exp(-x[0])), math.exp(x[1])
    a, b = phi * kappa, (1.0 - phi) * kappa
    log_phi, log1m_phi = _log_sigmoids(x[0])
    logp = 2.0 * (log_phi + log1m_phi) - LOG_BETA_2_2 - math.log(10.0) - kappa / 10.0 + x[1]
    logp += n_groups * (math.lgamma(kappa) - math.lgamma(a) - math.lgamma(b))
    grad = np.empty(x.size)
    counts = np.zeros((n_groups, 2))
    for n in range(successes.size):
        k, m = successes[n], trials[n]
        logp += math.lgamma(m + 1.0) - math.lgamma(k + 1.0) - math.lgamma(m - k + 1.0)
        counts[group_idx[n], 0] += k
        counts[group_idx[n], 1] += m - k
    sum_logit = sum_log = 0.0
    for g in range(n_groups):
        theta = 1.0 / (1.0 + math.exp(-x[2 + g]))
        log_theta, log1m_theta = _log_sigmoids(x[2 + g])
        logp += (a + counts[g, 0]) * log_theta + (b + counts[g, 1]) * log1m_theta
        grad[2 + g] = (a + counts[g, 0]) * (1.0 - theta) - (b + counts[g, 1]) * theta
        sum_logit += log_theta - log1m_theta
        sum_log += phi * log_theta + (1.0 - phi) * log1m_theta
    psi_a, psi_b = digamma(a), digamma(b)
    grad[0] = phi * (1.0 - phi) * kappa * (sum_logit - n_groups * (psi_a - psi_b)) + 2.0 - 4.0 * phi
    grad[1] = kappa * (sum_log - n_groups * (phi * psi_a + (1.0 - phi) * psi_b - digamma(kappa))) + 1.0 - kappa / 10.0
    return logp, grad


MODELS = [
    CorpusModel(
        "multinomial_logit_data",
        "multinomial logit",
        "pm.Data, dims and coords, pt.dot, softmax into p",
        multinomial_logit_data,
        multinomial_logit_logp,
        _multinomial_data,
    ),
    CorpusModel(
        "multinomial_logit_constant",
        "multinomial logit",
        "constant data, X @ beta, logit_p",
        multinomial_logit_constant,
        multinomial_logit_logp,
        _multinomial_data,
    ),
    CorpusModel(
        "ordered_logistic_constant", "ordered logistic", "constant data, ordered cutpoints", ordered_logistic_constant
    ),
    CorpusModel("lkj_mvnormal", "LKJ covariance", "LKJCholeskyCov, MvNormal, dims and coords", lkj_mvnormal),
    CorpusModel(
        "normal_mixture_data", "normal mixture", "pm.Data, Dirichlet weights, ordered means", normal_mixture_data
    ),
    CorpusModel(
        "beta_binomial_groups",
        "beta-binomial groups",
        "constant data, Beta rates gathered by index",
        beta_binomial_groups,
        beta_binomial_groups_logp,
        _groups_data,
    ),
]
