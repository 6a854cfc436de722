"""Built-in example graphs used by ``llvm-backend report``, the benchmarks and the tests.

Each builder returns a `Graph`: symbolic inputs, outputs and example input values. ``GRAPHS`` names the
report's graphs; the benchmarks (``bench/``) build further variants from the same builders.
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytensor.tensor as pt

__all__ = [
    "GRAPHS",
    "Graph",
    "concatenate",
    "full_reduction",
    "fused_sum",
    "join_arrays",
    "logp_grad",
    "multi_sum",
    "reduction",
    "regression",
    "scalar_index",
    "sum_of_sums",
    "times_two",
]


@dataclass(frozen=True)
class Graph:
    name: str
    description: str
    inputs: list
    outputs: list
    values: list


def _normal_logp(value, mu, sigma):
    return -0.5 * ((value - mu) / sigma) ** 2 - pt.log(sigma) - 0.5 * np.log(2 * np.pi)


def logp_grad(n_scalars: int = 3, vector_length: int = 8, n_data: int = 0) -> Graph:
    """A PyMC-shaped log-density and its gradient, joined into one vector (like ``logp_dlogp_function``).

    A hierarchical normal model on 8 observations (eight-schools-like): scalar parameters ``mu``,
    ``log_tau``, ``log_scale`` (and further scalar offsets when ``n_scalars > 3``), and a
    non-centred vector ``theta``. With ``n_data > 0``, ``n_data`` more observations are normal
    around the location with the scale ``exp(log_scale)``: a likelihood over a long data vector.
    """
    rng = np.random.default_rng(0)
    y = pt.constant(rng.normal(size=vector_length), name="y")
    sigma = pt.constant(rng.uniform(5, 15, size=vector_length), name="sigma")
    mu, log_tau, log_scale = (pt.dscalar(n) for n in ("mu", "log_tau", "log_scale"))
    offsets = [pt.dscalar(f"offset_{i}") for i in range(n_scalars - 3)]
    theta = pt.dvector("theta")
    tau, scale = pt.exp(log_tau), pt.exp(log_scale)
    location = mu + sum(offsets, pt.constant(0.0))
    logp = (
        _normal_logp(mu, 0.0, 5.0)
        + _normal_logp(log_tau, 0.0, 1.0)
        + _normal_logp(log_scale, 0.0, 1.0)
        + sum((_normal_logp(o, 0.0, 1.0) for o in offsets), pt.constant(0.0))
        + _normal_logp(theta, 0.0, 1.0).sum()
        + _normal_logp(y, location + tau * theta, sigma * scale).sum()
    )
    if n_data:
        data = pt.constant(rng.normal(0.5, 1.5, size=n_data), name="data")
        logp = logp + _normal_logp(data, location, scale).sum()
    params = [mu, log_tau, log_scale, *offsets, theta]
    grad = pt.concatenate([pt.atleast_1d(g) for g in pt.grad(logp, params)])
    values = [0.5, 0.1, -0.2, *(0.01 * i for i in range(len(offsets))), rng.normal(size=vector_length)]
    data_name, data_description = (f"_d{n_data}", f" + {n_data} data points") if n_data else ("", "")
    return Graph(
        f"logp_grad_{n_scalars}s_v{vector_length}{data_name}",
        f"logp + joined gradient, {n_scalars} scalars + vector({vector_length}){data_description}",
        params,
        [logp, grad],
        values,
    )


def regression(n_cols: int = 48, n_obs: int = 400, n_groups: int = 13) -> Graph:
    """A hierarchical linear regression's log-density and joined gradient, PyMC's ``logp_dlogp_function``
    shape with 4 + ``n_groups`` + ``n_cols`` scalar parameters (65 by default).

    ``y ~ Normal(intercept + sum_i X[:, i] * beta_i, exp(log_sigma))`` over ``n_obs`` observations, the
    design matrix ``X`` (``n_obs`` x ``n_cols``) a constant used column by column (each column a
    non-contiguous constant, as a model written per covariate has); ``beta_i ~ Normal(mu_beta,
    exp(log_tau_{i % n_groups}))``, ``log_tau_k ~ Normal(log_tau, 1)``; ``intercept ~ Normal(0, 10)``;
    ``log_sigma``, ``mu_beta``, ``log_tau ~ Normal(0, 1)``. Parameters in that order: ``intercept``,
    ``log_sigma``, ``mu_beta``, ``log_tau``, the ``log_tau_k``, the ``beta_i``.
    """
    rng = np.random.default_rng(1)
    design = rng.normal(size=(n_obs, n_cols))
    true_beta = rng.normal(0.3, 0.5, size=n_cols)
    observed = pt.constant(design @ true_beta + 1.0 + rng.normal(0.0, 0.7, size=n_obs), name="y")
    intercept, log_sigma, mu_beta, log_tau = (pt.dscalar(n) for n in ("intercept", "log_sigma", "mu_beta", "log_tau"))
    log_taus = [pt.dscalar(f"log_tau_{k}") for k in range(n_groups)]
    betas = [pt.dscalar(f"beta_{i}") for i in range(n_cols)]
    location = intercept + sum(
        (pt.constant(design[:, i], name=f"X_{i}") * b for i, b in enumerate(betas)), pt.constant(0.0)
    )
    logp = (
        _normal_logp(intercept, 0.0, 10.0)
        + _normal_logp(log_sigma, 0.0, 1.0)
        + _normal_logp(mu_beta, 0.0, 1.0)
        + _normal_logp(log_tau, 0.0, 1.0)
        + sum((_normal_logp(t, log_tau, 1.0) for t in log_taus), pt.constant(0.0))
        + sum((_normal_logp(b, mu_beta, pt.exp(log_taus[i % n_groups])) for i, b in enumerate(betas)), pt.constant(0.0))
        + _normal_logp(observed, location, pt.exp(log_sigma)).sum()
    )
    params = [intercept, log_sigma, mu_beta, log_tau, *log_taus, *betas]
    grad = pt.concatenate([pt.atleast_1d(g) for g in pt.grad(logp, params)])
    values = [1.0, -0.3, 0.2, -0.5, *(0.05 * k - 0.3 for k in range(n_groups)), *(0.01 * i for i in range(n_cols))]
    return Graph(
        f"regression_{len(params)}p",
        f"regression logp + joined gradient, {len(params)} scalars, constant {n_obs}x{n_cols} design by column",
        params,
        [logp, grad],
        values,
    )


def concatenate(n: int = 60, length: int = 16) -> Graph:
    """Concatenate ``n`` float64 vectors of ``length``."""
    xs = [pt.dvector(f"x{i}") for i in range(n)]
    values = [np.full(length, float(i)) for i in range(n)]
    return Graph(f"concat_{n}", f"concatenate of {n} vectors({length})", xs, [pt.concatenate(xs)], values)


def times_two(n: int = 60, length: int = 16) -> Graph:
    """``n`` float64 vectors in, ``n`` out: ``x_i * 2`` (``n`` two-input Elemwise nodes, no wide node)."""
    xs = [pt.dvector(f"x{i}") for i in range(n)]
    values = [np.arange(length, dtype="float64") + i for i in range(n)]
    return Graph(f"times_two_{n}", f"{n} outputs x_i * 2, vectors({length})", xs, [x * 2 for x in xs], values)


def sum_of_sums(n: int = 60, length: int = 16) -> Graph:
    """One output, the sum of ``x_i.sum()`` over ``n`` float64 vectors (``n`` Sums and an ``n``-input Add)."""
    xs = [pt.dvector(f"x{i}") for i in range(n)]
    values = [np.arange(length, dtype="float64") + i for i in range(n)]
    out = pt.add(*[x.sum() for x in xs])
    return Graph(f"sum_of_sums_{n}", f"sum of x_i.sum() over {n} vectors({length})", xs, [out], values)


def join_arrays(shapes: list[tuple[int, ...]], axis: int) -> Graph:
    """Join float64 arrays of ``shapes`` along ``axis`` (the i-th array filled with ``i``)."""
    xs = [pt.tensor(f"x{i}", dtype="float64", shape=(None,) * len(shape)) for i, shape in enumerate(shapes)]
    values = [np.full(shape, float(i)) for i, shape in enumerate(shapes)]
    shape_text = "x".join(map(str, shapes[0]))
    description = f"join of {len(shapes)} {len(shapes[0])}-D arrays ({shape_text}, ...) on axis {axis}"
    return Graph(f"join_{len(shapes)}_{len(shapes[0])}d_axis{axis}", description, xs, [pt.join(axis, *xs)], values)


def reduction(kind: str, length: int = 1000) -> Graph:
    """A full ``sum``, ``max`` or ``prod`` of a vector near 1, consumed by scalar math: ``sqrt(r * r + 1)``."""
    x = pt.dvector("x")
    r = getattr(x, kind)()
    values = [1.0 + 1e-3 * np.linspace(-1.0, 1.0, length)]
    description = f"{kind} of vector({length}) into scalar math"
    return Graph(f"{kind}_reduction", description, [x], [pt.sqrt(r * r + 1.0)], values)


def fused_sum(length: int = 1_000_000) -> Graph:
    """``(x * 2 + 1).sum()`` of a vector: an Elemwise whose only client is a full reduction."""
    x = pt.dvector("x")
    values = [np.linspace(0.0, 1.0, length)]
    return Graph("fused_sum", f"(x * 2 + 1).sum() of vector({length})", [x], [(x * 2 + 1).sum()], values)


def multi_sum(k: int = 8, length: int = 400) -> Graph:
    """``k`` full sums of different products of the same vectors, ``(x * y_i).sum()``: the shape of a
    regression's gradient terms, ``k`` passes over ``x`` unless the loops are merged."""
    x = pt.dvector("x")
    ys = [pt.dvector(f"y{i}") for i in range(k)]
    values = [np.linspace(0.0, 1.0, length), *(np.linspace(-1.0, 1.0, length) * (i + 1) for i in range(k))]
    outputs = [(x * y).sum() for y in ys]
    return Graph(f"multi_sum_{k}", f"{k} sums (x * y_i).sum() of vectors({length})", [x, *ys], outputs, values)


def scalar_index(length: int = 16, index: int = 3) -> Graph:
    """``x[index]`` of a vector, consumed by scalar math: ``exp(x[i]) * x[i] + 1``."""
    x = pt.dvector("x")
    xi = x[index]
    values = [np.linspace(0.0, 1.0, length)]
    description = f"x[{index}] of vector({length}) into scalar math"
    return Graph(f"index_{index}", description, [x], [pt.exp(xi) * xi + 1.0], values)


def full_reduction(length: int = 1000) -> Graph:
    """A full sum and max of a vector, consumed by scalar arithmetic."""
    x = pt.dvector("x")
    s = x.sum()
    out = pt.sqrt(s * s + 1.0) + pt.exp(-x.max())
    values = [np.linspace(-1.0, 1.0, length)]
    return Graph("full_reduction", f"sum and max of vector({length}) into scalar math", [x], [out], values)


GRAPHS: dict[str, Callable[[], Graph]] = {
    "logp_grad": logp_grad,
    "concat_60": concatenate,
    "full_reduction": full_reduction,
}
"""The report's graphs, by name."""
