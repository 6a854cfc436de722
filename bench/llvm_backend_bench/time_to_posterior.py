"""The ``pymc/time_to_posterior`` bench family: where the time from a built PyMC model to a drawn posterior goes,
through nutpie (needs the ``pymc`` extra; nutpie's JAX backend needs the ``bench`` extra's jax).

Per model of `llvm_backend_bench.pymc_models` (case ``pymc/time_to_posterior/MODEL``) and of the PyMC corpus
(`llvm_backend_bench.corpus`, case ``pymc_corpus/time_to_posterior/MODEL``), and per nutpie backend
(`NUTPIE_BACKENDS`: nutpie on stock NUMBA, on the LLVM mode through `llvm_backend.nutpie.compile_pymc_model`, and
nutpie's own JAX backend), `nutpie_job` compiles the model and samples one chain of 200 tuning and 200 kept draws in
a fresh process with empty caches (cold), then again in a second fresh process on the caches the first filled
(warm). A `PhaseTimer` splits that span into the exclusive seconds of each of `PHASES`:

- ``graph``: PyMC graph building: nutpie's ``_make_functions`` (under LLVM ``llvm_backend.nutpie.model_functions``'s
  ``model_functions`` and ``initial_point_function``: ``model.logp()``, the gradient, the joined
  and expanded graphs, ``clone_replace``, PyTensor's ``FunctionGraph`` of each function), PyMC's
  ``make_initial_point_fn`` and ``freeze_dims_and_data``;
- ``rewriting``: PyTensor's ``FunctionMaker.prepare_fgraph`` (the mode's rewriter; under LLVM our rewrite
  cache) and nutpie's ``rewrite_graph`` of the log density (canonicalize, stabilize);
- ``codegen``: linking, ``FunctionMaker.create`` (under NUMBA and LLVM the graph's source, under JAX its jax
  functions, for the initial point's function PyTensor's C VM), and numba's ``Dispatcher.compile`` (typing,
  lowering, loading from numba's cache); under JAX, tracing to a jaxpr and lowering it to MLIR;
- ``llvm``: inside LLVM: numba's ``"numba:llvm_lock"`` events (optimization, machine code, any other call
  into llvmlite's binding); under JAX, XLA's backend compile;
- ``entry_points``: the C functions nutpie calls: numba's ``CFunc.compile`` (stock nutpie's ``numba.cfunc``\\ s),
  ``llvm_backend_intrinsics.nutpie.logp_entry`` and ``expand_entry`` (ours);
- ``nutpie_setup``: the rest of the compile call (``compile_pymc_model``);
- ``sampling``: ``nutpie.sample``, but for JAX's compiles, which JAX makes at the first call, inside it;
- ``other``: whatever no phase claims (the moment between the two calls).

Each phase is exclusive: numba compiling the graph inside stock nutpie's ``numba.cfunc`` is ``codegen``, not
``entry_points``, and LLVM's share of either is ``llvm``. Cold and warm, every backend, in one run; without jax
its backend is skipped with a message.
"""

import re
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from importlib.metadata import version
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from llvm_backend.tools.coldcompile import cold_call
from llvm_backend_bench.phases import OTHER, PhaseTimer, jax_events, numba_events, resolve, wrapped_functions
from llvm_backend_bench.pymc_models import MODELS

__all__ = [
    "BASELINES",
    "CORPUS_FAMILY",
    "FAMILY",
    "JAX_SKIPPED",
    "NUTPIE_BACKENDS",
    "PHASES",
    "PHASE_FOOTNOTE",
    "Posterior",
    "as_json",
    "format_nutpie_table",
    "format_phase_table",
    "measure_posterior",
    "model_builders",
    "nutpie_job",
    "nutpie_rows",
    "select_posterior",
]

FAMILY = "pymc/time_to_posterior"
CORPUS_FAMILY = "pymc_corpus/time_to_posterior"
"""The cases of the corpus's models: the same measurement, apart so that ``--filter '^pymc/'`` keeps its three."""
NUTPIE_BACKENDS = ("NUMBA", "LLVM", "JAX")
"""nutpie under stock NUMBA, under the LLVM mode (`llvm_backend.nutpie`), and its own JAX backend."""
BASELINES = ("NUMBA", "JAX")
"""Every row's ratios are to these backends' rows of the same model and process."""
GRAPH, REWRITING, CODEGEN, LLVM = "graph", "rewriting", "codegen", "llvm"
ENTRY_POINTS, NUTPIE_SETUP, SAMPLING = "entry_points", "nutpie_setup", "sampling"
PHASES = {
    GRAPH: "PyMC graph",
    REWRITING: "rewriting",
    CODEGEN: "code generation",
    LLVM: "LLVM",
    ENTRY_POINTS: "entry points",
    NUTPIE_SETUP: "nutpie set-up",
    SAMPLING: "sampling",
    OTHER: "other",
}
"""Each phase and its title, in the order of the table's columns and of the plot's stacks."""
WRAPPED = (
    ("nutpie.compile_pymc", "_make_functions", GRAPH),
    ("llvm_backend.nutpie.model_functions", "model_functions", GRAPH),
    ("llvm_backend.nutpie.model_functions", "initial_point_function", GRAPH),
    ("pymc.initial_point", "make_initial_point_fn", GRAPH),
    ("pymc.model.transform.optimization", "freeze_dims_and_data", GRAPH),
    ("pytensor.graph", "rewrite_graph", REWRITING),
    ("pytensor.compile.maker:FunctionMaker", "prepare_fgraph", REWRITING),
    ("pytensor.compile.maker:FunctionMaker", "create", CODEGEN),
    ("numba.core.dispatcher:Dispatcher", "compile", CODEGEN),
    ("numba.core.ccallback:CFunc", "compile", ENTRY_POINTS),
    ("llvm_backend_intrinsics.nutpie", "logp_entry", ENTRY_POINTS),
    ("llvm_backend_intrinsics.nutpie", "expand_entry", ENTRY_POINTS),
)
"""``(owner, function, phase)``: the functions whose calls are timed as a phase, for the measurement only. nutpie,
PyMC and ``llvm_backend.nutpie`` read ``rewrite_graph``, ``make_initial_point_fn``, ``freeze_dims_and_data`` and
``model_functions`` when they call them, so the wrapped ones are theirs; PyMC's own rewrites inside
``model.logp()`` (bound at import) stay graph building."""
NUMBA_EVENTS = {"numba:llvm_lock": LLVM}
JAX_EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": CODEGEN,
    "/jax/core/compile/jaxpr_to_mlir_module_duration": CODEGEN,
    "/jax/core/compile/backend_compile_duration": LLVM,
}
DRAWS = 200
GRADIENT_CHAINS = 3
GRADIENT_DRAWS = 500
"""µs per gradient: the median over ``GRADIENT_CHAINS`` chains of ``GRADIENT_DRAWS`` tuning and kept draws, after
the clock stopped (one short chain is a few thousand gradients, where the sampler's own noise moved the figure
by 10%)."""
PHASE_FOOTNOTE = (
    "Time to posterior through nutpie: compile_pymc_model, then one chain of 200 tuning and 200 kept draws; cold "
    "in a fresh process with empty PyTensor, numba and JAX caches, warm in a second fresh process on the caches "
    "the first filled. Each phase's exclusive seconds (docs/measurement.md): PyMC graph building, rewriting, code "
    "generation (linking, numba typing and lowering, JAX tracing), LLVM (inside LLVM; XLA's compile under JAX), "
    "the entry points nutpie calls, the rest of nutpie's compile, sampling (without JAX's compiles at its first "
    "call), other. ready s: all but sampling, from compile_pymc_model to a sampler ready. Ratios (in brackets) "
    "to nutpie under NUMBA, then under JAX, of the same model and process."
)


@contextmanager
def attributed(timer: PhaseTimer, backend: str) -> Iterator[None]:
    """Measure the block with ``timer``, the functions of `WRAPPED` and numba's (under JAX, JAX's) compile
    events attributed to their phases; everything is put back as it was when the block exits."""
    attributions = [(resolve(owner), name, phase) for owner, name, phase in WRAPPED]
    with ExitStack() as stack:
        stack.enter_context(wrapped_functions(timer, attributions))
        stack.enter_context(numba_events(timer, NUMBA_EVENTS))
        if backend == "JAX":
            stack.enter_context(jax_events(timer, JAX_EVENTS))
        stack.enter_context(timer.span())
        yield


def _compiler(backend: str) -> Callable:
    """How nutpie compiles a model under ``backend``: ours for LLVM, nutpie's own otherwise."""
    import nutpie

    import llvm_backend.nutpie

    if backend == "LLVM":
        return llvm_backend.nutpie.compile_pymc_model
    return lambda model: nutpie.compile_pymc_model(model, backend=backend.lower())


def _jax_cache_in_compiledir() -> None:
    """JAX's persistent compilation cache in PyTensor's compiledir, which a cold process gets empty, for every
    compile however short: a warm process then finds JAX's compiles as the numba backends find theirs."""
    import jax
    from pytensor import config

    jax.config.update("jax_compilation_cache_dir", str(Path(config.base_compiledir) / "jax"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def model_builders() -> dict[str, Callable]:
    """Per model name, what builds a fresh ``pm.Model``: `llvm_backend_bench.pymc_models`' models, then the corpus's
    (`llvm_backend_bench.corpus.CorpusModel.build`). ValueError if a name is in both (a case would be ambiguous)."""
    from llvm_backend_bench.corpus import MODELS as CORPUS

    both = sorted(set(MODELS) & set(CORPUS))
    if both:
        raise ValueError(f"models named in both pymc_models and the corpus: {both}")
    return {**MODELS, **{name: model.build for name, model in CORPUS.items()}}


def nutpie_job(name: str, backend: str) -> Callable[[], Callable[[], dict]]:
    """For `llvm_backend.tools.coldcompile.cold_call`: nutpie on model ``name`` (of `model_builders`) under ``backend``
    (one of `NUTPIE_BACKENDS`), compile then sample one chain, split into `PHASES` (``phases``), with the wall
    seconds of each call (``compile_s``, ``sample_s``); after the clock stopped, µs per gradient evaluation (see
    ``GRADIENT_CHAINS``). The modules whose functions `WRAPPED` times are imported before the clock starts."""
    import nutpie

    model = model_builders()[name]()
    compile_model = _compiler(backend)
    if backend == "JAX":
        _jax_cache_in_compiledir()
    for owner, _, _ in WRAPPED:
        resolve(owner)
    timer, times = PhaseTimer(), {}

    def compile_and_sample():
        with attributed(timer, backend):
            start = time.perf_counter()
            with timer.phase(NUTPIE_SETUP):
                compiled = compile_model(model)
            times["compile_s"] = time.perf_counter() - start
            start = time.perf_counter()
            with timer.phase(SAMPLING):
                trace = nutpie.sample(compiled, draws=DRAWS, tune=DRAWS, chains=1, progress_bar=False, seed=1)
            times["sample_s"] = time.perf_counter() - start
        times["phases"] = timer.seconds()
        times["gradients"] = _gradients(trace)

        def per_gradient():
            per = []
            for seed in range(GRADIENT_CHAINS):
                start = time.perf_counter()
                trace = nutpie.sample(
                    compiled, draws=GRADIENT_DRAWS, tune=GRADIENT_DRAWS, chains=1, progress_bar=False, seed=seed + 2
                )
                per.append((time.perf_counter() - start) / _gradients(trace) * 1e6)
            times["us_per_gradient"] = float(np.median(per))
            return times

        return per_gradient

    return compile_and_sample


def _gradients(trace) -> int:
    """The gradient evaluations of a nutpie trace, tuning and kept draws."""
    stats = [trace.sample_stats, *([trace.warmup_sample_stats] if "warmup_sample_stats" in trace else [])]
    return sum(int(s["n_steps"].sum()) for s in stats)


@dataclass(frozen=True)
class Posterior:
    """One process's time to posterior: a model under a nutpie backend, cold or warm."""

    case: str
    backend: str
    process: str
    """``"cold"`` (empty caches) or ``"warm"`` (a second process on the caches the cold one filled)."""
    phases: dict[str, float]
    """Exclusive seconds of each of `PHASES`."""
    compile_s: float
    sample_s: float
    us_per_gradient: float

    @property
    def total_s(self) -> float:
        return sum(self.phases.values())

    @property
    def ready_s(self) -> float:
        """From ``compile_pymc_model`` to a sampler ready: everything but sampling (JAX's compiles included)."""
        return self.total_s - self.phases.get(SAMPLING, 0.0)


def select_posterior(pattern: str | None = None) -> list[str]:
    """The family's cases whose name matches regular expression ``pattern``: ``pymc/time_to_posterior/MODEL`` per
    model of `llvm_backend_bench.pymc_models`, then ``pymc_corpus/time_to_posterior/MODEL`` per corpus model."""
    from llvm_backend_bench.corpus import MODELS as CORPUS

    names = [f"{FAMILY}/{model}" for model in MODELS] + [f"{CORPUS_FAMILY}/{model}" for model in CORPUS]
    return [name for name in names if pattern is None or re.search(pattern, name)]


def _installed(module: str) -> bool:
    return find_spec(module) is not None


JAX_SKIPPED = "nutpie's JAX backend skipped (jax is not installed; install the project's bench extra)"


def measure_posterior(cases: list[str], progress: Callable[[str], None]) -> list[Posterior]:
    """Every case of ``cases`` under each of `NUTPIE_BACKENDS`, cold then warm; a case is skipped with a message
    without PyMC or nutpie, and JAX without jax (`JAX_SKIPPED`)."""
    rows = []
    for case in cases:
        missing = [module for module in ("pymc", "nutpie") if not _installed(module)]
        if missing:
            progress(f"{case}: skipped ({', '.join(missing)} not installed; install the project's pymc extra)")
            continue
        for backend in NUTPIE_BACKENDS:
            if backend == "JAX" and not _installed("jax"):
                progress(f"{case}: {JAX_SKIPPED}")
                continue
            progress(f"{case}: nutpie under {backend}, cold then warm (fresh processes, 200+200 draws)")
            measured = cold_call(f"{__name__}:nutpie_job", case.rsplit("/", 1)[1], backend, warm=True)
            rows += [_posterior(case, backend, measured, process) for process in ("cold", "warm")]
    return rows


def _posterior(case: str, backend: str, measured: dict, process: str) -> Posterior:
    prefix = "warm_" if process == "warm" else ""
    fields = ("phases", "compile_s", "sample_s", "us_per_gradient")
    return Posterior(case, backend, process, *(measured[prefix + field] for field in fields))


def _baseline(rows: list[Posterior], row: Posterior, backend: str) -> Posterior | None:
    return next((r for r in rows if (r.case, r.process, r.backend) == (row.case, row.process, backend)), None)


def _ratio(value: float, base: float | None) -> float | None:
    return value / base if base else None


def _ratios(rows: list[Posterior], row: Posterior) -> dict:
    """``row``'s totals and phases over those of each of `BASELINES` (None where the base is missing or 0)."""
    ratios = {}
    for backend in BASELINES:
        base = _baseline(rows, row, backend)
        ratios[backend] = {
            "total_s": _ratio(row.total_s, base and base.total_s),
            "ready_s": _ratio(row.ready_s, base and base.ready_s),
            "phases": {p: _ratio(row.phases.get(p, 0.0), base and base.phases.get(p, 0.0)) for p in PHASES},
        }
    return ratios


def as_json(rows: list[Posterior]) -> dict:
    """The family's section of ``bench.json``: its footnote, the versions of PyMC, nutpie and jax (those
    installed), the phases' titles, and per row every phase, the totals and their ratios to `BASELINES`."""
    return {
        "footnote": PHASE_FOOTNOTE,
        "versions": {name: version(name) for name in ("pymc", "nutpie", "jax") if find_spec(name) is not None},
        "phases": PHASES,
        "rows": [{**asdict(r), "total_s": r.total_s, "ready_s": r.ready_s, "ratios": _ratios(rows, r)} for r in rows],
    }


def _with_ratios(value: float, ratios: dict, field: str) -> str:
    cells = [ratios[backend][field] for backend in BASELINES]
    return f"{value:.2f} ({', '.join('-' if c is None else f'{c:.2f}x' for c in cells)})"


def format_phase_table(rows: list[Posterior]) -> str:
    """The family's rows as a Markdown table: seconds per phase, then ready and total seconds with their ratios
    to nutpie under NUMBA and under JAX."""
    totals = [f"{title} s ({', '.join(f'x {b}' for b in BASELINES)})" for title in ("ready", "total")]
    header = ["case", "backend", "process", *(f"{title} s" for title in PHASES.values()), *totals]
    lines = [f"| {' | '.join(header)} |", f"|{' --- |' * len(header)}"]
    for r in rows:
        ratios = _ratios(rows, r)
        phases = [f"{r.phases.get(p, 0.0):.2f}" for p in PHASES]
        ready, total = _with_ratios(r.ready_s, ratios, "ready_s"), _with_ratios(r.total_s, ratios, "total_s")
        lines.append(f"| {' | '.join([r.case, r.backend, r.process, *phases, ready, total])} |")
    return "\n".join(lines)


NUTPIE_FIELDS = ("seconds", "compile_s", "warm_compile_s", "sample_s", "us_per_gradient")
NUTPIE_FOOTNOTE = (
    "nutpie: compile_pymc_model then one chain of 200 tuning and 200 kept draws, in a fresh process with empty "
    "caches (total s, the two; warm compile s: the compile again in a second fresh process on the caches the first "
    "filled); LLVM through llvm_backend.nutpie.compile_pymc_model; us/gradient: sampling time over the gradient "
    "evaluations of both phases, the median of 3 more chains of 500 tuning and 500 kept draws in the same process. "
    "Ratios against nutpie under NUMBA. Measured by the pymc/time_to_posterior family."
)


def nutpie_rows(rows: list[Posterior]) -> list[dict]:
    """nutpie end to end per case and backend, from the family's cold and warm rows (``bench.json``'s
    ``nutpie``): total, compile and sample seconds and µs per gradient of the cold process, the warm compile."""
    warm = {(r.case, r.backend): r for r in rows if r.process == "warm"}
    return [
        {
            "case": r.case,
            "backend": r.backend,
            "seconds": r.total_s,
            "compile_s": r.compile_s,
            "warm_compile_s": warm[r.case, r.backend].compile_s,
            "sample_s": r.sample_s,
            "us_per_gradient": r.us_per_gradient,
        }
        for r in rows
        if r.process == "cold"
    ]


def format_nutpie_table(rows: list[dict]) -> str:
    """nutpie's rows as a Markdown table, each figure with its ratio to nutpie under NUMBA."""
    lines = [
        "| case | nutpie backend | total s | compile s | warm compile s | sample s | us/gradient |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        base = next((r for r in rows if r["case"] == row["case"] and r["backend"] == "NUMBA"), None)
        cells = [f"{row[k]:.2f}" + (f" ({row[k] / base[k]:.2f}x)" if base and base[k] else "") for k in NUTPIE_FIELDS]
        lines.append(f"| {row['case']} | {row['backend']} | {' | '.join(cells)} |")
    return "\n".join(lines)
