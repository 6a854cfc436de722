"""The fuzzing loop in a child process, so a graph that kills the process (an LLVM abort, a segfault) is a
crash in the summary and the run goes on.

`run_isolated` starts ``python -m llvm_backend_devtools.fuzz.isolated REQUEST`` with the budget left. The child
runs `runner.run`, writes its summary to a state file after each graph and prints one line per step on stderr,
and one per mode it compiles a graph under (`oracle.reporting_stages`). When it dies from a signal, or is
stopped for spending more than ``graph_seconds`` on one mode's compile and call or growing by more than
``graph_bytes`` in it, the graph it was checking (``out/PENDING``, written before each compile) becomes a
``crash-<hash>.py`` reproducer carrying the child's last words and the mode, and a new child goes on under the
next hypothesis seed. Under stock NUMBA (whose compile of a wide Join can hang inside LLVM's loop strength
reduction, docs/fuzzing.md) it is a stock discrepancy, unless stock was compiled to
judge a disagreement of LLVM's with the py linker: that disagreement stays unexplained, an ``unjudged``
failure (``unjudged-<hash>.py``); under LLVM or the py linker it is a crash. A graph that kills the process
is not shrunk (shrinking replays it in the dying process).
"""

import importlib
import json
import math
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from llvm_backend_devtools.fuzz.oracle import JUDGING, reporting_stages
from llvm_backend_devtools.fuzz.reproducer import write_crash
from llvm_backend_devtools.fuzz.runner import PENDING, Summary, check_spec, run

__all__ = ["GRAPH_BYTES", "GRAPH_SECONDS", "WorkerError", "run_isolated"]

GRAPH_SECONDS = 300.0
"""How long the child may compile and call one graph under one mode before it is stopped."""
GRAPH_BYTES = 4 * 2**30
"""How much the child's resident memory may grow while it compiles and calls one graph under one mode (a
compile takes tens to hundreds of megabytes; the child's memory grows over a run with what it has compiled)."""

_STEP = "fuzz-step:"
"""Starts the child's stderr line after each step; the note follows."""
_STAGE = "fuzz-stage:"
"""Starts the child's stderr line naming the mode it compiles the graph under next."""


class WorkerError(RuntimeError):
    """The child process failed outside any graph's check (its last words say why)."""


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def run_isolated(
    seed: int = 0,
    graphs: int | None = None,
    minutes: float | None = None,
    out: Path = Path("fuzz-results"),
    progress: Callable[[Summary, str], None] = lambda summary, note: None,
    check: str | None = None,
    graph_seconds: float = GRAPH_SECONDS,
    graph_bytes: int = GRAPH_BYTES,
) -> Summary:
    """`runner.run` in child processes, with the same arguments and summary; a child's death or stop while
    checking a graph is recorded with its reproducer (see the module docstring). ``check`` names the oracle as
    ``"module:function"`` (default: `runner.check_spec`)."""
    if graphs is None and minutes is None:
        graphs = 100
    limit = graphs if graphs is not None else math.inf
    start = time.monotonic()
    deadline = start + (minutes * 60 if minutes is not None else math.inf)
    summary = Summary(seed)
    run_seed = seed
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="llvm-backend-fuzz-") as scratch:
        state = Path(scratch) / "state.json"
        while summary.graphs < limit and time.monotonic() < deadline:
            left = None if minutes is None else (deadline - time.monotonic()) / 60
            request = {
                "seed": run_seed,
                "graphs": None if graphs is None else limit - summary.graphs,
                "minutes": left,
                "out": str(out),
                "state": str(state),
                "check": check,
            }
            state.unlink(missing_ok=True)
            (out / PENDING).unlink(missing_ok=True)
            end = _run_child(request, summary, start, progress, (graph_seconds, graph_bytes))
            part = Summary.from_json(state.read_text()) if state.exists() else Summary(run_seed, run_seed)
            summary.merge(part)
            summary.seconds = time.monotonic() - start
            if end.returncode == 0:
                break
            pending = out / PENDING
            if (end.returncode > 0 and end.stopped is None) or not pending.exists():
                raise WorkerError(
                    f"the fuzz worker exited with status {end.returncode}; its last words:\n" + end.last_words
                )
            cause = _record_death(summary, end, out, pending)
            progress(
                summary, f"the worker {cause} on a graph under {end.stage}: wrote a reproducer, starting a new one"
            )
            run_seed = part.run_seed + 1
    return summary


def _record_death(summary: Summary, end, out: Path, pending: Path) -> str:
    """Write the reproducer of the graph ``pending`` holds, on which the child died or was stopped (``end``),
    and count it in ``summary``: stock's where stock was checking it, unjudged where stock was judging LLVM's
    disagreement, else a crash of ours. Returns what happened, for the progress line."""
    cause = end.stopped or f"died ({_signal_name(end.returncode)})"
    how = f"The process {cause} checking this graph under {end.stage}; its last words:\n\n{end.last_words}"
    if end.stage == "NUMBA":
        summary.stock.append(
            (f"stock NUMBA: the process {cause}", write_crash(out / "stock", pending.read_text(), how))
        )
    elif end.stage == JUDGING:
        summary.failures.append(("unjudged", write_crash(out, pending.read_text(), how, "unjudged")))
    else:
        summary.failures.append(("crash", write_crash(out, pending.read_text(), how)))
    pending.unlink()
    summary.graphs += 1
    return cause


@dataclass
class _ChildEnd:
    returncode: int | None = None
    last_words: str = ""
    stage: str = "no mode"
    """The mode the child last said it compiles a graph under."""
    stopped: str | None = None
    """Why the watchdog stopped the child, if it did."""
    heard: float = field(default_factory=time.monotonic)
    """When the child last wrote a step or a stage."""
    resident: int = 0
    """The child's resident memory then."""

    def hear(self, pid: int) -> None:
        self.heard, self.resident = time.monotonic(), _resident_bytes(pid)


def _resident_bytes(pid: int) -> int:
    """The resident memory of process ``pid`` (0 where ``/proc`` does not tell)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    kilobytes = [line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(kilobytes[0]) * 1024 if kilobytes else 0


def _watch(child: subprocess.Popen, end: _ChildEnd, graph_seconds: float, graph_bytes: int) -> None:
    """Stop ``child`` once it has been silent for ``graph_seconds`` or grown by ``graph_bytes`` since it last
    wrote a step or a stage."""
    while child.poll() is None:
        silent = time.monotonic() - end.heard
        grown = _resident_bytes(child.pid) - end.resident
        if silent > graph_seconds:
            end.stopped = f"was stopped after {silent:.0f} s on one mode"
        elif end.resident and grown > graph_bytes:
            end.stopped = f"was stopped after growing by {grown / 2**30:.1f} GB on one mode"
        if end.stopped is not None:
            child.kill()
            return
        time.sleep(0.5)


def _run_child(request: dict, done: Summary, start: float, progress, limits: tuple[float, int]) -> _ChildEnd:
    """Run one child to its end, relaying its steps to ``progress`` (over ``done``, what earlier children did);
    how it ended, the mode it last compiled under and the last lines it wrote that were not steps."""
    state = Path(request["state"])
    last = deque(maxlen=20)
    end = _ChildEnd()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(request, file)
    command = [sys.executable, "-m", "llvm_backend_devtools.fuzz.isolated", file.name]
    try:
        with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace") as child:
            watchdog = threading.Thread(target=_watch, args=(child, end, *limits), daemon=True)
            watchdog.start()
            for line in child.stderr:
                if line.startswith(_STAGE):
                    end.stage = line[len(_STAGE) :].strip()
                    end.hear(child.pid)
                elif line.startswith(_STEP) and state.exists():
                    end.hear(child.pid)
                    current = Summary.from_json(done.to_json())
                    current.merge(Summary.from_json(state.read_text()))
                    current.seconds = time.monotonic() - start
                    progress(current, line[len(_STEP) :].strip())
                elif line.strip():
                    last.append(line.rstrip())
        watchdog.join()
    finally:
        Path(file.name).unlink()
    end.returncode, end.last_words = child.returncode, "\n".join(last)
    return end


def _resolve(name: str | None):
    if name is None:
        return check_spec
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(module), function)


def _child(request_path: str) -> int:
    import llvm_backend  # noqa: F401  (registers the LLVM mode)

    request = json.loads(Path(request_path).read_text())
    state = Path(request["state"])
    partial = state.with_suffix(".partial")

    def step(summary: Summary, note: str) -> None:
        partial.write_text(summary.to_json())
        partial.replace(state)
        sys.stderr.write(f"{_STEP} {note}\n")
        sys.stderr.flush()

    def stage(mode: str) -> None:
        sys.stderr.write(f"{_STAGE} {mode}\n")
        sys.stderr.flush()

    with reporting_stages(stage):
        summary = run(
            request["seed"],
            request["graphs"],
            request["minutes"],
            Path(request["out"]),
            step,
            _resolve(request["check"]),
        )
    step(summary, "done")
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1]))
