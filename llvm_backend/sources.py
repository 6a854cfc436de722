"""The hash of this project's source: what the on-disk caches key our own code by.

A cached graph function holds code emitted by an intrinsic and by every helper it emits through, in any module of
the project; a rewritten graph holds what our rewrites made. Neither can be proven current against one module's
source, so both are keyed by the hash of every module of `OWN_PACKAGES`, read once per process.
"""

import functools
import hashlib
import importlib.util
from pathlib import Path

__all__ = ["OWN_PACKAGES", "package_source_hash", "project_source_hash"]

OWN_PACKAGES = ("llvm_backend", "llvm_backend_intrinsics")
"""This project's top-level packages: their identity is the hash of their source."""


def package_source_hash(packages) -> str:
    """The SHA-256 of every module of ``packages``, each named by its package and path within it (wherever the
    package's folder lies: ``llvm_backend_intrinsics`` is ``intrinsics/llvm_backend_intrinsics/`` in the source),
    each name and source prefixed with its length."""
    named = []
    for package in packages:
        folder = Path(importlib.util.find_spec(package).origin).parent
        named += [(f"{package}/{p.relative_to(folder).as_posix()}", p) for p in folder.rglob("*.py")]
    h = hashlib.sha256()
    for name, path in sorted(named):
        for part in (name.encode(), path.read_bytes()):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()


@functools.cache
def project_source_hash() -> str:
    """`package_source_hash` of `OWN_PACKAGES`, once per process."""
    return package_source_hash(OWN_PACKAGES)
