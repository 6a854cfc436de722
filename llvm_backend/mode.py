"""The PyTensor mode "LLVM", the names it and its linker are registered under on import (``llvm_backend.process``
registers them), and the names of its rewrites' entries in ``optdb``, each defined beside what it names."""

from pytensor.compile.mode import Mode
from pytensor.graph.rewriting.db import RewriteDatabaseQuery

from llvm_backend.linker import LLVMLinker
from llvm_backend.rewrites.registry import (
    PRE_FUSION_NAME,
    REWRITE_TAG,
    REWRITES_NAME,
    llvm_rewrites,
    llvm_rewrites_before_fusion,
)
from llvm_backend.rewrites.scalar_inputs import EXPOSE_SCALARS_NAME
from llvm_backend.rewrites.supervisor import SUPERVISOR_NAME

__all__ = [
    "EXPOSE_SCALARS_NAME",
    "LINKER_NAME",
    "LLVM",
    "MODE_NAME",
    "PRE_FUSION_NAME",
    "REWRITES_NAME",
    "SUPERVISOR_NAME",
    "llvm_rewrites",
    "llvm_rewrites_before_fusion",
]

MODE_NAME = "LLVM"
LINKER_NAME = "llvm"

LLVM = Mode(
    linker=LLVMLinker(),
    optimizer=RewriteDatabaseQuery(include=["fast_run", "numba", REWRITE_TAG]),
)
"""`LLVMLinker` with PyTensor's ``fast_run`` and ``numba`` rewrites and ours, those of ``optdb`` under our tag
(`REWRITE_TAG`, which the linker requires too): every record of ``llvm_backend.rewrites.registry``, which
``llvm-backend rewrites`` lists in the order they run."""
