"""Bounds checks of the index arrays of an advanced indexed read or update, raising numpy's ``IndexError`` before
any read or write.

The numba code PyTensor generates for ``x[i]``, ``x[i] += y`` and ``x[i] = y`` with an index array ``i`` reads
each position without a bounds check: a position out of range reads or writes outside ``x``'s buffer, or below
``-n`` wraps. numpy raises an ``IndexError`` for it, and for a boolean mask whose shape is not that of the axes it
indexes. `check_indices` makes the intrinsic that checks every index array of a read or an update against the
axes of ``x`` it indexes, so the read or update can be called once all are known good.

Layering: typing (`_check_types`) -> the ``@intrinsic`` glue (`check_indices`) -> the emitters ``_emit_*``; the
exception's message is formatted when numba boxes it (`llvm_backend_intrinsics.messages`), as numpy words it.

What it computes, as Python (``checks`` is static: one `IndexCheck` per index array):

    check_indices((IndexCheck(0, 0, False), IndexCheck(2, 1, True)))(x, i, stop, mask)  # x[i, :stop, mask]
    # raises as
    for position in np.asarray(i).flat:
        if not -x.shape[0] <= position < x.shape[0]:
            raise IndexError(f"index {position} is out of bounds for axis 0 with size {x.shape[0]}")
    for d in range(mask.ndim):
        if mask.shape[d] != x.shape[1 + d]:
            raise IndexError(f"boolean index did not match indexed array along axis {1 + d}; size of axis is ...")
"""

from functools import cache
from typing import NamedTuple

from numba.core import cgutils, errors, types
from numba.extending import intrinsic
from numba.np.arrayobj import load_item

from llvm_backend_intrinsics.messages import MessageType, raise_formatted
from llvm_backend_intrinsics.naming import named, unpack_named

__all__ = ["IndexCheck", "check_indices", "emit_index_check", "mask_mismatch_message", "out_of_bounds_message"]

_INTP = cgutils.intp_t


class IndexCheck(NamedTuple):
    """One index array to check: its ``position`` among the indices, the ``axis`` of ``x`` it indexes (a mask's
    first), and whether it is a boolean ``mask`` (its shape is checked, not its values)."""

    position: int
    axis: int
    mask: bool


def out_of_bounds_message(position, axis, size) -> str:
    """numpy's message for an index ``position`` out of range of an axis."""
    return f"index {position} is out of bounds for axis {axis} with size {size}"


def mask_mismatch_message(axis, size, mask_size) -> str:
    """numpy's message for a boolean mask of the wrong size along an axis."""
    return (
        f"boolean index did not match indexed array along axis {axis}; size of axis is {size}"
        f" but size of corresponding boolean axis is {mask_size}"
    )


_MASK_MISMATCH = MessageType(mask_mismatch_message, (types.intp, types.intp, types.intp))
_OUT_OF_BOUNDS = MessageType(out_of_bounds_message, (types.intp, types.intp, types.intp))


# ---------------------------------------------------------------- typing


def _check_types(checks: tuple, x, arguments) -> None:
    """TypingError unless ``x`` is an array with the axes ``checks`` index, each mask a boolean array and each
    other index an integer array or integer."""
    if not isinstance(x, types.Array):
        raise errors.TypingError(f"check_indices: x must be an array, got {x}")
    for check in checks:
        index = arguments[check.position]
        dtype = index.dtype if isinstance(index, types.Array) else index
        ndim = index.ndim if check.mask else 1
        if not isinstance(dtype, types.Boolean if check.mask else types.Integer):
            kind = "a boolean array" if check.mask else "an integer array or an integer"
            raise errors.TypingError(f"check_indices: index {check.position} must be {kind}, got {index}")
        if check.axis + ndim > x.ndim:
            raise errors.TypingError(f"check_indices: index {check.position} indexes past the {x.ndim} axes of x")


# ---------------------------------------------------------------- emitters


def _emit_raise(context, builder, message_type: MessageType, values) -> None:
    """Return an IndexError whose message ``message_type`` formats of ``values``."""
    raise_formatted(context, builder, IndexError, message_type, values)


def _emit_mask_check(context, builder, x_shapes, mask_type, mask, axis: int) -> None:
    """IndexError unless the shape of boolean array ``mask`` is ``x``'s from ``axis`` on."""
    array = context.make_array(mask_type)(context, builder, mask)
    named(array._getpointer(), "mask.struct")
    mask_shapes = unpack_named(builder, named(array.shape, "mask.shape"), mask_type.ndim, "mask.shape")
    for d, mask_size in enumerate(mask_shapes):
        size = x_shapes[axis + d]
        with builder.if_then(builder.icmp_signed("!=", mask_size, size, name=f"mask.shape{d}.differs"), likely=False):
            _emit_raise(context, builder, _MASK_MISMATCH, (_INTP(axis + d), size, mask_size))


def _emit_position_check(context, builder, dtype, position, size, axis: int) -> None:
    """IndexError unless ``-size <= position < size``, ``position`` read as an intp as numpy reads it (a uint64
    past intp's range wraps to a negative)."""
    position = named(context.cast(builder, position, dtype, types.intp), "position.intp")
    below = builder.icmp_signed("<", position, builder.neg(size, name="lowest"), name="below")
    above = builder.icmp_signed(">=", position, size, name="above")
    with builder.if_then(builder.or_(below, above, name="outside"), likely=False):
        _emit_raise(context, builder, _OUT_OF_BOUNDS, (position, _INTP(axis), size))


def emit_index_check(context, builder, index_type, index, size, axis: int) -> None:
    """`_emit_position_check` of every element of ``index``, an integer array of any layout, or an integer."""
    if not isinstance(index_type, types.Array):
        _emit_position_check(context, builder, index_type, index, size, axis)
        return
    array = context.make_array(index_type)(context, builder, index)
    named(array._getpointer(), "index.struct")
    shapes = unpack_named(builder, named(array.shape, "index.shape"), index_type.ndim, "index.shape")
    strides = unpack_named(builder, named(array.strides, "index.strides"), index_type.ndim, "index.stride")
    with cgutils.loop_nest(builder, shapes, _INTP) as at:
        pointer = cgutils.get_item_pointer2(
            context, builder, named(array.data, "index.data"), shapes, strides, index_type.layout, at, wraparound=False
        )
        position = named(load_item(context, builder, index_type, named(pointer, "position.ptr")), "position")
        _emit_position_check(context, builder, index_type.dtype, position, size, axis)


# ---------------------------------------------------------------- intrinsic


@cache
def check_indices(checks: tuple):
    """The intrinsic ``check(x, *indices)``: numpy's IndexError, in the order of ``checks``, for the first index
    array of ``indices`` that does not fit the axes of ``x`` it indexes. Per `IndexCheck`, a mask's shape must
    be ``x``'s along its axes; every position of another index must be within ``-n <= position < n``, ``n`` the
    length of its axis. The indices ``checks`` names none of (a slice's bounds) are not read."""

    @intrinsic
    def check(typingctx, x, *indices):
        _check_types(checks, x, indices)

        def codegen(context, builder, signature, args):
            source, packed = args
            values = unpack_named(builder, packed, len(indices), "index")
            array = context.make_array(x)(context, builder, source)
            named(array._getpointer(), "x.struct")
            x_shapes = unpack_named(builder, named(array.shape, "x.shape"), x.ndim, "x.shape")
            for position, axis, mask in checks:
                index_type, index = indices[position], values[position]
                if mask:
                    _emit_mask_check(context, builder, x_shapes, index_type, index, axis)
                else:
                    emit_index_check(context, builder, index_type, index, x_shapes[axis], axis)
            return context.get_dummy_value()

        return types.none(x, types.StarArgTuple(indices)), codegen

    return check
