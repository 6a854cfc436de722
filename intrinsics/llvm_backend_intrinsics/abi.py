"""Every numba and CPython ABI detail the intrinsics rely on, named and documented once.

Three kinds:

- **numba's calling convention** (``CPUCallConv``): a compiled function returns an ``i32`` status and takes a
  return slot, a pointer to an exception-info pointer, then its arguments flattened by numba's data model
  (`function_type`). `call_numba` calls one and, on an error status, propagates the status to the caller's
  own caller; `raise_status` propagates it marked as a raise (`RAISE_MARK`), as numba marks its own.
- **Struct offsets**: of CPython's object header and list (``PyObject``, ``PyListObject``), of numpy's array
  struct (``PyArrayObject_fields``), all for 64-bit CPython, and the field of numba's array struct the
  reference counts go through (`ARRAY_MEMINFO_FIELD`). Compiled code loads a field with `load_field`.
- **Import-time probes**: whether the offsets read a live object of this interpreter as they claim
  (`ARRAYS_READ`, `LISTS_READ`). Code reading a struct directly does so only where its probe holds, and
  goes through the C API otherwise.

``tests/llvm_backend_intrinsics/test_abi.py`` checks each offset against ctypes' layout of the C struct and against the
types' ``__basicsize__``, and numba's conventions against numba.
"""

import ctypes

import numpy as np
from llvmlite import ir
from numba.core import cgutils
from numba.core.callconv import excinfo_t

from llvm_backend_intrinsics.naming import named, named_status, output_name

__all__ = [
    "ARRAYS_READ",
    "ARRAY_DATA_OFFSET",
    "ARRAY_DESCR_OFFSET",
    "ARRAY_MEMINFO_FIELD",
    "ARRAY_ND_OFFSET",
    "LISTS_READ",
    "LIST_ITEMS_OFFSET",
    "OB_SIZE_OFFSET",
    "OB_TYPE_OFFSET",
    "PY_EQ",
    "RAISE_MARK",
    "call_c_function",
    "call_numba",
    "excinfo_slot",
    "function_type",
    "has_type",
    "load_field",
    "raise_status",
    "return_slot",
    "return_slot_type",
]

# ---------------------------------------------------------------- CPython and numpy structs

OB_TYPE_OFFSET = 8
"""Byte offset of ``ob_type`` (a ``PyTypeObject *``) in every ``PyObject``, after ``ob_refcnt``."""

OB_SIZE_OFFSET = 16
"""Byte offset of ``ob_size`` (a ``Py_ssize_t``, a list's length) in a ``PyVarObject`` such as a list."""

LIST_ITEMS_OFFSET = 24
"""Byte offset of ``ob_item`` (a ``PyObject **``, the list's items) in a ``PyListObject``."""

ARRAY_DATA_OFFSET = 16
"""Byte offset of ``data`` (a ``char *``, the first element) in numpy's ``PyArrayObject_fields``."""

ARRAY_ND_OFFSET = 24
"""Byte offset of ``nd`` (an ``int``, the array's ndim) in ``PyArrayObject_fields``."""

ARRAY_DESCR_OFFSET = 56
"""Byte offset of ``descr`` (a ``PyArray_Descr *``, the array's dtype object) in ``PyArrayObject_fields``."""

PY_EQ = 2
"""CPython's ``Py_EQ``: the operation ``PyObject_RichCompareBool`` tests for ``==``."""

# ---------------------------------------------------------------- numba's array struct

ARRAY_MEMINFO_FIELD = 0
"""Position of ``meminfo`` (the ``NRT_MemInfo *`` NRT counts references on) in numba's array struct, of every
dtype, ndim and layout."""

# ---------------------------------------------------------------- probes


def _arrays_read() -> bool:
    """Do the ``ob_type`` and array offsets above read a live array's type, data pointer, ndim and dtype?"""
    a = np.empty((2, 3, 4), dtype=np.int16)[:, ::2]
    read = ctypes.c_void_p.from_address
    return (
        ctypes.sizeof(ctypes.c_void_p) == 8
        and read(id(a) + OB_TYPE_OFFSET).value == id(np.ndarray)
        and read(id(a) + ARRAY_DATA_OFFSET).value == a.ctypes.data
        and ctypes.c_int.from_address(id(a) + ARRAY_ND_OFFSET).value == a.ndim
        and read(id(a) + ARRAY_DESCR_OFFSET).value == id(a.dtype)
    )


def _lists_read() -> bool:
    """Do the list offsets above read a live list's size and items?"""
    first, second = object(), object()
    lst = [first, second]
    items = ctypes.c_void_p.from_address(id(lst) + LIST_ITEMS_OFFSET).value
    return (
        ctypes.sizeof(ctypes.c_void_p) == 8
        and ctypes.c_ssize_t.from_address(id(lst) + OB_SIZE_OFFSET).value == 2
        and ctypes.c_void_p.from_address(items).value == id(first)
        and ctypes.c_void_p.from_address(items + 8).value == id(second)
    )


ARRAYS_READ = _arrays_read()
"""Whether this interpreter's ndarray layout is the one the array offsets describe; if not, no array is packed
(`llvm_backend_intrinsics.argpack`) and scalar packs read every value through the C API
(`llvm_backend_intrinsics.scalarpack`)."""

LISTS_READ = _lists_read()
"""Whether this interpreter's list layout is the one the list offsets describe; if not, scalar packs read their
cells through ``PyList_Size`` and ``PyList_GetItem``."""

# ---------------------------------------------------------------- struct reads and C calls


def load_field(builder, obj, offset: int, ty: ir.Type, name: str = "field") -> ir.Value:
    """The field of LLVM type ``ty`` at byte ``offset`` of the struct ``obj`` points to, named ``name`` (its address
    ``<name>.ptr``)."""
    raw = builder.bitcast(obj, ir.IntType(8).as_pointer(), name=f"{name}.base")
    at = builder.gep(raw, [ir.Constant(ir.IntType(64), offset)], name=f"{name}.at")
    return builder.load(builder.bitcast(at, ty.as_pointer(), name=f"{name}.ptr"), name=name)


def has_type(builder, obj, type_object, name: str = "exact_type") -> ir.Value:
    """An i1 named ``name``: is ``obj``'s ``ob_type`` exactly ``type_object`` (not a subclass)?"""
    i8p = ir.IntType(8).as_pointer()
    ob_type = load_field(builder, obj, OB_TYPE_OFFSET, i8p, "ob_type")
    return builder.icmp_unsigned("==", ob_type, builder.bitcast(type_object, i8p, name="type_object"), name=name)


def call_c_function(builder, pyapi, name: str, restype: ir.Type, args, result: str | None = None) -> ir.Value:
    """``name(*args)`` of the C API, declared as returning ``restype`` and taking the types of ``args``; its value
    is named ``result`` (by default ``name``)."""
    fn = pyapi._get_function(ir.FunctionType(restype, [a.type for a in args]), name=name)
    return builder.call(fn, args, name=name if result is None else result)


# ---------------------------------------------------------------- numba's calling convention

RAISE_MARK = "numba_exception_output"
"""The metadata numba puts on the store of a raised exception's info: its reference-count pruning takes a path
through such a store as one that raises, where a missing decref is allowed."""


def function_type(context, restype, argtypes) -> ir.FunctionType:
    """The LLVM type of a function of numba's calling convention returning ``restype`` and taking ``argtypes``:
    ``i32 (return slot, exception-info pointer, flattened arguments...)``."""
    return context.call_conv.get_function_type(restype, argtypes)


def return_slot_type(context, restype) -> ir.Type:
    """The LLVM type of the slot a function of numba's convention returns a ``restype`` value in."""
    return context.call_conv.get_return_type(restype).pointee


def return_slot(context, builder, restype) -> ir.Value:
    """An alloca (in the entry block) for the value a function of numba's convention returns as ``restype``."""
    return cgutils.alloca_once(builder, return_slot_type(context, restype), name="returned")


def excinfo_slot(builder) -> ir.Value:
    """An alloca (in the entry block) for the exception-info pointer a function of numba's convention sets."""
    return cgutils.alloca_once(builder, ir.PointerType(excinfo_t), name="excinfo")


def call_numba(context, builder, callee, fndesc, arguments, returned, excinfo, marked: bool = True):
    """Call ``callee`` (a function, or a pointer to one, of numba's convention and of ``fndesc``'s types) on
    ``arguments``, with the slots ``returned`` (`return_slot`) and ``excinfo`` (`excinfo_slot`): ``(status,
    value)``, the value of ``fndesc.restype`` read from the slot once the status is not an error. An error
    status is propagated to the caller's caller, marked a raise (`raise_status`) or, with ``marked=False``,
    unmarked as numba's ``return_status_propagate`` does. The call's values are named after the callee
    (``add.code``, ``add.is_error``), the value after the call's output
    (`llvm_backend_intrinsics.naming.output_name`)."""
    call_conv = context.call_conv
    label = _label(fndesc)
    flat = context.get_arg_packer(fndesc.argtypes).as_arguments(builder, arguments)
    code = builder.call(callee, [returned, excinfo, *flat], name=f"{label}.code")
    loaded = builder.load(excinfo, name=f"{label}.excinfo")
    status = named_status(call_conv._get_return_status(builder, code, loaded), label)
    with cgutils.if_unlikely(builder, status.is_error):
        if marked:
            raise_status(context, builder, status)
        else:
            call_conv.return_status_propagate(builder, status)
    value = context.get_returned_value(builder, fndesc.restype, builder.load(returned))
    return status, named(value, output_name(f"{label}.value"))


def _label(fndesc) -> str:
    """What the values of a call of ``fndesc``'s function are named after: the function's own name (the last part
    of its qualified name), or ``call``."""
    return str(getattr(fndesc, "qualname", "call")).rsplit(".", 1)[-1] or "call"


def raise_status(context, builder, status):
    """numba's ``return_status_propagate``, its store of the exception info marked as numba marks a raise
    (`RAISE_MARK`)."""
    call_conv = context.call_conv
    try_status = call_conv.check_try_status(builder)
    in_try = named(try_status.in_try, "in_try")
    if isinstance(in_try, ir.Instruction):
        named(in_try.operands[0], "try_depth")
    named(try_status.excinfo, "excinfo.current")
    store = builder.store(status.excinfoptr, call_conv._get_excinfo_argument(builder.function))
    store.set_metadata(RAISE_MARK, builder.module.add_metadata([ir.IntType(1)(1)]))
    with builder.if_then(builder.not_(in_try, name="not_in_try")):
        builder.ret(status.code)
