"""Every process-wide change `llvm_backend` makes to PyTensor, PyMC, nutpie, numba or Python, in one list.

`CHANGES` is what ``import llvm_backend`` does, applied in that order by `register` (which the import calls). Each
is a `Change` (``llvm_backend.changes``) whose docstring says what it changes, why, and who sees it; those touching
PyTensor's internals live in its adapter (``llvm_backend.adapters.pytensor``), PyMC's and nutpie's in the
``llvm_backend.nutpie`` subpackage (its ``CHANGES``), each with the seam checked before it is made. ``apply()``
makes a change and ``revert()`` puts back exactly what was there before; both are idempotent, so importing twice
or calling `register` again changes nothing more, and `revert_all` undoes the import's changes in the reverse
order. One more is made only while code asks for it:
``llvm_backend.nutpie.numba_is_llvm()`` holds ``adapters.pytensor.NUMBA_IS_LLVM``.

One more is made only while the LLVM mode compiles, and put back when the last compile ends, so it is no
`Change`: Python's garbage collection thresholds (``llvm_backend.collector.paced_collections``).

Left out, because nothing else sees them and numba cannot take them back: the numba types, data models and
``typeof`` entries of ``intrinsics/``, keyed by classes of our own (``ArrayPack``, ``ScalarPack``, ...), and the
compiled code numba keeps. Everything else the package does is confined to its own objects and to the modes
using its linker.
"""

import llvmlite.binding as llvm

from llvm_backend import nutpie
from llvm_backend.adapters import pytensor
from llvm_backend.builtins import powi_symbols
from llvm_backend.changes import Change, OptdbRegistration
from llvm_backend.linker import REWRITE_TAG
from llvm_backend.mode import (
    EXPOSE_SCALARS_NAME,
    PRE_FUSION_NAME,
    REWRITES_NAME,
    SUPERVISOR_NAME,
    llvm_rewrites,
    llvm_rewrites_before_fusion,
)
from llvm_backend.rewrites.scalar_inputs import ExposeScalarInputs
from llvm_backend.rewrites.supervisor import use_indexed_supervisor

__all__ = ["CHANGES", "PowiSymbols", "register", "revert_all"]


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


CHANGES: tuple[Change, ...] = (
    PowiSymbols(
        "powi_builtins",
        """numba's JIT resolves ``__powidf2``/``__powisf2`` (from libgcc), which LLVM calls for ``pow(x, (double) i)``
        under fast-math: without them a process compiling such a Composite aborts, under stock NUMBA as under
        ours. Every numba compile of the process sees them, stock NUMBA's too (which then computes there).""",
    ),
    OptdbRegistration(
        SUPERVISOR_NAME,
        """`use_indexed_supervisor` in ``optdb`` under our tag at -0.5, before every rewrite that validates: the
        LLVM mode's graphs get an `IndexedSupervisor`. Only queries including our tag (the LLVM linker's) see it.""",
        use_indexed_supervisor,
        REWRITE_TAG,
        position=-0.5,
    ),
    OptdbRegistration(
        PRE_FUSION_NAME,
        """`llvm_rewrites_before_fusion` (products of constant data matrices by vectors as suits their width, sums
        gated by one condition as its switch of the sum, elementwise ops and joins of made vectors item by item) in
        ``optdb`` under our tag at 48.5: after ``add_mul_fusion`` (48) has flattened a linear predictor's sum into
        one ``Add``, before elemwise fusion (49), which folds what they leave into its loops. Only queries including
        our tag see it.""",
        llvm_rewrites_before_fusion,
        REWRITE_TAG,
        position=48.5,
    ),
    OptdbRegistration(
        REWRITES_NAME,
        """`llvm_rewrites` (loop-invariant hoisting) in ``optdb`` under our tag at 49.4: after elemwise fusion (49),
        so they see fused nodes, before the destroy handler (49.5) and the inplace rewrites, so what they produce
        can still be made inplace. Only queries including our tag see it.""",
        llvm_rewrites,
        REWRITE_TAG,
        position=49.4,
    ),
    OptdbRegistration(
        EXPOSE_SCALARS_NAME,
        """`ExposeScalarInputs` in ``optdb`` under our tag at 99.9, just before PyTensor's numba fusion and
        scalarization (100): 0-d inputs reach those as scalars. Only queries including our tag see it.""",
        ExposeScalarInputs(),
        REWRITE_TAG,
        position=99.9,
    ),
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
