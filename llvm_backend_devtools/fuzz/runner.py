"""The fuzzing loop: hypothesis draws graphs, the oracle checks each, a failure is shrunk and written out.

Graphs are drawn inside the test (``st.data()``) so a run stops drawing when its budget (graphs or minutes) is
spent. A mismatch or crash raises `FuzzFailure`; hypothesis then shrinks the graph (its budget no longer
applies: the shrinking replays must fail as the first run did) and the smallest failing graph is written as
a reproducer. The run then goes on under the next seed until the budget is spent.
"""

import json
import math
import time
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from pytensor.graph.rewriting.basic import FromFunctionNodeRewriter
from pytensor.scalar import Composite
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.rewriting.scalarize import ScalarCAReduce, ScalarizedElemwise, ScalarizedJoin, ScalarSubtensor

from llvm_backend.dispatch import LOWERINGS, lowering_for
from llvm_backend.lowerings.join import filled_joins
from llvm_backend.rewrites.hoist import hoist_invariants
from llvm_backend_devtools.fuzz import generator
from llvm_backend_devtools.fuzz.generator import FAMILIES, GraphSpec
from llvm_backend_devtools.fuzz.oracle import Outcome, check, report_stage
from llvm_backend_devtools.fuzz.reproducer import reproducer_source, write_reproducer

__all__ = ["PENDING", "TRACKED", "FuzzFailure", "Summary", "check_spec", "run", "write_pending"]

HOIST = "hoist_invariants"
FILLED = "filled_join"
TRACKED = tuple(
    dict.fromkeys(
        (
            *(cls.__name__ for cls in LOWERINGS),
            *(cls.__name__ for cls in (ScalarCAReduce, ScalarSubtensor, ScalarizedElemwise, ScalarizedJoin)),
            FusedElemwise.__name__,
            Composite.__name__,
            HOIST,
            FILLED,
        )
    )
)
"""What the LLVM mode lowers (`LOWERINGS`: counted where the lowering applies to the node) or rewrites into
(PyTensor's scalarization ops, FusedElemwise, Composite), our hoist rewrite (counted where it fired) and joins
whose entry a loop writes within the output (`filled_joins`)."""


class FuzzFailure(Exception):
    """A graph on which LLVM mismatched or crashed."""


class _BudgetSpent(BaseException):
    """Raised out of hypothesis (which lets through what is not an ``Exception``, without shrinking) when the
    run's graphs or minutes are spent, after the graph is drawn: an example that draws less than an earlier one
    with the same choices makes hypothesis fail with FlakyStrategyDefinition."""


def _inner_graphs(op) -> list:
    """The inner graphs of ``op``: an OpFromGraph's or Scan's ``fgraph``, an Elemwise{Composite}'s."""
    if isinstance(op, Elemwise):
        op = op.scalar_op
    inner = getattr(op, "fgraph", None)
    return [] if inner is None else [inner]


def graph_coverage(fgraph) -> tuple[Counter, Counter]:
    """(op class name -> nodes, tracked name -> nodes) over ``fgraph`` and its inner graphs. A `LOWERINGS`
    class counts as tracked where its lowering applies (in the outer graph, which our dispatch lowers), and so
    does a join `filled_joins` fills."""
    classes, tracked = Counter(), Counter()
    for node in fgraph.apply_nodes:
        lowering = lowering_for(node.op)
        if lowering is not None and lowering.applies(node):
            tracked[lowering.op_type.__name__] += 1
    filled = sum("filled" in hint for hint in filled_joins(fgraph, fgraph.toposort()).values())
    if filled:
        tracked[FILLED] = filled
    pending = [fgraph]
    while pending:
        graph = pending.pop()
        for node in graph.apply_nodes:
            op = node.op
            name = type(op).__name__
            classes[name] += 1
            if isinstance(op, Elemwise) and isinstance(op.scalar_op, Composite):
                tracked[Composite.__name__] += 1
            if name in TRACKED and lowering_for(op) is None:
                tracked[name] += 1
            pending += _inner_graphs(op)
    return classes, tracked


@contextmanager
def counting_hoists(counter: Counter):
    """Count in ``counter[HOIST]`` the nodes `hoist_invariants` rewrites while open. A compile runs a copy of
    the rewriter (the query copies it), so the count is of rewriters calling its function."""
    transform = FromFunctionNodeRewriter.transform

    def counted(rewriter, fgraph, node, *args, **kwargs):
        result = transform(rewriter, fgraph, node, *args, **kwargs)
        if result and rewriter.fn is hoist_invariants.fn:
            counter[HOIST] += 1
        return result

    FromFunctionNodeRewriter.transform = counted
    try:
        yield
    finally:
        FromFunctionNodeRewriter.transform = transform


PENDING = "pending.py"
"""The graph being checked, written before its compile: what is left behind when the process dies."""


def write_pending(out: Path, spec: GraphSpec) -> Path:
    """Write ``spec``'s reproducer to ``out/PENDING`` (whole or not at all) and return its path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / PENDING
    partial = path.with_suffix(".partial")
    partial.write_text(reproducer_source(spec))
    return partial.replace(path)


def check_spec(spec: GraphSpec) -> Outcome:
    """The oracle on ``spec``'s graph and values; stock NUMBA is left out of wide graphs (see `GraphSpec.wide`)."""
    inputs, outputs = spec.build()
    return check(inputs, outputs, spec.values, stock=not spec.wide)


@dataclass
class Summary:
    seed: int
    run_seed: int | None = None
    """The hypothesis seed in use last (the run moves to the next one after each failure)."""
    graphs: int = 0
    invalid: int = 0
    without_stock: int = 0
    seconds: float = 0.0
    families: Counter = field(default_factory=Counter)
    op_classes: Counter = field(default_factory=Counter)
    tracked: Counter = field(default_factory=Counter)
    """Tracked name -> graphs in which it ran."""
    failures: list[tuple[str, Path]] = field(default_factory=list)
    stock: list[tuple[str, Path]] = field(default_factory=list)

    @property
    def mismatches(self) -> int:
        return sum(kind == "mismatch" for kind, _ in self.failures)

    @property
    def crashes(self) -> int:
        return sum(kind == "crash" for kind, _ in self.failures)

    @property
    def unjudged(self) -> int:
        """LLVM disagreed with the py linker, and stock NUMBA, compiled to judge, died or was stopped."""
        return sum(kind == "unjudged" for kind, _ in self.failures)

    def record(self, spec: GraphSpec, outcome: Outcome, hoists: Counter) -> None:
        self.graphs += 1
        self.invalid += outcome.invalid
        self.without_stock += "NUMBA" not in outcome.runs and not outcome.invalid
        self.families.update(set(spec.families))
        fn = outcome.llvm_function
        if fn is not None:
            classes, tracked = graph_coverage(fn.maker.fgraph)
            self.op_classes.update(set(classes))
            self.tracked.update(set(tracked) | set(hoists))

    def merge(self, other: "Summary") -> None:
        """Add ``other``'s counts and findings (a later part of the same run) to this summary."""
        self.run_seed = other.run_seed
        self.graphs += other.graphs
        self.invalid += other.invalid
        self.without_stock += other.without_stock
        self.families.update(other.families)
        self.op_classes.update(other.op_classes)
        self.tracked.update(other.tracked)
        self.failures += other.failures
        self.stock += other.stock

    def to_json(self) -> str:
        fields = {**self.__dict__, "failures": [[k, str(p)] for k, p in self.failures]}
        fields["stock"] = [[m, str(p)] for m, p in self.stock]
        return json.dumps(fields)

    @classmethod
    def from_json(cls, text: str) -> "Summary":
        fields = json.loads(text)
        for name in ("families", "op_classes", "tracked"):
            fields[name] = Counter(fields[name])
        fields["failures"] = [(k, Path(p)) for k, p in fields["failures"]]
        fields["stock"] = [(m, Path(p)) for m, p in fields["stock"]]
        return cls(**fields)

    def status(self) -> str:
        return (
            f"fuzz: {self.graphs} graphs, {self.mismatches} mismatches, {self.crashes} crashes, "
            f"{self.unjudged} unjudged, {len(self.stock)} stock discrepancies, {self.seconds:.0f} s"
        )

    def format(self) -> str:
        covered = [name for name in TRACKED if self.tracked[name]]
        missing = [name for name in TRACKED if not self.tracked[name]]
        lines = [
            (
                f"llvm-backend fuzz: seed {self.seed}, {self.graphs} graphs in {self.seconds:.0f} s "
                f"({self.invalid} invalid, {self.without_stock} wide ones without stock NUMBA)"
            ),
            (
                f"mismatches: {self.mismatches}  crashes: {self.crashes}  unjudged: {self.unjudged}  "
                f"stock discrepancies: {len(self.stock)}"
            ),
            "node families (graphs): " + ", ".join(f"{f} {self.families[f]}" for f in FAMILIES),
            "lowered or rewritten by the LLVM mode (graphs): "
            + ", ".join(f"{name} {self.tracked[name]}" for name in covered),
            f"not covered: {', '.join(missing) or 'none'}",
            f"op classes compiled under LLVM ({len(self.op_classes)}): " + ", ".join(sorted(self.op_classes)),
        ]
        lines += [f"{kind}: {path}" for kind, path in self.failures]
        lines += [f"stock discrepancy: {message.splitlines()[0]} ({path})" for message, path in self.stock]
        return "\n".join(lines)


@dataclass
class _Attempt:
    """One hypothesis run's state: the failing graph last seen (after shrinking, the smallest)."""

    failing: tuple[GraphSpec, Outcome] | None = None
    shrinks: int = 0


def _run_once(
    summary: Summary,
    run_seed: int,
    limit: int,
    deadline: float,
    out: Path,
    progress: Callable[[Summary, str], None],
    check: Callable[[GraphSpec], Outcome],
) -> _Attempt:
    attempt = _Attempt()
    start = time.monotonic() - summary.seconds

    @hypothesis_seed(run_seed)
    @settings(
        database=None,
        max_examples=limit,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        # no explain phase: its line tracer slows numba's compiles several times over
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    )
    @given(st.data())
    def fuzz(data):
        generating = attempt.failing is None
        spec = data.draw(generator.graphs(), label="graph")
        if generating and (summary.graphs >= limit or time.monotonic() >= deadline):
            raise _BudgetSpent
        hoists = Counter()
        pending = write_pending(out, spec)
        report_stage("the oracle, before any mode")
        with counting_hoists(hoists):
            outcome = check(spec)
        pending.unlink()
        if not generating:
            attempt.shrinks += 1
            progress(summary, f"shrinking a failure: {attempt.shrinks} graphs tried")
        if outcome.failures:
            attempt.failing = (spec, outcome)
            raise FuzzFailure(outcome.report())
        if generating:
            summary.record(spec, outcome, hoists)
            summary.seconds = time.monotonic() - start
            for finding in outcome.stock:
                summary.stock.append((finding.message, write_reproducer(out / "stock", "stock", spec, outcome)))
            progress(summary, "")

    try:
        fuzz()
    except _BudgetSpent:
        pass
    except Exception:
        # FuzzFailure, or hypothesis's own error when a shrunk graph's replay did not fail again
        if attempt.failing is None:
            raise
    summary.seconds = time.monotonic() - start
    return attempt


def run(
    seed: int = 0,
    graphs: int | None = None,
    minutes: float | None = None,
    out: Path = Path("fuzz-results"),
    progress: Callable[[Summary, str], None] = lambda summary, note: None,
    check: Callable[[GraphSpec], Outcome] = check_spec,
) -> Summary:
    """Fuzz until ``graphs`` graphs are checked or ``minutes`` have passed (100 graphs if neither is given);
    reproducers of failures go to ``out`` (stock discrepancies to ``out/stock``). ``progress(summary, note)`` is
    called after each graph and each shrinking step; ``check`` is the oracle on one graph. A process that dies
    while checking a graph leaves it in ``out/PENDING`` (`run_isolated` runs this in a child process to go on
    past such deaths)."""
    if graphs is None and minutes is None:
        graphs = 100
    limit = graphs if graphs is not None else 10**9
    deadline = time.monotonic() + (minutes * 60 if minutes is not None else math.inf)
    summary = Summary(seed)
    for run_seed in range(seed, seed + 10**6):
        summary.run_seed = run_seed
        attempt = _run_once(summary, run_seed, limit, deadline, out, progress, check)
        if attempt.failing is None:
            break
        spec, outcome = attempt.failing
        for finding in outcome.failures:
            summary.failures.append((finding.kind, write_reproducer(out, finding.kind, spec, outcome)))
        summary.graphs += 1
        progress(summary, f"wrote a reproducer after {attempt.shrinks} shrinking steps")
        if summary.graphs >= limit or time.monotonic() >= deadline:
            break
    return summary
