"""The hierarchical family: group effects drawn from a population, centered and non-centered.

Eight schools (8 groups, one observation each, data as NumPy constants): centered, ``theta ~ Normal(mu, tau)``;
and non-centered, ``theta = mu + tau * theta_tilde`` as a ``pm.Deterministic``, with ``dims`` and ``coords``.

Radon-shaped varying intercepts (85 counties of unequal sizes, 919 simulated observations, a floor indicator), the
county index, the floor and the outcome in ``pm.Data``, the county effects gathered by index (``a[county_idx]``):
centered, ``a ~ Normal(mu_a, sigma_a)``; and non-centered with ``dims`` and ``coords`` (reference
`radon_noncentered_data_logp`). Varying intercepts and slopes, both non-centered and gathered by the same index,
same data (reference `varying_slopes_data_logp`).

The 65-parameter regression as PyMC's documentation writes it: a 400 x 48 design in ``pm.Data``, a centered
intercept, 13 group scales ``tau_g ~ HalfNormal(tau)`` as one vector with ``dims``, gathered by each coefficient's
group (``tau_g[group_of_coefficient]``) as the scales of the 48 coefficients, ``pt.dot`` of the design and the
coefficients (reference `regression_65p_docs_logp`).
"""

import numpy as np

from llvm_backend_bench.corpus.model import CorpusModel
from llvm_backend_bench.pymc_limit import LOG_10, regression_likelihood
from llvm_backend_bench.references import HALF_LOG_2PI, fast_njit

__all__ = [
    "MODELS",
    "eight_schools_centered",
    "eight_schools_noncentered",
    "radon_centered_data",
    "radon_noncentered_data",
    "radon_noncentered_data_logp",
    "regression_65p_docs",
    "regression_65p_docs_logp",
    "varying_slopes_data",
    "varying_slopes_data_logp",
]

N_SCHOOLS = 8
N_COUNTIES, N_RADON = 85, 919
N_REGRESSION, N_COEFFICIENTS, N_GROUPS = 400, 48, 13
HALF_LOG_2_OVER_PI = 0.5 * np.log(2.0 / np.pi)


def _eight_schools_data() -> tuple:
    """The eight schools' estimated effects and their standard errors."""
    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    return y, sigma


def _radon_data() -> tuple:
    """County index (every county observed at least once, sizes uneven as in the radon data), floor, log radon."""
    rng = np.random.default_rng(919)
    weights = rng.lognormal(0.0, 1.0, size=N_COUNTIES)
    extra = rng.choice(N_COUNTIES, size=N_RADON - N_COUNTIES, p=weights / weights.sum())
    county_idx = rng.permutation(np.concatenate([np.arange(N_COUNTIES), extra]))
    floor = (rng.random(N_RADON) < 0.17).astype("float64")
    a, b = rng.normal(1.5, 0.3, size=N_COUNTIES), rng.normal(-0.6, 0.2, size=N_COUNTIES)
    y = a[county_idx] + b[county_idx] * floor + rng.normal(0.0, 0.7, size=N_RADON)
    return county_idx, floor, y


def _regression_data() -> tuple:
    """The 400 x 48 design, the outcome, and each coefficient's group (coefficient i in group i mod 13)."""
    rng = np.random.default_rng(65)
    X = rng.normal(size=(N_REGRESSION, N_COEFFICIENTS))
    y = 1.0 + X @ rng.normal(0.0, 0.5, size=N_COEFFICIENTS) + rng.normal(0.0, 0.5, size=N_REGRESSION)
    return X, y, np.arange(N_COEFFICIENTS) % N_GROUPS


def _regression_reference_data() -> tuple:
    """`regression_65p_docs_logp`'s data: the groups, the design transposed once (C-contiguous), the outcome."""
    X, y, group = _regression_data()
    return group, np.ascontiguousarray(X.T), y


def eight_schools_centered():
    """Eight schools, centered: ``theta ~ Normal(mu, tau)``, data as NumPy constants."""
    import pymc as pm

    y, sigma = _eight_schools_data()
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        theta = pm.Normal("theta", mu, tau, shape=N_SCHOOLS)
        pm.Normal("obs", theta, sigma, observed=y)
    return model


def eight_schools_noncentered():
    """Eight schools, non-centered: ``theta = mu + tau * theta_tilde`` as a Deterministic, ``dims`` by school."""
    import pymc as pm

    y, sigma = _eight_schools_data()
    coords = {"school": ["A", "B", "C", "D", "E", "F", "G", "H"]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        theta_tilde = pm.Normal("theta_tilde", 0, 1, dims="school")
        theta = pm.Deterministic("theta", mu + tau * theta_tilde, dims="school")
        pm.Normal("obs", theta, sigma, observed=y, dims="school")
    return model


RADON_COORDS = {"county": [f"county_{j}" for j in range(N_COUNTIES)], "obs_id": range(N_RADON)}


def _radon_data_in_model() -> tuple:
    """The radon data as ``pm.Data`` of the model being built, each with ``dims="obs_id"``: the county index, the
    floor and the outcome."""
    import pymc as pm

    county, floor, y = _radon_data()
    return (
        pm.Data("county_idx", county, dims="obs_id"),
        pm.Data("floor", floor, dims="obs_id"),
        pm.Data("log_radon", y, dims="obs_id"),
    )


def radon_centered_data():
    """Radon varying intercepts, centered, ``a ~ Normal(mu_a, sigma_a)`` of shape 85, the data in ``pm.Data``."""
    import pymc as pm

    county, floor, y = _radon_data()
    with pm.Model() as model:
        county_idx = pm.Data("county_idx", county)
        floor_data = pm.Data("floor", floor)
        y_data = pm.Data("log_radon", y)
        mu_a = pm.Normal("mu_a", 0, 10)
        sigma_a = pm.HalfNormal("sigma_a", 1)
        a = pm.Normal("a", mu_a, sigma_a, shape=N_COUNTIES)
        b = pm.Normal("b", 0, 1)
        sigma_y = pm.Exponential("sigma_y", 1)
        pm.Normal("y", a[county_idx] + b * floor_data, sigma_y, observed=y_data)
    return model


def radon_noncentered_data():
    """Radon varying intercepts, non-centered, ``a = mu_a + sigma_a * z_a`` as a Deterministic, ``pm.Data``,
    ``dims`` and ``coords``."""
    import pymc as pm

    with pm.Model(coords=RADON_COORDS) as model:
        county_idx, floor_data, y_data = _radon_data_in_model()
        mu_a = pm.Normal("mu_a", 0, 10)
        sigma_a = pm.HalfNormal("sigma_a", 1)
        z_a = pm.Normal("z_a", 0, 1, dims="county")
        a = pm.Deterministic("a", mu_a + sigma_a * z_a, dims="county")
        b = pm.Normal("b", 0, 1)
        sigma_y = pm.Exponential("sigma_y", 1)
        mu = a[county_idx] + b * floor_data
        pm.Normal("y", mu, sigma_y, observed=y_data, dims="obs_id")
    return model


def varying_slopes_data():
    """Radon varying intercepts and slopes, both non-centered Deterministics gathered by the same county index,
    ``pm.Data``, ``dims`` and ``coords``."""
    import pymc as pm

    with pm.Model(coords=RADON_COORDS) as model:
        county_idx, floor_data, y_data = _radon_data_in_model()
        mu_a = pm.Normal("mu_a", 0, 10)
        sigma_a = pm.HalfNormal("sigma_a", 1)
        z_a = pm.Normal("z_a", 0, 1, dims="county")
        mu_b = pm.Normal("mu_b", 0, 10)
        sigma_b = pm.HalfNormal("sigma_b", 1)
        z_b = pm.Normal("z_b", 0, 1, dims="county")
        a = pm.Deterministic("a", mu_a + sigma_a * z_a, dims="county")
        b = pm.Deterministic("b", mu_b + sigma_b * z_b, dims="county")
        sigma_y = pm.Exponential("sigma_y", 1)
        theta = a[county_idx] + b[county_idx] * floor_data
        pm.Normal("y", theta, sigma_y, observed=y_data, dims="obs_id")
    return model


def regression_65p_docs():
    """The 65-parameter regression as PyMC's docs write it: the design in ``pm.Data``, 13 group scales as one
    vector with ``dims`` gathered by each coefficient's group, 48 coefficients, ``pt.dot``."""
    import pymc as pm
    import pytensor.tensor as pt

    X, y, group = _regression_data()
    coords = {
        "obs": range(N_REGRESSION),
        "predictor": [f"x{i}" for i in range(N_COEFFICIENTS)],
        "group": [f"g{k}" for k in range(N_GROUPS)],
    }
    with pm.Model(coords=coords) as model:
        X_data = pm.Data("X", X, dims=("obs", "predictor"))
        y_data = pm.Data("y_obs", y, dims="obs")
        intercept = pm.Normal("intercept", 0, 10)
        sigma = pm.HalfNormal("sigma", 1)
        mu_beta = pm.Normal("mu_beta", 0, 1)
        tau = pm.HalfNormal("tau", 1)
        tau_g = pm.HalfNormal("tau_g", tau, dims="group")
        beta = pm.Normal("beta", mu_beta, tau_g[group], dims="predictor")
        mu = pm.Deterministic("mu", intercept + pt.dot(X_data, beta), dims="obs")
        pm.Normal("y", mu, sigma, observed=y_data, dims="obs")
    return model


@fast_njit
def radon_noncentered_data_logp(x, county_idx, floor, y):
    """``[mu_a, log sigma_a, z_a (85), b, log sigma_y]``: mu_a ~ Normal(0, 10), sigma_a ~ HalfNormal(1), z_a and b ~
    Normal(0, 1), sigma_y ~ Exponential(1), y ~ Normal(mu_a + sigma_a * z_a[county_idx] + b * floor, sigma_y)."""
    n_counties = x.size - 4
    mu_a, log_sigma_a, b, log_sigma_y = x[0], x[1], x[2 + n_counties], x[3 + n_counties]
    sigma_a, sigma_y = np.exp(log_sigma_a), np.exp(log_sigma_y)
    logp = -0.5 * (mu_a / 10.0) ** 2 - LOG_10 - HALF_LOG_2PI - 0.5 * b * b - HALF_LOG_2PI
    logp += HALF_LOG_2_OVER_PI - 0.5 * sigma_a * sigma_a + log_sigma_a - sigma_y + log_sigma_y
    grad = np.empty(x.size)
    for k in range(n_counties):
        z = x[2 + k]
        logp += -0.5 * z * z - HALF_LOG_2PI
        grad[2 + k] = -z
    d_mu_a = d_log_sigma_a = d_b = sum_r2 = 0.0
    scale = sigma_a / sigma_y
    for i in range(y.size):
        c = county_idx[i]
        z = x[2 + c]
        r = (y[i] - mu_a - sigma_a * z - b * floor[i]) / sigma_y
        sum_r2 += r * r
        d_mu_a += r
        d_log_sigma_a += r * z
        d_b += r * floor[i]
        grad[2 + c] += r * scale
    logp += -0.5 * sum_r2 - y.size * (log_sigma_y + HALF_LOG_2PI)
    grad[0] = d_mu_a / sigma_y - mu_a / 100.0
    grad[1] = d_log_sigma_a * scale + 1.0 - sigma_a * sigma_a
    grad[2 + n_counties] = d_b / sigma_y - b
    grad[3 + n_counties] = sum_r2 - y.size + 1.0 - sigma_y
    return logp, grad


@fast_njit
def varying_slopes_data_logp(x, county_idx, floor, y):
    """``[mu_a, log sigma_a, z_a (85), mu_b, log sigma_b, z_b (85), log sigma_y]``: mu_a and mu_b ~ Normal(0, 10),
    sigma_a and sigma_b ~ HalfNormal(1), z_a and z_b ~ Normal(0, 1), sigma_y ~ Exponential(1), a = mu_a + sigma_a z_a,
    b = mu_b + sigma_b z_b, y ~ Normal(a[county_idx] + b[county_idx] * floor, sigma_y)."""
    n_counties = (x.size - 5) // 2
    za, zb = 2, 4 + n_counties
    mu_a, log_sigma_a, mu_b, log_sigma_b = x[0], x[1], x[zb - 2], x[zb - 1]
    log_sigma_y = x[x.size - 1]
    sigma_a, sigma_b, sigma_y = np.exp(log_sigma_a), np.exp(log_sigma_b), np.exp(log_sigma_y)
    logp = -0.5 * ((mu_a / 10.0) ** 2 + (mu_b / 10.0) ** 2) - 2.0 * (LOG_10 + HALF_LOG_2PI)
    logp += 2.0 * HALF_LOG_2_OVER_PI - 0.5 * (sigma_a * sigma_a + sigma_b * sigma_b) + log_sigma_a + log_sigma_b
    logp += log_sigma_y - sigma_y
    grad = np.zeros(x.size)
    sum_r2 = 0.0
    for i in range(y.size):
        c = county_idx[i]
        a = mu_a + sigma_a * x[za + c]
        b = mu_b + sigma_b * x[zb + c]
        r = (y[i] - a - b * floor[i]) / sigma_y
        sum_r2 += r * r
        grad[za + c] += r
        grad[zb + c] += r * floor[i]
    d_mu_a = d_mu_b = d_log_sigma_a = d_log_sigma_b = 0.0
    for k in range(n_counties):
        z_a, z_b = x[za + k], x[zb + k]
        logp += -0.5 * (z_a * z_a + z_b * z_b) - 2.0 * HALF_LOG_2PI
        g_a, g_b = grad[za + k] / sigma_y, grad[zb + k] / sigma_y
        d_mu_a += g_a
        d_mu_b += g_b
        d_log_sigma_a += g_a * z_a
        d_log_sigma_b += g_b * z_b
        grad[za + k] = g_a * sigma_a - z_a
        grad[zb + k] = g_b * sigma_b - z_b
    logp += -0.5 * sum_r2 - y.size * (log_sigma_y + HALF_LOG_2PI)
    grad[0] = d_mu_a - mu_a / 100.0
    grad[1] = d_log_sigma_a * sigma_a + 1.0 - sigma_a * sigma_a
    grad[zb - 2] = d_mu_b - mu_b / 100.0
    grad[zb - 1] = d_log_sigma_b * sigma_b + 1.0 - sigma_b * sigma_b
    grad[x.size - 1] = sum_r2 - y.size + 1.0 - sigma_y
    return logp, grad


@fast_njit
def regression_65p_docs_logp(x, group, design_t, y):
    """``[intercept, log sigma, mu_beta, log tau, log tau_g (13), beta (48)]``: intercept ~ Normal(0, 10), sigma and
    tau ~ HalfNormal(1), mu_beta ~ Normal(0, 1), tau_g ~ HalfNormal(tau), beta ~ Normal(mu_beta, tau_g[group]),
    y ~ Normal(intercept + design @ beta, sigma) (`llvm_backend_bench.pymc_limit.regression_likelihood`;
    ``design_t``, the design transposed, is made once with the data)."""
    n_cols = design_t.shape[0]
    n_groups = x.size - 4 - n_cols
    first_beta = 4 + n_groups
    intercept, log_sigma, mu_beta, log_tau = x[0], x[1], x[2], x[3]
    sigma, tau = np.exp(log_sigma), np.exp(log_tau)
    logp = -0.5 * (intercept / 10.0) ** 2 - LOG_10 - 0.5 * mu_beta * mu_beta - 2.0 * HALF_LOG_2PI
    logp += 2.0 * HALF_LOG_2_OVER_PI - 0.5 * (sigma * sigma + tau * tau) + log_sigma + log_tau
    grad = np.empty(x.size)
    tau_g = np.empty(n_groups)
    d_mu_beta, d_log_tau = -mu_beta, 1.0 - tau * tau
    for k in range(n_groups):
        tau_g[k] = np.exp(x[4 + k])
        q = tau_g[k] / tau
        logp += HALF_LOG_2_OVER_PI - log_tau - 0.5 * q * q + x[4 + k]
        grad[4 + k] = 1.0 - q * q
        d_log_tau += q * q - 1.0
    for i in range(n_cols):
        k = group[i]
        r = (x[first_beta + i] - mu_beta) / tau_g[k]
        logp += -0.5 * r * r - x[4 + k] - HALF_LOG_2PI
        grad[first_beta + i] = -r / tau_g[k]
        d_mu_beta += r / tau_g[k]
        grad[4 + k] += r * r - 1.0
    logp += regression_likelihood(x, grad, first_beta, design_t, y)
    grad[2], grad[3] = d_mu_beta, d_log_tau
    return logp, grad


MODELS = [
    CorpusModel("eight_schools_centered", "eight schools", "centered, constant data", eight_schools_centered),
    CorpusModel(
        "eight_schools_noncentered",
        "eight schools",
        "non-centered, Deterministic theta, dims and coords, constant data",
        eight_schools_noncentered,
    ),
    CorpusModel(
        "radon_centered_data",
        "radon varying intercepts",
        "centered, pm.Data (int index, floor, outcome), a[county_idx]",
        radon_centered_data,
    ),
    CorpusModel(
        "radon_noncentered_data",
        "radon varying intercepts",
        "non-centered, Deterministic a, pm.Data, dims and coords, a[county_idx]",
        radon_noncentered_data,
        radon_noncentered_data_logp,
        _radon_data,
    ),
    CorpusModel(
        "varying_slopes_data",
        "radon varying intercepts and slopes",
        "non-centered intercepts and slopes, pm.Data, dims and coords, a[county_idx] + b[county_idx] * floor",
        varying_slopes_data,
        varying_slopes_data_logp,
        _radon_data,
    ),
    CorpusModel(
        "regression_65p_docs",
        "65-parameter hierarchical regression",
        "pm.Data design, tau_g vector with dims gathered by group, pt.dot",
        regression_65p_docs,
        regression_65p_docs_logp,
        _regression_reference_data,
    ),
]
