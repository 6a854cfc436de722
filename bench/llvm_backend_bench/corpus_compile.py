"""The ``pymc_corpus/compile`` bench family: how long each model of the corpus (`llvm_backend_bench.corpus`) takes
to compile, cold and warm, under LLVM, stock NUMBA and JAX (needs the ``pymc`` extra; JAX's needs ``jax``).

Per model and mode, in a fresh process with empty caches (`llvm_backend.tools.coldcompile.cold_call`): the graph
``logp_dlogp_function(ravel_inputs=True)`` compiles is built untimed (`llvm_backend_bench.corpus.corpus_graph`:
PyMC's model, its log-density and gradient), then timed: compiling it as PyMC compiles
(`llvm_backend_bench.pymc_models.pymc_compile`: rewriting, linking) and its first call (numba compiles lazily, JAX
traces and compiles at it). ``warm`` is the same in a second fresh process on the caches the first filled (numba's
cache and PyTensor's compiledir, under LLVM our rewrite cache, JAX's persistent compilation cache).

``python -m llvm_backend_bench.corpus_compile`` prints a table of seconds with LLVM's ratios to NUMBA and to JAX and
their geometric means, and with ``--json`` writes them.
"""

import argparse
import sys
from dataclasses import asdict, dataclass
from importlib.util import find_spec

import numpy as np

from llvm_backend.tools.coldcompile import cold_call

__all__ = ["COMPILE_MODES", "Compile", "compile_job", "format_compiles", "main", "measure_compiles", "summarize"]

COMPILE_MODES = ("LLVM", "NUMBA", "JAX")
PROCESSES = ("cold", "warm")
JOB = "llvm_backend_bench.corpus_compile:compile_job"
"""What each fresh process runs (`compile_job`), named by its module's import name: run as ``python -m``, this
module is ``__main__``, which the fresh process cannot import."""
FOOTNOTE = "Seconds to compile the model's graph as PyMC does and call it once; LLVM's ratios (to NUMBA / to JAX)."


@dataclass(frozen=True)
class Compile:
    """One model's compile and first call under one mode, in a cold process and a warm one (seconds)."""

    model: str
    mode: str
    cold_s: float
    warm_s: float


def compile_job(name: str, mode: str):
    """For `cold_call`: corpus model ``name``'s graph built now, and a callable compiling it under ``mode`` as PyMC
    does and calling it once at its initial point."""
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend_bench.corpus import MODELS, corpus_graph
    from llvm_backend_bench.pymc_models import pymc_compile

    graph = corpus_graph(MODELS[name])
    if mode == "JAX":
        import jax
        from pytensor import config

        jax.config.update("jax_compilation_cache_dir", f"{config.base_compiledir}/jax")
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)

    def compile_and_call():
        pymc_compile(graph, mode)(*graph.values)

    return compile_and_call


def measure_compiles(names: list[str], progress) -> list[Compile]:
    """`Compile` rows of each model of ``names`` under each of `COMPILE_MODES` (JAX's skipped, said by
    ``progress``, without jax or on a graph PyTensor's JAX backend cannot run)."""
    rows = []
    for name in names:
        for mode in COMPILE_MODES:
            if mode == "JAX" and find_spec("jax") is None:
                progress(f"{name}: JAX skipped (jax is not installed; install the project's bench extra)")
                continue
            progress(f"pymc_corpus/compile/{name}: {mode}, cold then warm (fresh processes)")
            try:
                measured = cold_call(JOB, name, mode, warm=True)
            except RuntimeError as error:
                if mode != "JAX":
                    raise
                progress(f"{name}: JAX cannot compile this graph: {str(error).splitlines()[-1]}")
                continue
            rows.append(Compile(name, mode, measured["seconds"], measured["warm_seconds"]))
    return rows


def _geomean(values: list[float]) -> float | None:
    return float(np.exp(np.mean(np.log(values)))) if values else None


def summarize(rows: list[Compile]) -> dict:
    """Per model and process, LLVM's seconds over NUMBA's and over JAX's; their geometric means; the models where
    LLVM's cold compile is above each."""
    by_model: dict[str, dict[str, Compile]] = {}
    for row in rows:
        by_model.setdefault(row.model, {})[row.mode] = row
    models = {}
    for model, modes in by_model.items():
        llvm, entry = modes["LLVM"], {}
        for peer in ("NUMBA", "JAX"):
            if peer in modes:
                for process in PROCESSES:
                    theirs = getattr(modes[peer], f"{process}_s")
                    entry[f"{process}_vs_{peer.lower()}"] = getattr(llvm, f"{process}_s") / theirs
        models[model] = entry
    summary: dict = {"models": models}
    for key in ("cold_vs_numba", "warm_vs_numba", "cold_vs_jax", "warm_vs_jax"):
        summary[f"{key}_geomean"] = _geomean([m[key] for m in models.values() if key in m])
    for peer in ("numba", "jax"):
        summary[f"cold_above_{peer}"] = sorted(m for m, r in models.items() if r.get(f"cold_vs_{peer}", 0) > 1)
    return summary


def format_compiles(rows: list[Compile], summary: dict) -> str:
    """A Markdown table of the seconds, cold and warm, per model and mode, LLVM's ratios in brackets."""
    seconds = {(row.model, row.mode): row for row in rows}
    header = "| model | " + " | ".join(f"{mode} {p}" for mode in COMPILE_MODES for p in PROCESSES) + " |"
    lines = [header, "|---" * (1 + 2 * len(COMPILE_MODES)) + "|"]
    for model, ratios in summary["models"].items():
        cells = []
        for mode in COMPILE_MODES:
            for process in PROCESSES:
                row = seconds.get((model, mode))
                cell = "" if row is None else f"{getattr(row, f'{process}_s'):.2f}"
                if mode == "LLVM" and row is not None:
                    peers = [f"{ratios[k]:.2f}" for k in (f"{process}_vs_numba", f"{process}_vs_jax") if k in ratios]
                    cell += f" ({' / '.join(peers)})" if peers else ""
                cells.append(cell)
        lines.append(f"| {model} | " + " | ".join(cells) + " |")
    means = [(key.removesuffix("_geomean"), value) for key, value in summary.items() if key.endswith("_geomean")]
    totals = ", ".join(f"{name} {value:.3f}" for name, value in means if value is not None)
    return "\n".join([*lines, "", FOOTNOTE, f"Geometric means, LLVM over its peer: {totals}"])


def main(argv: list[str] | None = None) -> int:
    """``python -m llvm_backend_bench.corpus_compile [--model NAME ...] [--json FILE]``."""
    from llvm_backend_bench.corpus import MODELS
    from llvm_backend_bench.run import _versions, write_json

    parser = argparse.ArgumentParser(
        prog="python -m llvm_backend_bench.corpus_compile",
        description="The PyMC corpus: compile and first call, cold and warm, under LLVM, NUMBA and JAX",
    )
    parser.add_argument("--model", action="append", choices=sorted(MODELS), help="a model to measure (repeatable)")
    parser.add_argument("--json", metavar="FILE", help="where to write the rows and the summary as JSON")
    args = parser.parse_args(argv)
    progress = lambda message: print(message, file=sys.stderr, flush=True)  # noqa: E731, T201
    rows = measure_compiles(args.model or list(MODELS), progress)
    summary = summarize(rows)
    print(format_compiles(rows, summary))  # noqa: T201
    if args.json is not None:
        cases = {
            f"pymc_corpus/{model}": {"family": "pymc_corpus", "n": None}
            for model in dict.fromkeys(r.model for r in rows)
        }
        payload = {"versions": _versions(), "footnote": FOOTNOTE, "cases": cases, "summary": summary}
        payload["compiles"] = [asdict(row) for row in rows]
        progress(f"wrote {write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
