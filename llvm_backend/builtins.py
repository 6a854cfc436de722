"""Compiler builtins numba's JIT cannot resolve, provided from the C runtime.

Under fast-math, LLVM rewrites ``pow(x, (double) i)`` with ``i`` an integer of at most 32 bits into
``llvm.powi``, which it lowers to a call of compiler-rt's ``__powidf2`` (``__powisf2`` for float32). numba links
no compiler-rt, so the first such call aborts the process (``LLVM ERROR: Symbol not found: __powidf2``;
numba issues 6012 and 9554). PyTensor's numba backend meets it wherever a Composite raises a float to a cast
integer (``x ** pt.cast(k_int8, "float64")``): stock NUMBA aborts there too. `powi_symbols` finds both in
libgcc (which carries them on Linux); ``llvm_backend.process.CHANGES``' ``powi_builtins`` adds them to LLVM's
symbol table on import. Where no such library is found nothing changes.
"""

import ctypes
import ctypes.util

import llvmlite.binding as llvm

__all__ = ["POWI", "powi_symbols"]

POWI = ("__powidf2", "__powisf2")


def powi_symbols() -> dict[str, int]:
    """The address in the C runtime of each of `POWI`'s symbols LLVM cannot resolve, where it has one."""
    missing = [name for name in POWI if not llvm.address_of_symbol(name)]
    path = ctypes.util.find_library("gcc_s") if missing else None
    if path is None:
        return {}
    library = ctypes.CDLL(path)
    found = {}
    for name in missing:
        function = getattr(library, name, None)
        if function is not None:
            found[name] = ctypes.cast(function, ctypes.c_void_p).value
    return found
