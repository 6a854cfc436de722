"""The ``pymc_limit`` bench family: PyMC's log-density and gradient against hand-written ``@njit`` code (needs the
``pymc`` extra).

How close the LLVM mode comes to what a numba user could write by hand: four real PyMC models, each the graph
``logp_dlogp_function(ravel_inputs=True)`` compiles (`llvm_backend_bench.pymc_models.logp_dlogp_graph`), beside a
reference written for it here that takes the same raveled vector (the model's value variables in order, in the
transformed space: a HalfNormal or HalfCauchy as its log, with the log-Jacobian PyMC adds) and the model's data,
and returns the same log-density and gradient, allocating the gradient only (the regression also its vector of
400 residuals, so that both passes over its design matrix vectorize).

A reference that computed anything else would make the comparison a lie, so `measure_calls` checks it against
PyMC's own function at the initial point and at random points before it times anything (`check_reference`), and
a mismatch stops the run. ``tests/pymc/test_pymc_limit.py`` makes the same check.

`llvm-backend bench --filter '^pymc_limit/'` measures the family as every case (``llvm_backend_bench.cases``);
`measure_calls` times what that does not: the numba function as PyTensor's contract hands it out (``fn.vm.jit_fn``) and
the PyTensor Function itself (``fn(x)``, input checks on), under LLVM and stock NUMBA, beside the reference, in
interleaved rounds (`llvm_backend.tools.measurements.measure_runners`). ``python -m llvm_backend_bench.pymc_limit``
prints its table and writes it as JSON.

Beside the reference it times the reference as PyTensor's contract has ``jit_fn`` return (`as_jit_fn`): its
log-density returned as a 0-d array, as every output of a PyTensor function is, where the reference returns a
Python float, which numba boxes without an allocation: the floor of a graph function called under that contract,
whatever its code.

The models: eight schools, the 85-group hierarchical model and the 65-parameter regression of
`llvm_backend_bench.pymc_models`, and a logistic regression of 5 predictors and 1,000 observations (`logistic_5p`).
"""

import argparse
import inspect
import sys
from dataclasses import replace
from functools import partial
from unittest import mock

import numpy as np
from pytensor import config

from llvm_backend.tools.graphs import Graph
from llvm_backend.tools.measure import Kernel
from llvm_backend.tools.measurements import (
    FUNCTION_CALL,
    NUMBA_CALL,
    Measurement,
    Runner,
    as_json,
    format_inline_table,
    jitted_runner,
    measure_runners,
)
from llvm_backend_bench.references import HALF_LOG_2PI, fast_njit

__all__ = [
    "CALL_COLUMNS",
    "CALL_FOOTNOTE",
    "DATA",
    "JIT_FN_REFERENCE",
    "LIMIT_MODELS",
    "REFERENCES",
    "as_jit_fn",
    "called_runner",
    "check_reference",
    "eight_schools_logp",
    "format_calls_table",
    "hierarchical_85_logp",
    "limit_graph",
    "logistic_5p",
    "logistic_5p_logp",
    "main",
    "measure_calls",
    "reference_arguments",
    "regression_65p_logp",
    "regression_likelihood",
]

LIMIT_MODELS = ("eight_schools", "hierarchical_85", "regression_65p", "logistic_5p")
CHECK_POINTS = 5
"""Random points (besides the initial one) at which a reference is checked against PyMC's function."""
CHECK_TOLERANCE = 1e-12
"""Relative and absolute: the reference and PyMC's function differ by rounding only."""
HALF_LOG_2_OVER_PI = 0.5 * np.log(2.0 / np.pi)
LOG_2, LOG_5, LOG_10 = (float(np.log(np.float32(v))) for v in (2.0, 5.0, 10.0))
"""The logs of integer constants as PyMC's graphs hold them (HalfCauchy's log(2), the models' integer scales):
PyTensor takes the log of an int8 constant in float32, up to 3e-8 from the float64 log."""
CALL_MODES = ("LLVM", "NUMBA")
JIT_FN_REFERENCE = "@njit as jit_fn"
"""The label of the reference called as PyTensor's contract has ``jit_fn`` called (`as_jit_fn`)."""
CALL_COLUMNS = (
    ("us/call", "us_per_call", "{:.2f}"),
    ("allocs/call", "allocs_per_call", "{:.1f}"),
    ("net allocs/call", "net_allocs_per_call", "{:.1f}"),
)
CALL_FOOTNOTE = (
    "Ratios (in brackets) are against @njit, the hand-written reference, called on the raveled vector and the "
    "model's data arrays. @njit as jit_fn: the reference taking *args and returning its logp as a 0-d array, as "
    "fn.vm.jit_fn does. <MODE> jit_fn: fn.vm.jit_fn(x) of the function PyMC's compile makes (numba cache off); "
    f"<MODE> Function*: the PyTensor Function, fn(x) with trust_input off, timed through the {FUNCTION_CALL}. "
    "Medians of interleaved timeit rounds. allocs/call: NRT allocations per call of numba code; net: without the "
    "one numba makes to unbox each ndarray argument."
)


def logistic_5p(n_obs=1000, n_predictors=5):
    """A logistic regression: an intercept and 5 coefficients, Normal priors, 1,000 simulated Bernoulli
    observations (seed 5)."""
    import pymc as pm

    X, y = _logistic_data(n_obs, n_predictors)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 5)
        beta = pm.Normal("beta", 0, 1, shape=n_predictors)
        pm.Bernoulli("y", logit_p=intercept + X @ beta, observed=y)
    return model


def _logistic_data(n_obs, n_predictors):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(n_obs, n_predictors))
    logit = -0.5 + X @ rng.normal(0, 1, size=n_predictors)
    y = (rng.random(n_obs) < 1 / (1 + np.exp(-logit))).astype("int64")
    return X, y


def _models() -> dict:
    """Every model of the family by name: those of `llvm_backend_bench.pymc_models` and ours."""
    from llvm_backend_bench.pymc_models import MODELS

    return {**MODELS, "logistic_5p": logistic_5p}


def limit_graph(name: str) -> Graph:
    """Model ``name``'s log-density and joined gradient of one raveled vector, at its initial point:
    `llvm_backend_bench.pymc_models.logp_dlogp_graph`, which knows its own models only, so ours is lent to it
    for the call."""
    from llvm_backend_bench import pymc_models

    with mock.patch.dict(pymc_models.MODELS, {name: _models()[name]}):
        return pymc_models.logp_dlogp_graph(name)


def _eight_schools_data() -> tuple:
    return (
        np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]),
        np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]),
    )


def _hierarchical_85_data() -> tuple:
    rng = np.random.default_rng(85)
    group = rng.integers(0, 85, size=919)
    floor = rng.integers(0, 2, size=919).astype("float64")
    y = 1.5 + rng.normal(0, 0.3, size=85)[group] - 0.6 * floor + rng.normal(0, 0.7, size=919)
    return (group, floor, y)


def _regression_65p_data() -> tuple:
    rng = np.random.default_rng(65)
    X = rng.normal(size=(400, 48))
    y = X @ rng.normal(0, 0.5, size=48) + 1.0 + rng.normal(0, 0.5, size=400)
    return (13, np.ascontiguousarray(X.T), y)


DATA = {
    "eight_schools": _eight_schools_data,
    "hierarchical_85": _hierarchical_85_data,
    "regression_65p": _regression_65p_data,
    "logistic_5p": lambda: _logistic_data(1000, 5),
}
"""Each model's data as its reference takes it, drawn as the model draws it (a model whose data changed fails
`check_reference`)."""


@fast_njit
def eight_schools_logp(x, y, sigma):
    """``[mu, log tau, theta (8)]``: mu ~ Normal(0, 5), tau ~ HalfCauchy(5), theta ~ Normal(0, 1),
    y ~ Normal(mu + tau * theta, sigma)."""
    mu, log_tau = x[0], x[1]
    tau = np.exp(log_tau)
    u = tau * tau / 25.0
    logp = -0.5 * (mu / 5.0) ** 2 - LOG_5 - HALF_LOG_2PI
    logp += LOG_2 - np.log(np.pi) - LOG_5 - np.log1p(u) + log_tau
    grad = np.empty(x.size)
    d_mu, d_log_tau = -mu / 25.0, 1.0 - 2.0 * u / (1.0 + u)
    for j in range(y.size):
        theta = x[2 + j]
        r = (y[j] - mu - tau * theta) / sigma[j]
        logp += -0.5 * theta * theta - 0.5 * r * r - np.log(sigma[j]) - 2.0 * HALF_LOG_2PI
        d_mu += r / sigma[j]
        d_log_tau += r * theta * tau / sigma[j]
        grad[2 + j] = r * tau / sigma[j] - theta
    grad[0], grad[1] = d_mu, d_log_tau
    return logp, grad


@fast_njit
def hierarchical_85_logp(x, group, floor, y):
    """``[mu_a, log sigma_a, offset (85), b, log sigma_y]``: mu_a ~ Normal(0, 10), sigma_a and sigma_y ~
    HalfNormal(1), offset and b ~ Normal(0, 1), y ~ Normal(mu_a + sigma_a * offset[group] + b * floor, sigma_y)."""
    n_groups = x.size - 4
    mu_a, log_sigma_a, b, log_sigma_y = x[0], x[1], x[2 + n_groups], x[3 + n_groups]
    sigma_a, sigma_y = np.exp(log_sigma_a), np.exp(log_sigma_y)
    logp = -0.5 * (mu_a / 10.0) ** 2 - LOG_10 - HALF_LOG_2PI - 0.5 * b * b - HALF_LOG_2PI
    logp += 2.0 * HALF_LOG_2_OVER_PI - 0.5 * (sigma_a * sigma_a + sigma_y * sigma_y) + log_sigma_a + log_sigma_y
    grad = np.empty(x.size)
    for k in range(n_groups):
        offset = x[2 + k]
        logp += -0.5 * offset * offset - HALF_LOG_2PI
        grad[2 + k] = -offset
    d_mu_a = d_log_sigma_a = d_b = sum_r2 = 0.0
    scale = sigma_a / sigma_y
    for i in range(y.size):
        offset = x[2 + group[i]]
        r = (y[i] - mu_a - sigma_a * offset - b * floor[i]) / sigma_y
        sum_r2 += r * r
        d_mu_a += r
        d_log_sigma_a += r * offset
        d_b += r * floor[i]
        grad[2 + group[i]] += r * scale
    logp += -0.5 * sum_r2 - y.size * (log_sigma_y + HALF_LOG_2PI)
    grad[0] = d_mu_a / sigma_y - mu_a / 100.0
    grad[1] = d_log_sigma_a * scale + 1.0 - sigma_a * sigma_a
    grad[2 + n_groups] = d_b / sigma_y - b
    grad[3 + n_groups] = sum_r2 - y.size + 1.0 - sigma_y * sigma_y
    return logp, grad


@fast_njit
def regression_likelihood(x, grad, first_beta, design_t, y):
    """The log-likelihood ``y ~ Normal(intercept + design @ beta, sigma)`` of a vector ``x`` holding ``intercept``
    and ``log sigma`` first and ``beta`` from ``first_beta``: adds its gradient into ``grad``'s ``beta`` and writes
    ``grad[0]`` and ``grad[1]`` with the priors' terms too (intercept ~ Normal(0, 10); sigma ~ HalfNormal(1) and
    its log-Jacobian). ``design_t`` is the design transposed, C-contiguous, so both passes over it, the residuals
    and the gradient's dot products, run along contiguous columns, which LLVM vectorizes."""
    n_cols = design_t.shape[0]
    intercept, log_sigma = x[0], x[1]
    sigma = np.exp(log_sigma)
    inv_var = 1.0 / (sigma * sigma)
    residual = y - intercept
    for i in range(n_cols):
        column, beta = design_t[i], x[first_beta + i]
        for n in range(y.size):
            residual[n] -= column[n] * beta
    sum_r2 = sum_r = 0.0
    for n in range(y.size):
        sum_r2 += residual[n] * residual[n]
        sum_r += residual[n]
    for i in range(n_cols):
        column, dot = design_t[i], 0.0
        for n in range(y.size):
            dot += column[n] * residual[n]
        grad[first_beta + i] += dot * inv_var
    grad[0] = sum_r * inv_var - intercept / 100.0
    grad[1] = sum_r2 * inv_var - y.size + 1.0 - sigma * sigma
    return -0.5 * sum_r2 * inv_var - y.size * (log_sigma + HALF_LOG_2PI)


@fast_njit
def regression_65p_logp(x, n_groups, design_t, y):
    """``[intercept, log sigma, mu_beta, log tau, log tau_g (n_groups), beta_i (columns)]``: intercept ~
    Normal(0, 10), sigma and tau ~ HalfNormal(1), mu_beta ~ Normal(0, 1), tau_g ~ HalfNormal(tau), beta_i ~
    Normal(mu_beta, tau_(i mod n_groups)), y ~ Normal(intercept + design @ beta, sigma) (`regression_likelihood`;
    ``design_t``, the design matrix transposed, is made once with the data)."""
    n_cols = design_t.shape[0]
    first_beta = 4 + n_groups
    intercept, log_sigma, mu_beta, log_tau = x[0], x[1], x[2], x[3]
    sigma, tau = np.exp(log_sigma), np.exp(log_tau)
    logp = -0.5 * (intercept / 10.0) ** 2 - LOG_10 - 0.5 * mu_beta * mu_beta - 2.0 * HALF_LOG_2PI
    logp += 2.0 * HALF_LOG_2_OVER_PI - 0.5 * (sigma * sigma + tau * tau) + log_sigma + log_tau
    grad = np.zeros(x.size)
    d_mu_beta, d_log_tau = -mu_beta, 1.0 - tau * tau
    for k in range(n_groups):
        q = np.exp(x[4 + k] - log_tau)
        logp += HALF_LOG_2_OVER_PI - log_tau - 0.5 * q * q + x[4 + k]
        grad[4 + k] = 1.0 - q * q
        d_log_tau += q * q - 1.0
    for i in range(n_cols):
        k = i % n_groups
        tau_k = np.exp(x[4 + k])
        r = (x[first_beta + i] - mu_beta) / tau_k
        logp += -0.5 * r * r - x[4 + k] - HALF_LOG_2PI
        grad[first_beta + i] = -r / tau_k
        d_mu_beta += r / tau_k
        grad[4 + k] += r * r - 1.0
    logp += regression_likelihood(x, grad, first_beta, design_t, y)
    grad[2], grad[3] = d_mu_beta, d_log_tau
    return logp, grad


@fast_njit
def logistic_5p_logp(x, design, y):
    """``[intercept, beta (5)]``: intercept ~ Normal(0, 5), beta ~ Normal(0, 1), y ~ Bernoulli(logit_p=intercept +
    design @ beta); log p(y) is -softplus(-logit) for y = 1, -softplus(logit) for 0."""
    n_predictors = design.shape[1]
    intercept = x[0]
    logp = -0.5 * (intercept / 5.0) ** 2 - LOG_5 - HALF_LOG_2PI
    grad = np.empty(x.size)
    grad[0] = -intercept / 25.0
    for i in range(n_predictors):
        logp += -0.5 * x[1 + i] * x[1 + i] - HALF_LOG_2PI
        grad[1 + i] = -x[1 + i]
    for n in range(y.size):
        logit = intercept
        for i in range(n_predictors):
            logit += design[n, i] * x[1 + i]
        signed = logit if y[n] == 0 else -logit
        logp -= max(signed, 0.0) + np.log1p(np.exp(-abs(signed)))
        residual = y[n] - 1.0 / (1.0 + np.exp(-logit))
        grad[0] += residual
        for i in range(n_predictors):
            grad[1 + i] += residual * design[n, i]
    return logp, grad


REFERENCES = {
    "eight_schools": eight_schools_logp,
    "hierarchical_85": hierarchical_85_logp,
    "regression_65p": regression_65p_logp,
    "logistic_5p": logistic_5p_logp,
}


def as_jit_fn(reference):
    """``reference`` as PyTensor's contract has a graph's ``jit_fn``: a numba function of the reference's
    parameters, one each, as stock's graph function takes its inputs, returning the log-density as a 0-d array
    (one allocation more) and the gradient."""
    parameters = ", ".join(inspect.signature(reference.py_func).parameters)
    source = (
        f"def called_as_jit_fn({parameters}):\n"
        f"    logp, grad = reference({parameters})\n"
        "    boxed = np.empty((), dtype=np.float64)\n"
        "    boxed[()] = logp\n"
        "    return boxed, grad\n"
    )
    namespace = {"reference": reference, "np": np}
    exec(compile(source, f"<as_jit_fn {reference.__name__}>", "exec"), namespace)
    return fast_njit(namespace["called_as_jit_fn"])


def reference_arguments(name: str, graph: Graph) -> tuple:
    """Model ``name``'s reference's arguments: the graph's raveled vector, then the model's data."""
    return (graph.values[0], *DATA[name]())


def check_reference(name: str, graph: Graph, points: int = CHECK_POINTS) -> None:
    """Raise ``AssertionError`` unless model ``name``'s reference returns what PyMC's function of ``graph`` does
    under stock NUMBA, to `CHECK_TOLERANCE`, at the graph's point and at ``points`` random ones about it (the
    ``py`` linker cannot run it: PyMC sums a model's terms in one Add of an input per term, and Python-mode
    Elemwise takes 32 at most)."""
    from llvm_backend_bench.pymc_models import pymc_compile

    expected = pymc_compile(graph, "NUMBA")
    x0, *data = reference_arguments(name, graph)
    rng = np.random.default_rng(33)
    for x in [x0, *(x0 + rng.normal(0, 0.5, size=x0.size) for _ in range(points))]:
        logp, grad = expected(x)
        got_logp, got_grad = REFERENCES[name](x, *data)
        message = f"the @njit reference of {name} disagrees with PyMC's function at x = {x.tolist()}"
        np.testing.assert_allclose(got_logp, logp, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE, err_msg=message)
        np.testing.assert_allclose(got_grad, grad, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE, err_msg=message)


def measure_calls(name: str, rounds: int = 9, progress=print) -> tuple[list[Measurement], str]:
    """Model ``name``'s reference (checked first, `check_reference`) and its `as_jit_fn`, then ``fn.vm.jit_fn``
    and the Function ``fn`` PyMC's compile makes under each of `CALL_MODES` (numba cache off, so ``jit_fn`` is the
    code compiled here rather than a wrapper of what a cache holds), timed in ``rounds`` interleaved rounds, with the
    allocations per call of the numba ones. Returns the measurements and the graph's description."""
    from llvm_backend_bench.cases import REFERENCE
    from llvm_backend_bench.pymc_models import pymc_compile
    from llvm_backend_bench.run import ALLOCATION_CALLS

    graph = limit_graph(name)
    progress(f"pymc_limit/{name}: checking the @njit reference against PyMC's function under NUMBA")
    check_reference(name, graph)
    x, arguments = graph.values[0], reference_arguments(name, graph)
    runners = [jitted_runner(REFERENCE, REFERENCES[name], arguments)]
    runners.append(called_runner(JIT_FN_REFERENCE, as_jit_fn(REFERENCES[name]), arguments))
    for mode in CALL_MODES:
        progress(f"pymc_limit/{name}: compiling under {mode}")
        with config.change_flags(numba__cache=False):
            fn = pymc_compile(graph, mode)
        fn.trust_input = False
        runners.append(called_runner(f"{mode} jit_fn", fn.vm.jit_fn, (x,)))
        runners.append(Runner(f"{mode} Function", partial(fn, x), FUNCTION_CALL))
    progress(f"pymc_limit/{name}: timing {rounds} interleaved rounds")
    measured = measure_runners(f"pymc_limit/{name}", runners, {}, rounds, ALLOCATION_CALLS)
    return [m if m.mode == REFERENCE else replace(m, kernel_ir_instructions=None) for m in measured], graph.description


def called_runner(label: str, dispatcher, args: tuple) -> Runner:
    """A runner calling ``dispatcher(*args)`` (a ``jit_fn``, or `as_jit_fn`'s), with its allocations counted.
    It is compiled by a call, as a user's first call compiles it, not for an explicit signature (as `jitted_runner`
    compiles), so it is called once first. Its IR is an entry's, not the kernel's (under LLVM the graph function is
    called through its address): left out of the measurements."""
    dispatcher(*args)
    kernel = Kernel(dispatcher, dispatcher.signatures[0], ())
    arrays = sum(isinstance(a, np.ndarray) for a in args)
    return Runner(label, partial(dispatcher, *args), NUMBA_CALL, kernel, unboxed_arrays=arrays)


def format_calls_table(results: list[Measurement]) -> str:
    """`measure_calls`' rows as a Markdown table, each value with its ratio to the reference, and the footnote."""
    from llvm_backend_bench.cases import REFERENCE

    return f"{format_inline_table(results, CALL_COLUMNS, baseline=REFERENCE)}\n\n{CALL_FOOTNOTE}"


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)  # noqa: T201  (a command-line front end)


def main(argv: list[str] | None = None) -> int:
    """``python -m llvm_backend_bench.pymc_limit``: `measure_calls` on each model, the table to stdout, progress to
    stderr, and with ``--json FILE`` the rows as `llvm-backend bench` writes its own (versions, footnote, cases,
    results), in FILE's directory, made if missing."""
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend_bench.run import FULL_ROUNDS, _versions, write_json

    parser = argparse.ArgumentParser(
        prog="python -m llvm_backend_bench.pymc_limit",
        description="PyMC's logp and gradient: jit_fn and Function calls under LLVM and NUMBA against @njit",
    )
    parser.add_argument("--model", action="append", choices=LIMIT_MODELS, help="a model to measure (repeatable)")
    parser.add_argument("--rounds", type=int, default=FULL_ROUNDS, help="interleaved timeit rounds")
    parser.add_argument("--json", metavar="FILE", help="where to write the rows as JSON")
    args = parser.parse_args(argv)
    results, cases = [], {}
    for name in args.model or LIMIT_MODELS:
        measured, description = measure_calls(name, args.rounds, _progress)
        results.extend(measured)
        cases[f"pymc_limit/{name}"] = {"family": "pymc", "description": description, "n": None}
    print(format_calls_table(results))  # noqa: T201
    if args.json is not None:
        payload = {"versions": _versions(), "footnote": CALL_FOOTNOTE, "cases": cases, "results": as_json(results)}
        _progress(f"wrote {write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
