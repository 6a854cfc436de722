"""Cold compile time of a built-in graph, measured in a fresh process with empty caches.

``cold_compile_seconds(graph, mode)`` starts ``python -m llvm_backend.tools.coldcompile GRAPH MODE`` with its
own empty ``NUMBA_CACHE_DIR`` and PyTensor ``base_compiledir``; that process builds the graph, then
times ``pytensor.function(...)`` plus the first call (numba compiles lazily, on the first call), and
prints the seconds as JSON. Interpreter start-up and imports are not counted.

``cold_call("module:function", *args)`` does the same for anything: in the fresh process
``function(*args)`` sets the work up (untimed) and returns a zero-argument callable, whose one call
is timed. The benchmarks use it for their cases and hand-written ``@njit`` references; with ``warm=True``
a second fresh process repeats the work on the caches the first one filled (what a user's next session
pays).
"""

import importlib
import json
import os
import subprocess
import sys
import tempfile
import time

__all__ = ["cold_call", "cold_compile_seconds"]


def _run_fresh(arguments: list[str], what: str, timeout: float, runs: int = 1) -> list[dict]:
    """Run ``python -m llvm_backend.tools.coldcompile ARGUMENTS`` ``runs`` times, one process after the other,
    all with the same caches, empty before the first; the JSON each printed."""
    results = []
    with tempfile.TemporaryDirectory(prefix="llvm-backend-cold-") as tmp:
        flags = [os.environ.get("PYTENSOR_FLAGS", ""), f"base_compiledir={tmp}/pytensor"]
        env = os.environ | {
            "NUMBA_CACHE_DIR": f"{tmp}/numba",
            "PYTENSOR_FLAGS": ",".join(f for f in flags if f),
            # the child imports what this process imports (a benchmark module outside the package too)
            "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
        }
        for _ in range(runs):
            done = subprocess.run(
                [sys.executable, "-m", "llvm_backend.tools.coldcompile", *arguments],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
            if done.returncode != 0:
                raise RuntimeError(f"cold compile of {what} failed:\n{done.stderr}")
            results.append(json.loads(done.stdout.splitlines()[-1]))
    return results


def cold_compile_seconds(graph: str, mode: str, timeout: float = 1800) -> float:
    """Seconds to compile and first-call built-in ``graph`` under ``mode``, from empty caches."""
    return _run_fresh([graph, mode], f"{graph} under {mode}", timeout)[0]["seconds"]


def cold_call(target: str, *args: str, timeout: float = 1800, warm: bool = False) -> dict:
    """Time one call of what ``target(*args)`` returns, in a fresh process with empty caches.

    ``target`` is ``module:function``; ``function(*args)`` runs untimed (imports, building a graph)
    and returns the zero-argument callable to time, e.g. one that compiles a graph and calls it once.
    Returns ``{"seconds": ...}``; if the timed call returns a callable, the dict that callable returns
    (work done after the clock stopped, such as counting the IR just compiled) is merged in. With
    ``warm``, a second fresh process then does the same with the caches the first one filled; what it
    measured comes back prefixed ``warm_`` (``warm_seconds``, ...).
    """
    runs = _run_fresh(["--call", target, *args], f"{target}{args}", timeout, runs=2 if warm else 1)
    if not warm:
        return runs[0]
    return runs[0] | {f"warm_{key}": value for key, value in runs[1].items() if key not in ("target", "args")}


def _main(graph: str, mode: str) -> None:
    import pytensor

    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend.tools.graphs import GRAPHS

    g = GRAPHS[graph]()
    start = time.perf_counter()
    fn = pytensor.function(g.inputs, g.outputs, mode=mode)
    fn(*g.values)
    print(json.dumps({"graph": graph, "mode": mode, "seconds": time.perf_counter() - start}))


def _call_main(target: str, *args: str) -> None:
    module, _, function = target.partition(":")
    work = getattr(importlib.import_module(module), function)(*args)
    start = time.perf_counter()
    after = work()
    seconds = time.perf_counter() - start
    extra = after() if callable(after) else {}
    print(json.dumps({"target": target, "args": args, "seconds": seconds, **extra}))


if __name__ == "__main__":
    if sys.argv[1] == "--call":
        _call_main(*sys.argv[2:])
    else:
        _main(*sys.argv[1:])
