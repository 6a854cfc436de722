"""The oracle: one graph compiled under the py linker, stock NUMBA and LLVM, called on the same inputs.

Each mode gets fresh input values (``values()`` builds new arrays in their layouts), so an in-place bug in one mode
cannot hide behind another's, and each call is checked to have left its inputs as they were (a compiled function's
inputs are not mutable unless declared so, which the generated graphs never do). The reference is the py linker
under PyTensor's default rewrites (``Mode(linker="py")``). LLVM must agree with it: equal outputs (dtype, shape,
kind; exact for integers and bools, NaN where NaN, floats within `TOLERANCES`), or the same exception type where
the py linker raises. ``fn.vm.jit_fn`` is called too and must agree with the Function, raise Python's ``TypeError``
given an argument too many (as stock's graph function does), and, where stock compiled the whole graph, compute what
stock's ``jit_fn`` computes on the float inputs cast to the other float dtype. LLVM compiles with the rewrite
cache off, then twice through a cache of its own (`CACHED`): the second compile, the stored graph put in place
of rewriting, must compute what the first computed. Where LLVM disagrees with the py
linker exactly as stock NUMBA does, or stock NUMBA alone disagrees, the finding is a stock discrepancy, not ours.
Wide graphs are compiled under stock NUMBA (which takes minutes over them) only where LLVM disagrees with the py
linker, to tell the two cases apart; wherever LLVM disagrees on some outputs and returned, stock compiles those
outputs alone, and where the py linker raised and LLVM returned, stock compiles alone the first output the py linker
raises on by itself. Where the py linker raised OverflowError (a value out of a cast's or an integer's range) and
stock and LLVM both returned, their values are undefined (LLVM's ``fptosi`` of an out-of-range float is poison) and need
not agree: the finding is stock's. A graph the py linker cannot compile, or cannot run (``NotImplementedError``),
is invalid: there is no reference.
"""

import os
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

import numpy as np
import pytensor
from pytensor.compile.mode import Mode

from llvm_backend import rewrite_cache
from llvm_backend.tools.testing import value_kind

__all__ = [
    "CACHED",
    "JUDGING",
    "PY",
    "TOLERANCES",
    "Finding",
    "Outcome",
    "Run",
    "check",
    "difference",
    "disagreement",
    "report_stage",
    "reporting_stages",
]

PY = Mode(linker="py")

JUDGING = "NUMBA, to judge LLVM's disagreement with py"
"""The stage named while stock compiles a graph to judge whether LLVM's disagreement is stock's too."""

CACHED = "LLVM, from the rewrite cache"
"""The run of LLVM whose rewritten graph the rewrite cache served."""

TOLERANCES = {np.dtype("float32"): 1e-3, np.dtype("float64"): 1e-7}
"""Relative tolerance per float dtype; the absolute one is the same times the largest finite magnitude
expected (sums reordered into vector lanes cancel differently)."""


@dataclass
class Run:
    """One mode's result: its outputs, or the exception it raised (compiling or calling), and the positions of
    the inputs its call modified."""

    outputs: list | None = None
    error: BaseException | None = None
    stage: str = "call"
    mutated: list[int] = field(default_factory=list)
    function: object = None


@dataclass(frozen=True)
class Finding:
    """``kind``: "mismatch" (LLVM disagrees), "crash" (LLVM raised where the py linker did not) or "stock"
    (stock NUMBA disagrees with the py linker, and LLVM either agrees or follows stock)."""

    kind: str
    message: str


@dataclass
class Outcome:
    runs: dict[str, Run]
    findings: list[Finding] = field(default_factory=list)
    invalid: bool = False
    """The py linker could not compile the graph, or cannot run it (it raised ``NotImplementedError``, as
    ``Elemwise.perform`` does past 32 operands): there is no reference to compare with."""

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.kind in ("mismatch", "crash")]

    @property
    def stock(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "stock"]

    @property
    def llvm_function(self):
        run = self.runs.get("LLVM")
        return None if run is None else run.function

    def report(self) -> str:
        if self.invalid:
            py = self.runs["py"]
            return f"invalid graph: the py linker cannot {py.stage} it ({py.error!r})"
        if not self.findings:
            return f"agree ({', '.join(self.runs)})"
        return "\n".join(f"{f.kind}: {f.message}" for f in self.findings)


def difference(actual, expected) -> str | None:
    """How ``actual`` differs from ``expected`` (kind, dtype, shape, values), or None if it does not."""
    if value_kind(actual) != value_kind(expected):
        return f"{value_kind(actual)} instead of {value_kind(expected)}"
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.dtype != expected.dtype:
        return f"dtype {actual.dtype} instead of {expected.dtype}"
    if actual.shape != expected.shape:
        return f"shape {actual.shape} instead of {expected.shape}"
    if actual.dtype.kind not in "fc":
        if np.array_equal(actual, expected):
            return None
        wrong = tuple(int(i) for i in np.argwhere(actual != expected)[0])
        return f"at {wrong}: {actual[wrong].item()!r} instead of {expected[wrong].item()!r}"
    finite = expected[np.isfinite(expected)]
    rtol = TOLERANCES.get(actual.dtype, 1e-2)
    atol = rtol * float(np.max(np.abs(finite))) if finite.size else 0.0
    close = np.isclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)
    if close.all():
        return None
    wrong = tuple(int(i) for i in np.argwhere(~close)[0])
    return f"at {wrong}: {actual[wrong].item()!r} instead of {expected[wrong].item()!r} (rtol {rtol})"


def _same_values(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")


def _call(fn, values: Callable[[], list]) -> Run:
    arguments, pristine = values(), values()
    try:
        outputs = fn(*arguments)
    except Exception as error:
        run = Run(error=error, function=fn)
    else:
        run = Run(outputs=list(outputs), function=fn)
    run.mutated = [i for i, (a, b) in enumerate(zip(arguments, pristine, strict=True)) if not _same_values(a, b)]
    return run


_STAGE_LISTENER: ContextVar[Callable[[str], None] | None] = ContextVar("llvm_backend_fuzz_stage", default=None)


@contextmanager
def reporting_stages(listener: Callable[[str], None]):
    """Within it, `check` calls ``listener(mode)`` ("py", "LLVM" or "NUMBA") before it compiles and calls a
    graph under that mode: what a process that dies or hangs on a graph was doing."""
    token = _STAGE_LISTENER.set(listener)
    try:
        yield
    finally:
        _STAGE_LISTENER.reset(token)


def report_stage(mode: str) -> None:
    """Tell the listener of `reporting_stages`, if any, that ``mode`` is compiling and calling a graph now."""
    listener = _STAGE_LISTENER.get()
    if listener is not None:
        listener(mode)


def _run(mode, inputs, outputs, values, stage: str | None = None) -> Run:
    report_stage(stage or ("py" if mode is PY else mode))
    try:
        fn = pytensor.function(inputs, outputs, mode=mode, on_unused_input="ignore")
    except Exception as error:
        return Run(error=error, stage="compile")
    return _call(fn, values)


def disagreement(run: Run, reference: Run) -> str | None:
    """How ``run`` differs from ``reference``: raising or not, the exception type, the outputs."""
    if run.error is not None or reference.error is not None:
        if run.error is None:
            return f"returned where the reference raised {type(reference.error).__name__}: {reference.error}"
        if reference.error is None:
            return f"raised {type(run.error).__name__} while {run.stage}ing: {run.error}"
        if type(run.error) is not type(reference.error):
            return f"raised {type(run.error).__name__} instead of {type(reference.error).__name__}: {run.error}"
        return None
    if len(run.outputs) != len(reference.outputs):
        return f"{len(run.outputs)} outputs instead of {len(reference.outputs)}"
    for i, (got, want) in enumerate(zip(run.outputs, reference.outputs, strict=True)):
        problem = difference(got, want)
        if problem:
            return f"output {i}: {problem}"
    return None


def _differing_outputs(run: Run, reference: Run) -> list[int] | None:
    """The positions of the outputs on which ``run`` differs from ``reference``; None unless both returned
    as many outputs."""
    if run.outputs is None or reference.outputs is None or len(run.outputs) != len(reference.outputs):
        return None
    return [
        i for i, (got, want) in enumerate(zip(run.outputs, reference.outputs, strict=True)) if difference(got, want)
    ]


def _outputs_at(run: Run, positions: list[int] | None) -> Run:
    if positions is None or run.outputs is None:
        return run
    return replace(run, outputs=[run.outputs[i] for i in positions])


def _raising_output(inputs, outputs, values, error: BaseException) -> list[int] | None:
    """Where the py linker raised on the whole graph: the position of the first output it raises ``error``'s
    type on when compiled alone, as a list; None when there is none (or only one output)."""
    if len(outputs) == 1:
        return None
    for i, output in enumerate(outputs):
        alone = _run(PY, inputs, [output], values, "py, for the output it raises on")
        if alone.stage == "call" and type(alone.error) is type(error):
            return [i]
    return None


def _classify(runs: dict[str, Run], judged: list[int] | None = None) -> list[Finding]:
    """The findings of ``runs``; stock's run holds only the outputs at ``judged`` when it is given."""
    py, llvm, numba = runs["py"], runs["LLVM"], runs.get("NUMBA")
    findings = []
    stock = None if numba is None else disagreement(numba, _outputs_at(py, judged))
    ours = disagreement(llvm, py)
    overflowed = (
        isinstance(py.error, OverflowError) and llvm.error is None and numba is not None and numba.error is None
    )
    if ours and stock and (overflowed or disagreement(_outputs_at(llvm, judged), numba) is None):
        where = "" if judged is None else f" (outputs {judged}, compiled alone under NUMBA)"
        findings.append(Finding("stock", f"NUMBA and LLVM vs py{where}: {stock}"))
    elif ours:
        kind = "crash" if llvm.error is not None and py.error is None else "mismatch"
        findings.append(Finding(kind, f"LLVM vs py: {ours}"))
    elif stock:
        findings.append(Finding("stock", f"NUMBA vs py: {stock}"))
    for name, run in runs.items():
        if run.mutated:
            kind = "mismatch" if name == "LLVM" and not (numba and numba.mutated == run.mutated) else "stock"
            findings.append(Finding(kind, f"{name} modified input(s) {run.mutated}"))
    return findings


def _jit_fn_findings(llvm: Run, values) -> list[Finding]:
    """``fn.vm.jit_fn`` on fresh inputs must agree with the Function (and leave its inputs alone), and raise
    Python's ``TypeError``, as stock's graph function does, given one argument too many."""
    jit_fn = getattr(llvm.function.vm, "jit_fn", None)
    if jit_fn is None:
        return [Finding("mismatch", "the LLVM Function has no vm.jit_fn")]
    run = _call(jit_fn, values)
    findings = []
    problem = disagreement(run, llvm)
    if problem:
        kind = "crash" if run.error is not None and llvm.error is None else "mismatch"
        findings.append(Finding(kind, f"jit_fn vs the LLVM Function: {problem}"))
    if run.mutated:
        findings.append(Finding("mismatch", f"jit_fn modified input(s) {run.mutated}"))
    extra = _call(jit_fn, lambda: [*values(), np.zeros(1)])
    if not isinstance(extra.error, TypeError):
        got = "returned" if extra.error is None else f"raised {type(extra.error).__name__}: {extra.error}"
        findings.append(Finding("mismatch", f"jit_fn given one argument too many {got}, not Python's TypeError"))
    return findings


def _other_floats(values: Callable[[], list]) -> Callable[[], list] | None:
    """``values`` with each float32 array as float64 and each float64 one as float32; None if there is none."""
    swap = {np.dtype("float32"): np.float64, np.dtype("float64"): np.float32}

    def swapped():
        return [v.astype(swap[v.dtype]) if isinstance(v, np.ndarray) and v.dtype in swap else v for v in values()]

    return swapped if any(isinstance(v, np.ndarray) and v.dtype in swap for v in values()) else None


def _in_float32(run: Run) -> Run:
    """``run`` with its float outputs as float32."""
    if run.outputs is None:
        return run
    cast = [np.asarray(o).astype(np.float32) if np.asarray(o).dtype.kind == "f" else o for o in run.outputs]
    return replace(run, outputs=cast)


def _retyped_jit_fn_findings(llvm: Run, numba_run: Run, values) -> list[Finding]:
    """Given float inputs of the other float dtype, LLVM's ``jit_fn`` must compute what stock's computes (both
    compile again for the new types) or raise what it raises. The graph's types promise nothing then, and the
    two run different code (stock's graph function of the LLVM mode's rewritten graph, which keeps a float32
    scalar float32 where stock's Elemwise casts it to its float64 output): float outputs are compared as
    float32, at its tolerance, whatever their dtypes."""
    other = _other_floats(values)
    if other is None:
        return []
    ours, stock = _call(llvm.function.vm.jit_fn, other), _call(numba_run.function.vm.jit_fn, other)
    problem = disagreement(_in_float32(ours), _in_float32(stock))
    if problem is None:
        return []
    kind = "crash" if ours.error is not None and stock.error is None else "mismatch"
    return [Finding(kind, f"jit_fn on inputs of the other float dtype vs stock's: {problem}")]


@contextmanager
def _rewrite_cache(directory: str | None):
    """Within it, the LLVM mode's rewrite cache is off (``directory`` None) or a fresh one in ``directory``."""
    previous = os.environ.get("LLVM_BACKEND_REWRITE_CACHE"), rewrite_cache.store.DEFAULT
    os.environ["LLVM_BACKEND_REWRITE_CACHE"] = "0" if directory is None else "1"
    if directory is not None:
        rewrite_cache.store.DEFAULT = rewrite_cache.RewriteCache(directory)
    try:
        yield
    finally:
        if previous[0] is None:
            del os.environ["LLVM_BACKEND_REWRITE_CACHE"]
        else:
            os.environ["LLVM_BACKEND_REWRITE_CACHE"] = previous[0]
        rewrite_cache.store.DEFAULT = previous[1]


def _from_the_cache(inputs, outputs, values) -> Run | None:
    """LLVM's run of the graph rewritten once, stored, and put in place by the second compile through a fresh
    rewrite cache; None when the cache does not serve it (a graph it cannot key)."""
    with tempfile.TemporaryDirectory() as directory, _rewrite_cache(directory):
        _run("LLVM", inputs, outputs, values, CACHED)
        hits = rewrite_cache.outcomes["hit"]
        run = _run("LLVM", inputs, outputs, values, CACHED)
        return run if rewrite_cache.outcomes["hit"] > hits else None


def _cache_findings(cached: Run | None, llvm: Run) -> list[Finding]:
    """The cache-served run must compute what LLVM computed with the cache off, and leave its inputs alone."""
    if cached is None:
        return []
    findings = []
    problem = disagreement(cached, llvm)
    if problem is not None:
        kind = "crash" if cached.error is not None and llvm.error is None else "mismatch"
        findings.append(Finding(kind, f"LLVM from the rewrite cache vs LLVM: {problem}"))
    if cached.mutated:
        findings.append(Finding("mismatch", f"LLVM from the rewrite cache modified input(s) {cached.mutated}"))
    return findings


def check(inputs, outputs, values: Callable[[], list], stock: bool = True) -> Outcome:
    """Compile ``outputs`` of ``inputs`` under the py linker, LLVM (with the rewrite cache off, then from it) and
    stock NUMBA (if ``stock`` is false, only where LLVM and the py linker disagree), call each on ``values()`` and
    compare (see the module docstring)."""
    runs = {"py": _run(PY, inputs, outputs, values)}
    py_error = runs["py"].error
    if py_error is not None and (runs["py"].stage == "compile" or isinstance(py_error, NotImplementedError)):
        return Outcome(runs, invalid=True)
    with _rewrite_cache(None):
        runs["LLVM"] = _run("LLVM", inputs, outputs, values)
    cached = _from_the_cache(inputs, outputs, values)
    ours = disagreement(runs["LLVM"], runs["py"])
    judged = None
    if ours and py_error is None:
        judged = _differing_outputs(runs["LLVM"], runs["py"])
    elif ours and runs["LLVM"].error is None:
        judged = _raising_output(inputs, outputs, values, py_error)
    if ours:
        # Only what LLVM disagrees on (every output where it raised): a smaller graph for stock, which took
        # minutes and gigabytes over whole wide graphs. Dying or hanging here is not stock's to own.
        judged_outputs = outputs if judged is None else [outputs[i] for i in judged]
        runs["NUMBA"] = _run("NUMBA", inputs, judged_outputs, values, JUDGING)
    elif stock:
        runs["NUMBA"] = _run("NUMBA", inputs, outputs, values, "NUMBA")
    findings = _classify(runs, judged) + _cache_findings(cached, runs["LLVM"])
    if cached is not None:
        runs[CACHED] = cached
    if runs["LLVM"].function is not None:
        findings += _jit_fn_findings(runs["LLVM"], values)
        whole_stock = runs.get("NUMBA") if judged is None else None
        if whole_stock is not None and whole_stock.function is not None:
            findings += _retyped_jit_fn_findings(runs["LLVM"], whole_stock, values)
    return Outcome(runs, findings)
