"""The ``pymc_corpus`` bench family: every model of the corpus (`llvm_backend_bench.corpus`) per call, under LLVM,
stock NUMBA and JAX, beside the hand-written references (needs the ``pymc`` extra; JAX's column needs ``jax``).

Per model: the graph ``logp_dlogp_function(ravel_inputs=True)`` compiles (`llvm_backend_bench.corpus.corpus_graph`),
compiled as PyMC compiles (`llvm_backend_bench.pymc_models.pymc_compile`, numba cache off), and timed as

- ``<MODE> jit_fn``: ``fn.vm.jit_fn(x)``, the numba dispatcher PyTensor's contract hands out, LLVM and NUMBA, with
  its NRT allocations per call;
- ``<MODE> Function``: the PyTensor Function, ``fn(x)`` with input checks on, LLVM, NUMBA and JAX;
- ``@njit``: the model's reference, when it has one, checked against PyMC's function first
  (`llvm_backend_bench.corpus.check_reference`; a mismatch stops the run).

Medians of interleaved timeit rounds, as every bench case (`llvm_backend.tools.measurements.measure_runners`).
``python -m llvm_backend_bench.pymc_corpus`` measures each model in a process of its own (a process that has
compiled many graphs compiles and runs the next one slower), prints the table and the summary (`summarize`: each
model's ratios to stock and to its reference, their geometric means, the models above stock), and with ``--json``
writes the rows.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path

import numpy as np
from pytensor import config

from llvm_backend.tools.measurements import FUNCTION_CALL, Measurement, Runner, format_inline_table, measure_runners

__all__ = ["CALL_MODES", "format_summary", "main", "measure_model", "summarize"]

CALL_MODES = ("LLVM", "NUMBA")
"""Modes whose ``fn.vm.jit_fn`` and PyTensor Function are timed (JAX's Function too, `_jax_runner`)."""
COLUMNS = (("us/call", "us_per_call", "{:.2f}"), ("allocs/call", "allocs_per_call", "{:.1f}"))
FOOTNOTE = (
    "Ratios (in brackets) are against NUMBA jit_fn. <MODE> jit_fn: fn.vm.jit_fn(x) of the function PyMC's compile "
    "makes (numba cache off); <MODE> Function*: the PyTensor Function fn(x), input checks on; @njit: the model's "
    "hand-written reference on the raveled vector and the model's data. Medians of interleaved timeit rounds, each "
    "model in a process of its own. allocs/call: NRT allocations per call of numba code."
)


def _jax_available() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def _jit_fn_arguments(fn, x) -> tuple:
    """What ``fn.vm.jit_fn`` takes: the value of each input of ``fn``'s graph, ``x`` first, then each ``pm.Data``'s
    (shared variables are inputs of the compiled graph, after the explicit ones)."""
    fn.input_storage[0].storage[0] = x
    return tuple(container.storage[0] for container in fn.input_storage)


def _ablation_runners(graph, ablate: tuple[str, ...], progress) -> list[Runner]:
    """Per rewrite name or tag in ``ablate``: ``fn.vm.jit_fn`` under LLVM without it, labelled ``LLVM-<name>
    jit_fn``, so that what a rewrite gains or costs is measured on every model in the same run."""
    from pytensor.compile.mode import get_mode

    from llvm_backend_bench.pymc_limit import called_runner
    from llvm_backend_bench.pymc_models import pymc_compile

    runners = []
    for name in ablate:
        progress(f"{graph.name}: compiling under LLVM without {name}")
        with config.change_flags(numba__cache=False):
            fn = pymc_compile(graph, get_mode("LLVM").excluding(name))
        runners.append(called_runner(f"LLVM-{name} jit_fn", fn.vm.jit_fn, _jit_fn_arguments(fn, graph.values[0])))
    return runners


def _runners(model, graph, progress) -> list[Runner]:
    from llvm_backend_bench.cases import REFERENCE
    from llvm_backend_bench.corpus import check_reference
    from llvm_backend_bench.pymc_limit import called_runner
    from llvm_backend_bench.pymc_models import pymc_compile

    x, runners = graph.values[0], []
    if model.reference is not None:
        progress(f"pymc_corpus/{model.name}: checking the @njit reference against PyMC's function under NUMBA")
        check_reference(model, graph)
        runners.append(called_runner(REFERENCE, model.reference, (x, *model.data())))
    for mode in CALL_MODES:
        progress(f"pymc_corpus/{model.name}: compiling under {mode}")
        with config.change_flags(numba__cache=False):
            fn = pymc_compile(graph, mode)
        fn.trust_input = False
        runners.append(called_runner(f"{mode} jit_fn", fn.vm.jit_fn, _jit_fn_arguments(fn, x)))
        runners.append(Runner(f"{mode} Function", partial(fn, x), FUNCTION_CALL))
    return [*runners, *_jax_runner(graph, progress)]


def _jax_runner(graph, progress) -> list[Runner]:
    """JAX's Function of ``graph``, called once, when ``jax`` imports and PyTensor's JAX backend runs the graph
    (it cannot run some: a ``Split`` at positions known only from the data, say); else none, said by
    ``progress``."""
    from llvm_backend_bench.pymc_models import pymc_compile

    if not _jax_available():
        return []
    progress(f"{graph.name}: compiling under JAX")
    x = graph.values[0]
    try:
        fn = pymc_compile(graph, "JAX")
        fn(x)
    except Exception as error:  # a peer's failure is reported, and the model measured without it
        progress(f"{graph.name}: JAX cannot run this graph: {type(error).__name__}: {str(error).splitlines()[0]}")
        return []
    fn.trust_input = False
    return [Runner("JAX Function", partial(fn, x), FUNCTION_CALL)]


def measure_model(name: str, rounds: int = 9, progress=print, ablate: tuple[str, ...] = ()) -> list[Measurement]:
    """Corpus model ``name``'s runners (its reference checked first), and one per rewrite in ``ablate``
    (`_ablation_runners`), timed in ``rounds`` interleaved rounds, with the allocations per call of the numba
    ones."""
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend_bench.corpus import MODELS, corpus_graph
    from llvm_backend_bench.run import ALLOCATION_CALLS

    model = MODELS[name]
    graph = corpus_graph(model)
    runners = [*_runners(model, graph, progress), *_ablation_runners(graph, ablate, progress)]
    progress(f"pymc_corpus/{name}: timing {rounds} interleaved rounds")
    measured = measure_runners(graph.name, runners, {}, rounds, ALLOCATION_CALLS)
    return [replace(m, kernel_ir_instructions=None) for m in measured]


def _by_model(results: list[Measurement]) -> dict[str, dict[str, Measurement]]:
    table: dict[str, dict[str, Measurement]] = {}
    for r in results:
        table.setdefault(r.graph, {})[r.mode] = r
    return table


def summarize(results: list[Measurement]) -> dict:
    """Per model: LLVM's jit_fn and Function time over stock NUMBA's, LLVM's allocations and stock's, LLVM's
    jit_fn over the reference's (when there is one) and over JAX's Function; then the geometric mean of the jit_fn
    ratios and the models where LLVM is above stock in time or allocations."""
    from llvm_backend_bench.cases import REFERENCE

    models = {}
    for graph, row in _by_model(results).items():
        llvm, numba = row["LLVM jit_fn"], row["NUMBA jit_fn"]
        entry = {
            "jit_fn_vs_numba": llvm.us_per_call / numba.us_per_call,
            "function_vs_numba": row["LLVM Function"].us_per_call / row["NUMBA Function"].us_per_call,
            "allocs": llvm.allocs_per_call,
            "numba_allocs": numba.allocs_per_call,
        }
        if REFERENCE in row:
            entry["jit_fn_vs_reference"] = llvm.us_per_call / row[REFERENCE].us_per_call
        if "JAX Function" in row:
            entry["function_vs_jax"] = row["LLVM Function"].us_per_call / row["JAX Function"].us_per_call
        models[graph] = entry
    ratios = [m["jit_fn_vs_numba"] for m in models.values()]
    return {
        "ablations": _ablations(results),
        "models": models,
        "jit_fn_vs_numba_geomean": float(np.exp(np.mean(np.log(ratios)))) if ratios else None,
        "above_numba": sorted(g for g, m in models.items() if m["jit_fn_vs_numba"] > 1.0),
        "more_allocations": sorted(g for g, m in models.items() if m["allocs"] > m["numba_allocs"]),
    }


def _ablations(results: list[Measurement]) -> dict:
    """Per rewrite measured without (``LLVM-<name> jit_fn`` rows): each model's jit_fn time without it over
    LLVM's (above 1: the rewrite gains there), and their geometric mean."""
    ablations: dict[str, dict] = {}
    for graph, row in _by_model(results).items():
        for mode, measured in row.items():
            if mode.startswith("LLVM-") and mode.endswith(" jit_fn"):
                name = mode.removeprefix("LLVM-").removesuffix(" jit_fn")
                ratio = measured.us_per_call / row["LLVM jit_fn"].us_per_call
                ablations.setdefault(name, {"models": {}})["models"][graph] = ratio
    for ablation in ablations.values():
        ablation["geomean"] = float(np.exp(np.mean(np.log(list(ablation["models"].values())))))
    return ablations


def format_summary(summary: dict) -> str:
    """`summarize`'s result as a Markdown table and a line of totals."""
    rows = ["| model | jit_fn / NUMBA | Function / NUMBA | allocs (NUMBA) | jit_fn / @njit | Function / JAX |"]
    rows.append("|---|---|---|---|---|---|")
    for graph, m in summary["models"].items():
        reference = f"{m['jit_fn_vs_reference']:.2f}" if "jit_fn_vs_reference" in m else ""
        jax = f"{m['function_vs_jax']:.2f}" if "function_vs_jax" in m else ""
        allocs = f"{m['allocs']:.0f} ({m['numba_allocs']:.0f})"
        rows.append(
            f"| {graph} | {m['jit_fn_vs_numba']:.2f} | {m['function_vs_numba']:.2f} | {allocs} | {reference} | {jax} |"
        )
    totals = (
        f"jit_fn / NUMBA geometric mean {summary['jit_fn_vs_numba_geomean']:.3f}; above stock: "
        f"{', '.join(summary['above_numba']) or 'none'}; more allocations than stock: "
        f"{', '.join(summary['more_allocations']) or 'none'}"
    )
    for name, ablation in summary["ablations"].items():
        ratios = ", ".join(f"{graph.split('/')[-1]} {ratio:.2f}" for graph, ratio in ablation["models"].items())
        totals += f"\n\nLLVM without {name} / LLVM (jit_fn): geometric mean {ablation['geomean']:.3f}; {ratios}"
    return "\n".join(rows) + "\n\n" + totals


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)  # noqa: T201  (a command-line front end)


def _measure_in_subprocess(name: str, rounds: int, ablate: tuple[str, ...]) -> list[Measurement]:
    with tempfile.TemporaryDirectory() as tmp:
        rows = Path(tmp) / "rows.json"
        command = [sys.executable, "-m", "llvm_backend_bench.pymc_corpus", "--model", name, "--rounds", str(rounds)]
        command += [f"--ablate={rewrite}" for rewrite in ablate]
        subprocess.run([*command, "--in-process", "--json", str(rows)], check=True, stdout=subprocess.DEVNULL)
        return [Measurement(**row) for row in json.loads(rows.read_text())["results"]]


def _arguments(argv):
    from llvm_backend_bench.corpus import MODELS
    from llvm_backend_bench.run import FULL_ROUNDS

    parser = argparse.ArgumentParser(
        prog="python -m llvm_backend_bench.pymc_corpus",
        description="The PyMC corpus: jit_fn and Function calls under LLVM, NUMBA and JAX, beside @njit references",
    )
    parser.add_argument("--model", action="append", choices=sorted(MODELS), help="a model to measure (repeatable)")
    parser.add_argument("--rounds", type=int, default=FULL_ROUNDS, help="interleaved timeit rounds")
    parser.add_argument("--json", metavar="FILE", help="where to write the rows and the summary as JSON")
    parser.add_argument("--in-process", action="store_true", help="measure every model in this process")
    parser.add_argument(
        "--ablate", action="append", default=[], metavar="REWRITE", help="also time LLVM without this rewrite or tag"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """``python -m llvm_backend_bench.pymc_corpus``: `measure_model` on each model (each in a subprocess of its own
    unless ``--in-process``), the table and `format_summary` to stdout, progress to stderr, and with ``--json FILE``
    the rows and the summary."""
    from llvm_backend_bench.corpus import MODELS
    from llvm_backend_bench.run import _versions, write_json

    args = _arguments(argv)
    results = []
    for name in args.model or list(MODELS):
        _progress(f"pymc_corpus/{name}")
        if args.in_process:
            results.extend(measure_model(name, args.rounds, _progress, tuple(args.ablate)))
        else:
            results.extend(_measure_in_subprocess(name, args.rounds, tuple(args.ablate)))
    summary = summarize(results)
    print(f"{format_inline_table(results, COLUMNS, baseline='NUMBA jit_fn')}\n\n{FOOTNOTE}\n")  # noqa: T201
    print(format_summary(summary))  # noqa: T201
    if args.json is not None:
        cases = {graph: {"family": "pymc_corpus", "n": None} for graph in dict.fromkeys(r.graph for r in results)}
        payload = {"versions": _versions(), "footnote": FOOTNOTE, "cases": cases, "summary": summary}
        payload["results"] = [asdict(r) for r in results]
        _progress(f"wrote {write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
