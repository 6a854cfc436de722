"""A new array of a given shape filled with a value broadcast into it: PyTensor's ``Alloc``, emitted where it is
called; an empty array (``AllocEmpty``) and a range (``ARange``) likewise.

Stock numba compiles each ``Alloc`` node as an ``@njit`` function of its own, whose fill by a scalar is numba's
``res[...] = value``, its array-assignment machinery typed and lowered in every fresh process. Here it is a loop
nest of the graph's module. The checks and errors are stock's: each axis of the value that is not statically of
length 1 must have the output's length along the axis it aligns with (the value's axes align with the output's
last ones), else a ``ValueError``; a negative size is stock's ``ValueError`` (numba's ``np.empty``'s), checked before
the allocation (numba's allocator, given a negative size in a function called from another, leaves a Python error
set that the caller does not see: a ``SystemError``).

Layering: typing (`_check_types`) -> the ``@intrinsic`` glue (`alloc_fill`) -> the emitters ``_emit_*``.

    alloc_fill((False, True))(value, n, m, k)  # value of shape (m, 1): np.broadcast_to(value, (n, m, k)).copy()
    alloc_empty(np.dtype("float64"))(n, m)  # np.empty((n, m)), PyTensor's AllocEmpty
    alloc_range(np.dtype("int64"))(start, stop, step)  # np.arange(start, stop, step, "int64"), PyTensor's ARange
"""

from functools import cache

import numpy as np
from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic
from numba.np import numpy_support
from numba.np.arrayobj import _empty_nd_impl, load_item, store_item

from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array, emit_intp, integer_type

__all__ = [
    "MISMATCH_ERROR",
    "NEGATIVE_SIZE_ERROR",
    "RUNTIME_BROADCAST_ERROR",
    "STEP_ERROR",
    "alloc_empty",
    "alloc_fill",
    "alloc_range",
]

_INTP = cgutils.intp_t

MISMATCH_ERROR = "could not broadcast input array into the shape requested by Alloc"
"""Stock's ``ValueError`` when an axis of the value has neither the output's length nor length 1."""
NEGATIVE_SIZE_ERROR = "negative dimensions not allowed"
"""Stock's ``ValueError`` (numba's ``np.empty``) for a negative size."""
RUNTIME_BROADCAST_ERROR = (
    "Runtime broadcasting not allowed. The output of Alloc requires broadcasting a dimension of the input value,"
    " which was not marked as broadcastable. If broadcasting was intended, use `specify_broadcastable` on the"
    " relevant input."
)
"""Stock's ``ValueError`` (PyTensor's ``Alloc._runtime_broadcast_error_msg``) when an axis of the value not
statically of length 1 has length 1 and the output's is another."""
STEP_ERROR = "Maximum allowed size exceeded"
"""Stock's ``ValueError`` (numba's ``np.arange``) for a step of zero."""


# ---------------------------------------------------------------- typing


def _check_types(value, sizes, broadcast: tuple):
    """The value's dtype; a TypingError unless ``value`` is a number, a bool or an array of them with one entry
    of ``broadcast`` per axis and no more axes than ``sizes``, each size an integer."""
    for k, size in enumerate(sizes):
        integer_type(size, f"alloc_fill: size {k}")
    if isinstance(value, types.Number | types.Boolean):
        ndim, dtype = 0, value
    elif isinstance(value, types.Array) and isinstance(value.dtype, types.Number | types.Boolean):
        ndim, dtype = value.ndim, value.dtype
    else:
        raise errors.TypingError(f"alloc_fill: value must be a number or an array of numbers, got {value}")
    if ndim != len(broadcast) or ndim > len(sizes):
        raise errors.TypingError(
            f"alloc_fill: a value of {ndim} axes with {len(broadcast)} broadcast flags into {len(sizes)} axes"
        )
    return dtype


# ---------------------------------------------------------------- emitters


def _emit_sizes(context, builder, sizes, packed, names) -> list:
    """The sizes of a new array, arguments ``sizes`` (integers or 0-d integer arrays) in the tuple ``packed``, as
    ``intp``s: `NEGATIVE_SIZE_ERROR` if one is negative."""
    shapes = [
        emit_intp(context, builder, size, builder.extract_value(packed, k, name=names[k]))
        for k, size in enumerate(sizes)
    ]
    negative = cgutils.false_bit
    for shape in shapes:
        negative = builder.or_(negative, builder.icmp_signed("<", shape, shape.type(0)))
    with cgutils.if_unlikely(builder, negative):
        context.call_conv.return_user_exc(builder, ValueError, (NEGATIVE_SIZE_ERROR,))
    return shapes


def _emit_checks(context, builder, value_shapes, out_shapes, broadcast, name: str) -> None:
    """Stock's ValueErrors, in its order (the last axis first), for a value axis not statically of length 1 whose
    length is not the output's."""
    offset = len(out_shapes) - len(value_shapes)
    for axis in reversed(range(len(value_shapes))):
        if broadcast[axis]:
            continue
        size, want = value_shapes[axis], out_shapes[offset + axis]
        with cgutils.if_unlikely(builder, builder.icmp_signed("!=", size, want, name=f"{name}.shape{axis}.differs")):
            one = builder.icmp_signed("==", size, size.type(1), name=f"{name}.shape{axis}.is_one")
            with builder.if_else(one) as (is_one, other):
                with is_one:
                    context.call_conv.return_user_exc(builder, ValueError, (RUNTIME_BROADCAST_ERROR,))
                with other:
                    context.call_conv.return_user_exc(builder, ValueError, (MISMATCH_ERROR,))


# ---------------------------------------------------------------- intrinsics


@cache
def alloc_fill(broadcast: tuple):
    """The intrinsic ``fill(value, *sizes)``: a new C-contiguous array of shape ``sizes`` (integers or 0-d integer
    arrays) holding ``value`` (a number, or an array whose axes align with the output's last ones) broadcast into
    it. ``broadcast[k]`` says axis ``k`` of the value is statically of length 1 (read at index 0); every other axis
    must have the output's length (else stock's ValueError)."""

    @intrinsic
    def fill(typingctx, value, *sizes):
        dtype = _check_types(value, sizes, broadcast)
        out_type = types.Array(dtype, len(sizes), "C")

        def codegen(context, builder, signature, args):
            names = call_names(1 + len(sizes), 1)
            name, out = names.arguments[0], names.outputs[0]
            source, packed = args
            out_shapes = _emit_sizes(context, builder, sizes, packed, names.arguments[1:])
            if isinstance(value, types.Array):
                array, value_shapes, strides = emit_array(context, builder, value, source, name)
                _emit_checks(context, builder, value_shapes, out_shapes, broadcast, name)
            result = _empty_nd_impl(context, builder, out_type, out_shapes)
            data = named(result.data, f"{out}.data")
            out_strides = cgutils.unpack_tuple(builder, result.strides, out_type.ndim)
            offset = len(sizes) - len(broadcast)
            with cgutils.loop_nest(builder, out_shapes, _INTP) as index:
                if isinstance(value, types.Array):
                    at = [_INTP(0) if broadcast[k] else index[offset + k] for k in range(value.ndim)]
                    pointer = cgutils.get_item_pointer2(
                        context, builder, array.data, value_shapes, strides, value.layout, at
                    )
                    item = named(load_item(context, builder, value, pointer), f"{name}.item")
                else:
                    item = source
                pointer = cgutils.get_item_pointer2(context, builder, data, out_shapes, out_strides, "C", list(index))
                store_item(context, builder, out_type, item, pointer)
            return impl_ret_new_ref(context, builder, out_type, named(result._getvalue(), out))

        return out_type(value, types.StarArgTuple(sizes)), codegen

    return fill


@cache
def alloc_empty(dtype: np.dtype):
    """The intrinsic ``empty(*sizes)``: a new C-contiguous array of ``dtype`` and shape ``sizes`` (integers or 0-d
    integer arrays), its values unset, as ``np.empty`` (a negative size is its ``ValueError``)."""
    element = numpy_support.from_dtype(np.dtype(dtype))

    @intrinsic
    def empty(typingctx, *sizes):
        for k, size in enumerate(sizes):
            integer_type(size, f"alloc_empty: size {k}")
        out_type = types.Array(element, len(sizes), "C")

        def codegen(context, builder, signature, args):
            names = call_names(len(sizes), 1)
            [packed] = args
            shapes = _emit_sizes(context, builder, sizes, packed, names.arguments)
            result = _empty_nd_impl(context, builder, out_type, shapes)
            return impl_ret_new_ref(context, builder, out_type, named(result._getvalue(), names.outputs[0]))

        return out_type(types.StarArgTuple(sizes)), codegen

    return empty


def _emit_range_length(builder, start, stop, step):
    """``max(ceil((stop - start) / step), 0)``, the quotient in doubles as numba's ``np.arange`` computes it."""
    double = ir.DoubleType()
    quotient = builder.fdiv(builder.sitofp(builder.sub(stop, start), double), builder.sitofp(step, double))
    ceil = builder.module.declare_intrinsic("llvm.ceil", [double])
    length = builder.fptosi(builder.call(ceil, [quotient]), _INTP)
    return builder.select(builder.icmp_signed("<", length, _INTP(0)), _INTP(0), length)


@cache
def alloc_range(dtype: np.dtype):
    """The intrinsic ``arange(start, stop, step)``: ``np.arange(start, stop, step, dtype)`` of signed integers (or
    0-d arrays of them) as numba's computes it: ``ceil((stop - start) / step)`` elements (none if that is negative),
    ``start + i * step`` in ``intp`` cast to ``dtype``; a zero step is numba's ``ValueError`` (`STEP_ERROR`)."""
    element = numpy_support.from_dtype(np.dtype(dtype))

    @intrinsic
    def arange(typingctx, start, stop, step):
        for what, bound in zip(("start", "stop", "step"), (start, stop, step), strict=True):
            if not integer_type(bound, f"alloc_range: {what}").signed:
                raise errors.TypingError(f"alloc_range: {what} must be a signed integer, got {bound}")
        out_type = types.Array(element, 1, "C")

        def codegen(context, builder, signature, args):
            names = call_names(3, 1)
            bounds = [
                named(emit_intp(context, builder, ty, value), f"{name}.intp")
                for ty, value, name in zip(signature.args, args, names.arguments, strict=True)
            ]
            first, _, step_ = bounds
            with cgutils.if_unlikely(builder, builder.icmp_signed("==", step_, _INTP(0))):
                context.call_conv.return_user_exc(builder, ValueError, (STEP_ERROR,))
            length = named(_emit_range_length(builder, *bounds), f"{names.outputs[0]}.length")
            result = _empty_nd_impl(context, builder, out_type, [length])
            with cgutils.for_range(builder, length) as loop:
                value = builder.add(first, builder.mul(loop.index, step_))
                builder.store(context.cast(builder, value, types.intp, element), builder.gep(result.data, [loop.index]))
            return impl_ret_new_ref(context, builder, out_type, named(result._getvalue(), names.outputs[0]))

        return out_type(start, stop, step), codegen

    return arange
