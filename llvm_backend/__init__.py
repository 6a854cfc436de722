"""llvm_backend: an llvmlite-level kernel backend for PyTensor.

Importing this package registers the PyTensor mode "LLVM" (also reachable as "llvm")::

    import llvm_backend

    fn = pytensor.function([x], y, mode="LLVM")

Users of other modes ("NUMBA", "FAST_RUN", "CVM", ...) see no change from the import, but one: numba's JIT
can resolve the powi builtins (`llvm_backend.builtins`), so a graph on which stock NUMBA aborts the process
(``pow(x, cast(int))`` under fast-math) computes instead. Every process-wide change the import makes is one of
``llvm_backend.process.CHANGES``, each documented there and reversible (``llvm_backend.process.revert_all()``).
"""

from llvm_backend import lowerings  # noqa: F401  (registers our lowerings)
from llvm_backend.dispatch import LOWERINGS, llvm_funcify_and_cache_key, register_lowering
from llvm_backend.linker import LLVMLinker
from llvm_backend.mode import LLVM, MODE_NAME, llvm_rewrites
from llvm_backend.process import register

register()

__all__ = [
    "LLVM",
    "LOWERINGS",
    "MODE_NAME",
    "LLVMLinker",
    "llvm_funcify_and_cache_key",
    "llvm_rewrites",
    "register",
    "register_lowering",
]
