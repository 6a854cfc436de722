"""Cumulative sums and products along an axis, emitted where they are called: PyTensor's ``CumOp``.

Stock numba compiles each ``CumOp`` node as an ``@njit`` function (``np.cumsum`` of a vector; a transpose and a
loop over the axis otherwise), typed and lowered in every fresh process. Here it is a loop nest of the graph's
module: over the other axes, then along the axis with the running value in a register, combining as stock's
does (``out[m] = out[m - 1] + x[m]``), so the values are stock's to the bit. The result is a new C-contiguous
array of ``x``'s shape and dtype.

Layering: typing (`_check_types`) -> the ``@intrinsic`` glue (`cumulative`) -> the emitter `_emit_along`.

    cumulative(1, "add")(x)  # np.cumsum(x, axis=1)
"""

import operator
from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl, load_item, store_item

from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array

__all__ = ["MODES", "cumulative"]

_INTP = cgutils.intp_t
MODES = {"add": operator.add, "mul": operator.mul}
"""The combining operator of each of ``CumOp``'s modes."""


def _check_types(axis: int, mode: str, x) -> None:
    """A TypingError unless ``x`` is an array of numbers with an axis ``axis`` and ``mode`` one of `MODES`."""
    if mode not in MODES:
        raise errors.TypingError(f"cumulative: mode must be one of {sorted(MODES)}, got {mode!r}")
    if not (isinstance(x, types.Array) and isinstance(x.dtype, types.Number) and 0 <= axis < x.ndim):
        raise errors.TypingError(f"cumulative: x must be an array of numbers with an axis {axis}, got {x}")


def _emit_along(context, builder, x, array, shapes, strides, out, out_strides, axis: int, combine) -> None:
    """``out`` along ``axis``: each element the running combination of ``x``'s up to it."""
    others = [length for d, length in enumerate(shapes) if d != axis]
    with cgutils.loop_nest(builder, others, _INTP) as outer:
        outer = list(outer)

        def at(m):
            return [*outer[:axis], m, *outer[axis:]]

        def pointers(m):
            source = cgutils.get_item_pointer2(context, builder, array.data, shapes, strides, x.layout, at(m))
            target = cgutils.get_item_pointer2(context, builder, out.data, shapes, out_strides, "C", at(m))
            return source, target

        with builder.if_then(builder.icmp_signed(">", shapes[axis], _INTP(0))):
            source, target = pointers(_INTP(0))
            first = load_item(context, builder, x, source)
            store_item(context, builder, x, first, target)
            running = cgutils.alloca_once_value(builder, first)
            with cgutils.for_range(builder, builder.sub(shapes[axis], _INTP(1))) as loop:
                source, target = pointers(builder.add(loop.index, _INTP(1)))
                value = combine(builder, (builder.load(running), load_item(context, builder, x, source)))
                builder.store(value, running)
                store_item(context, builder, x, value, target)


@cache
def cumulative(axis: int, mode: str):
    """The intrinsic ``cumulate(x)``: ``np.cumsum(x, axis)`` (``mode`` ``"add"``) or ``np.cumprod(x, axis)``
    (``"mul"``) in ``x``'s dtype, a new C-contiguous array."""

    @intrinsic
    def cumulate(typingctx, x):
        _check_types(axis, mode, x)
        out_type = types.Array(x.dtype, x.ndim, "C")

        def codegen(context, builder, signature, args):
            names = call_names(1, 1)
            array, shapes, strides = emit_array(context, builder, x, args[0], names.arguments[0])
            out = _empty_nd_impl(context, builder, out_type, shapes)
            out_strides = cgutils.unpack_tuple(builder, out.strides, x.ndim)
            combine = context.get_function(MODES[mode], x.dtype(x.dtype, x.dtype))
            _emit_along(context, builder, x, array, shapes, strides, out, out_strides, axis, combine)
            return impl_ret_new_ref(context, builder, out_type, named(out._getvalue(), names.outputs[0]))

        return out_type(x), codegen

    return cumulate
