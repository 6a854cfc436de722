"""The PyTensor mode "LLVM": our linker plus our rewrites, registered on import."""

from pytensor.compile.mode import (
    Mode,
    optdb,
    predefined_linkers,
    predefined_modes,
)
from pytensor.graph.rewriting.basic import in2out
from pytensor.graph.rewriting.db import RewriteDatabaseQuery, SequenceDB

from llvm_backend import rewrite_cache
from llvm_backend.function import LLVMFunctionMaker
from llvm_backend.linker import REWRITE_TAG, LLVMLinker
from llvm_backend.rewrites.hoist import hoist_invariants
from llvm_backend.rewrites.scalar_inputs import ExposeScalarInputs
from llvm_backend.rewrites.supervisor import use_indexed_supervisor

__all__ = ["LINKER_NAME", "LLVM", "MODE_NAME", "LLVMMode", "llvm_rewrites", "register"]

MODE_NAME = "LLVM"
LINKER_NAME = "llvm"
REWRITES_NAME = "llvm_backend_rewrites"
SUPERVISOR_NAME = "llvm_backend_indexed_supervisor"
EXPOSE_SCALARS_NAME = "llvm_backend_expose_scalar_inputs"

llvm_rewrites = SequenceDB()
"""Rewrites run only in the LLVM mode (anything using `LLVMLinker`)."""
llvm_rewrites.register(
    "hoist_invariants", in2out(hoist_invariants, name="hoist_invariants"), "fast_run", REWRITE_TAG, position=0.5
)


class LLVMMode(Mode):
    """A `Mode` whose functions, when its linker is ours, are `LLVMFunction`\\ s (safe to call from several
    threads). ``including``, ``excluding`` and ``clone`` keep the class, so PyMC's variants of "LLVM" do too;
    a plain ``Mode(linker="llvm")`` makes PyTensor's own `Function`."""

    @property
    def function_maker(self):
        return LLVMFunctionMaker if isinstance(self.linker, LLVMLinker) else super().function_maker


LLVM = LLVMMode(
    linker=LLVMLinker(),
    optimizer=RewriteDatabaseQuery(include=["fast_run", "numba", REWRITE_TAG]),
)


def register() -> None:
    """Make "LLVM" (any case) a PyTensor mode and "llvm" a linker. Idempotent."""
    if REWRITES_NAME not in optdb:
        # After elemwise fusion (49), so our rewrites see fused nodes, and before the destroy
        # handler (49.5) and the inplace rewrites, so what we produce can still be made inplace.
        optdb.register(REWRITES_NAME, llvm_rewrites, REWRITE_TAG, position=49.4)
    if EXPOSE_SCALARS_NAME not in optdb:
        # Just before PyTensor's numba fusion and scalarization (``fuse_indexed_into_elemwise``, 100).
        optdb.register(EXPOSE_SCALARS_NAME, ExposeScalarInputs(), REWRITE_TAG, position=99.9)
    if SUPERVISOR_NAME not in optdb:
        # Before every rewrite that validates (the first, merge1, is at 0).
        optdb.register(SUPERVISOR_NAME, use_indexed_supervisor, REWRITE_TAG, position=-0.5)
    # Every query of optdb that includes our tag (whatever Mode carries our linker) goes through the rewrite
    # cache; every other query gets PyTensor's own SequentialGraphRewriter.
    optdb.seq_rewriter_type = rewrite_cache.cached_sequence
    predefined_linkers.setdefault(LINKER_NAME, LLVM.linker)
    predefined_modes.setdefault(MODE_NAME, LLVM)
