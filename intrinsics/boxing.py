"""Scalar boxing helpers: a scalar seen as a size-1 array without a heap allocation, and exact casts.

``stack_array(value, ndim)`` stores ``value`` in a stack slot of the calling function and returns an array
struct of shape ``(1,) * ndim`` over it, with no MemInfo (reference counting skips a NULL MemInfo). The
array is only valid while the calling function runs, so it must never escape it: pass it to a callee that
reads it, never return it or store it in anything that outlives the call.
"""

from numba.core import cgutils, types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

__all__ = ["cast_to", "stack_array"]


def _emit_stack_array(context, builder, array_type, value):
    data_type = context.get_data_type(array_type.dtype)  # e.g. bool is i1 as a value, i8 in memory
    slot = cgutils.alloca_once(builder, data_type)
    builder.store(context.get_value_as_data(builder, array_type.dtype, value), slot)
    itemsize = context.get_constant(types.intp, context.get_abi_sizeof(data_type))
    array = make_array(array_type)(context, builder)
    one = context.get_constant(types.intp, 1)
    populate_array(
        array,
        data=slot,
        shape=[one] * array_type.ndim,
        strides=[itemsize] * array_type.ndim,
        itemsize=itemsize,
        meminfo=None,
    )
    return array._getvalue()


@intrinsic
def stack_array(typingctx, value, ndim):
    """A ``(1,) * ndim`` C-contiguous array over a stack copy of the scalar ``value``.

    For ``stack_array(x, 1)`` with ``x`` a float64 the emitted IR is (the slot in the entry block)::

        %slot = alloca double
        store double %x, ptr %slot
        %a = insertvalue {ptr, ptr, i64, i64, ptr, [1 x i64], [1 x i64]}
                 {ptr null, ptr null, i64 1, i64 8, ptr undef, [1 x i64] [i64 1], [1 x i64] [i64 8]},
                 ptr %slot, 4
    """
    if not isinstance(value, types.Number | types.Boolean):
        return None
    if not isinstance(ndim, types.IntegerLiteral) or ndim.literal_value < 0:
        return None
    array_type = types.Array(value, ndim.literal_value, "C")

    def codegen(context, builder, signature, args):
        return _emit_stack_array(context, builder, array_type, args[0])

    return array_type(value, ndim), codegen


@intrinsic
def cast_to(typingctx, value, dtype):
    """``value`` converted to the scalar type ``dtype`` (``np.int8`` or ``np.dtype("int8")``) by numba's cast.

    Numba computes ``int8 * int8`` in int64; a value declared int8 must wrap as numpy's would. For an
    int64 ``v`` cast to int8 the IR is ``%r = trunc i64 %v to i8``.
    """
    target = getattr(dtype, "dtype", None) or getattr(dtype, "instance_type", None)
    if not isinstance(value, types.Number | types.Boolean) or not isinstance(target, types.Number | types.Boolean):
        return None

    def codegen(context, builder, signature, args):
        return context.cast(builder, args[0], signature.args[0], signature.return_type)

    return target(value, dtype), codegen
