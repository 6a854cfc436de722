"""Array packs: many arrays of one dtype and ndim passed to a compiled function as one argument.

numba's CPython wrapper unboxes each array argument with its own unrolled code and passes each array to
the compiled function as seven or more scalars, so a function of 240 vectors gets a wrapper of thousands
of instructions around one call with 1,680 operands, whose basic block LLVM's instruction selection and
post-RA scheduler take superlinear time over. An
`ArrayPack` is one argument: its unboxing is one loop over the arrays, filling a stack table of array
structs in the wrapper's frame, and the compiled function receives a pointer to that table and reads
array ``i`` with `table_item` (a load; the table holds the reference) or, in Python code, `pack_item` (a
load and an incref).

Compiled code also builds tables of its own values in its frame (`table_of`), to hand many arrays to
another compiled function as one pointer instead of an aggregate of hundreds of fields, which LLVM's
InstCombine and numba's RefPrune take superlinear time over. Many results go back to Python the same way:
in a Python list the function builds itself (`box_into_list`, in one loop, with no heap allocation of
numba's), where numba boxes a tuple of arrays with code per item.

Items are checked in the loop before they are unboxed: each must be an ndarray of the pack's ndim whose
dtype equals the pack's (a TypeError names the first that is not), so a wrong item raises instead of being
read with the wrong element type or shape. ndim and dtype are read from numpy's public array struct
(``PyArrayObject_fields``), whose offsets are checked against a live array at import
(`llvm_backend_intrinsics.abi.ARRAYS_READ`;
no array is packed where they do not hold).
Items are typed with layout ``A`` (any strides), as one pack holds C, Fortran and strided arrays alike;
0-d items are ``C``, which every 0-d array is.

The wrapper code one pack of 1-d float64 arrays unboxes to is, as Python::

    arrays, dtype = pack.arrays, pack.dtype
    if len(arrays) != count: raise TypeError
    for i in range(count):
        a = arrays[i]
        if not (type(a) is np.ndarray or isinstance(a, np.ndarray)) or a.ndim != 1:
            release(table[:i]); raise TypeError
        if a.dtype is not dtype and a.dtype != dtype:
            release(table[:i]); raise TypeError
        table[i] = NRT_adapt_ndarray_from_python(a)
    compiled_function(..., &table, ...)
    release(table[:count])
"""

import numpy as np
from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.core.datamodel import models
from numba.extending import NativeValue, box, intrinsic, register_model, unbox
from numba.np import numpy_support

from llvm_backend_intrinsics.abi import (
    ARRAY_DESCR_OFFSET,
    ARRAY_ND_OFFSET,
    PY_EQ,
    call_c_function,
    has_type,
    load_field,
)
from llvm_backend_intrinsics.naming import alloca_once_value, named, unpack_named

__all__ = [
    "ArrayPack",
    "ArrayPackType",
    "BoxedListType",
    "array_list_type",
    "box_into_list",
    "pack_item",
    "pack_of",
    "table_item",
    "table_of",
]


class ArrayPackType(types.Type):
    """``count`` arrays of one dtype and ndim; the value is a pointer to a table of their structs."""

    def __init__(self, dtype: types.Type, ndim: int, count: int):
        self.array_type = types.Array(dtype, ndim, "C" if ndim == 0 else "A")
        self.count = count
        super().__init__(name=f"ArrayPack({self.array_type}, {count})")

    @property
    def item_type(self) -> types.Array:
        """The type of each array read from the pack's table."""
        return self.array_type

    @classmethod
    def of(cls, dtype, ndim: int, count: int) -> "ArrayPackType":
        """The pack type of ``count`` arrays of numpy ``dtype`` and ``ndim`` dimensions."""
        return cls(numpy_support.from_dtype(np.dtype(dtype)), ndim, count)


@register_model(ArrayPackType)
class ArrayPackModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, dmm.lookup(fe_type.array_type).get_value_type().as_pointer())


class ArrayPack:
    """What a compiled function receives for an `ArrayPackType` parameter: its arrays, as a list.

    ``_numba_type_`` makes numba's dispatcher type the pack from the attribute alone, in C; the arrays
    are checked as they are unboxed.
    """

    __slots__ = ("_numba_type_", "arrays", "dtype")
    ndarray = np.ndarray

    def __init__(self, numba_type: ArrayPackType, dtype: np.dtype, arrays: list):
        self._numba_type_ = numba_type
        self.dtype = dtype
        self.arrays = arrays


def _is_item(builder, pyapi, item, ndarray, dtype, ndim):
    """An i1: is ``item`` an ndarray of ``ndim`` dimensions whose dtype equals ``dtype``?"""
    ok = alloca_once_value(builder, cgutils.false_bit, "is_item")
    exact = has_type(builder, item, ndarray, "item.exact_type")
    with builder.if_else(exact, likely=True) as (is_exact, maybe_subclass):
        with is_exact:
            builder.store(cgutils.true_bit, ok)
        with maybe_subclass:
            isinstance_ = call_c_function(
                builder, pyapi, "PyObject_IsInstance", ir.IntType(32), [item, ndarray], "item.isinstance"
            )
            builder.store(
                builder.icmp_signed("==", isinstance_, ir.Constant(ir.IntType(32), 1), name="item.is_subclass"), ok
            )
    with builder.if_then(builder.load(ok, name="item.is_ndarray"), likely=True):
        nd = load_field(builder, item, ARRAY_ND_OFFSET, ir.IntType(32), "item.nd")
        builder.store(builder.icmp_signed("==", nd, ir.Constant(ir.IntType(32), ndim), name="item.nd_matches"), ok)
    with builder.if_then(builder.load(ok, name="item.nd_ok"), likely=True):
        descr = load_field(builder, item, ARRAY_DESCR_OFFSET, pyapi.pyobj, "item.descr")
        same = builder.icmp_unsigned("==", descr, dtype, name="item.same_dtype")
        with builder.if_then(builder.not_(same, name="item.other_dtype"), likely=False):
            equal = call_c_function(
                builder,
                pyapi,
                "PyObject_RichCompareBool",
                ir.IntType(32),
                [descr, dtype, ir.Constant(ir.IntType(32), PY_EQ)],
                "item.dtype_equality",
            )
            builder.store(builder.icmp_signed("==", equal, ir.Constant(ir.IntType(32), 1), name="item.equal_dtype"), ok)
    return builder.load(ok, name="item.ok")


def _release(context, builder, typ, table, count):
    """Drop the references of the first ``count`` array structs in ``table``."""
    with cgutils.for_range(builder, count) as loop:
        released = builder.load(builder.gep(table, [loop.index], name="released.ptr"), name="released")
        context.nrt.decref(builder, typ.array_type, released)


@unbox(ArrayPackType)
def unbox_array_pack(typ, obj, c):
    builder, pyapi, context = c.builder, c.pyapi, c.context
    intp = context.get_value_type(types.intp)
    count = ir.Constant(intp, typ.count)
    table = cgutils.alloca_once(builder, context.get_value_type(typ.array_type), size=typ.count, name="pack")
    failed = alloca_once_value(builder, cgutils.true_bit, "failed")
    unboxed = alloca_once_value(builder, ir.Constant(intp, 0), "unboxed")
    arrays, dtype, ndarray = (
        named(pyapi.object_getattr_string(obj, attribute), attribute) for attribute in ("arrays", "dtype", "ndarray")
    )
    got = [
        named(cgutils.is_not_null(builder, part), f"got_{label}")
        for part, label in ((arrays, "arrays"), (dtype, "dtype"))
    ]
    got_all = builder.and_(*got, name="got_all")
    got_all = builder.and_(got_all, named(cgutils.is_not_null(builder, ndarray), "got_ndarray"), name="got_all")
    with builder.if_then(got_all, likely=True):
        size = named(pyapi.list_size(arrays), "size")
        right = builder.icmp_signed("==", size, count, name="right_size")
        with builder.if_else(right, likely=True) as (right_size, wrong_size):
            with wrong_size:
                no_error = named(cgutils.is_null(builder, named(pyapi.err_occurred(), "error")), "no_error")
                with builder.if_then(no_error, likely=True):
                    pyapi.err_format("PyExc_TypeError", f"an array pack of {typ.count} arrays was given %zd", size)
            with right_size:
                builder.store(cgutils.false_bit, failed)
                with cgutils.for_range(builder, count) as loop:
                    _unbox_item(builder, pyapi, typ, (table, failed, unboxed), (arrays, dtype, ndarray), loop)
    for ref in (arrays, dtype, ndarray):
        pyapi.decref(ref)
    with builder.if_then(builder.load(failed, name="failed.load"), likely=False):
        _release(context, builder, typ, table, builder.load(unboxed, name="unboxed.load"))

    def cleanup():
        _release(context, builder, typ, table, count)

    return NativeValue(table, is_error=builder.load(failed, name="is_error"), cleanup=cleanup)


def _unbox_item(builder, pyapi, typ, frame, parts, loop):
    """Check item ``i`` (the loop's index) of the pack's list and adapt it into ``table[i]``, or set ``failed``
    and leave the loop (``frame`` is ``(table, failed, unboxed)``, the wrapper's allocas, ``parts`` the pack's
    ``(arrays, dtype, ndarray)``)."""
    table, failed, unboxed = frame
    arrays, dtype, ndarray = parts
    item = named(pyapi.list_getitem(arrays, loop.index), "item")
    not_item = builder.not_(_is_item(builder, pyapi, item, ndarray, dtype, typ.array_type.ndim), name="not_item")
    with builder.if_then(not_item, likely=False):
        pyapi.err_format(
            "PyExc_TypeError",
            f"array pack item %zd is not a {typ.array_type.ndim}-d array of dtype %S: %R",
            loop.index,
            dtype,
            item,
        )
        builder.store(cgutils.true_bit, failed)
        loop.do_break()
    slot = builder.gep(table, [loop.index], name="slot")
    adapted = pyapi.nrt_adapt_ndarray_from_python(item, builder.bitcast(slot, pyapi.voidptr, name="slot.bytes"))
    adapt_failed = named(cgutils.is_not_null(builder, named(adapted, "adapt_status")), "adapt_failed")
    with builder.if_then(adapt_failed, likely=False):
        pyapi.err_set_string("PyExc_MemoryError", "could not unbox an array pack item")
        builder.store(cgutils.true_bit, failed)
        loop.do_break()
    builder.store(builder.add(loop.index, ir.Constant(loop.index.type, 1), name="unboxed.next"), unboxed)


def table_item(builder, table, index: int | ir.Value, name: str = "item"):
    """Array ``index`` (a constant or an ``i64`` value) of a pack's table (borrowed: the table holds the
    reference), named ``name``."""
    if isinstance(index, int):
        index = ir.Constant(ir.IntType(64), index)
    return builder.load(builder.gep(table, [index], name=f"{name}.ptr"), name=name)


def table_of(context, builder, pack: ArrayPackType, items):
    """A table in the frame holding the ``(value, numba type)`` arrays ``items``, borrowed: they must outlive
    every use of the table."""
    table = cgutils.alloca_once(builder, context.get_value_type(pack.array_type), size=pack.count, name="pack")
    for k, (value, item_type) in enumerate(items):
        builder.store(
            _as_item(context, builder, value, item_type, pack.array_type),
            builder.gep(table, [ir.Constant(ir.IntType(64), k)], name=f"pack.item{k}.ptr"),
        )
    return table


def _as_item(context, builder, value, item_type: types.Array, array_type: types.Array):
    """``value`` as an item of a pack of ``array_type``: numba casts an array to layout ``A``; a 0-d array of any
    layout has the struct of the pack's (layout ``C``: one element is contiguous) and is stored as it is
    (numba casts no array to ``C``)."""
    if item_type.ndim == 0 and item_type.copy(layout=array_type.layout) == array_type:
        return value
    return context.cast(builder, value, item_type, array_type)


@intrinsic
def pack_item(typingctx, pack, index):
    """Array ``index`` of ``pack`` (a new reference). ``index`` is a literal below the pack's count."""
    if not isinstance(pack, ArrayPackType) or not isinstance(index, types.IntegerLiteral):
        return None
    if not 0 <= index.literal_value < pack.count:
        raise IndexError(f"item {index.literal_value} of {pack}")

    def codegen(context, builder, signature, args):
        value = table_item(builder, args[0], index.literal_value)
        context.nrt.incref(builder, pack.array_type, value)
        return value

    return pack.array_type(pack, index), codegen


@intrinsic
def pack_of(typingctx, arrays):
    """The tuple ``arrays`` (of one dtype and ndim) as an `ArrayPack`, for compiled code that calls a function
    taking a pack: a table of the arrays' structs in the caller's frame, borrowed (the pack must neither
    outlive the arrays nor leave the function that made it).

    For ``pack_of((x0, x1))`` of two 1-d C float64 arrays the emitted IR is::

        %pack = alloca {i8*, i8*, i64, i64, double*, [1 x i64], [1 x i64]}, i64 2   ; in the entry block
        store <x0 as layout A>, <ptr to %pack[0]>
        store <x1 as layout A>, <ptr to %pack[1]>
        ; the value is %pack
    """
    items = tuple(arrays) if isinstance(arrays, types.BaseTuple) else ()
    if not items or not all(isinstance(a, types.Array) for a in items):
        raise errors.TypingError(f"pack_of takes a non-empty tuple of arrays, got {arrays}")
    if len({(a.dtype, a.ndim) for a in items}) != 1:
        raise errors.TypingError(f"pack_of takes arrays of one dtype and ndim, got {arrays}")
    pack = ArrayPackType(items[0].dtype, items[0].ndim, len(items))

    def codegen(context, builder, signature, args):
        arrays = unpack_named(builder, args[0], len(items), "array")
        return table_of(context, builder, pack, zip(arrays, items, strict=True))

    return pack(arrays), codegen


def array_list_type(array: types.Array) -> types.List:
    """The list type a graph returns arrays of ``array``'s dtype and ndim in (layout ``A``)."""
    return types.List(types.Array(array.dtype, array.ndim, "C" if array.ndim == 0 else "A"))


class BoxedListType(types.Type):
    """A Python list that compiled code called from Python (holding the GIL) built for its caller: the value
    is the new reference, which boxing hands over as it is (`box_into_list`)."""

    def __init__(self, array_type: types.Array, count: int):
        self.array_type = array_type
        self.count = count
        super().__init__(name=f"BoxedList({array_type}, {count})")


register_model(BoxedListType)(models.OpaqueModel)


@box(BoxedListType)
def _box_boxed_list(typ, val, c):
    return val


def box_into_list(context, builder, data, array_type: types.Array, count: int) -> ir.Value:
    """A Python list of the ``count`` arrays stored from ``data`` on, boxed in one loop; each boxed array takes
    the reference its struct holds. A MemoryError if the list cannot be made (the arrays are then released)."""
    pyapi = context.get_python_api(builder)
    env_manager = context.get_env_manager(builder)
    model = context.data_model_manager[array_type]
    n = ir.Constant(pyapi.py_ssize_t, count)
    listed = named(pyapi.list_new(n), "list")
    with builder.if_else(named(cgutils.is_null(builder, listed), "no_list"), likely=False) as (failed, made):
        with failed:
            with cgutils.for_range(builder, n) as loop:
                item = model.load_from_data_pointer(builder, builder.gep(data, [loop.index], name="item.ptr"))
                context.nrt.decref(builder, array_type, named(item, "item"))
        with made:
            with cgutils.for_range(builder, n) as loop:
                item = model.load_from_data_pointer(builder, builder.gep(data, [loop.index], name="item.ptr"))
                boxed = pyapi.from_native_value(array_type, named(item, "item"), env_manager)
                pyapi.list_setitem(listed, loop.index, named(boxed, "boxed"))
    with cgutils.if_unlikely(builder, named(cgutils.is_null(builder, listed), "no_list")):
        context.call_conv.return_exc(builder)
    return listed
