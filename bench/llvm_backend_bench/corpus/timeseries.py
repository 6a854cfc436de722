"""The time-series families: latent processes through time, as PyMC's examples write them.

- Stochastic volatility (PyMC's example): 400 daily returns, ``volatility`` a ``GaussianRandomWalk`` with an
  ``Exponential`` step size, returns ``StudentT(nu, lam=exp(-2 volatility))``. Forms: the returns as a NumPy
  constant; and in ``pm.Data`` with ``dims``/``coords`` ``"time"`` (reference `stochastic_volatility_data_logp`).
- Latent AR(1): 200 steps of a latent ``pm.AR`` with ``rho ~ Uniform(-1, 1)`` (interval transform) and a
  stationary initial distribution, observed with Normal noise, the observations in ``pm.Data`` (reference
  `ar1_latent_logp`).
- Logistic growth curves: 20 subjects measured at 15 times (300 observations in long form, gathered by subject
  index), subject parameters non-centered, a ``pm.Deterministic`` for each intermediate quantity, times and
  measurements in ``pm.Data`` (reference `growth_curve_logp`).
"""

import math

import numpy as np

from llvm_backend_bench.corpus.model import CorpusModel
from llvm_backend_bench.corpus.special import digamma
from llvm_backend_bench.pymc_limit import HALF_LOG_2_OVER_PI, LOG_2, LOG_5, LOG_10
from llvm_backend_bench.references import HALF_LOG_2PI, fast_njit

__all__ = ["MODELS", "ar1_latent_logp", "growth_curve_logp", "stochastic_volatility_data_logp"]

N_DAYS = 400
N_STEPS = 200
N_SUBJECTS, N_TIMES = 20, 15

STEP_SCALE = float(np.float32(0.1))
"""``pm.Exponential("step_size", 10)``'s scale: the reciprocal of the integer 10, in float32."""
LOG_STEP_SCALE = float(np.log(np.float32(0.1)))
LOG_NU_SCALE = np.log(10.0)
"""``pm.Exponential("nu", 0.1)``'s scale is the float64 reciprocal of 0.1."""
LOG_PI = np.log(np.pi)
GROWTH_MEANS = ((4.0, 1.0, 0.0), (-0.5, 1.0, 0.0), (7.0, 3.0, float(np.log(np.float32(3.0)))))
"""The growth curve's ``mu_log_K``, ``mu_log_r``, ``mu_t0`` priors: Normal mean, sd and log sd (an integer sd's
log in float32)."""
GROWTH_SCALES = ((0.5, np.log(0.5)), (0.5, np.log(0.5)), (2.0, LOG_2))
"""The HalfNormal scales of ``sigma_log_K``, ``sigma_log_r``, ``sigma_t0``, with their logs."""


def _volatility_data() -> tuple:
    rng = np.random.default_rng(2008)
    volatility = np.log(0.01) + np.cumsum(rng.normal(0, 0.1, size=N_DAYS))
    returns = rng.standard_t(6.0, size=N_DAYS) * np.exp(volatility)
    return (returns,)


def stochastic_volatility_constant():
    """PyMC's stochastic volatility example, the returns a NumPy constant."""
    import pymc as pm
    import pytensor.tensor as pt

    (returns,) = _volatility_data()
    with pm.Model() as model:
        step_size = pm.Exponential("step_size", 10)
        volatility = pm.GaussianRandomWalk("volatility", sigma=step_size, init_dist=pm.Normal.dist(0, 10), shape=N_DAYS)
        nu = pm.Exponential("nu", 0.1)
        pm.StudentT("returns", nu=nu, lam=pt.exp(-2 * volatility), observed=returns)
    return model


def stochastic_volatility_data():
    """PyMC's stochastic volatility example, the returns in ``pm.Data`` along the ``"time"`` dimension."""
    import pymc as pm
    import pytensor.tensor as pt

    (returns,) = _volatility_data()
    with pm.Model(coords={"time": np.arange(N_DAYS)}) as model:
        returns_data = pm.Data("returns_data", returns, dims="time")
        step_size = pm.Exponential("step_size", 10)
        volatility = pm.GaussianRandomWalk("volatility", sigma=step_size, init_dist=pm.Normal.dist(0, 10), dims="time")
        nu = pm.Exponential("nu", 0.1)
        pm.StudentT("returns", nu=nu, lam=pt.exp(-2 * volatility), observed=returns_data, dims="time")
    return model


@fast_njit
def stochastic_volatility_data_logp(x, returns):
    """``[log step_size, volatility (n), log nu]``: step_size ~ Exponential(10), volatility a Gaussian random walk
    of step step_size from Normal(0, 10), nu ~ Exponential(0.1), returns ~ StudentT(nu, lam=exp(-2 volatility))."""
    n = returns.size
    log_step, log_nu = x[0], x[n + 1]
    step, nu = np.exp(log_step), np.exp(log_nu)
    grad = np.empty(x.size)
    logp = -LOG_STEP_SCALE - step / STEP_SCALE + log_step - LOG_NU_SCALE - 0.1 * nu + log_nu
    logp += -0.5 * (x[1] / 10.0) ** 2 - LOG_10 - HALF_LOG_2PI
    half_nu1 = 0.5 * (nu + 1.0)
    logp += n * (math.lgamma(half_nu1) - math.lgamma(0.5 * nu) - 0.5 * (log_nu + LOG_PI))
    inv_step, inv_nu = 1.0 / step, 1.0 / nu
    sum_d2 = sum_log1p = sum_qr = sum_v = 0.0
    previous_pull = 0.0
    for t in range(n):
        v = x[1 + t]
        q = np.exp(-2.0 * v) * returns[t] * returns[t] * inv_nu
        log1p_q = np.log1p(q)
        qr = q / (1.0 + q)
        sum_log1p += log1p_q
        sum_qr += qr
        sum_v += v
        # d logp / d v_t: the StudentT term, and the random walk's increments into and out of t
        pull = 0.0
        if t + 1 < n:
            d = (x[2 + t] - v) * inv_step
            sum_d2 += d * d
            pull = d * inv_step
        grad[1 + t] = (nu + 1.0) * qr - 1.0 + pull - previous_pull
        previous_pull = pull
    grad[1] -= x[1] / 100.0
    logp += -sum_v - half_nu1 * sum_log1p - 0.5 * sum_d2 - (n - 1) * (log_step + HALF_LOG_2PI)
    grad[0] = sum_d2 - (n - 1) - step / STEP_SCALE + 1.0
    dnu = n * (0.5 * digamma(half_nu1) - 0.5 * digamma(0.5 * nu) - 0.5 * inv_nu)
    dnu += -0.5 * sum_log1p + half_nu1 * inv_nu * sum_qr - 0.1
    grad[n + 1] = dnu * nu + 1.0
    return logp, grad


def _ar1_data() -> tuple:
    rng = np.random.default_rng(1927)
    rho, sigma = 0.8, 0.5
    latent = np.empty(N_STEPS)
    latent[0] = rng.normal(0, sigma / np.sqrt(1 - rho**2))
    for t in range(1, N_STEPS):
        latent[t] = rho * latent[t - 1] + rng.normal(0, sigma)
    return (latent + rng.normal(0, 0.3, size=N_STEPS),)


def ar1_latent():
    """A latent stationary AR(1) written with ``pm.AR``, observed with Normal noise, the observations in
    ``pm.Data``."""
    import pymc as pm
    import pytensor.tensor as pt

    (y,) = _ar1_data()
    with pm.Model(coords={"time": np.arange(N_STEPS)}) as model:
        y_data = pm.Data("y_obs", y, dims="time")
        rho = pm.Uniform("rho", -1, 1)
        sigma = pm.HalfNormal("sigma", 1)
        obs_sigma = pm.HalfNormal("obs_sigma", 1)
        init = pm.Normal.dist(0, sigma / pt.sqrt(1 - rho**2))
        x = pm.AR("x", rho=[rho], sigma=sigma, init_dist=init, constant=False, dims="time")
        pm.Normal("y", x, obs_sigma, observed=y_data, dims="time")
    return model


@fast_njit
def ar1_latent_logp(x, y):
    """``[logit (rho + 1) / 2, log sigma, log obs_sigma, latent (n)]``: rho ~ Uniform(-1, 1), sigma, obs_sigma ~
    HalfNormal(1), latent an AR(1) of coefficient rho and innovation sd sigma from its stationary distribution,
    y ~ Normal(latent, obs_sigma)."""
    n = y.size
    u, log_sigma, log_obs = x[0], x[1], x[2]
    s = 1.0 / (1.0 + np.exp(-u))
    rho = 2.0 * s - 1.0
    w = 4.0 * s * (1.0 - s)  # 1 - rho**2
    sigma, obs = np.exp(log_sigma), np.exp(log_obs)
    inv_var, inv_obs_var = 1.0 / (sigma * sigma), 1.0 / (obs * obs)
    grad = np.empty(x.size)
    # rho's Uniform density and the interval transform's log-Jacobian: log 2 cancels
    logp = -u - 2.0 * np.log1p(np.exp(-u))
    logp += 2.0 * HALF_LOG_2_OVER_PI - 0.5 * (sigma * sigma + obs * obs) + log_sigma + log_obs
    x0 = x[3]
    sum_e2 = sum_ex = sum_r2 = 0.0
    previous_e = 0.0
    for t in range(n):
        xt = x[3 + t]
        r = y[t] - xt
        sum_r2 += r * r
        g = r * inv_obs_var - previous_e * inv_var
        if t + 1 < n:
            e = x[4 + t] - rho * xt
            sum_e2 += e * e
            sum_ex += e * xt
            g += rho * e * inv_var
            previous_e = e
        grad[3 + t] = g
    grad[3] -= x0 * w * inv_var
    init_q = x0 * x0 * w * inv_var
    logp += -0.5 * (init_q + sum_e2 * inv_var) + 0.5 * np.log(w) - n * (log_sigma + HALF_LOG_2PI)
    logp += -0.5 * sum_r2 * inv_obs_var - n * (log_obs + HALF_LOG_2PI)
    drho = rho * x0 * x0 * inv_var - rho / w + sum_ex * inv_var
    grad[0] = drho * 2.0 * s * (1.0 - s) - rho
    grad[1] = init_q + sum_e2 * inv_var - n - sigma * sigma + 1.0
    grad[2] = sum_r2 * inv_obs_var - n - obs * obs + 1.0
    return logp, grad


def _growth_data() -> tuple:
    rng = np.random.default_rng(1838)
    subject = np.repeat(np.arange(N_SUBJECTS), N_TIMES)
    time = np.tile(np.arange(N_TIMES, dtype=float), N_SUBJECTS)
    capacity = np.exp(rng.normal(np.log(50.0), 0.2, size=N_SUBJECTS))
    rate = np.exp(rng.normal(np.log(0.6), 0.2, size=N_SUBJECTS))
    midpoint = rng.normal(7.0, 1.5, size=N_SUBJECTS)
    curve = capacity[subject] / (1.0 + np.exp(-rate[subject] * (time - midpoint[subject])))
    return subject, time, curve + rng.normal(0, 2.0, size=subject.size)


def growth_curve():
    """Logistic growth per subject, the subject parameters non-centered and gathered by subject index, each
    intermediate quantity a ``pm.Deterministic``; times and measurements in ``pm.Data``."""
    import pymc as pm

    subject, time, y = _growth_data()
    coords = {"subject": np.arange(N_SUBJECTS), "obs": np.arange(subject.size)}
    with pm.Model(coords=coords) as model:
        time_data = pm.Data("time", time, dims="obs")
        y_data = pm.Data("y_obs", y, dims="obs")
        mu_log_K = pm.Normal("mu_log_K", 4, 1)
        sigma_log_K = pm.HalfNormal("sigma_log_K", 0.5)
        z_log_K = pm.Normal("z_log_K", 0, 1, dims="subject")
        K = pm.Deterministic("K", pm.math.exp(mu_log_K + sigma_log_K * z_log_K), dims="subject")
        mu_log_r = pm.Normal("mu_log_r", -0.5, 1)
        sigma_log_r = pm.HalfNormal("sigma_log_r", 0.5)
        z_log_r = pm.Normal("z_log_r", 0, 1, dims="subject")
        r = pm.Deterministic("r", pm.math.exp(mu_log_r + sigma_log_r * z_log_r), dims="subject")
        mu_t0 = pm.Normal("mu_t0", 7, 3)
        sigma_t0 = pm.HalfNormal("sigma_t0", 2)
        z_t0 = pm.Normal("z_t0", 0, 1, dims="subject")
        t0 = pm.Deterministic("t0", mu_t0 + sigma_t0 * z_t0, dims="subject")
        growth = pm.Deterministic("growth", pm.math.invlogit(r[subject] * (time_data - t0[subject])), dims="obs")
        mu = pm.Deterministic("mu", K[subject] * growth, dims="obs")
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("y", mu, sigma, observed=y_data, dims="obs")
    return model


@fast_njit
def _growth_subject_priors(x, grad, params, inv_var, n_subjects):
    """The log-density of the three non-centered subject blocks, turning ``grad``'s accumulated d logp / d
    (K, r, t0) (times the observation variance) into the gradient of the blocks' raveled parameters."""
    logp = 0.0
    for b in range(3):
        o = b * (n_subjects + 2)
        prior_mu, prior_sd, log_prior_sd = GROWTH_MEANS[b]
        scale, log_scale = GROWTH_SCALES[b]
        mean, log_sd = x[o], x[o + 1]
        sd = np.exp(log_sd)
        dm = (prior_mu - mean) / (prior_sd * prior_sd)
        dlog_sd = 1.0 - (sd / scale) ** 2
        logp += -0.5 * ((mean - prior_mu) / prior_sd) ** 2 - log_prior_sd - HALF_LOG_2PI
        logp += HALF_LOG_2_OVER_PI - log_scale - 0.5 * (sd / scale) ** 2 + log_sd
        for j in range(n_subjects):
            z = x[o + 2 + j]
            dlinear = grad[o + 2 + j] * inv_var
            if b < 2:  # K and r are exponentials of their linear predictors
                dlinear *= params[b, j]
            logp += -0.5 * z * z - HALF_LOG_2PI
            dm += dlinear
            dlog_sd += dlinear * sd * z
            grad[o + 2 + j] = dlinear * sd - z
        grad[o], grad[o + 1] = dm, dlog_sd
    return logp


@fast_njit
def growth_curve_logp(x, subject, time, y):
    """``[mu_log_K, log sigma_log_K, z_log_K (J), mu_log_r, log sigma_log_r, z_log_r (J), mu_t0, log sigma_t0,
    z_t0 (J), log sigma]``: y ~ Normal(K[subject] invlogit(r[subject] (time - t0[subject])), sigma), log K, log r
    and t0 non-centered Normals of Normal means and HalfNormal scales, sigma ~ HalfNormal(5)."""
    n_subjects = (x.size - 1) // 3 - 2
    grad = np.zeros(x.size)
    params = np.empty((3, n_subjects))  # K, r, t0
    for b in range(3):
        o = b * (n_subjects + 2)
        sd = np.exp(x[o + 1])
        for j in range(n_subjects):
            linear = x[o] + sd * x[o + 2 + j]
            params[b, j] = np.exp(linear) if b < 2 else linear
    r_start, t0_start = n_subjects + 4, 2 * n_subjects + 6
    sum_r2 = 0.0
    for n in range(y.size):
        j = subject[n]
        capacity, rate, delay = params[0, j], params[1, j], time[n] - params[2, j]
        g = 1.0 / (1.0 + np.exp(-rate * delay))
        res = y[n] - capacity * g
        sum_r2 += res * res
        grad[2 + j] += res * g
        da = res * capacity * g * (1.0 - g)
        grad[r_start + j] += da * delay
        grad[t0_start + j] -= da * rate
    log_sigma = x[x.size - 1]
    sigma = np.exp(log_sigma)
    inv_var = 1.0 / (sigma * sigma)
    logp = -0.5 * sum_r2 * inv_var - y.size * (log_sigma + HALF_LOG_2PI)
    logp += HALF_LOG_2_OVER_PI - LOG_5 - 0.5 * (sigma / 5.0) ** 2 + log_sigma
    grad[x.size - 1] = sum_r2 * inv_var - y.size - (sigma / 5.0) ** 2 + 1.0
    logp += _growth_subject_priors(x, grad, params, inv_var, n_subjects)
    return logp, grad


MODELS = [
    CorpusModel(
        "stochastic_volatility_constant",
        "stochastic volatility",
        "constant returns, GaussianRandomWalk",
        stochastic_volatility_constant,
    ),
    CorpusModel(
        "stochastic_volatility_data",
        "stochastic volatility",
        "pm.Data, dims and coords, GaussianRandomWalk",
        stochastic_volatility_data,
        stochastic_volatility_data_logp,
        _volatility_data,
    ),
    CorpusModel(
        "ar1_latent",
        "latent AR(1)",
        "pm.AR with a stationary init_dist, Uniform rho, pm.Data",
        ar1_latent,
        ar1_latent_logp,
        _ar1_data,
    ),
    CorpusModel(
        "growth_curve",
        "logistic growth curves",
        "non-centered subjects gathered by index, pm.Deterministics, pm.Data",
        growth_curve,
        growth_curve_logp,
        _growth_data,
    ),
]
