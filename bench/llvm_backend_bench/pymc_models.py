"""The ``pymc`` bench family: PyMC models as samplers compile them (needs the ``pymc`` extra).

Each model's log-density and joined gradient of one raveled vector, the graph ``logp_dlogp_function(
ravel_inputs=True)`` compiles, is measured like every bench case (its cold compile through PyMC's own
``compile``, which rebuilds a plain ``Mode`` from the one it is given). nutpie on the same models, end to end and
phase by phase, is the ``pymc/time_to_posterior`` family (`llvm_backend_bench.time_to_posterior`).

The models: eight schools (10 parameters); a hierarchical intercept model of 85 groups and 919 observations
(radon's shape, simulated); a regression with 65 scalar parameters whose constant 400x48 design matrix is used
column by column (the shape of model that nutpie's stock NUMBA backend is slowest to compile).
"""

import numpy as np

from llvm_backend.tools.graphs import Graph

__all__ = ["MODELS", "logp_dlogp_graph", "pymc_compile"]


def eight_schools():
    import pymc as pm

    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfCauchy("tau", 5)
        theta = pm.Normal("theta", 0, 1, shape=8)
        pm.Normal("obs", mu + tau * theta, sigma, observed=y)
    return model


def hierarchical_85():
    import pymc as pm

    rng = np.random.default_rng(85)
    group = rng.integers(0, 85, size=919)
    floor = rng.integers(0, 2, size=919).astype("float64")
    y = 1.5 + rng.normal(0, 0.3, size=85)[group] - 0.6 * floor + rng.normal(0, 0.7, size=919)
    with pm.Model() as model:
        mu_a = pm.Normal("mu_a", 0, 10)
        sigma_a = pm.HalfNormal("sigma_a", 1)
        offset = pm.Normal("offset", 0, 1, shape=85)
        b = pm.Normal("b", 0, 1)
        sigma_y = pm.HalfNormal("sigma_y", 1)
        pm.Normal("y", mu_a + sigma_a * offset[group] + b * floor, sigma_y, observed=y)
    return model


def regression_65p(n_obs=400, n_cols=48, n_groups=13):
    import pymc as pm

    rng = np.random.default_rng(65)
    X = rng.normal(size=(n_obs, n_cols))
    y = X @ rng.normal(0, 0.5, size=n_cols) + 1.0 + rng.normal(0, 0.5, size=n_obs)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 10)
        sigma = pm.HalfNormal("sigma", 1)
        mu_beta = pm.Normal("mu_beta", 0, 1)
        tau = pm.HalfNormal("tau", 1)
        taus = [pm.HalfNormal(f"tau_{g}", tau) for g in range(n_groups)]
        betas = [pm.Normal(f"beta_{i}", mu_beta, taus[i % n_groups]) for i in range(n_cols)]
        pm.Normal("y", intercept + sum(b * X[:, i] for i, b in enumerate(betas)), sigma, observed=y)
    return model


MODELS = {"eight_schools": eight_schools, "hierarchical_85": hierarchical_85, "regression_65p": regression_65p}


def logp_dlogp_graph(name: str) -> Graph:
    """Model ``name``'s log-density and joined gradient of one raveled vector, at its initial point."""
    from pymc.pytensorf import join_nonshared_inputs

    model = MODELS[name]()
    point = model.initial_point(0)
    outputs, joined = join_nonshared_inputs(point, [model.logp(), model.dlogp()], model.value_vars)
    x0 = np.concatenate([np.ravel(point[v.name]) for v in model.value_vars])
    description = f"PyMC {name}: logp and gradient of {x0.size} parameters, one raveled vector"
    return Graph(f"pymc_{name}", description, [joined], outputs, [x0])


def pymc_compile(graph: Graph, mode: str):
    """How PyMC compiles under ``mode`` (``pymc.pytensorf.compile``: a plain ``Mode`` on the mode's linker)."""
    from pymc.pytensorf import compile

    return compile(graph.inputs, graph.outputs, mode=mode)
