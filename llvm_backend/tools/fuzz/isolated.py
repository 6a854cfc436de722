"""The fuzzing loop in a child process, so a graph that kills the process (an LLVM abort, a segfault) is a
crash in the summary and the run goes on.

`run_isolated` starts ``python -m llvm_backend.tools.fuzz.isolated REQUEST`` with the budget left. The child
runs `runner.run`, writes its summary to a state file after each graph and prints one line per step on stderr.
When it dies from a signal, the graph it was checking (``out/PENDING``, written before each compile) becomes a
``crash-<hash>.py`` reproducer carrying the child's last words, and a new child goes on under the next
hypothesis seed. A graph that kills the process is not shrunk (shrinking replays it in the dying process).
"""

import importlib
import json
import math
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from llvm_backend.tools.fuzz.reproducer import write_crash
from llvm_backend.tools.fuzz.runner import PENDING, Summary, check_spec, run

__all__ = ["WorkerError", "run_isolated"]

_STEP = "fuzz-step:"
"""Starts the child's stderr line after each step; the note follows."""


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
) -> Summary:
    """`runner.run` in child processes, with the same arguments and summary; a child's death while checking a
    graph is recorded as a crash with its reproducer. ``check`` names the oracle as ``"module:function"``
    (default: `runner.check_spec`)."""
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
            child, last_words = _run_child(request, summary, start, progress)
            part = Summary.from_json(state.read_text()) if state.exists() else Summary(run_seed, run_seed)
            summary.merge(part)
            summary.seconds = time.monotonic() - start
            if child == 0:
                break
            pending = out / PENDING
            if child > 0 or not pending.exists():
                raise WorkerError(f"the fuzz worker exited with status {child}; its last words:\n" + last_words)
            how = f"The process died ({_signal_name(child)}) checking this graph; its last words:\n\n{last_words}"
            summary.failures.append(("crash", write_crash(out, pending.read_text(), how)))
            pending.unlink()
            summary.graphs += 1
            progress(summary, "the worker died on a graph: wrote a crash reproducer, starting a new one")
            run_seed = part.run_seed + 1
    return summary


def _run_child(request: dict, done: Summary, start: float, progress) -> tuple[int, str]:
    """Run one child to its end, relaying its steps to ``progress`` (over ``done``, what earlier children did);
    its return code and the last lines it wrote that were not steps."""
    state = Path(request["state"])
    last = deque(maxlen=20)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(request, file)
    command = [sys.executable, "-m", "llvm_backend.tools.fuzz.isolated", file.name]
    try:
        with subprocess.Popen(command, stderr=subprocess.PIPE, text=True, errors="replace") as child:
            for line in child.stderr:
                if line.startswith(_STEP) and state.exists():
                    current = Summary.from_json(done.to_json())
                    current.merge(Summary.from_json(state.read_text()))
                    current.seconds = time.monotonic() - start
                    progress(current, line[len(_STEP) :].strip())
                elif line.strip():
                    last.append(line.rstrip())
    finally:
        Path(file.name).unlink()
    return child.returncode, "\n".join(last)


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

    summary = run(
        request["seed"], request["graphs"], request["minutes"], Path(request["out"]), step, _resolve(request["check"])
    )
    step(summary, "done")
    return 0


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1]))
