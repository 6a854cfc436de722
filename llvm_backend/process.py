"""Every process-wide change `llvm_backend` makes to PyTensor, PyMC, nutpie, numba or Python, in one list.

`CHANGES` is what ``import llvm_backend`` does, applied in that order by `register` (which the import calls). Each
is a `Change` (``llvm_backend.changes``) whose docstring says what it changes, why, and who sees it; those touching
PyTensor's internals live in its adapter (``llvm_backend.adapters.pytensor``), PyMC's and nutpie's in the
``llvm_backend.nutpie`` subpackage (its ``CHANGES``), each with the seam checked before it is made. Our rewrites'
entries in ``optdb`` are `OPTDB_REGISTRATIONS`, one per ``optdb`` record of ``llvm_backend.rewrites.registry``.
``apply()`` makes a change and ``revert()`` puts back exactly what was there before; both are idempotent, so
importing twice or calling `register` again changes nothing more, and `revert_all` undoes the import's changes in
the reverse order. One more is made only while code asks for it:
``llvm_backend.nutpie.numba_is_llvm()`` holds ``adapters.pytensor.NUMBA_IS_LLVM``.

One more is made only while the LLVM mode compiles, and put back when the last compile ends, so it is no
`Change`: Python's garbage collection thresholds (``llvm_backend.collector.paced_collections``).

Left out, because nothing else sees them and numba cannot take them back: the numba types, data models and ``typeof``
entries of ``llvm_backend_intrinsics``, keyed by classes of our own (``ArrayPack``, ``ScalarPack``, ...), the compiled
code numba keeps, and the LLVM symbols of scipy's routines the intrinsics call (``llvm_backend_blas_*``, given when
``llvm_backend_intrinsics.blas`` is imported, and ``llvm_backend_special_*``, when a lowering first names the
routine), names of our own that no other code looks up. Everything else the package does is confined to its own
objects and to the modes using its linker.
"""

import llvmlite.binding as llvm

from llvm_backend import nutpie
from llvm_backend.adapters import pytensor
from llvm_backend.builtins import powi_symbols
from llvm_backend.changes import Change, OptdbRegistration
from llvm_backend.rewrites.registry import OPTDB, RewriteRecord, in_running_order

__all__ = ["CHANGES", "OPTDB_REGISTRATIONS", "PowiSymbols", "register", "revert_all"]


class PowiSymbols(Change):
    """LLVM's process symbol table given the powi builtins the C runtime has and it cannot resolve
    (`llvm_backend.builtins`). LLVM cannot remove a symbol: reverting sets each one added to address 0, which
    its lookup answers as it did before, not found. Code already compiled against them keeps their address."""

    def __init__(self, name: str, doc: str):
        super().__init__(name, doc)
        self.added: dict[str, int] = {}

    def _apply(self) -> None:
        self.added = powi_symbols()
        for symbol, address in self.added.items():
            llvm.add_symbol(symbol, address)

    def _revert(self) -> None:
        for symbol in self.added:
            llvm.add_symbol(symbol, 0)


def _optdb_registration(record: RewriteRecord) -> OptdbRegistration:
    """The change registering ``record``'s rewriter in ``optdb`` under its name, tags and position."""
    doc = (
        f"{record.summary} In ``optdb`` as ``{record.name}`` under our tag at {record.position}, {record.placement} "
        "Only queries including our tag (the LLVM linker's) see it."
    )
    return OptdbRegistration(record.name, doc, record.rewriter, *record.tags, position=record.position)


OPTDB_REGISTRATIONS: tuple[OptdbRegistration, ...] = tuple(
    _optdb_registration(record) for record in in_running_order() if record.database == OPTDB
)
"""Our rewrites' entries in ``optdb`` (``llvm_backend.rewrites.registry``'s records of ``optdb``), by position."""


CHANGES: tuple[Change, ...] = (
    PowiSymbols(
        "powi_builtins",
        """numba's JIT resolves ``__powidf2``/``__powisf2`` (from libgcc), which LLVM calls for ``pow(x, (double) i)``
        under fast-math: without them a process compiling such a Composite aborts, under stock NUMBA as under
        ours. Every numba compile of the process sees them, stock NUMBA's too (which then computes there).""",
    ),
    *OPTDB_REGISTRATIONS,
    pytensor.REWRITE_CACHE_QUERY,
    pytensor.LLVM_LINKER,
    pytensor.LLVM_MODE,
    pytensor.COMPOSITE_FUNCIFY,
    pytensor.LLVM_FUNCTIONS,
    *nutpie.CHANGES,
)
"""What ``import llvm_backend`` changes, in the order `register` applies them."""


def register() -> None:
    """Apply every change of `CHANGES`, in order: "LLVM" (any case) a PyTensor mode, "llvm" a linker. Idempotent."""
    for change in CHANGES:
        change.apply()


def revert_all() -> None:
    """Revert ``NUMBA_IS_LLVM`` and every change of `CHANGES`, in reverse order: the process is as it was before
    ``import llvm_backend``, but for what the module docstring leaves out."""
    for change in (*CHANGES, pytensor.NUMBA_IS_LLVM)[::-1]:
        change.revert()
