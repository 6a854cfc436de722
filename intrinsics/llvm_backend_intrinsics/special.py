"""scipy's special functions called straight from the graph's module: ``scipy.special.cython_special`` routines of
double arguments and a double result (``psi``, ``betaln``...), as stock's scalar ops call them.

Stock numba calls such a routine through a function pointer it resolves in object mode on each process's first
call, a function typed and compiled per op in every fresh process. Here the routine's address is given to LLVM
under a name of ours (`special_function`), and the call is one ``call`` instruction: a graph function loaded from
numba's disk cache links against the routine of its own process, as long as the symbol was registered first,
which the lowering naming the routine does before the graph function is compiled or loaded.

Layering: the symbols (`double_routine`, checked against scipy's signatures) -> the ``@intrinsic`` `special_function`.

    special_function("psi")(x)  # scipy.special.psi(x) of a float64
"""

import ctypes
import re
from functools import cache

import llvmlite.binding as llvm
import scipy.special.cython_special
from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.extending import intrinsic

__all__ = ["SpecialRoutine", "double_routine", "special_function"]

_SIGNATURE = re.compile(r"double \((?P<arguments>(double, )*double)(?P<skip>, int __pyx_skip_dispatch)?\)")
"""A routine of double arguments and a double result, perhaps with Cython's ``__pyx_skip_dispatch`` flag last."""


class SpecialRoutine:
    """One ``cython_special`` routine: the ``symbol`` LLVM knows its address by, its number of double
    ``arguments``, and whether it takes Cython's ``skip_dispatch`` flag after them."""

    def __init__(self, symbol: str, arguments: int, skip_dispatch: bool):
        self.symbol, self.arguments, self.skip_dispatch = symbol, arguments, skip_dispatch


def _capsules(name: str) -> list:
    """``(capsule name, capsule)`` of each specialization scipy exports for routine ``name``."""
    capi = scipy.special.cython_special.__pyx_capi__
    fused = re.compile(rf"__pyx_fuse_\d+{re.escape(name)}")
    return [(key, capsule) for key, capsule in capi.items() if key == name or fused.fullmatch(key)]


@cache
def double_routine(name: str, arguments: int) -> SpecialRoutine | None:
    """The specialization of ``scipy.special.cython_special.<name>`` taking ``arguments`` doubles and returning a
    double, its address registered with LLVM; None if scipy has none."""
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    for key, capsule in _capsules(name):
        signature = get_name(capsule)
        match = _SIGNATURE.fullmatch(signature.decode())
        if match is None or match["arguments"].count("double") != arguments:
            continue
        symbol = f"llvm_backend_special_{key}"
        llvm.add_symbol(symbol, get_pointer(capsule, signature))
        return SpecialRoutine(symbol, arguments, match["skip"] is not None)
    return None


@cache
def special_function(name: str):
    """The intrinsic ``routine(*xs)``: ``scipy.special.<name>(*xs)`` of float64 arguments, a float64, by a direct
    call of its ``cython_special`` routine (`double_routine`; a TypingError if there is none for the arguments)."""

    @intrinsic
    def routine(typingctx, *xs):
        if not all(x == types.float64 for x in xs):
            raise errors.TypingError(f"special_function({name!r}): the arguments must be float64, got {xs}")
        found = double_routine(name, len(xs))
        if found is None:
            raise errors.TypingError(f"scipy.special.cython_special has no {name} of {len(xs)} doubles")

        def codegen(context, builder, signature, args):
            double = ir.DoubleType()
            parameters = [double] * found.arguments + ([ir.IntType(32)] if found.skip_dispatch else [])
            function_type = ir.FunctionType(double, parameters)
            function = cgutils.get_or_insert_function(builder.module, function_type, found.symbol)
            values = [builder.extract_value(args[0], k) for k in range(len(xs))]
            if found.skip_dispatch:
                values.append(ir.IntType(32)(1))  # as stock passes it: no dispatch back to Python
            return builder.call(function, values, name=name)

        return types.float64(types.StarArgTuple(xs)), codegen

    return routine
