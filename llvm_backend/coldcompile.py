"""Cold compile time of a built-in graph, measured in a fresh process with empty caches.

``cold_compile_seconds(graph, mode)`` starts ``python -m llvm_backend.coldcompile GRAPH MODE`` with its
own empty ``NUMBA_CACHE_DIR`` and PyTensor ``base_compiledir``; that process builds the graph, then
times ``pytensor.function(...)`` plus the first call (numba compiles lazily, on the first call), and
prints the seconds as JSON. Interpreter start-up and imports are not counted.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

__all__ = ["cold_compile_seconds"]


def cold_compile_seconds(graph: str, mode: str, timeout: float = 1800) -> float:
    """Seconds to compile and first-call built-in ``graph`` under ``mode``, from empty caches."""
    with tempfile.TemporaryDirectory(prefix="llvm-backend-cold-") as tmp:
        flags = [os.environ.get("PYTENSOR_FLAGS", ""), f"base_compiledir={tmp}/pytensor"]
        env = os.environ | {
            "NUMBA_CACHE_DIR": f"{tmp}/numba",
            "PYTENSOR_FLAGS": ",".join(f for f in flags if f),
        }
        done = subprocess.run(
            [sys.executable, "-m", "llvm_backend.coldcompile", graph, mode],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    if done.returncode != 0:
        raise RuntimeError(f"cold compile of {graph} under {mode} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])["seconds"]


def _main(graph: str, mode: str) -> None:
    import pytensor

    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend.graphs import GRAPHS

    g = GRAPHS[graph]()
    start = time.perf_counter()
    fn = pytensor.function(g.inputs, g.outputs, mode=mode)
    fn(*g.values)
    print(json.dumps({"graph": graph, "mode": mode, "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    _main(*sys.argv[1:])
