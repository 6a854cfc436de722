"""One loop nest over an elementwise function and the full reductions of its results, emitted with llvmlite.

`loop_intrinsic(spec)` makes the intrinsic ``loop(function, inputs)``: ``inputs`` a tuple of arrays of one
ndim (broadcast as ``spec.broadcastable`` says) and scalars (the same at every element), ``function`` an
``@njit`` scalar function of one value per input returning one value per output (a tuple, or a single value).
Each output is either an array of the loop's shape (C order) or a full reduction of the function's values
into an accumulator on the stack, which LLVM keeps in a register, handed out as a native scalar or a 0-d
array. The function is typed once, for the inputs' element types, and called at each element (LLVM inlines
it). For ``spec.broadcastable = ((False,), None)`` and outputs ``(array float64, sum float64)``, ``loop(f,
(x, s))`` is, as Python::

    n = x.shape[0]
    y = np.empty(n)  # the array output
    total = 0.0  # the accumulator, a register
    for i in range(n):
        y[i], value = f(x[i], s)
        total = total + value  # fadd reassoc: LLVM may split it across vector lanes
    return y, total

The loop's shape is, per dimension, the shape of the inputs not broadcastable there, which must all agree
(else ``ValueError``, before anything is allocated), or 1 where every input is broadcastable.
"""

from dataclasses import dataclass

import numpy as np
from numba.core import cgutils, errors, types
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl
from numba.np.numpy_support import from_dtype

from intrinsics.reduction import combine_rule

__all__ = ["LoopOutput", "LoopSpec", "loop_intrinsic"]

_INTP = cgutils.intp_t


@dataclass(frozen=True)
class LoopOutput:
    """One output of a loop: an array of the loop's shape (``reduce`` None), or the full reduction ``reduce``
    (an op of `intrinsics.reduction.OPS`) of the function's values, accumulated in ``acc_dtype`` from
    ``identity``."""

    dtype: np.dtype
    reduce: str | None = None
    acc_dtype: np.dtype | None = None
    identity: object = None
    scalar: bool = False
    """A reduction handed out as a native scalar (else a 0-d array)."""


@dataclass(frozen=True)
class LoopSpec:
    broadcastable: tuple
    """Per input: None for a scalar, else the array's static broadcastable flags (one per dimension)."""
    outputs: tuple[LoopOutput, ...]

    @property
    def ndim(self) -> int:
        return len(next(b for b in self.broadcastable if b is not None))


def _output_type(output: LoopOutput, ndim: int):
    dtype = from_dtype(output.dtype)
    if output.reduce is None:
        return types.Array(dtype, ndim, "C")
    return dtype if output.scalar else types.Array(dtype, 0, "C")


def _check_inputs(spec: LoopSpec, inputs) -> None:
    if not isinstance(inputs, types.BaseTuple) or len(inputs) != len(spec.broadcastable):
        raise errors.TypingError(f"loop: expected a tuple of {len(spec.broadcastable)} inputs, got {inputs}")
    for k, (kind, broadcastable) in enumerate(zip(inputs, spec.broadcastable, strict=True)):
        if broadcastable is None:
            if not isinstance(kind, types.Number | types.Boolean):
                raise errors.TypingError(f"loop: input {k} must be a scalar, got {kind}")
        elif not isinstance(kind, types.Array) or kind.ndim != len(broadcastable):
            raise errors.TypingError(f"loop: input {k} must be an array of {len(broadcastable)} dimensions, got {kind}")


def _emit_shape(context, builder, arrays, spec: LoopSpec):
    """The loop's shape (intp per dimension); raises ValueError when inputs disagree."""
    shape = []
    for d in range(spec.ndim):
        sizes = [(k, ary.shapes[d]) for k, ary in arrays.items() if not spec.broadcastable[k][d]]
        if not sizes:
            shape.append(_INTP(1))
            continue
        first_input, size = sizes[0]
        for k, other in sizes[1:]:
            with builder.if_then(builder.icmp_signed("!=", size, other), likely=False):
                message = f"Elemwise input {k} has an incompatible shape in axis {d} (not input {first_input}'s)"
                context.call_conv.return_user_exc(builder, ValueError, (message,))
        shape.append(size)
    return shape


class _Array:
    """An input array's pieces, read once before the loop."""

    def __init__(self, context, builder, array_type, value):
        ary = context.make_array(array_type)(context, builder, value)
        self.type = array_type
        self.data = ary.data
        self.shapes = cgutils.unpack_tuple(builder, ary.shape, array_type.ndim)
        self.strides = cgutils.unpack_tuple(builder, ary.strides, array_type.ndim)

    def load(self, context, builder, indices, broadcastable):
        at = [_INTP(0) if b else i for i, b in zip(indices, broadcastable, strict=True)]
        ptr = cgutils.get_item_pointer2(context, builder, self.data, self.shapes, self.strides, self.type.layout, at)
        return context.unpack_value(builder, self.type.dtype, ptr)


def _call_arguments(context, builder, values, value_types, parameters):
    """``values`` cast to the function's ``parameters``; a ``*args`` function's last parameter is the tuple of
    the values from there on (numba types such a function's signature so)."""
    parameters = list(parameters)
    star = bool(parameters) and isinstance(parameters[-1], types.StarArgTuple | types.StarArgUniTuple)
    fixed = len(parameters) - 1 if star else len(parameters)
    cast = [context.cast(builder, v, t, p) for v, t, p in zip(values[:fixed], value_types, parameters)]
    if not star:
        return cast
    packed = parameters[-1]
    rest = [context.cast(builder, v, t, p) for v, t, p in zip(values[fixed:], value_types[fixed:], packed.types)]
    return [*cast, context.make_tuple(builder, packed, rest)]


def loop_intrinsic(spec: LoopSpec):
    """The intrinsic ``loop(function, inputs)`` running ``spec``'s loop: a tuple of one value per output."""
    if all(b is None for b in spec.broadcastable):
        raise ValueError("loop_intrinsic: a loop needs at least one array input")
    ndim = spec.ndim
    output_types = [_output_type(output, ndim) for output in spec.outputs]

    @intrinsic
    def loop(typingctx, function, inputs):
        if not isinstance(function, types.Dispatcher):
            raise errors.TypingError(f"loop: function must be an @njit function, got {function}")
        _check_inputs(spec, inputs)
        elements = [t.dtype if isinstance(t, types.Array) else t for t in inputs]
        function_sig = typingctx.resolve_function_type(function, tuple(elements), {})
        if function_sig is None:
            raise errors.TypingError(f"loop: cannot call {function} on {tuple(elements)}")
        results = function_sig.return_type
        result_types = list(results) if isinstance(results, types.BaseTuple) else [results]
        if len(result_types) != len(spec.outputs):
            raise errors.TypingError(f"loop: {function} returns {results}, not {len(spec.outputs)} values")
        accumulators = [None if o.reduce is None else from_dtype(o.acc_dtype) for o in spec.outputs]
        rules = [
            None if o.reduce is None else combine_rule(o.reduce, acc) for o, acc in zip(spec.outputs, accumulators)
        ]
        return_type = types.Tuple(output_types)

        def codegen(context, builder, signature, args):
            _, inputs_value = args
            values = [builder.extract_value(inputs_value, k) for k in range(len(inputs))]
            arrays = {
                k: _Array(context, builder, t, v)
                for k, (t, v) in enumerate(zip(inputs, values))
                if isinstance(t, types.Array)
            }
            shape = _emit_shape(context, builder, arrays, spec)
            outputs = [
                _empty_nd_impl(context, builder, t, shape) if o.reduce is None else None
                for o, t in zip(spec.outputs, output_types)
            ]
            slots = [
                None
                if acc is None
                else cgutils.alloca_once_value(builder, context.get_constant(acc, o.identity), name="loop.acc")
                for o, acc in zip(spec.outputs, accumulators)
            ]
            impl = context.get_function(function, function_sig)
            with cgutils.loop_nest(builder, shape, _INTP) as indices:
                arguments = [
                    arrays[k].load(context, builder, indices, spec.broadcastable[k]) if k in arrays else v
                    for k, v in enumerate(values)
                ]
                result = impl(builder, _call_arguments(context, builder, arguments, elements, function_sig.args))
                items = (
                    [builder.extract_value(result, j) for j in range(len(result_types))]
                    if isinstance(results, types.BaseTuple)
                    else [result]
                )
                for j, (o, item, item_type) in enumerate(zip(spec.outputs, items, result_types)):
                    if o.reduce is None:
                        out = outputs[j]
                        ptr = cgutils.get_item_pointer2(
                            context,
                            builder,
                            out.data,
                            shape,
                            cgutils.unpack_tuple(builder, out.strides, ndim),
                            "C",
                            indices,
                        )
                        value = context.cast(builder, item, item_type, output_types[j].dtype)
                        context.pack_value(builder, output_types[j].dtype, value, ptr)
                    else:
                        value = context.cast(builder, item, item_type, accumulators[j])
                        builder.store(rules[j](context, builder, builder.load(slots[j]), value), slots[j])
            returned = []
            for j, (o, t) in enumerate(zip(spec.outputs, output_types)):
                if o.reduce is None:
                    returned.append(outputs[j]._getvalue())
                    continue
                total = context.cast(builder, builder.load(slots[j]), accumulators[j], from_dtype(o.dtype))
                if o.scalar:
                    returned.append(total)
                    continue
                cell = _empty_nd_impl(context, builder, t, [])
                context.pack_value(builder, t.dtype, total, cell.data)
                returned.append(cell._getvalue())
            return context.make_tuple(builder, return_type, returned)

        return return_type(function, inputs), codegen

    return loop
