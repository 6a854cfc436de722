"""Writes through a basic index, emitted where they are called: PyTensor's ``IncSubtensor``, ``x[2:] = y``,
``x[i] += y``, ``x[:, 0] = s``.

Stock numba compiles each such node as an ``@njit`` function generated for it (a copy, the indexing, a loop nest
per node), typed and lowered in every fresh process. Here it is a loop nest of the graph's module, over the view
numba's own ``basic_indexing`` gives (`llvm_backend_intrinsics.views`), so the bounds checks and their errors are
stock's (its functions are compiled with ``boundscheck=True``).

What it keeps true: every index is checked on ``x`` before anything is written or copied; an update value that does
not broadcast into the indexed view raises stock's ``ValueError`` (`llvm_backend_intrinsics.indexed`'s check) before
anything is written; an update writes
into ``x`` itself when ``inplace``, else into a C-contiguous copy, and returns what it wrote into.

Layering: typing (`_check_types`, `llvm_backend_intrinsics.views.index_types_of`) -> the ``@intrinsic`` glue
(`basic_update`) -> the emitters ``_emit_*``.

    basic_update(((0, None, None),), "inc", False)(x, y, start)  # z = x.copy(); z[start:] += y; z
"""

import operator
from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_borrowed, impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _array_copy, basic_indexing, load_item

from llvm_backend_intrinsics.indexed import VALUE_BROADCAST_ERROR, broadcast_at, emit_store, emit_value_check
from llvm_backend_intrinsics.naming import call_names
from llvm_backend_intrinsics.views import emit_array, emit_indices, index_types_of

__all__ = ["KINDS", "VALUE_BROADCAST_ERROR", "basic_update"]

_INTP = cgutils.intp_t

KINDS = ("set", "inc")


# ---------------------------------------------------------------- typing


def _check_types(typingctx, kind: str, entries: tuple, x, y, arguments):
    """The indices' numba types and the indexed view's ndim; a TypingError unless ``x`` is an array of numbers
    ``entries`` index, and ``y`` a number or an array of numbers of no more axes than the view."""
    if kind not in KINDS:
        raise errors.TypingError(f"basic_update: kind must be one of {KINDS}, got {kind!r}")
    if not (isinstance(x, types.Array) and isinstance(x.dtype, types.Number)):
        raise errors.TypingError(f"basic_update: x must be an array of numbers, got {x}")
    index_types = index_types_of(entries, arguments)
    typed = typingctx.resolve_function_type(operator.getitem, (x, types.BaseTuple.from_types(index_types)), {})
    if typed is None:
        raise errors.TypingError(f"basic_update: {x} cannot be indexed by {tuple(index_types)}")
    view_ndim = typed.return_type.ndim if isinstance(typed.return_type, types.Array) else 0
    dtype = y.dtype if isinstance(y, types.Array) else y
    if not isinstance(dtype, types.Number) or (isinstance(y, types.Array) and y.ndim > view_ndim):
        raise errors.TypingError(f"basic_update: y must be a number or an array of numbers that fits, got {y}")
    return index_types, view_ndim


# ---------------------------------------------------------------- emitters


class _Value:
    """The update value: a number, or an array (taken apart) read broadcast into the view."""

    def __init__(self, context, builder, y, value):
        self.context, self.builder, self.y, self.value = context, builder, y, value
        if isinstance(y, types.Array):
            self.array, self.shapes, self.strides = emit_array(context, builder, y, value, "y")

    def at(self, at, dtype):
        """The value at view position ``at``, as ``dtype``."""
        context, builder, y = self.context, self.builder, self.y
        if not isinstance(y, types.Array):
            return context.cast(builder, self.value, y, dtype)
        within = broadcast_at(builder, self.shapes, at)
        pointer = cgutils.get_item_pointer2(
            context, builder, self.array.data, self.shapes, self.strides, y.layout, within
        )
        return context.cast(builder, load_item(context, builder, y, pointer), y.dtype, dtype)


def _emit_update(context, builder, kind: str, target_type, target, index_types, indices, value: _Value) -> None:
    """Write ``value`` through ``target[indices]`` (bounds already checked on ``x``, whose shape it has)."""
    array = context.make_array(target_type)(context, builder, target)
    data, shapes, strides = basic_indexing(context, builder, target_type, array, index_types, indices)
    if not shapes:
        emit_store(context, builder, kind, target_type, data, value.at([], target_type.dtype))
        return
    with cgutils.loop_nest(builder, shapes, _INTP) as at:
        pointer = cgutils.get_item_pointer2(context, builder, data, shapes, strides, "A", list(at))
        emit_store(context, builder, kind, target_type, pointer, value.at(list(at), target_type.dtype))


# ---------------------------------------------------------------- intrinsic


@cache
def basic_update(entries: tuple, kind: str, inplace: bool):
    """The intrinsic ``update(x, y, *arguments)``: ``x`` with ``x[indices] = y`` (``kind`` ``"set"``) or
    ``x[indices] += y`` (``"inc"``), ``y`` broadcast into the view, written into ``x`` itself when ``inplace``, else
    into a copy. ``entries`` are `llvm_backend_intrinsics.views.basic_index`'s."""

    @intrinsic
    def update(typingctx, x, y, *arguments):
        index_types, _ = _check_types(typingctx, kind, entries, x, y, arguments)
        result_type = x if inplace else types.Array(x.dtype, x.ndim, "C")

        def codegen(context, builder, signature, args):
            source, y_value, packed = args
            names = call_names(2 + len(arguments), 1)
            values = [builder.extract_value(packed, k, name=name) for k, name in enumerate(names.arguments[2:])]
            indices = emit_indices(context, builder, entries, arguments, values, index_types)
            array, _, _ = emit_array(context, builder, x, source, names.arguments[0])
            _, shapes, _ = basic_indexing(context, builder, x, array, index_types, indices, boundscheck=True)
            value = _Value(context, builder, y, y_value)
            if isinstance(y, types.Array):
                emit_value_check(context, builder, value.shapes, shapes)
            if inplace:
                _emit_update(context, builder, kind, x, source, index_types, indices, value)
                return impl_ret_borrowed(context, builder, result_type, source)
            target = _array_copy(context, builder, result_type(x), [source])
            _emit_update(context, builder, kind, result_type, target, index_types, indices, value)
            return impl_ret_new_ref(context, builder, result_type, target)

        return result_type(x, y, types.StarArgTuple(arguments)), codegen

    return update
