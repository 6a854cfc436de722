"""An array given a new shape, emitted where it is called: PyTensor's ``Reshape``.

Stock numba compiles each ``Reshape`` node as an ``@njit`` function, ``np.reshape(np.ascontiguousarray(x),
to_fixed_tuple(shape, ndim))``, typed and lowered in every fresh process. Here it is a few compares of the graph's
module. What it keeps true, as stock's: the result is a C-contiguous view of ``x`` when ``x`` is C-contiguous, else
a view of a C-contiguous copy; one negative size is inferred from the others (numba's ``np.reshape`` rule); a shape
whose product is not ``x``'s size, or with more than one negative size, raises numba's ``ValueError``; a 0-d result
needs an ``x`` of one element (numba's ``ValueError`` of ``item()``). A shape vector whose length is not ``ndim``
raises a ``ValueError`` where stock's would read past it.

Layering: typing (`_check_types`) -> the ``@intrinsic`` glue (`reshape_view`) -> the emitters ``_emit_*``.

    reshape_view(2)(x, np.array([3, -1]))  # np.reshape(np.ascontiguousarray(x), (3, -1))
"""

from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _array_copy, load_item, make_view

from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array

__all__ = ["ITEM_ERROR", "LENGTH_ERROR", "NEGATIVE_ERROR", "SIZE_ERROR", "reshape_view"]

_INTP = cgutils.intp_t

SIZE_ERROR = "total size of new array must be unchanged"
"""numba's ``np.reshape`` ``ValueError`` (stock's) for a shape whose product is not the array's size."""
NEGATIVE_ERROR = "multiple negative shape values"
"""numba's ``np.reshape`` ``ValueError`` for a shape with more than one negative size."""
ITEM_ERROR = "item(): can only convert an array of size 1 to a Python scalar"
"""numba's ``ValueError`` (stock's, of ``x.item()``) for a 0-d reshape of an array not of one element."""
LENGTH_ERROR = "Reshape: the shape vector must have one entry per dimension of the result"
"""The ``ValueError`` of a shape vector whose length is not the result's ndim."""


# ---------------------------------------------------------------- typing


def _check_types(ndim: int, x, shape) -> None:
    """A TypingError unless ``x`` is an array and ``shape`` a vector of integers."""
    if not isinstance(x, types.Array):
        raise errors.TypingError(f"reshape_view: x must be an array, got {x}")
    if not (isinstance(shape, types.Array) and shape.ndim == 1 and isinstance(shape.dtype, types.Integer)):
        raise errors.TypingError(f"reshape_view: shape must be a vector of integers, got {shape}")


# ---------------------------------------------------------------- emitters


def _emit_raise(context, builder, condition, message: str) -> None:
    with cgutils.if_unlikely(builder, condition):
        context.call_conv.return_user_exc(builder, ValueError, (message,))


def _emit_size(builder, shapes):
    size = _INTP(1)
    for length in shapes:
        size = builder.mul(size, length)
    return size


def _emit_c_contiguous(builder, shapes, strides, item: int):
    """Whether an array of ``shapes`` and ``strides`` is C-contiguous, as numpy's flag says (axes of length 1 and
    empty arrays are)."""
    contiguous, expected = cgutils.true_bit, _INTP(item)
    for length, stride in reversed(list(zip(shapes, strides))):
        fits = builder.or_(builder.icmp_signed("==", length, _INTP(1)), builder.icmp_signed("==", stride, expected))
        contiguous = builder.and_(contiguous, fits)
        expected = builder.mul(expected, length)
    return builder.or_(contiguous, builder.icmp_signed("==", _emit_size(builder, shapes), _INTP(0)))


def _emit_new_shape(context, builder, shape_type, shape_value, ndim: int, size) -> list:
    """The sizes of the result: the shape vector's, a negative one inferred (numba's rule), checked against
    ``size``."""
    array, (length,), (stride,) = emit_array(context, builder, shape_type, shape_value, "shape")
    _emit_raise(context, builder, builder.icmp_signed("!=", length, _INTP(ndim)), LENGTH_ERROR)
    sizes = []
    for d in range(ndim):
        pointer = cgutils.get_item_pointer2(
            context, builder, array.data, [length], [stride], shape_type.layout, [_INTP(d)]
        )
        item = load_item(context, builder, shape_type, pointer)
        sizes.append(named(context.cast(builder, item, shape_type.dtype, types.intp), f"shape{d}.intp"))
    negatives, known = _INTP(0), _INTP(1)
    for value in sizes:
        negative = builder.icmp_signed("<", value, _INTP(0))
        negatives = builder.add(negatives, builder.zext(negative, _INTP))
        known = builder.mul(known, builder.select(negative, _INTP(1), value))
    _emit_raise(context, builder, builder.icmp_signed(">", negatives, _INTP(1)), NEGATIVE_ERROR)
    no_known = builder.icmp_signed("==", known, _INTP(0))
    safe = builder.select(no_known, _INTP(1), known)
    inferred = builder.select(no_known, _INTP(0), builder.sdiv(size, safe))
    remainder_ok = builder.select(
        no_known,
        builder.icmp_signed("==", size, _INTP(0)),
        builder.icmp_signed("==", builder.srem(size, safe), _INTP(0)),
    )
    has_negative = builder.icmp_signed("==", negatives, _INTP(1))
    fits = builder.select(has_negative, remainder_ok, builder.icmp_signed("==", known, size))
    _emit_raise(context, builder, builder.not_(fits), SIZE_ERROR)
    return [builder.select(builder.icmp_signed("<", value, _INTP(0)), inferred, value) for value in sizes]


def _c_strides(builder, shapes, item: int) -> list:
    strides, stride = [], _INTP(item)
    for length in reversed(shapes):
        strides.append(stride)
        stride = builder.mul(stride, length)
    return strides[::-1]


# ---------------------------------------------------------------- intrinsic


@cache
def reshape_view(ndim: int):
    """The intrinsic ``reshape(x, shape)``: ``x`` as an ``ndim``-d C-contiguous array of sizes ``shape`` (an
    integer vector, one negative size inferred), a view of ``x`` if ``x`` is C-contiguous, else of a copy."""

    @intrinsic
    def reshape(typingctx, x, shape):
        _check_types(ndim, x, shape)
        out_type = types.Array(x.dtype, ndim, "C")
        copy_type = types.Array(x.dtype, x.ndim, "C")

        def codegen(context, builder, signature, args):
            names = call_names(2, 1)
            x_name, out = names.arguments[0], names.outputs[0]
            array, shapes, strides = emit_array(context, builder, x, args[0], x_name)
            item = context.get_abi_sizeof(context.get_data_type(x.dtype))
            size = named(_emit_size(builder, shapes), f"{x_name}.size")
            if ndim == 0:
                _emit_raise(context, builder, builder.icmp_signed("!=", size, _INTP(1)), ITEM_ERROR)
                new_shapes = []
            else:
                new_shapes = _emit_new_shape(context, builder, shape, args[1], ndim, size)
            new_strides = _c_strides(builder, new_shapes, item)
            result = cgutils.alloca_once(builder, context.get_value_type(out_type), name=f"{out}.slot")
            contiguous = _emit_c_contiguous(builder, shapes, strides, item) if x.layout != "C" else cgutils.true_bit
            with builder.if_else(contiguous) as (view, copied):
                with view:
                    made = make_view(context, builder, x, array, out_type, array.data, new_shapes, new_strides)
                    context.nrt.incref(builder, out_type, made._getvalue())
                    builder.store(made._getvalue(), result)
                with copied:
                    copy = _array_copy(context, builder, copy_type(x), [args[0]])
                    copy_array = context.make_array(copy_type)(context, builder, copy)
                    made = make_view(
                        context, builder, copy_type, copy_array, out_type, copy_array.data, new_shapes, new_strides
                    )
                    builder.store(made._getvalue(), result)
            return impl_ret_new_ref(context, builder, out_type, named(builder.load(result), out))

        return out_type(x, shape), codegen

    return reshape
