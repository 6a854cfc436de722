"""What the benchmarks measure: each `Case` is a graph, its hand-written ``@njit`` reference, and its
place in ``--quick``.

Families: Join against ``np.concatenate`` over N vectors of 16 and the four geometries of the Join
seed (``join/vectors_60`` is its first, 60 1-D vectors of 16 on axis 0); the wide-graph issue's graphs
over N (N outputs ``x_i * 2``, one output summing N sums); full reductions and scalar indexing consumed
by scalar math; PyMC-shaped logp+gradient graphs, and a 65-parameter regression model whose constant
400x48 design matrix is used column by column; with the ``pymc`` extra, PyMC models as samplers compile them
(``llvm_backend_bench.pymc_models``), and four of them against hand-written ``@njit`` log-densities and gradients
(``llvm_backend_bench.pymc_limit``). nutpie on those models, phase by phase, is no case of this module's: the
``pymc/time_to_posterior`` family (``llvm_backend_bench.time_to_posterior``) times whole processes.
"""

import importlib.util
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from numba.core.registry import CPUDispatcher
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors

from llvm_backend.tools.graphs import (
    Graph,
    concatenate,
    fused_sum,
    join_arrays,
    logp_grad,
    multi_sum,
    reduction,
    regression,
    scalar_index,
    sum_of_sums,
    times_two,
)
from llvm_backend.tools.measure import defined_instruction_count, recording_ir_modules
from llvm_backend_bench import pymc_limit, references

__all__ = ["CASES", "FLOOR", "MODES", "QUICK_CASES", "REFERENCE", "Case", "cold_compile_job", "select_cases"]

MODES = ("NUMBA", "LLVM", "CVM")
"""The PyTensor modes every case runs under."""
REFERENCE = "@njit"
"""The label of a case's hand-written reference, in place of a mode."""
FLOOR = "floor"
"""The label of the call floor (`llvm_backend.tools.measurements.call_floor_runner`), in place of a mode."""
JOIN_SIZES = (8, 30, 60, 120, 240)
WIDE_SIZES = (30, 60, 120, 240)


@dataclass(frozen=True)
class Case:
    name: str
    family: str
    build: Callable[[], Graph]
    reference: CPUDispatcher | None
    """The hand-written ``@njit`` reference, if the case has one."""
    reference_args: Callable[[Graph], tuple]
    """The reference's arguments, from the graph's example values and constants."""
    n: int | None = None
    """Inputs joined, for the compile-time-against-N plot."""
    in_quick: bool = False
    quick_cold_modes: tuple[str, ...] = ()
    """Modes (and `REFERENCE`) cold-compiled under ``--quick``; a full run cold-compiles all."""
    warm: bool = False
    """Whether a cold compile is followed by a warm one: a second fresh process on the caches it filled."""
    requires: str | None = None
    """A module the case needs (its extra's); without it the case is skipped with a message."""
    compile: Callable[[Graph, str], Callable] | None = None
    """How the graph is compiled under a mode, for its cold compile and the function timed (default
    ``pytensor.function``)."""

    def runnable(self) -> bool:
        return self.requires is None or importlib.util.find_spec(self.requires) is not None


def _joined_arrays(axis: int, graph: Graph) -> tuple:
    return (tuple(graph.values), axis)


def _values(graph: Graph) -> tuple:
    return tuple(graph.values)


def _model_arguments(graph: Graph) -> tuple:
    constants = {c.name: c.data for c in ancestors(graph.outputs) if isinstance(c, Constant) and c.name}
    mu, log_tau, log_scale, *offsets, theta = graph.values
    data = constants.get("data", np.zeros(0))
    offsets = np.array(offsets, dtype="float64")
    return (mu, log_tau, log_scale, offsets, theta, constants["y"], constants["sigma"], data)


def _join_cases() -> list[Case]:
    quick_cold = {8: ("NUMBA", "LLVM", "CVM", REFERENCE), 30: ("NUMBA", "LLVM")}
    over_n = [
        Case(
            f"join/vectors_{n}",
            "join over N",
            partial(concatenate, n, 16),
            references.concatenate,
            partial(_joined_arrays, 0),
            n=n,
            in_quick=n in quick_cold,
            quick_cold_modes=quick_cold.get(n, ()),
        )
        for n in JOIN_SIZES
    ]
    geometries = [
        ("2d_axis1", [(100, 100)] * 8, 1, True),
        ("2d_axis0", [(100, 100)] * 8, 0, False),
        ("3d_axis2", [(200, 200, 32)] * 6, 2, False),  # a 62 MB output
    ]
    return over_n + [
        Case(
            f"join/{name}",
            "join geometry",
            partial(join_arrays, shapes, axis),
            references.concatenate,
            partial(_joined_arrays, axis),
            in_quick=quick,
        )
        for name, shapes, axis, quick in geometries
    ]


def _data_and_rows(graph: Graph) -> tuple:
    x, *ys = graph.values
    return (x, tuple(ys))


def _tuple_of_values(graph: Graph) -> tuple:
    return (tuple(graph.values),)


def _wide_cases() -> list[Case]:
    """The wide-graph issue's graphs over N: N outputs ``x_i * 2``; one output, a sum of N sums."""
    return [
        Case(
            f"wide/{name}_{n}",
            family,
            partial(build, n, 16),
            reference,
            _tuple_of_values,
            n=n,
            in_quick=quick and n == 30,
            quick_cold_modes=("NUMBA", "LLVM") if quick and n == 30 else (),
        )
        for name, family, build, reference, quick in (
            ("times_two", "N outputs over N", times_two, references.times_two, True),
            ("sum_of_sums", "sum of N sums over N", sum_of_sums, references.sum_of_sums, False),
        )
        for n in WIDE_SIZES
    ]


def _regression_arguments(graph: Graph) -> tuple:
    constants = {c.name: c.data for c in ancestors(graph.outputs) if isinstance(c, Constant) and c.name}
    columns = sorted((int(name[2:]), data) for name, data in constants.items() if name.startswith("X_"))
    design = np.column_stack([data for _, data in columns])
    intercept, log_sigma, mu_beta, log_tau, *rest = graph.values
    n_groups = len(rest) - design.shape[1]
    log_taus, betas = np.array(rest[:n_groups]), np.array(rest[n_groups:])
    return (intercept, log_sigma, mu_beta, log_tau, log_taus, betas, design, constants["y"])


def _scalar_cases() -> list[Case]:
    reductions = [
        Case(
            f"reduction/{kind}",
            "full reduction",
            partial(reduction, kind),
            getattr(references, f"{kind}_into_scalar_math"),
            _values,
            in_quick=kind == "sum",
        )
        for kind in ("sum", "max", "prod")
    ]
    fused = Case("reduction/fused_sum", "full reduction", fused_sum, references.fused_sum, _values)
    merged = Case("reduction/multi_sum", "full reduction", multi_sum, references.multi_sum, _data_and_rows)
    index = Case("index/x3", "scalar index", scalar_index, references.index_into_scalar_math, _values, in_quick=True)
    return [*reductions, fused, merged, index]


def _logp_cases() -> list[Case]:
    variants = [("3s_v8", {}, True), ("60s_v8", {"n_scalars": 60}, False), ("3s_v8_d10000", {"n_data": 10_000}, False)]
    return [
        Case(
            f"logp_grad/{name}",
            "logp+grad",
            partial(logp_grad, **kwargs),
            references.logp_grad,
            _model_arguments,
            in_quick=quick,
        )
        for name, kwargs, quick in variants
    ]


def _model_cases() -> list[Case]:
    return [Case("model/regression_65p", "model", regression, references.regression, _regression_arguments, warm=True)]


def _pymc_graph(name: str) -> Graph:
    from llvm_backend_bench.pymc_models import logp_dlogp_graph

    return logp_dlogp_graph(name)


def _pymc_compile(graph: Graph, mode: str):
    from llvm_backend_bench.pymc_models import pymc_compile

    return pymc_compile(graph, mode)


def _pymc_cases() -> list[Case]:
    return [
        Case(
            f"pymc/{name}",
            "pymc",
            partial(_pymc_graph, name),
            None,
            _values,
            warm=True,
            requires="pymc",
            compile=_pymc_compile,
        )
        for name in ("eight_schools", "hierarchical_85", "regression_65p")
    ]


def _pymc_limit_cases() -> list[Case]:
    """PyMC's graphs beside the references of ``llvm_backend_bench.pymc_limit`` (family ``pymc``: PyMC models)."""
    return [
        Case(
            f"pymc_limit/{name}",
            "pymc",
            partial(pymc_limit.limit_graph, name),
            pymc_limit.REFERENCES[name],
            partial(pymc_limit.reference_arguments, name),
            requires="pymc",
            compile=_pymc_compile,
        )
        for name in pymc_limit.LIMIT_MODELS
    ]


CASES: dict[str, Case] = {
    case.name: case
    for case in _join_cases()
    + _wide_cases()
    + _scalar_cases()
    + _logp_cases()
    + _model_cases()
    + _pymc_cases()
    + _pymc_limit_cases()
}
QUICK_CASES = tuple(name for name, case in CASES.items() if case.in_quick)


def select_cases(quick: bool = False, pattern: str | None = None) -> list[Case]:
    """The cases to run: all or ``--quick``'s, those whose name matches regular expression ``pattern``."""
    names = QUICK_CASES if quick else tuple(CASES)
    return [CASES[name] for name in names if pattern is None or re.search(pattern, name)]


def _unoptimized_ir(modules: list) -> dict:
    """Counted after the clock stops: the instructions numba emitted (nothing under CVM)."""
    if not modules:
        return {}
    return {"unoptimized_ir_instructions": sum(defined_instruction_count(str(m)) for m in modules)}


def cold_compile_job(case_name: str, mode: str) -> Callable[[], Callable[[], dict]]:
    """Set up ``case_name`` under ``mode`` (or `REFERENCE`) for a cold compile in a fresh process.

    Returns the call to time: compile and call once (``pytensor.function`` plus the first call, like
    ``llvm-backend report``; for the reference, its first call, which compiles it), recording the IR
    modules numba emits; that call returns the untimed count of their instructions.
    """
    import pytensor

    import llvm_backend  # noqa: F401  (registers the LLVM mode)

    case = CASES[case_name]
    graph = case.build()
    reference_args = case.reference_args(graph)

    def compile_and_call():
        if mode == REFERENCE:
            return case.reference(*reference_args)
        if case.compile is not None:
            return case.compile(graph, mode)(*graph.values)
        return pytensor.function(graph.inputs, graph.outputs, mode=mode)(*graph.values)

    def timed():
        with recording_ir_modules() as modules:
            compile_and_call()
        return partial(_unoptimized_ir, modules)

    return timed
