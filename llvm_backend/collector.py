"""Python's cyclic garbage collector while the LLVM mode compiles.

A compile builds hundreds of thousands of objects that stay alive (PyMC's graphs and their gradients, the
rewritten graph, numba's typing), and CPython's collector, counting allocations, runs a young collection every
700 of them (2000 on Python 3.13) and, every ten young and ten middle ones, a full collection over the whole
heap: the interpreter's, PyTensor's, PyMC's and numba's objects too, finding next to no garbage in a compile
(docs/decisions.md has the measurements).

`paced_collections` is open while a compile of ours runs (`LLVMFunctionMaker`'s rewriting and linking, a
function's first call, where numba compiles its graph function (``llvm_backend.function.paced_first_call``),
``llvm_backend.nutpie.compile_pymc_model``), in any thread. While at least one is open, the young generation's
threshold is at least `YOUNG_THRESHOLD` and the oldest's at least `OLDEST_THRESHOLD`: young collections come
about 14 times less often (5 on 3.13), each covering more, and full ones about 140 times less often. Every
collection still runs, so cyclic garbage is collected as before, later. When the last one closes the thresholds
are put back, unless something changed them meanwhile. Nothing changes while the collector is disabled.
"""

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["OLDEST_THRESHOLD", "YOUNG_THRESHOLD", "paced_collections"]

YOUNG_THRESHOLD = 10_000
"""The young generation's collection threshold while a compile runs, when the process's is lower."""

OLDEST_THRESHOLD = 100
"""The oldest generation's threshold while a compile runs, when the process's is lower."""

_lock = threading.Lock()
_open = 0
_restore: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None
"""While open and pacing: the thresholds to put back, and those set."""


def _paced(before: tuple[int, int, int]) -> tuple[int, int, int]:
    young, middle, oldest = before
    return max(young, YOUNG_THRESHOLD), middle, max(oldest, OLDEST_THRESHOLD)


@contextmanager
def paced_collections() -> Iterator[None]:
    """Within, the collector runs less often (the module's docstring); blocks nest and overlap across threads,
    and the last to exit puts the thresholds back, also when an exception leaves."""
    global _open, _restore
    with _lock:
        _open += 1
        if _open == 1 and gc.isenabled():
            before = gc.get_threshold()
            _restore = (before, _paced(before))
            gc.set_threshold(*_restore[1])
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if not _open and _restore is not None:
                before, paced = _restore
                _restore = None
                if gc.get_threshold() == paced:
                    gc.set_threshold(*before)
