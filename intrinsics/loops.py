"""One loop nest over an elementwise function and the reductions of its results, emitted with llvmlite.

`loop_intrinsic(spec)` makes the intrinsic ``loop(function, inputs)``: ``inputs`` a tuple of arrays of one
ndim (broadcast as ``spec.broadcastable`` says) and scalars (the same at every element), ``function`` an
``@njit`` scalar function of one value per input returning one value per output (a tuple, or a single value).
`node_loop_intrinsic` is the same loop as a function of the inputs, whose scalar function may be an intrinsic.
Each output (`LoopOutput`) is an array of the loop's shape (C order, or written into an input in place), a
full reduction of the function's values into an accumulator on the stack, which LLVM keeps in a register,
handed out as a native scalar or a 0-d array, or a reduction over some axes, accumulated in an array of the
others. An array output of a 1-d loop may also be written within a new, longer vector (a join's output), which
the loop returns whole. The function is typed once, for the inputs' element types, and called at each element
(LLVM inlines it). For ``spec.broadcastable = ((False,), None)`` and outputs ``(array float64, sum float64)``, ``loop(f,
(x, s))`` is, as Python::

    n = x.shape[0]
    y = np.empty(n)  # the array output
    total = 0.0  # the accumulator, a register
    for i in range(n):
        y[i], value = f(x[i], s)
        total = total + value  # fadd reassoc contract: split across vector lanes, fused with a product
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

from intrinsics.functions import call_as_function
from intrinsics.reduction import combine_rule

__all__ = ["LoopOutput", "LoopSpec", "loop_intrinsic", "node_loop_intrinsic"]

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
    into: int | None = None
    """An array output written into input ``into`` (in place: an array of the output's dtype and of the loop's
    shape, broadcast in no axis), which it returns, instead of a new array. A read-only input (such as
    ``np.broadcast_to``'s view, whose elements share memory) is not written: the output is a new array."""
    axes: tuple[int, ...] | None = None
    """A reduction over these axes only: an array of the other axes (C order), accumulated in place, so its
    ``acc_dtype`` is its ``dtype``. None: over every axis."""
    within: tuple[int, int] | None = None
    """``(before, after)``: an array output of a 1-d loop of ``n`` elements written at offset ``before`` of a
    new vector of ``before + n + after`` elements, which the loop returns whole: the output of a join of the
    output with entries of those static lengths, which `intrinsics.join.filled_join` writes around it."""

    @property
    def partial(self) -> bool:
        return self.reduce is not None and self.axes is not None


@dataclass(frozen=True)
class LoopSpec:
    broadcastable: tuple
    """Per input: None for a scalar, else the array's static broadcastable flags (one per dimension)."""
    outputs: tuple[LoopOutput, ...]

    @property
    def ndim(self) -> int:
        return len(next(b for b in self.broadcastable if b is not None))


def _written_into(output: LoopOutput, ndim: int, inputs) -> int | None:
    """The input ``output`` is written into: its ``into``, unless that input is read-only (then None)."""
    if output.into is None:
        return None
    target, dtype = inputs[output.into], from_dtype(output.dtype)
    if not isinstance(target, types.Array) or target.dtype != dtype or target.ndim != ndim:
        raise errors.TypingError(f"loop: cannot write a {dtype} output into input {output.into}, a {target}")
    return output.into if target.mutable else None


def _output_type(output: LoopOutput, ndim: int, inputs, into: int | None):
    dtype = from_dtype(output.dtype)
    if output.within is not None and (ndim != 1 or output.reduce is not None or output.into is not None):
        raise errors.TypingError(f"loop: only a new array output of a 1-d loop is written within a vector: {output}")
    if into is not None:
        return inputs[into]
    if output.reduce is None:
        return types.Array(dtype, ndim, "C")
    if output.partial:
        if np.dtype(output.acc_dtype) != np.dtype(output.dtype):
            raise errors.TypingError(f"loop: a reduction over some axes accumulates in its dtype, not {output}")
        return types.Array(dtype, ndim - len(output.axes), "C")
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
    """An array's pieces, read once before the loop: ``value`` is what is handed out (the array's struct), the
    others address its elements."""

    def __init__(self, value, array_type, data, shapes, strides):
        self.value = value
        self.type = array_type
        self.data = data
        self.shapes = shapes
        self.strides = strides

    @classmethod
    def of(cls, context, builder, array_type, value):
        """The pieces of array ``value``."""
        ary = context.make_array(array_type)(context, builder, value)
        shapes = cgutils.unpack_tuple(builder, ary.shape, array_type.ndim)
        strides = cgutils.unpack_tuple(builder, ary.strides, array_type.ndim)
        return cls(value, array_type, ary.data, shapes, strides)

    @classmethod
    def new(cls, context, builder, array_type, shape):
        """A new array of ``array_type`` and ``shape`` (C order)."""
        return cls.of(context, builder, array_type, _empty_nd_impl(context, builder, array_type, shape)._getvalue())

    def pointer(self, context, builder, indices, broadcastable=None):
        at = indices if broadcastable is None else [_INTP(0) if b else i for i, b in zip(indices, broadcastable)]
        return cgutils.get_item_pointer2(context, builder, self.data, self.shapes, self.strides, self.type.layout, at)

    def load(self, context, builder, indices, broadcastable):
        return context.unpack_value(builder, self.type.dtype, self.pointer(context, builder, indices, broadcastable))

    def store(self, context, builder, indices, value):
        context.pack_value(builder, self.type.dtype, value, self.pointer(context, builder, indices))


def _window(context, builder, vector_type, within, n) -> _Array:
    """Elements ``[before, before + n)`` of a new vector of ``before + n + after`` (``LoopOutput.within``),
    addressed as an array of ``n``; its ``value`` is the whole vector."""
    before, after = within
    vector = _Array.new(context, builder, vector_type, [builder.add(n, _INTP(before + after))])
    return _Array(vector.value, vector_type, builder.gep(vector.data, [_INTP(before)]), [n], vector.strides)


def _new_output(context, builder, output: LoopOutput, array_type, shape):
    if output.within is not None:
        return _window(context, builder, array_type, output.within, shape[0])
    return _Array.new(context, builder, array_type, shape)


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


def _typed_loop(spec: LoopSpec, typingctx, function, inputs):
    """``spec``'s loop typed for ``function`` (the type of an ``@njit`` function or of an intrinsic) and the
    tuple type ``inputs``: the tuple type of its outputs and ``emit(context, builder, inputs value)``, which
    emits the loop and returns that tuple."""
    ndim = spec.ndim
    if not isinstance(function, types.Dispatcher | types.Function):
        raise errors.TypingError(f"loop: function must be an @njit function or an intrinsic, got {function}")
    _check_inputs(spec, inputs)
    into = [_written_into(output, ndim, inputs) for output in spec.outputs]
    output_types = [_output_type(output, ndim, inputs, k) for output, k in zip(spec.outputs, into)]
    elements = [t.dtype if isinstance(t, types.Array) else t for t in inputs]
    function_sig = typingctx.resolve_function_type(function, tuple(elements), {})
    if function_sig is None:
        raise errors.TypingError(f"loop: cannot call {function} on {tuple(elements)}")
    results = function_sig.return_type
    result_types = list(results) if isinstance(results, types.BaseTuple) else [results]
    if len(result_types) != len(spec.outputs):
        raise errors.TypingError(f"loop: {function} returns {results}, not {len(spec.outputs)} values")
    accumulators = [None if o.reduce is None else from_dtype(o.acc_dtype) for o in spec.outputs]
    rules = [None if o.reduce is None else combine_rule(o.reduce, acc) for o, acc in zip(spec.outputs, accumulators)]
    return_type = types.Tuple(output_types)

    def emit(context, builder, inputs_value):
        values = [builder.extract_value(inputs_value, k) for k in range(len(inputs))]
        arrays = {
            k: _Array.of(context, builder, t, v)
            for k, (t, v) in enumerate(zip(inputs, values))
            if isinstance(t, types.Array)
        }
        shape = _emit_shape(context, builder, arrays, spec)
        outputs = [
            None if o.reduce is not None else arrays[k] if k is not None else _new_output(context, builder, o, t, shape)
            for o, k, t in zip(spec.outputs, into, output_types)
        ]
        slots = [
            cgutils.alloca_once_value(builder, context.get_constant(acc, o.identity), name="loop.acc")
            if o.reduce is not None and not o.partial
            else None
            for o, acc in zip(spec.outputs, accumulators)
        ]
        kept = [None if not o.partial else [d for d in range(ndim) if d not in o.axes] for o in spec.outputs]
        for j, o in enumerate(spec.outputs):
            if o.partial:
                outputs[j] = _Array.new(context, builder, output_types[j], [shape[d] for d in kept[j]])
                identity = context.get_constant(accumulators[j], o.identity)
                with cgutils.loop_nest(builder, outputs[j].shapes, _INTP) as at:
                    outputs[j].store(context, builder, at, identity)
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
            for j, (item, item_type) in enumerate(zip(items, result_types)):
                if kept[j] is not None:
                    at = [indices[d] for d in kept[j]]
                    value = context.cast(builder, item, item_type, accumulators[j])
                    total = rules[j](context, builder, outputs[j].load(context, builder, at, None), value)
                    outputs[j].store(context, builder, at, total)
                elif outputs[j] is not None:
                    dtype = output_types[j].dtype
                    outputs[j].store(context, builder, indices, context.cast(builder, item, item_type, dtype))
                else:
                    value = context.cast(builder, item, item_type, accumulators[j])
                    builder.store(rules[j](context, builder, builder.load(slots[j]), value), slots[j])
        returned = []
        for j, (o, t) in enumerate(zip(spec.outputs, output_types)):
            if into[j] is not None:
                # the input's array, handed out once more
                context.nrt.incref(builder, t, values[into[j]])
                returned.append(values[into[j]])
            elif o.within is not None or o.reduce is None or o.partial:
                returned.append(outputs[j].value)
            else:
                total = context.cast(builder, builder.load(slots[j]), accumulators[j], from_dtype(o.dtype))
                if not o.scalar:
                    cell = _Array.new(context, builder, t, [])
                    cell.store(context, builder, [], total)
                    total = cell.value
                returned.append(total)
        return context.make_tuple(builder, return_type, returned)

    return return_type, emit


def _check_spec(spec: LoopSpec) -> None:
    if all(b is None for b in spec.broadcastable):
        raise ValueError("loop_intrinsic: a loop needs at least one array input")


def loop_intrinsic(spec: LoopSpec):
    """The intrinsic ``loop(function, inputs)`` running ``spec``'s loop: a tuple of one value per output."""
    _check_spec(spec)

    @intrinsic
    def loop(typingctx, function, inputs):
        return_type, emit = _typed_loop(spec, typingctx, function, inputs)

        def codegen(context, builder, signature, args):
            # A function of its own, so that numba prunes its references to the inputs around the call.
            def emit_body(body_builder, decoded):
                return emit(context, body_builder, decoded[1])

            return call_as_function(context, builder, signature, args, emit_body, "llvm_loop")

        return return_type(function, inputs), codegen

    return loop


def node_loop_intrinsic(spec: LoopSpec, function):
    """The intrinsic ``node(*inputs)``: ``loop_intrinsic(spec)``'s ``loop(function, inputs)``, or its one
    value when the loop has one output. ``function`` is the scalar function: an ``@njit`` function, or an
    intrinsic, whose code is then emitted in the loop's.

    A graph function calling it emits the loop in its own module. An ``@njit`` function around ``loop``
    would be a module of its own, which numba optimizes and compiles to machine code before linking it into
    the graph's, where LLVM optimizes and compiles it again."""
    _check_spec(spec)
    single = len(spec.outputs) == 1

    @intrinsic
    def node(typingctx, *inputs):
        arguments = types.StarArgTuple(inputs)
        return_type, emit = _typed_loop(spec, typingctx, typingctx.resolve_value_type(function), arguments)

        def codegen(context, builder, signature, args):
            def emit_body(body_builder, decoded):
                result = emit(context, body_builder, decoded[0])
                return body_builder.extract_value(result, 0) if single else result

            return call_as_function(context, builder, signature, args, emit_body, "llvm_loop")

        return (return_type[0] if single else return_type)(arguments), codegen

    return node
