"""The ``pymc_corpus/rewriting`` bench family: the seconds each of PyTensor's rewrite passes takes on a model's
graph, under LLVM and stock NUMBA, for every corpus model and for models of growing width (needs the ``pymc``
extra).

The width models (`wide_scales`) are the shape that made a 65-parameter PyMC model take minutes: ``width`` group
scales, each its own scalar parameter, stacked and gathered by each of ``3 * width`` coefficients' group, the
design in ``pm.Data``, predictors through ``pt.dot``. Their graphs grow linearly with the width; a pass whose
seconds grow faster than the graph is quadratic somewhere.

Per graph and mode, in a fresh process with empty caches (`llvm_backend.tools.coldcompile.cold_call`): the graph
``logp_dlogp_function(ravel_inputs=True)`` compiles is built untimed (`llvm_backend_bench.corpus.corpus_graph`),
then compiled as PyMC compiles it (`llvm_backend_bench.pymc_models.pymc_compile`, the graph function's machine code
left to its first call), each top-level pass of the mode's query timed as a phase
(`llvm_backend_bench.phases.PhaseTimer`: a pass's seconds exclude nothing, the passes do not nest). ``other`` is
the rest of the compile: building the function, under LLVM storing the rewritten graph in the rewrite cache.

``python -m llvm_backend_bench.rewriting`` prints a table per graph (seconds of rewriting, the slowest passes) and
the width models' growth (the exponent of rewriting seconds against the graph's nodes between successive widths);
``--json`` writes every pass's seconds.
"""

import argparse
import itertools
import math
import sys
from dataclasses import asdict, dataclass
from functools import partial
from unittest import mock

import numpy as np
from pytensor.graph.rewriting.basic import GraphRewriter

from llvm_backend.tools.coldcompile import cold_call

__all__ = [
    "MODES",
    "WIDTHS",
    "Rewriting",
    "format_rewriting",
    "growth",
    "main",
    "measure_rewriting",
    "rewriting_job",
    "wide_scales",
]

MODES = ("LLVM", "NUMBA")
WIDTHS = (16, 32, 64, 128, 256)
"""The widths of `wide_scales` measured by default."""
ROWS = 200
JOB = "llvm_backend_bench.rewriting:rewriting_job"
SLOWEST = 3
"""Passes named per graph and mode in the table."""


@dataclass(frozen=True)
class Rewriting:
    """One graph's compile under one mode: its nodes before rewriting, each pass's seconds, and the rest."""

    graph: str
    mode: str
    nodes: int
    passes: dict[str, float]
    other_s: float

    @property
    def rewriting_s(self) -> float:
        return sum(self.passes.values())


def wide_scales(width: int):
    """A regression of ``3 * width`` coefficients whose scales are ``width`` scalar parameters, stacked and gathered
    by each coefficient's group (``pt.stack(scales)[group]``); the design in ``pm.Data``, ``pt.dot``."""
    import pymc as pm
    import pytensor.tensor as pt

    rng = np.random.default_rng(width)
    group = np.arange(3 * width) % width
    X, y = rng.normal(size=(ROWS, group.size)), rng.normal(size=ROWS)
    with pm.Model() as model:
        X_data, y_data = pm.Data("X", X), pm.Data("y_obs", y)
        scales = [pm.HalfNormal(f"scale_{k}", 1.0) for k in range(width)]
        beta = pm.Normal("beta", 0.0, pt.stack(scales)[group], shape=group.size)
        intercept, sigma = pm.Normal("intercept", 0.0, 10.0), pm.HalfNormal("sigma", 1.0)
        pm.Normal("y", intercept + pt.dot(X_data, beta), sigma, observed=y_data)
    return model


def _graph(name: str):
    from llvm_backend_bench.corpus import MODELS, CorpusModel, corpus_graph

    if name in MODELS:
        return corpus_graph(MODELS[name])
    width = int(name.removeprefix("wide_scales_"))
    form = "scalar scales stacked, gathered by index, pm.Data, pt.dot"
    return corpus_graph(CorpusModel(name, "wide scales", form, partial(wide_scales, width)))


class _TimedPass(GraphRewriter):
    """A pass of a query's sequence run as a phase of ``timer`` named after it."""

    def __init__(self, rewriter, timer):
        self.rewriter, self.timer, self.name = rewriter, timer, rewriter.name

    def add_requirements(self, fgraph):
        self.rewriter.add_requirements(fgraph)

    def apply(self, fgraph):
        with self.timer.phase(self.name):
            return self.rewriter.apply(fgraph)

    def print_profile(self, stream, prof, level=0):
        self.rewriter.print_profile(stream, prof, level)


def _timing_query(query, timer):
    """``optdb.query`` (``query``) whose sequences' passes each run as a phase of ``timer`` (the rewrite cache's
    wrapper looked through)."""

    def timed_query(*tags, **kwargs):
        resolved = query(*tags, **kwargs)
        sequence = getattr(resolved, "rewriter", resolved)
        for index, rewriter in enumerate(sequence):
            sequence[index] = _TimedPass(rewriter, timer)
        return resolved

    return timed_query


def rewriting_job(name: str, mode: str):
    """For `cold_call`: graph ``name`` (a corpus model, or ``wide_scales_<width>``) built now, and a callable
    compiling it under ``mode`` as PyMC does with each top-level pass of its query timed."""
    from pytensor.compile.mode import optdb
    from pytensor.graph.fg import FunctionGraph

    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend_bench.phases import OTHER, PhaseTimer
    from llvm_backend_bench.pymc_models import pymc_compile

    graph = _graph(name)
    nodes = len(FunctionGraph(outputs=graph.outputs, clone=True).apply_nodes)
    timer = PhaseTimer()

    def compile_timed():
        with mock.patch.object(optdb, "query", _timing_query(optdb.query, timer)), timer.span():
            pymc_compile(graph, mode)
        seconds = timer.seconds()
        other = seconds.pop(OTHER, 0.0)
        return lambda: {"nodes": nodes, "passes": seconds, "other_s": other}

    return compile_timed


def measure_rewriting(names: list[str], modes: tuple[str, ...], progress) -> list[Rewriting]:
    """A `Rewriting` per graph of ``names`` and mode of ``modes``, each in a fresh process."""
    rows = []
    for name in names:
        for mode in modes:
            progress(f"pymc_corpus/rewriting/{name}: {mode} (a fresh process)")
            measured = cold_call(JOB, name, mode)
            rows.append(Rewriting(name, mode, measured["nodes"], measured["passes"], measured["other_s"]))
    return rows


def growth(rows: list[Rewriting]) -> list[dict]:
    """Per mode and pair of successive widths of `wide_scales`: the exponent of rewriting seconds against the graph's
    nodes (1: linear), overall and for the pass that grew most."""
    out = []
    for mode in dict.fromkeys(row.mode for row in rows):
        wide = sorted((r for r in rows if r.mode == mode and r.graph.startswith("wide_scales_")), key=lambda r: r.nodes)
        for small, large in itertools.pairwise(wide):
            scale = math.log(large.nodes / small.nodes)
            exponents = {
                name: math.log(large.passes[name] / small.passes[name]) / scale
                for name in large.passes.keys() & small.passes.keys()
                if small.passes[name] > 0 and large.passes[name] >= 0.05 * large.rewriting_s
            }
            worst = max(exponents, key=exponents.get) if exponents else None
            out.append(
                {
                    "mode": mode,
                    "from": small.graph,
                    "to": large.graph,
                    "exponent": math.log(large.rewriting_s / small.rewriting_s) / scale,
                    "worst_pass": worst,
                    "worst_exponent": exponents.get(worst),
                }
            )
    return out


def _slowest(row: Rewriting) -> str:
    ranked = sorted(row.passes.items(), key=lambda item: -item[1])[:SLOWEST]
    return ", ".join(f"{name} {seconds:.2f}" for name, seconds in ranked)


def format_rewriting(rows: list[Rewriting]) -> str:
    """A Markdown table of each graph's rewriting seconds per mode (LLVM's ratio to NUMBA's in brackets) and its
    slowest passes, then the width models' growth exponents."""
    by_graph: dict[str, dict[str, Rewriting]] = {}
    for row in rows:
        by_graph.setdefault(row.graph, {})[row.mode] = row
    header = "| graph | nodes | LLVM rewriting s | NUMBA rewriting s | LLVM's slowest passes | NUMBA's slowest passes |"
    lines = [header, "|---" * 6 + "|"]
    for graph, modes in by_graph.items():
        llvm, numba = modes.get("LLVM"), modes.get("NUMBA")
        cells = [graph, str(next(iter(modes.values())).nodes)]
        llvm_cell = "" if llvm is None else f"{llvm.rewriting_s:.2f}"
        if llvm is not None and numba is not None:
            llvm_cell += f" ({llvm.rewriting_s / numba.rewriting_s:.2f}x)"
        cells += [llvm_cell, "" if numba is None else f"{numba.rewriting_s:.2f}"]
        cells += ["" if row is None else _slowest(row) for row in (llvm, numba)]
        lines.append("| " + " | ".join(cells) + " |")
    grown = growth(rows)
    if grown:
        lines += ["", "| mode | from | to | exponent | pass that grew most (exponent) |", "|---|---|---|---|---|"]
        for g in grown:
            worst = "" if g["worst_pass"] is None else f"{g['worst_pass']} ({g['worst_exponent']:.2f})"
            lines.append(f"| {g['mode']} | {g['from']} | {g['to']} | {g['exponent']:.2f} | {worst} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m llvm_backend_bench.rewriting [--model NAME ...] [--width N ...] [--mode MODE ...] [--json FILE]``."""
    from llvm_backend_bench.corpus import MODELS
    from llvm_backend_bench.run import _versions, write_json

    parser = argparse.ArgumentParser(
        prog="python -m llvm_backend_bench.rewriting",
        description="Seconds per rewrite pass on the PyMC corpus and on models of growing width, LLVM and NUMBA",
    )
    parser.add_argument("--model", action="append", choices=sorted(MODELS), help="a corpus model (repeatable)")
    parser.add_argument("--width", action="append", type=int, help="a width of the wide-scales model (repeatable)")
    parser.add_argument("--mode", action="append", choices=MODES, help="a mode to measure (default: both)")
    parser.add_argument("--json", metavar="FILE", help="where to write the rows and the growth as JSON")
    args = parser.parse_args(argv)
    chosen = args.model is not None or args.width is not None
    names = [*(args.model or ([] if chosen else list(MODELS)))]
    names += [f"wide_scales_{width}" for width in (args.width or ([] if chosen else WIDTHS))]
    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731, T201
    rows = measure_rewriting(names, tuple(args.mode or MODES), progress)
    print(format_rewriting(rows))  # noqa: T201
    if args.json is not None:
        cases = {f"pymc_corpus/{graph}": {"family": "pymc_corpus", "n": None} for graph in dict.fromkeys(names)}
        payload = {"versions": _versions(), "cases": cases, "growth": growth(rows)}
        payload["rewriting"] = [asdict(row) | {"rewriting_s": row.rewriting_s} for row in rows]
        progress(f"wrote {write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
