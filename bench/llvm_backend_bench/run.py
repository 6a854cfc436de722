"""``llvm-backend bench``: measure the cases under every mode and the reference, tabulate, save JSON and plots.

Per case: compile under NUMBA, LLVM and CVM (numba cache off, so the IR counted is the code timed) and
the hand-written ``@njit`` reference; cold-compile each in a fresh process with empty caches
(``llvm_backend.tools.coldcompile``), counting there the unoptimized IR numba emits (in a fresh process no
helper was compiled before, so the count does not depend on what ran first); then time all four in
interleaved rounds and count NRT allocations and optimized kernel IR of the numba ones
(``llvm_backend.tools.measurements.measure_runners``).
"""

import json
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import llvmlite
import numba
import numpy as np
import pytensor

from llvm_backend.tools.coldcompile import cold_call
from llvm_backend.tools.measurements import (
    FUNCTION_CALL,
    Measurement,
    Runner,
    as_json,
    call_floor_runner,
    compile_runner,
    format_inline_table,
    jitted_runner,
    measure_runners,
)
from llvm_backend_bench import intrinsics, time_to_posterior
from llvm_backend_bench.cases import FLOOR, MODES, REFERENCE, Case
from llvm_backend_bench.plots import draw_plots
from llvm_backend_bench.time_to_posterior import (
    NUTPIE_FOOTNOTE,
    PHASE_FOOTNOTE,
    Posterior,
    format_nutpie_table,
    format_phase_table,
    measure_posterior,
    nutpie_rows,
)

__all__ = [
    "COLUMNS",
    "FOOTNOTE",
    "BenchRun",
    "format_bench_table",
    "measure_case",
    "run_bench",
    "write_results",
]

COLUMNS = (
    ("cold compile s", "cold_compile_s", "{:.2f}"),
    ("warm compile s", "warm_compile_s", "{:.2f}"),
    ("us/call", "us_per_call", "{:.2f}"),
    ("allocs/call", "allocs_per_call", "{:.1f}"),
    ("kernel IR instr", "kernel_ir_instructions", "{:d}"),
    ("unopt IR instr", "unoptimized_ir_instructions", "{:d}"),
)
FOOTNOTE = (
    f"Ratios (in brackets) are against NUMBA. * timed through the {FUNCTION_CALL} (CVM has no numba "
    "dispatcher); NUMBA and LLVM are timed as their thunk calls the jitted function (reading its input "
    "cells, which under LLVM builds any array packs and reads 0-d float64/int64 inputs as Python scalars, or "
    "passes 6 or more of one dtype as one scalar pack of their cells), "
    "@njit as a raw call. Allocations and IR: numba code only. "
    "unopt IR instr: every instruction numba emitted during the cold compile, before LLVM optimized it. "
    "warm compile s: the same in a second fresh process on the caches the cold one filled (model cases). "
    "floor: an @njit function of the graph's inputs that does nothing, called on the arrays jit_fn takes: what "
    "that calling convention alone costs per call (dispatch, unboxing each array)."
)
MICRO_FOOTNOTE = (
    "Intrinsics: ours is a plain @njit function calling the intrinsic, peer the numba/numpy code a user would write "
    "(a tuple where ours takes a pack); compile s is the first call of a fresh dispatcher in this process; IR instr "
    "counts the optimized function's own instructions (not those of functions it calls); ratios against the peer."
)
QUICK_ROUNDS, FULL_ROUNDS = 3, 9
ALLOCATION_CALLS = 10


@dataclass(frozen=True)
class BenchRun:
    quick: bool
    results: list[Measurement]
    cases: dict[str, dict]
    """Case name -> family, description and N (joins over N)."""
    posterior: list[Posterior] = field(default_factory=list)
    """The ``pymc/time_to_posterior`` family: per model, nutpie backend and process, seconds per phase."""
    nutpie: list[dict] = field(default_factory=list)
    """nutpie end to end, from ``posterior``: case, backend, seconds, compile_s, warm_compile_s, sample_s,
    us_per_gradient."""
    micro: list[intrinsics.MicroResult] = field(default_factory=list)
    """The microbenchmarks of the intrinsics (`llvm_backend_bench.intrinsics`)."""


def reference_runner(case: Case, graph) -> Runner:
    """The case's ``@njit`` reference, recompiled from its source (same options) so its IR is recorded here."""
    fresh = numba.jit(**case.reference.targetoptions)(case.reference.py_func)
    return jitted_runner(REFERENCE, fresh, case.reference_args(graph))


def measure_case(case: Case, modes, cold_modes, rounds: int, progress: Callable[[str], None]) -> tuple[list, str]:
    """Measure ``case`` under ``modes`` and its reference; cold-compile under ``cold_modes`` only.

    Returns the measurements and the graph's description.
    """
    graph = case.build()
    references = [reference_runner(case, graph)] if case.reference is not None and REFERENCE in modes else []
    floor = [call_floor_runner(FLOOR, graph)] if FLOOR in modes else []
    compiled = [mode for mode in modes if mode not in (REFERENCE, FLOOR)]
    progress(f"{case.name}: compiling under {', '.join(compiled)}{f' and {REFERENCE}' if references else ''}")
    runners = [compile_runner(graph, mode, case.compile) for mode in compiled] + references + floor
    cold = {}
    for mode in cold_modes:
        progress(f"{case.name}: cold compile under {mode} (fresh process, empty caches)")
        cold[mode] = cold_call("llvm_backend_bench.cases:cold_compile_job", case.name, mode, warm=case.warm)
    progress(f"{case.name}: timing {rounds} interleaved rounds")
    return measure_runners(case.name, runners, cold, rounds, ALLOCATION_CALLS), graph.description


def run_bench(
    cases: list[Case],
    quick: bool = False,
    progress: Callable[[str], None] = print,
    modes: tuple[str, ...] = (*MODES, REFERENCE, FLOOR),
    micro: list[intrinsics.Micro] = (),
    posterior: list[str] = (),
) -> BenchRun:
    """Measure ``cases`` under ``modes`` (of `MODES`, `REFERENCE`, the cases' ``@njit`` references, and
    `FLOOR`, the call floor of the graph's signature; stock
    NUMBA left out takes the ratio columns with it), then the ``pymc/time_to_posterior`` cases ``posterior``
    (`llvm_backend_bench.time_to_posterior`, under nutpie's backends whatever ``modes``), then the intrinsics'
    microbenchmarks ``micro``; ``--quick`` runs fewer rounds and cold-compiles only what each case names."""
    results, described, steps = [], {}, len(cases) + len(posterior)
    for i, case in enumerate(cases, start=1):
        step = partial(_numbered, progress, f"[{i}/{steps}]")
        if not case.runnable():
            step(f"{case.name}: skipped ({case.requires} is not installed; install the project's pymc extra)")
            continue
        cold_modes = case.quick_cold_modes if quick else (*MODES, REFERENCE)
        cold_modes = tuple(m for m in cold_modes if m in modes and (m != REFERENCE or case.reference is not None))
        rounds = QUICK_ROUNDS if quick else FULL_ROUNDS
        measured, description = measure_case(case, modes, cold_modes, rounds, step)
        results.extend(measured)
        described[case.name] = {"family": case.family, "description": description, "n": case.n}
    posterior_rows = []
    for i, name in enumerate(posterior, start=len(cases) + 1):
        posterior_rows += measure_posterior([name], partial(_numbered, progress, f"[{i}/{steps}]"))
    rounds = QUICK_ROUNDS if quick else FULL_ROUNDS
    return BenchRun(
        quick,
        results,
        described,
        posterior_rows,
        nutpie_rows(posterior_rows),
        intrinsics.measure_micro(list(micro), rounds, progress),
    )


def _numbered(progress: Callable[[str], None], number: str, message: str) -> None:
    progress(f"{number} {message}")


def format_bench_table(run: BenchRun) -> str:
    """The Markdown table of ``run``, every value with its ratio to NUMBA, and its footnote; then, if the run
    timed them, the ``pymc/time_to_posterior`` family's phases and nutpie's totals."""
    parts = [f"{format_inline_table(run.results, COLUMNS)}\n\n{FOOTNOTE}"] if run.results else []
    if run.posterior:
        parts.append(f"{format_phase_table(run.posterior)}\n\n{PHASE_FOOTNOTE}")
    if run.nutpie:
        parts.append(f"{format_nutpie_table(run.nutpie)}\n\n{NUTPIE_FOOTNOTE}")
    if run.micro:
        parts.append(f"{intrinsics.format_micro_table(run.micro)}\n\n{MICRO_FOOTNOTE}")
    return "\n\n".join(parts)


def _versions() -> dict:
    return {
        "python": platform.python_version(),
        "pytensor": pytensor.__version__,
        "numba": numba.__version__,
        "llvmlite": llvmlite.__version__,
        "numpy": np.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
    }


def write_json(path: str | Path, payload: dict) -> Path:
    """``payload`` as indented JSON at ``path``, its directory made if missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def write_results(run: BenchRun, out_dir: Path) -> list[Path]:
    """Write ``bench.json`` and the PNG plots into ``out_dir``; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = draw_plots(run.results, run.cases, out_dir, run.posterior)
    payload = {
        "quick": run.quick,
        "versions": _versions(),
        "footnote": FOOTNOTE,
        "cases": run.cases,
        "results": as_json(run.results),
        "time_to_posterior": time_to_posterior.as_json(run.posterior),
        "nutpie": run.nutpie,
        "intrinsics": intrinsics.as_json(run.micro),
        "plots": [path.name for path in plots],
    }
    json_path = out_dir / "bench.json"
    json_path.write_text(json.dumps(payload, indent=2) + "\n")
    return [json_path, *plots]
