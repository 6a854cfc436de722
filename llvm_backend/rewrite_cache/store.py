"""Rewritten graphs on disk: one pickle per key, bounded, the least recently used removed first.

Each entry holds its own key, compared when it is loaded: a file copied or renamed over another key's is not
served. Reading never needs to write: a cache that cannot be written (another user's, a read-only file system) is
read as it is, and what cannot be stored, touched or removed is left, with a debug message, never an error.
"""

import logging
import os
import pickle
import tempfile
from pathlib import Path

from pytensor import config

from llvm_backend.rewrite_cache.pickling import dumps

__all__ = ["DEFAULT", "MAX_BYTES", "MAX_ENTRIES", "RewriteCache"]

_logger = logging.getLogger(__name__)

MAX_ENTRIES = 4096
MAX_BYTES = 2**30
"""The cache's bounds: past either, the least recently used entries go."""


class RewriteCache:
    """Rewritten graphs on disk, one file per key, in ``directory`` (by default PyTensor's compiledir's
    ``llvm_backend_rewrites``)."""

    def __init__(
        self,
        directory: str | os.PathLike | None = None,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
    ):
        self._directory = None if directory is None else Path(directory)
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    @property
    def directory(self) -> Path:
        return self._directory or Path(config.compiledir) / "llvm_backend_rewrites"

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def entries(self) -> list[Path]:
        return sorted(self.directory.glob("*.pkl")) if self.directory.is_dir() else []

    def load(self, key: str):
        """What was stored under ``key``, or None. An entry that cannot be read, or was stored under another key,
        is removed (when the cache can be written). Loading marks the entry as used when it can."""
        path = self._path(key)
        try:
            with path.open("rb") as f:
                stored_key, entry = pickle.load(f)
        except FileNotFoundError:
            return None
        except Exception as error:
            _logger.warning("llvm_backend: removing unreadable rewrite cache entry %s: %s", path, error)
            self.remove(key)
            return None
        if stored_key != key:
            _logger.warning("llvm_backend: removing rewrite cache entry %s, stored under key %s", path, stored_key)
            self.remove(key)
            return None
        _best_effort(os.utime, path)
        return entry

    def store(self, key: str, fgraph) -> None:
        """Write ``fgraph``'s inputs and outputs, and whether it has a `DestroyHandler`, under ``key``
        (atomically). The inputs are written with an empty ``tag``: what loads an entry takes only their types,
        and puts its caller's inputs in their place, whose tags (a PyMC value variable's transform, which may hold
        a local function) need not be picklable."""
        entry = (list(fgraph.inputs), list(fgraph.outputs), hasattr(fgraph, "destroy_handler"))
        blob = dumps((key, entry), protocol=4, untagged=fgraph.inputs)
        if len(blob) > self.max_bytes:
            raise ValueError(f"the rewritten graph takes {len(blob)} bytes, over the cache's {self.max_bytes}")
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            Path(tmp).replace(self._path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._evict()

    def remove(self, key: str) -> None:
        """Remove ``key``'s entry, if there is one and the cache can be written."""
        _best_effort(self._path(key).unlink, missing_ok=True)

    def _evict(self) -> None:
        sized = []
        for path in self.entries():
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            sized.append((stat.st_mtime, stat.st_size, path))
        sized.sort()
        count, total = len(sized), sum(size for _, size, _ in sized)
        for _, size, path in sized:
            if count <= self.max_entries and total <= self.max_bytes:
                break
            _best_effort(path.unlink, missing_ok=True)
            count, total = count - 1, total - size

    def clear(self) -> int:
        """Remove every entry; returns how many."""
        entries = self.entries()
        for path in entries:
            path.unlink(missing_ok=True)
        return len(entries)


def _best_effort(write, *args, **kwargs) -> None:
    """``write(*args, **kwargs)``, an `OSError` (a cache that cannot be written) logged and passed over."""
    try:
        write(*args, **kwargs)
    except OSError as error:
        _logger.debug("llvm_backend: rewrite cache not written: %s", error)


DEFAULT = RewriteCache()
"""The cache the LLVM mode uses."""
