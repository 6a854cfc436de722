"""An array split along one axis into consecutive views: PyTensor's ``Split``, emitted where it is called.

Stock numba compiles each ``Split`` node as an ``@njit`` function of its own that checks the sizes, formats a
message in nopython code (``f"Split sizes sum to {...}"``) and calls ``np.split`` (a cumulative sum and a list of
views): numba types and lowers its string and list machinery in every fresh process. Here the node is a few
instructions per output in the graph's module, and each output is a view of ``x``, as stock's are. The checks, in
stock's order, each a ``ValueError`` with stock's message: ``sizes`` has one entry per output, none is negative, and
they sum to ``x``'s length along the axis (that message formatted in Python when raised,
`llvm_backend_intrinsics.messages`).

Layering: typing (`_view_type`) -> the ``@intrinsic`` glue (`split_views`) -> the emitters ``_emit_*``.

    split_views(0, 2)(x, sizes)  # (x[:sizes[0]], x[sizes[0]:]), after the checks
"""

from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import load_item, make_view

from llvm_backend_intrinsics.messages import MessageType, raise_formatted
from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array

__all__ = ["COUNT_ERROR", "NEGATIVE_ERROR", "split_sum_message", "split_views"]

_INTP = cgutils.intp_t

COUNT_ERROR = "Length of splits is not equal to n_splits"
"""Stock's ``ValueError`` when ``sizes`` does not have one entry per output."""
NEGATIVE_ERROR = "Split sizes cannot be negative"
"""Stock's ``ValueError`` for a negative size."""


def split_sum_message(total, length) -> str:
    """Stock's message when the sizes sum to ``total``, not the axis' ``length``."""
    return f"Split sizes sum to {total}; expected {length}"


_SUM_MISMATCH = MessageType(split_sum_message, (types.intp, types.intp))


# ---------------------------------------------------------------- typing


def _view_type(x, sizes, axis: int):
    """The type of each view; a TypingError unless ``x`` is an array with ``axis`` and ``sizes`` an integer
    vector. A C-contiguous ``x`` split along its first axis gives C-contiguous views; any other, views of no
    known layout."""
    if not isinstance(x, types.Array) or not 0 <= axis < x.ndim:
        raise errors.TypingError(f"split_views: x must be an array with axis {axis}, got {x}")
    if not (isinstance(sizes, types.Array) and sizes.ndim == 1 and isinstance(sizes.dtype, types.Integer)):
        raise errors.TypingError(f"split_views: sizes must be an integer vector, got {sizes}")
    layout = "C" if axis == 0 and x.layout == "C" else "A"
    return types.Array(x.dtype, x.ndim, layout)


# ---------------------------------------------------------------- emitters


def _emit_sizes(context, builder, sizes_type, sizes, count: int, name: str) -> list:
    """The ``count`` sizes as ``intp``\\ s, after stock's checks of their count and signs."""
    array, (length,), (stride,) = emit_array(context, builder, sizes_type, sizes, name)
    with cgutils.if_unlikely(builder, builder.icmp_signed("!=", length, _INTP(count), name=f"{name}.count.differs")):
        context.call_conv.return_user_exc(builder, ValueError, (COUNT_ERROR,))
    values, negative = [], cgutils.false_bit
    for k in range(count):
        pointer = cgutils.get_item_pointer2(
            context, builder, array.data, [length], [stride], sizes_type.layout, [_INTP(k)]
        )
        item = load_item(context, builder, sizes_type, pointer)
        value = named(context.cast(builder, item, sizes_type.dtype, types.intp), f"{name}{k}")
        negative = builder.or_(negative, builder.icmp_signed("<", value, _INTP(0)), name=f"{name}.negative")
        values.append(value)
    with cgutils.if_unlikely(builder, negative):
        context.call_conv.return_user_exc(builder, ValueError, (NEGATIVE_ERROR,))
    return values


# ---------------------------------------------------------------- intrinsics


@cache
def split_views(axis: int, count: int):
    """The intrinsic ``split(x, sizes)``: ``count`` consecutive views of ``x`` along ``axis``, the ``k``-th of
    length ``sizes[k]``, in a tuple, once ``sizes`` passed stock's checks (else stock's ValueError)."""

    @intrinsic
    def split(typingctx, x, sizes):
        view_type = _view_type(x, sizes, axis)
        returned = types.UniTuple(view_type, count)

        def codegen(context, builder, signature, args):
            names = call_names(2, count)
            name = names.arguments[0]
            lengths = _emit_sizes(context, builder, sizes, args[1], count, names.arguments[1])
            array, shapes, strides = emit_array(context, builder, x, args[0], name)
            total = _INTP(0)
            for length in lengths:
                total = builder.add(total, length, name="split.total")
            with cgutils.if_unlikely(builder, builder.icmp_signed("!=", total, shapes[axis], name="split.sum.differs")):
                raise_formatted(context, builder, ValueError, _SUM_MISMATCH, (total, shapes[axis]))
            views, start = [], _INTP(0)
            data = builder.ptrtoint(array.data, _INTP, name=f"{name}.address")
            for k, length in enumerate(lengths):
                out = names.outputs[k]
                offset = builder.mul(start, strides[axis], name=f"{out}.offset")
                pointer = builder.inttoptr(builder.add(data, offset), array.data.type, name=f"{out}.data")
                view_shapes = [length if d == axis else shapes[d] for d in range(x.ndim)]
                view = make_view(context, builder, x, array, view_type, pointer, view_shapes, strides)
                named(view._getpointer(), f"{out}.struct")
                views.append(impl_ret_borrowed(context, builder, view_type, named(view._getvalue(), out)))
                start = builder.add(start, length, name="split.start")
            return context.make_tuple(builder, returned, views)

        return returned(x, sizes), codegen

    return split
