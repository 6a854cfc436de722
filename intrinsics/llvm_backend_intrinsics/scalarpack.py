"""Scalar packs: the native scalars a compiled function takes, read from their storage cells as one argument.

A function called from Python on k scalars costs, per scalar, the caller's read and conversion of its value
(``float(cell[0])`` on a 0-d array) and numba's dispatch on and unboxing of one more argument: over dozens of scalar
parameters, that can exceed what a small model's arithmetic takes. A `ScalarPack` is one argument holding the
storage cells themselves (anything ``cell[0]`` reads, such as PyTensor's one-item lists): its unboxing is one loop
reading each cell's value into a table of the pack's dtype in the wrapper's frame, and the compiled function
receives a pointer to that table and reads value ``i`` with `llvm_backend_intrinsics.argpack.table_item`. The caller
passes the same pack object at every call.

A value that is a 0-d ndarray of exactly the pack's dtype is read from its data (when
`llvm_backend_intrinsics.abi.ARRAYS_READ` says numpy's array struct is the one read). Any other value goes
through ``PyNumber_Float`` or ``PyNumber_Long``: what ``float(value)`` or ``int(value)`` makes of it, raising
what they raise (a TypeError for None, a ValueError for ``"x"``, an OverflowError for an int64 pack's ``2**63``).

The wrapper code a pack of float64 unboxes to is, as Python::

    cells = pack.cells
    if len(cells) != count: raise TypeError
    for i in range(count):
        v = cells[i][0]
        if type(v) is np.ndarray and v.ndim == 0 and v.dtype is pack.dtype:
            table[i] = v.data as a float64
        else:
            table[i] = float(v)  # an exception stops the loop
    compiled_function(..., &table, ...)

Compiled code hands its own scalars to such a function with `scalar_pack_of` (a table in its frame), and
reads a pack's value with `scalar_item`.
"""

import array

import numpy as np
from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.core.datamodel import models
from numba.extending import NativeValue, intrinsic, register_model, typeof_impl, unbox
from numba.np import numpy_support

from llvm_backend_intrinsics.abi import (
    ARRAY_DATA_OFFSET,
    ARRAY_DESCR_OFFSET,
    ARRAY_ND_OFFSET,
    ARRAYS_READ,
    LIST_ITEMS_OFFSET,
    LISTS_READ,
    OB_SIZE_OFFSET,
    call_c_function,
    has_type,
    load_field,
)
from llvm_backend_intrinsics.argpack import table_item
from llvm_backend_intrinsics.naming import alloca_once_value, named, unpack_named

__all__ = ["SCALAR_DTYPES", "ScalarPack", "ScalarPackType", "scalar_item", "scalar_pack_of"]

SCALAR_DTYPES = (types.float64, types.int64)
"""The scalar types a pack holds: those numba unboxes a Python float or int into exactly."""


class ScalarPackType(types.Type):
    """``count`` scalars of ``dtype`` (one of `SCALAR_DTYPES`); the value is a pointer to a table of them."""

    def __init__(self, dtype: types.Type, count: int):
        if dtype not in SCALAR_DTYPES or count < 1:
            raise TypeError(f"a scalar pack holds one or more of one of {SCALAR_DTYPES}, not {count} of {dtype}")
        self.dtype = dtype
        self.count = count
        super().__init__(name=f"ScalarPack({dtype}, {count})")

    @property
    def item_type(self) -> types.Type:
        """The type of each value read from the pack's table."""
        return self.dtype

    @classmethod
    def of(cls, dtype, count: int) -> "ScalarPackType":
        """The pack type of ``count`` scalars of numpy ``dtype``."""
        return cls(numpy_support.from_dtype(np.dtype(dtype)), count)


@register_model(ScalarPackType)
class ScalarPackModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, dmm.lookup(fe_type.dtype).get_value_type().as_pointer())


class ScalarPack(array.array):
    """What a compiled function receives for a `ScalarPackType` parameter: the cells its values are read from
    (``cells``, a list of the cells given), read and converted if need be as the pack is unboxed.

    numba's dispatcher types an argument in C from a fingerprint of it, which it computes for numbers,
    tuples, arrays and buffers, and looks up in a cache; an object it cannot fingerprint costs it a raised
    and cleared NotImplementedError, then the read of ``_numba_type_``, at every call. A pack is
    therefore an empty ``array.array`` (a buffer), of a subclass of its own per pack type, as numba's
    fingerprint of a buffer holds its Python type: a pack is typed from the cache, and ``_numba_type_``
    is read once per pack type. The unboxing reads one attribute, ``parts``: ``np.ndarray``, the dtype,
    ``list`` and the cells.
    """

    __slots__ = ("_numba_type_", "parts")
    _subclasses: dict = {}
    """Pack type -> the subclass of its packs."""

    def __new__(cls, numba_type: ScalarPackType, cells: list):
        subclass = ScalarPack._subclasses.get(numba_type)
        if subclass is None:
            name = f"ScalarPack_{numba_type.dtype}_{numba_type.count}"
            subclass = ScalarPack._subclasses[numba_type] = type(name, (ScalarPack,), {"__slots__": ()})
        pack = array.array.__new__(subclass, "b")
        pack._numba_type_ = numba_type
        pack.parts = (np.ndarray, numpy_support.as_dtype(numba_type.dtype), list, list(cells))
        return pack

    @property
    def cells(self) -> list:
        return self.parts[3]

    @classmethod
    def of_values(cls, numba_type: ScalarPackType, values) -> "ScalarPack":
        """A pack of fixed ``values``, each in a cell of its own."""
        return cls(numba_type, [[value] for value in values])


@typeof_impl.register(ScalarPack)
def _typeof_scalar_pack(value, c):
    return value._numba_type_


def _is_exact_0d(builder, item, ndarray, dtype):
    """An i1: is ``item`` an ndarray (not a subclass) of no dimension whose dtype object is ``dtype``?"""
    i8p = ir.IntType(8).as_pointer()
    ok = alloca_once_value(builder, cgutils.false_bit, "ok")
    with builder.if_then(has_type(builder, item, ndarray, "item.exact_type"), likely=True):
        nd = load_field(builder, item, ARRAY_ND_OFFSET, ir.IntType(32), "item.nd")
        builder.store(builder.icmp_signed("==", nd, ir.Constant(ir.IntType(32), 0), name="item.is_0d"), ok)
    with builder.if_then(builder.load(ok, name="item.is_0d_ndarray"), likely=True):
        descr = load_field(builder, item, ARRAY_DESCR_OFFSET, i8p, "item.descr")
        dtype_bytes = builder.bitcast(dtype, i8p, name="dtype.bytes")
        builder.store(builder.icmp_unsigned("==", descr, dtype_bytes, name="item.same_dtype"), ok)
    return builder.load(ok, name="item.exact_0d")


def _convert(builder, pyapi, dtype, item, slot):
    """Store ``float(item)`` (or ``int(item)``, for int64) at ``slot``; an i1, whether that raised (its exception is
    left set, unchanged)."""
    if dtype == types.float64:
        number, read = named(pyapi.number_float(item), "number"), pyapi.float_as_double
    else:
        number, read = named(pyapi.number_long(item), "number"), pyapi.long_as_longlong
    raised = alloca_once_value(builder, cgutils.true_bit, "raised")
    with builder.if_then(named(cgutils.is_not_null(builder, number), "converted"), likely=True):
        builder.store(named(read(number), "value"), slot)
        pyapi.decref(number)
        error = named(cgutils.is_not_null(builder, named(pyapi.err_occurred(), "error")), "read_raised")
        builder.store(error, raised)
    return builder.load(raised, name="raised.load")


def _list_size(builder, pyapi, lst):
    """``len(lst)`` of a list, named ``<lst's name>.size``: its ``ob_size`` where `LISTS_READ`, else
    ``PyList_Size``."""
    if LISTS_READ:
        return load_field(builder, lst, OB_SIZE_OFFSET, pyapi.py_ssize_t, f"{lst.name}.size")
    return named(pyapi.list_size(lst), f"{lst.name}.size")


def _list_item(builder, pyapi, lst, index, name: str):
    """Item ``index`` (in range) of a list, borrowed, named ``name``: a load from its ``ob_item`` where
    `LISTS_READ`, else ``PyList_GetItem``."""
    if LISTS_READ:
        items = load_field(builder, lst, LIST_ITEMS_OFFSET, pyapi.pyobj.as_pointer(), f"{lst.name}.items")
        return builder.load(builder.gep(items, [index], name=f"{name}.ptr"), name=name)
    return named(pyapi.list_getitem(lst, index), name)


@unbox(ScalarPackType)
def unbox_scalar_pack(typ, obj, c):
    builder, pyapi, context = c.builder, c.pyapi, c.context
    intp = context.get_value_type(types.intp)
    value_type = context.get_value_type(typ.dtype)
    count = ir.Constant(intp, typ.count)
    table = cgutils.alloca_once(builder, value_type, size=typ.count, name="scalars")
    failed = alloca_once_value(builder, cgutils.true_bit, "failed")
    item_slot = cgutils.alloca_once(builder, pyapi.pyobj, name="item.slot")
    owned = cgutils.alloca_once(builder, cgutils.bool_t, name="owned")
    parts = named(pyapi.object_getattr_string(obj, "parts"), "parts")
    with builder.if_then(named(cgutils.is_not_null(builder, parts), "got_parts"), likely=True):
        labels = ("ndarray", "dtype", "list_type", "cells")
        ndarray, dtype, list_type, cells = (named(pyapi.tuple_getitem(parts, k), labels[k]) for k in range(4))
        got_all = named(cgutils.is_not_null(builder, cells), "got_cells")
        for part, label in zip((ndarray, dtype, list_type), labels[:3], strict=True):
            got_all = builder.and_(got_all, named(cgutils.is_not_null(builder, part), f"got_{label}"), name="got_all")
        with builder.if_then(got_all, likely=True):
            is_list = has_type(builder, cells, list_type, "cells.is_list")
            size = builder.select(is_list, _list_size(builder, pyapi, cells), intp(-1), name="size")
            right = builder.icmp_signed("==", size, count, name="right_size")
            with builder.if_else(right, likely=True) as (right_size, wrong_size):
                with wrong_size:
                    pyapi.err_format("PyExc_TypeError", f"a scalar pack of {typ.count} cells was given %R", cells)
                with right_size:
                    builder.store(cgutils.false_bit, failed)
                    with cgutils.for_range(builder, count) as loop:
                        frame = (table, failed, item_slot, owned)
                        _read_cell(builder, pyapi, typ, (ndarray, dtype, list_type, cells), loop, frame)
    pyapi.decref(parts)
    return NativeValue(table, is_error=builder.load(failed, name="is_error"))


def _read_cell(builder, pyapi, typ, parts, loop, frame):
    """Store ``cells[k][0]`` (``k`` the loop's index) at ``table[k]``, or set ``failed`` and leave the loop
    (``parts`` are the pack's, ``frame`` the wrapper's allocas). A conversion may run Python code that changes
    ``cells``: its size is read again for each cell."""
    ndarray, dtype, list_type, cells = parts
    table, failed, item_slot, owned = frame
    k = loop.index
    changed = builder.icmp_signed(">=", k, _list_size(builder, pyapi, cells), name="cells.changed")
    with builder.if_then(changed, likely=False):
        pyapi.err_set_string("PyExc_TypeError", "the scalar pack's cells changed while it was read")
        builder.store(cgutils.true_bit, failed)
        loop.do_break()
    cell = _list_item(builder, pyapi, cells, k, "cell")
    direct = alloca_once_value(builder, cgutils.false_bit, "direct")
    if LISTS_READ:
        with builder.if_then(has_type(builder, cell, list_type, "cell.is_list"), likely=True):
            one = ir.Constant(pyapi.py_ssize_t, 1)
            builder.store(builder.icmp_signed(">=", _list_size(builder, pyapi, cell), one, name="cell.filled"), direct)
    with builder.if_else(builder.load(direct, name="direct.load"), likely=True) as (borrowed, fetched):
        with borrowed:
            builder.store(
                _list_item(builder, pyapi, cell, ir.Constant(pyapi.py_ssize_t, 0), "item.borrowed"), item_slot
            )
            builder.store(cgutils.false_bit, owned)
        with fetched:
            index = ir.Constant(pyapi.py_ssize_t, 0)
            fetched_item = call_c_function(builder, pyapi, "PySequence_GetItem", pyapi.pyobj, [cell, index], "item.new")
            builder.store(fetched_item, item_slot)
            builder.store(cgutils.true_bit, owned)
    item = builder.load(item_slot, name="item")
    with builder.if_then(named(cgutils.is_null(builder, item), "no_item"), likely=False):
        builder.store(cgutils.true_bit, failed)
        loop.do_break()
    slot = builder.gep(table, [k], name="value.ptr")
    fast = _is_exact_0d(builder, item, ndarray, dtype) if ARRAYS_READ else cgutils.false_bit
    with builder.if_else(fast, likely=True) as (read, convert):
        with read:
            data = load_field(builder, item, ARRAY_DATA_OFFSET, pyapi.voidptr, "item.data")
            data = builder.bitcast(data, slot.type, name="item.value.ptr")
            builder.store(builder.load(data, align=1, name="item.value"), slot)
            with builder.if_then(builder.load(owned, name="owned.load"), likely=False):
                pyapi.decref(item)
        with convert:
            # the conversion may run Python code, which could drop a borrowed item
            with builder.if_then(builder.not_(builder.load(owned, name="owned.load"), name="borrowed")):
                pyapi.incref(item)
            builder.store(_convert(builder, pyapi, typ.dtype, item, slot), failed)
            pyapi.decref(item)
    with builder.if_then(builder.load(failed, name="failed.load"), likely=False):
        loop.do_break()


@intrinsic
def scalar_pack_of(typingctx, dtype, values):
    """The tuple ``values`` as a `ScalarPackType` of ``dtype`` (a literal string, such as ``"float64"``), each
    value cast to it: a table in the caller's frame, which the pack must not outlive.

    For ``scalar_pack_of("float64", (a, b))`` the emitted IR is::

        %scalars = alloca double, i64 2   ; in the entry block
        store double %a, double* %scalars
        store double %b, double* <%scalars + 1>
        ; the value is %scalars
    """
    if not isinstance(dtype, types.StringLiteral):
        raise errors.TypingError(f"scalar_pack_of takes the dtype as a literal string, got {dtype}")
    pack_dtype = numpy_support.from_dtype(np.dtype(dtype.literal_value))
    items = tuple(values) if isinstance(values, types.BaseTuple) else ()
    if not items or pack_dtype not in SCALAR_DTYPES:
        raise errors.TypingError(f"scalar_pack_of takes a non-empty tuple and one of {SCALAR_DTYPES}, got {values}")
    for item in items:
        if not isinstance(item, types.Number) or typingctx.can_convert(item, pack_dtype) is None:
            raise errors.TypingError(f"scalar_pack_of: {item} is not a scalar convertible to {pack_dtype}")
    pack = ScalarPackType(pack_dtype, len(items))

    def codegen(context, builder, signature, args):
        table = cgutils.alloca_once(builder, context.get_value_type(pack_dtype), size=len(items), name="scalars")
        for k, (value, item) in enumerate(zip(unpack_named(builder, args[1], len(items), "value"), items, strict=True)):
            cast = named(context.cast(builder, value, item, pack_dtype), f"value{k}.cast")
            builder.store(cast, builder.gep(table, [ir.Constant(ir.IntType(64), k)], name=f"scalars.item{k}.ptr"))
        return table

    return pack(dtype, values), codegen


@intrinsic
def scalar_item(typingctx, pack, index):
    """Value ``index`` of ``pack``, a literal below the pack's count: a load from its table."""
    if not isinstance(pack, ScalarPackType) or not isinstance(index, types.IntegerLiteral):
        return None
    if not 0 <= index.literal_value < pack.count:
        raise IndexError(f"item {index.literal_value} of {pack}")

    def codegen(context, builder, signature, args):
        return table_item(builder, args[0], index.literal_value)

    return pack.dtype(pack, index), codegen
