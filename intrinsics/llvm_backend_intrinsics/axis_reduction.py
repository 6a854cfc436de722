"""Reductions over some axes of an array, into a new array of the others: PyTensor's ``CAReduce`` with an axis
(``x.sum(axis=1)``, ``x.max(axis=0)``), emitted where it is called.

Stock numba compiles each such node as an ``@njit`` function of its own, generated per node, which numba types and
lowers in every fresh process. Here the node is a loop nest in the graph's module, in one of two orders, both
PyTensor's values (each element cast to ``acc_dtype`` and combined, starting from ``identity``; the result cast
to ``out_dtype``):

- the last axis reduced, or an accumulator of another dtype than the output's: per output element, an accumulator
  in a stack slot (a register, once LLVM promotes it) folds the reduced axes, innermost last, then is stored;
- otherwise (the last axis kept): the output starts at ``identity`` and the input is read once in order, each
  element combined into its output element: along the last axis both are walked contiguously.

The combine steps are `llvm_backend_intrinsics.reduction.combine_rule`'s, so float sums carry the same ``reassoc``
licence, and may differ from numpy's pairwise sums in the last bits, as `full_reduce`'s do.

Layering: typing (`_types`) -> the ``@intrinsic`` glue (`axis_reduce`) -> the emitters ``_emit_*``.

    axis_reduce((1,), "add", 0.0, "float64", "float64")(x)  # x.sum(axis=1), a new C-contiguous array
"""

from functools import cache

import numpy as np
from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic
from numba.np import numpy_support
from numba.np.arrayobj import _empty_nd_impl, load_item, store_item

from llvm_backend_intrinsics.naming import alloca_once_value, call_names, named
from llvm_backend_intrinsics.reduction import combine_rule
from llvm_backend_intrinsics.views import emit_array

__all__ = ["axis_reduce"]

_INTP = cgutils.intp_t


# ---------------------------------------------------------------- typing


def _types(x, axes: tuple, acc_dtype: str, out_dtype: str):
    """The accumulator's and the output's numba types; a TypingError unless ``x`` is an array of numbers or
    bools with every axis of ``axes`` (distinct)."""
    if not isinstance(x, types.Array) or not isinstance(x.dtype, types.Number | types.Boolean):
        raise errors.TypingError(f"axis_reduce: x must be an array of numbers or bools, got {x}")
    if len(set(axes)) != len(axes) or not all(0 <= axis < x.ndim for axis in axes):
        raise errors.TypingError(f"axis_reduce: axes {axes} are not distinct axes of an array of {x.ndim}")
    acc = numpy_support.from_dtype(np.dtype(acc_dtype))
    out = numpy_support.from_dtype(np.dtype(out_dtype))
    return acc, types.Array(out, x.ndim - len(axes), "C")


# ---------------------------------------------------------------- emitters


def _merged(axes: tuple, kept: list, outer: tuple, inner: tuple) -> list:
    """The input's index from the output's (``outer``, over ``kept``) and the reduced axes' (``inner``)."""
    outer, inner = iter(outer), iter(inner)
    return [next(inner) if axis in axes else next(outer) for axis in range(len(kept) + len(axes))]


def _emit_element(context, builder, x, array, shapes, strides, index, acc, name: str):
    """``x[index]`` cast to ``acc``."""
    pointer = cgutils.get_item_pointer2(context, builder, array.data, shapes, strides, x.layout, index)
    element = named(load_item(context, builder, x, pointer), f"{name}.element")
    return named(context.cast(builder, element, x.dtype, acc), f"{name}.element.cast")


def _emit_in_registers(context, builder, x, array, shapes, strides, axes, kept, acc, rule, start, out_type, result):
    """Per output element, the reduced axes folded into a stack slot, then stored cast."""
    slot = alloca_once_value(builder, start, "acc")
    out_shapes = [shapes[axis] for axis in kept]
    with cgutils.loop_nest(builder, out_shapes, _INTP) as outer:
        builder.store(start, slot)
        with cgutils.loop_nest(builder, [shapes[axis] for axis in axes], _INTP) as inner:
            index = _merged(axes, kept, outer, inner)
            value = _emit_element(context, builder, x, array, shapes, strides, index, acc, "x")
            builder.store(rule(context, builder, builder.load(slot, name="acc.value"), value), slot)
        total = named(context.cast(builder, builder.load(slot, name="acc.value"), acc, out_type.dtype), "total")
        out_strides = cgutils.unpack_tuple(builder, result.strides, out_type.ndim)
        pointer = cgutils.get_item_pointer2(context, builder, result.data, out_shapes, out_strides, "C", list(outer))
        store_item(context, builder, out_type, total, pointer)


def _emit_in_output(context, builder, x, array, shapes, strides, axes, kept, acc, rule, start, out_type, result):
    """The output filled with ``start``, then every input element combined into its output element, in the
    input's order (``acc`` is the output's dtype)."""
    out_shapes = [shapes[axis] for axis in kept]
    out_strides = cgutils.unpack_tuple(builder, result.strides, out_type.ndim)
    with cgutils.loop_nest(builder, out_shapes, _INTP) as outer:
        pointer = cgutils.get_item_pointer2(context, builder, result.data, out_shapes, out_strides, "C", list(outer))
        store_item(context, builder, out_type, start, pointer)
    with cgutils.loop_nest(builder, shapes, _INTP) as index:
        value = _emit_element(context, builder, x, array, shapes, strides, list(index), acc, "x")
        outer = [index[axis] for axis in kept]
        pointer = cgutils.get_item_pointer2(context, builder, result.data, out_shapes, out_strides, "C", outer)
        current = named(load_item(context, builder, out_type, pointer), "out.element")
        store_item(context, builder, out_type, rule(context, builder, current, value), pointer)


# ---------------------------------------------------------------- intrinsics


@cache
def axis_reduce(axes: tuple, op: str, identity, acc_dtype: str, out_dtype: str):
    """The intrinsic ``reduce(x)``: ``x`` reduced by ``op`` (one of `llvm_backend_intrinsics.reduction.OPS`) over
    ``axes``, each element cast to ``acc_dtype`` and the accumulator started at ``identity``, into a new
    C-contiguous array of ``out_dtype`` over the other axes, in their order (an empty reduced extent gives
    ``identity``)."""
    axes = tuple(sorted(axes))

    @intrinsic
    def reduce(typingctx, x):
        acc, out_type = _types(x, axes, acc_dtype, out_dtype)
        rule = combine_rule(op, acc)
        kept = [axis for axis in range(x.ndim) if axis not in axes]
        in_registers = x.ndim - 1 in axes or acc != out_type.dtype

        def codegen(context, builder, signature, args):
            names = call_names(1, 1)
            name, out = names.arguments[0], names.outputs[0]
            array, shapes, strides = emit_array(context, builder, x, args[0], name)
            result = _empty_nd_impl(context, builder, out_type, [shapes[axis] for axis in kept])
            named(result.data, f"{out}.data")
            start = named(context.get_constant(acc, identity), "identity")
            emit = _emit_in_registers if in_registers else _emit_in_output
            emit(context, builder, x, array, shapes, strides, axes, kept, acc, rule, start, out_type, result)
            return impl_ret_new_ref(context, builder, out_type, named(result._getvalue(), out))

        return out_type(x), codegen

    return reduce
