"""One loop nest over an elementwise function and the reductions of its results, emitted with llvmlite.

`loop_intrinsic(spec)` makes the intrinsic ``loop(function, inputs)``: ``inputs`` a tuple of arrays of one
ndim (broadcast as ``spec.broadcastable`` says) and scalars (the same at every element), ``function`` an
``@njit`` scalar function of one value per input returning one value per output (a tuple, or a single value).
`node_loop_intrinsic` is the same loop as a function of the inputs, whose scalar function may be an intrinsic.
Each output (`LoopOutput`) is an array of the loop's shape (C order, or written into an input in place), a
full reduction of the function's values into an accumulator on the stack, which LLVM keeps in a register,
handed out as a native scalar or a 0-d array, or a reduction over some axes, accumulated in an array of the
others. An array output of a 1-d loop may also be written within a new, longer vector (a join's output), which
the loop returns whole, or into an input that is such a vector an earlier loop made. The function is typed once,
for the inputs' element types, and called at each element (LLVM inlines it). For ``spec.broadcastable =
((False,), None)`` and outputs ``(array float64, sum float64)``, ``loop(f, (x, s))`` is, as Python::

    n = x.shape[0]
    y = np.empty(n)  # the array output
    total = 0.0  # the accumulator, a register
    for i in range(n):
        y[i], value = f(x[i], s)
        total = total + value  # fadd reassoc contract: split across vector lanes, fused with a product
    return y, total

The loop's shape is, per dimension, the shape of the inputs not broadcastable there, which must all agree
(else ``ValueError``, before anything is allocated), or 1 where every input is broadcastable.

Each float scalar input enters the loop through ``llvm.arithmetic.fence``, which fast-math's reassociation does
not cross: a value computed once for the loop stays computed once. Without it, ``r * (a / b)`` (the invariant
factors' product, ``llvm_backend.rewrites.products``) went back into the loop as ``(r * a) * (1 / b)``, two
multiplies per item, from InstCombine's ``(X / Y) * Z -> (X * Z) / Y``.

A body calling a C math function numba does not lower to an LLVM intrinsic (``log1p``, ``erf``, ``lgamma``,
...) still vectorizes: the module declares vector variants of each (`llvm_backend_intrinsics.vector_math`).
"""

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl
from numba.np.numpy_support import from_dtype

from llvm_backend_intrinsics.functions import call_as_function
from llvm_backend_intrinsics.naming import alloca_once_value, call_names, named, unpack_named
from llvm_backend_intrinsics.reduction import combine_rule
from llvm_backend_intrinsics.vector_math import declare_math_of, declare_vector_variants

__all__ = ["LoopOutput", "LoopSpec", "loop_intrinsic", "node_loop_intrinsic"]

_INTP = cgutils.intp_t


@dataclass(frozen=True)
class LoopOutput:
    """One output of a loop: an array of the loop's shape (``reduce`` None), or the full reduction ``reduce``
    (an op of `llvm_backend_intrinsics.reduction.OPS`) of the function's values, accumulated in ``acc_dtype`` from
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
    output with entries of those static lengths, which `llvm_backend_intrinsics.join.filled_join` writes around it.
    An output written into an input (``into``) takes that input as such a vector, made by an earlier loop (a
    C-contiguous, writable vector): the loop reads and writes its elements ``[before, len - after)`` as the
    input, and returns the whole vector (ValueError if it is shorter than ``before + after``)."""
    indexed: tuple[int, str] | None = None
    """``(k, mode)``: the function's values written into input ``into`` (the target: an array of the output's
    dtype and of the loop's ndim, of the loop's shape but along index ``k``'s axis) at the positions index
    ``k`` holds along that axis (`LoopSpec.indices`), added to what is there (``mode`` "inc", so repeated
    positions accumulate) or stored ("set"); the target is returned. A read-only target is copied first."""

    @property
    def partial(self) -> bool:
        return self.reduce is not None and self.axes is not None


@dataclass(frozen=True)
class LoopSpec:
    broadcastable: tuple
    """Per input: None for a scalar, else the array's static broadcastable flags (one per dimension)."""
    outputs: tuple[LoopOutput, ...]
    indices: tuple[tuple[int, bool], ...] = ()
    """Per index array (the inputs after the function's, in order; the write targets follow them): the loop
    axis it runs along and whether it is broadcastable there (of length 1, read at 0). A 1-d array of integers
    (PyTensor makes a constant one of the smallest unsigned type holding it): its element at the loop's index
    along that axis is the position there of the inputs read through it (`reads`) and of the targets written
    through it (`LoopOutput.indexed`); a negative one counts from the end, as numpy's. Every position is
    checked against every such array's length before anything is allocated or written (``IndexError``)."""
    reads: tuple[int | None, ...] = ()
    """Per input of the function: the index array it is read through (its position in `indices`), or None;
    empty for none. Its ``broadcastable`` is that of what the function reads (``x[idx]``: along the index's
    axis, the index's)."""

    @property
    def ndim(self) -> int:
        return len(next(b for b in self.broadcastable if b is not None))

    @property
    def n_inputs(self) -> int:
        """The number of inputs the loop takes: the function's, the index arrays and the write targets."""
        return len(self.broadcastable) + len(self.indices) + sum(o.indexed is not None for o in self.outputs)

    def read_through(self, k: int) -> int | None:
        """The index array function input ``k`` is read through, or None."""
        return self.reads[k] if self.reads else None


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
    if output.within is not None and (ndim != 1 or output.reduce is not None):
        raise errors.TypingError(f"loop: only an array output of a 1-d loop is written within a vector: {output}")
    if output.within is not None and output.into is not None and (into is None or inputs[into].layout != "C"):
        raise errors.TypingError(
            f"loop: input {output.into}, written within a vector, must be a writable C-contiguous vector, not "
            f"{inputs[output.into]}"
        )
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
    if not isinstance(inputs, types.BaseTuple) or len(inputs) != spec.n_inputs:
        raise errors.TypingError(f"loop: expected a tuple of {spec.n_inputs} inputs, got {inputs}")
    n = len(spec.broadcastable)
    for k, index in enumerate(inputs.types[n : n + len(spec.indices)], start=n):
        if not (isinstance(index, types.Array) and index.ndim == 1 and isinstance(index.dtype, types.Integer)):
            raise errors.TypingError(f"loop: input {k} must be a vector of indices, got {index}")
    for k, (kind, broadcastable) in enumerate(zip(inputs.types[:n], spec.broadcastable, strict=True)):
        if broadcastable is None:
            if not isinstance(kind, types.Number | types.Boolean):
                raise errors.TypingError(f"loop: input {k} must be a scalar, got {kind}")
        elif not isinstance(kind, types.Array) or kind.ndim != len(broadcastable):
            raise errors.TypingError(f"loop: input {k} must be an array of {len(broadcastable)} dimensions, got {kind}")


def _sizes(arrays, spec: LoopSpec, d: int) -> list:
    """``(input, size)`` of each input (the function's and the index arrays) that sets the loop's size in
    dimension ``d``: what the function reads there is not broadcastable."""
    n = len(spec.broadcastable)
    sizes = []
    for k, ary in arrays.items():
        if k < n:
            index = spec.read_through(k)
            if spec.broadcastable[k][d] or (index is not None and spec.indices[index][0] == d):
                continue
            sizes.append((k, ary.shapes[d]))
        elif k < n + len(spec.indices) and spec.indices[k - n] == (d, False):
            sizes.append((k, ary.shapes[0]))
    return sizes


def _emit_shape(context, builder, arrays, spec: LoopSpec):
    """The loop's shape (intp per dimension); raises ValueError when inputs disagree."""
    shape = []
    for d in range(spec.ndim):
        sizes = _sizes(arrays, spec, d)
        if not sizes:
            shape.append(_INTP(1))
            continue
        first_input, size = sizes[0]
        for k, other in sizes[1:]:
            differs = builder.icmp_signed("!=", size, other, name=f"shape{d}.differs")
            with builder.if_then(differs, likely=False):
                message = f"Elemwise input {k} has an incompatible shape in axis {d} (not input {first_input}'s)"
                context.call_conv.return_user_exc(builder, ValueError, (message,))
        shape.append(size)
    return shape


def _users(spec: LoopSpec, k: int) -> list[int]:
    """The inputs read or written through index array ``k``: the function's inputs it reads, then the
    targets."""
    readers = [j for j in range(len(spec.broadcastable)) if spec.read_through(j) == k]
    return readers + [o.into for o in spec.outputs if o.indexed is not None and o.indexed[0] == k]


def _emit_target_shapes(context, builder, arrays, spec: LoopSpec, shape) -> None:
    """ValueError unless each write target is of the loop's shape in every dimension but its index's."""
    for output in spec.outputs:
        if output.indexed is None:
            continue
        axis = spec.indices[output.indexed[0]][0]
        for d in range(spec.ndim):
            if d == axis:
                continue
            differs = builder.icmp_signed("!=", arrays[output.into].shapes[d], shape[d], name=f"shape{d}.differs")
            with builder.if_then(differs, likely=False):
                message = (
                    f"the target of an indexed Elemwise output (input {output.into}) has an incompatible shape "
                    f"in axis {d}"
                )
                context.call_conv.return_user_exc(builder, ValueError, (message,))


def _emit_index_checks(context, builder, arrays, spec: LoopSpec) -> None:
    """IndexError unless every position index array ``k`` holds is within every array read or written through
    it, along its axis: ``-size <= position < size`` for the shortest.

    The positions are checked without a branch, each one's verdict or-ed into one flag tested after the loop: a
    loop leaving at the first position outside is one LLVM cannot vectorize, and it was a pass of a compare, a
    branch and a load per position over an index as long as the data."""
    n = len(spec.broadcastable)
    for k, (axis, _) in enumerate(spec.indices):
        users = _users(spec, k)
        if not users:
            continue
        size = arrays[users[0]].shapes[axis]
        for user in users[1:]:
            other = arrays[user].shapes[axis]
            shorter = builder.icmp_signed("<", other, size, name="shorter")
            size = builder.select(shorter, other, size, name=f"index{k}.bound")
        index = arrays[n + k]
        any_outside = alloca_once_value(builder, cgutils.false_bit, name=f"index{k}.any_outside")
        with cgutils.for_range(builder, index.shapes[0]) as loop:
            position = _position(context, builder, index, loop.index)
            if index.type.dtype.signed:
                below = builder.icmp_signed("<", position, builder.neg(size, name="lowest"), name="below")
                above = builder.icmp_signed(">=", position, size, name="above")
                outside = builder.or_(below, above, name="outside")
            else:
                # a uint64 position past intp's range reads as negative: unsigned, it is past any size
                outside = builder.icmp_unsigned(">=", position, size, name="outside")
            builder.store(builder.or_(builder.load(any_outside), outside, name="any_outside"), any_outside)
        with builder.if_then(builder.load(any_outside), likely=False):
            message = f"index out of bounds in axis {axis} of an indexed Elemwise input or output (index {n + k})"
            context.call_conv.return_user_exc(builder, IndexError, (message,))


def _position(context, builder, index, at):
    """Element ``at`` of the index array ``index`` (an `_Array`), as an intp."""
    position = context.cast(builder, index.load(context, builder, [at], None), index.type.dtype, types.intp)
    return named(position, f"{index.name}.position")


def _wrapped(builder, position, size):
    """``position`` counted from the end of ``size`` when negative, as numpy's."""
    negative = builder.icmp_signed("<", position, _INTP(0), name="negative")
    return builder.select(negative, builder.add(position, size, name="from_end"), position, name="wrapped")


class _Array:
    """An array's pieces, read once before the loop: ``value`` is what is handed out (the array's struct), the
    others address its elements; ``name`` names the values read of it (``x.data``, ``x.shape0``, ``x.load``)."""

    def __init__(self, value, array_type, data, shapes, strides, name):
        self.value = value
        self.type = array_type
        self.data = data
        self.shapes = shapes
        self.strides = strides
        self.name = name

    @classmethod
    def of(cls, context, builder, array_type, value, name):
        """The pieces of array ``value``, named after ``name``."""
        ary = context.make_array(array_type)(context, builder, value)
        named(ary._getpointer(), f"{name}.struct")
        data = named(ary.data, f"{name}.data")
        shapes = unpack_named(builder, named(ary.shape, f"{name}.shape"), array_type.ndim, f"{name}.shape")
        strides = unpack_named(builder, named(ary.strides, f"{name}.strides"), array_type.ndim, f"{name}.stride")
        return cls(value, array_type, data, shapes, strides, name)

    @classmethod
    def new(cls, context, builder, array_type, shape, name):
        """A new array of ``array_type`` and ``shape`` (C order), named ``name``."""
        value = named(_empty_nd_impl(context, builder, array_type, shape)._getvalue(), name)
        return cls.of(context, builder, array_type, value, name)

    def pointer(self, context, builder, indices, broadcastable=None):
        at = indices if broadcastable is None else [_INTP(0) if b else i for i, b in zip(indices, broadcastable)]
        pointer = cgutils.get_item_pointer2(
            context, builder, self.data, self.shapes, self.strides, self.type.layout, at
        )
        return named(pointer, f"{self.name}.ptr")

    def load(self, context, builder, indices, broadcastable):
        pointer = self.pointer(context, builder, indices, broadcastable)
        return named(context.unpack_value(builder, self.type.dtype, pointer), f"{self.name}.load")

    def store(self, context, builder, indices, value):
        context.pack_value(builder, self.type.dtype, value, self.pointer(context, builder, indices))


def _window(context, builder, vector_type, within, n, name) -> _Array:
    """Elements ``[before, before + n)`` of a new vector of ``before + n + after`` (``LoopOutput.within``),
    addressed as an array of ``n``; its ``value`` is the whole vector, named ``name``."""
    before, after = within
    length = builder.add(n, _INTP(before + after), name=f"{name}.length")
    vector = _Array.new(context, builder, vector_type, [length], name)
    return _elements(builder, vector, before, n)


def _inner(context, builder, vector: _Array, within) -> _Array:
    """Elements ``[before, len - after)`` of ``vector`` (C order), its ``value`` still the whole vector: the input
    an output is written into within a vector (``LoopOutput.within``). ValueError if it is too short."""
    before, after = within
    n = builder.sub(vector.shapes[0], _INTP(before + after), name=f"{vector.name}.inner_length")
    with builder.if_then(builder.icmp_signed("<", n, _INTP(0), name=f"{vector.name}.too_short"), likely=False):
        message = f"a vector written within from element {before} to {after} from its end is too short"
        context.call_conv.return_user_exc(builder, ValueError, (message,))
    return _elements(builder, vector, before, n)


def _elements(builder, vector: _Array, before: int, n) -> _Array:
    """Elements ``[before, before + n)`` of the C-contiguous ``vector``, its ``value`` still the whole vector."""
    data = builder.gep(vector.data, [_INTP(before)], name=f"{vector.name}.inner_data")
    return _Array(vector.value, vector.type, data, [n], vector.strides, vector.name)


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


@dataclass(frozen=True)
class _Operand:
    """One output of a typed loop: its `LoopOutput`, the numba type handed out, the input it is written into
    (None: none, or a read-only one), the function's value type for it, and for a reduction its accumulator's
    type and combine rule."""

    output: LoopOutput
    type: types.Type
    into: int | None
    result_type: types.Type
    accumulator: types.Type | None = None
    rule: Callable | None = None
    axis: int | None = None
    """An indexed output's: the axis its index runs along."""

    def emitter(self, name: str) -> "_Emitter":
        """A fresh emitter of this output, of its kind, naming its values after ``name``."""
        output = self.output
        if output.indexed is not None:
            return _IndexedWrite(self, name)
        if self.into is not None:
            return _IntoInput(self, name)
        if output.reduce is None:
            return _WithinVector(self, name) if output.within is not None else _NewArray(self, name)
        return _PartialReduction(self, name) if output.partial else _FullReduction(self, name)


class _Emitter:
    """The IR of one output: before the loop, in three steps each run for every output in turn (`allocate`,
    `open_slot`, `fill`); at each element (`store`, of the function's value for it); after the loop (`value`,
    what is handed out)."""

    def __init__(self, operand: _Operand, name: str):
        self.operand = operand
        self.name = name
        self.array = None

    def allocate(self, context, builder, shape, arrays) -> None:
        """Step 1: the array an array output is written to."""

    def open_slot(self, context, builder) -> None:
        """Step 2: a full reduction's accumulator."""

    def fill(self, context, builder, shape) -> None:
        """Step 3: a reduction over some axes' array, filled with the identity."""

    def store(self, context, builder, indices, item, positions) -> None:
        """At each element: the function's value ``item`` at loop ``indices``; ``positions``, per index array,
        its position there (an intp, as held: negative ones not yet counted from the end)."""
        dtype = self.operand.type.dtype
        value = named(context.cast(builder, item, self.operand.result_type, dtype), f"{self.name}.item")
        self.array.store(context, builder, indices, value)

    def value(self, context, builder, values):
        return self.array.value


class _NewArray(_Emitter):
    """A new array of the loop's shape (C order)."""

    def allocate(self, context, builder, shape, arrays) -> None:
        self.array = _Array.new(context, builder, self.operand.type, shape, self.name)


class _WithinVector(_Emitter):
    """A new array written within a new, longer vector (a join's output), handed out whole."""

    def allocate(self, context, builder, shape, arrays) -> None:
        self.array = _window(context, builder, self.operand.type, self.operand.output.within, shape[0], self.name)


class _IntoInput(_Emitter):
    """An array written into the input it destroys, which is handed out once more."""

    def allocate(self, context, builder, shape, arrays) -> None:
        self.array = arrays[self.operand.into]

    def value(self, context, builder, values):
        value = values[self.operand.into]
        context.nrt.incref(builder, self.operand.type, value)
        return value


class _FullReduction(_Emitter):
    """A reduction over every axis, in an accumulator on the stack, handed out as a native scalar or a 0-d
    array."""

    def open_slot(self, context, builder) -> None:
        identity = context.get_constant(self.operand.accumulator, self.operand.output.identity)
        self.slot = alloca_once_value(builder, identity, f"{self.name}.acc")

    def store(self, context, builder, indices, item, positions) -> None:
        operand = self.operand
        value = named(context.cast(builder, item, operand.result_type, operand.accumulator), f"{self.name}.item")
        acc = builder.load(self.slot, name=f"{self.name}.acc.load")
        builder.store(named(operand.rule(context, builder, acc, value), f"{self.name}.acc.next"), self.slot)

    def value(self, context, builder, values):
        operand = self.operand
        acc = builder.load(self.slot, name=f"{self.name}.total")
        total = named(context.cast(builder, acc, operand.accumulator, from_dtype(operand.output.dtype)), self.name)
        if operand.output.scalar:
            return total
        cell = _Array.new(context, builder, operand.type, [], self.name)
        cell.store(context, builder, [], total)
        return cell.value


class _PartialReduction(_Emitter):
    """A reduction over some axes, accumulated in an array of the others (C order)."""

    def fill(self, context, builder, shape) -> None:
        operand = self.operand
        self.kept = [d for d in range(len(shape)) if d not in operand.output.axes]
        self.array = _Array.new(context, builder, operand.type, [shape[d] for d in self.kept], self.name)
        identity = context.get_constant(operand.accumulator, operand.output.identity)
        with cgutils.loop_nest(builder, self.array.shapes, _INTP) as at:
            self.array.store(context, builder, at, identity)

    def store(self, context, builder, indices, item, positions) -> None:
        operand = self.operand
        at = [indices[d] for d in self.kept]
        value = named(context.cast(builder, item, operand.result_type, operand.accumulator), f"{self.name}.item")
        total = operand.rule(context, builder, self.array.load(context, builder, at, None), value)
        self.array.store(context, builder, at, named(total, f"{self.name}.acc.next"))


class _IndexedWrite(_IntoInput):
    """The values written into a target at an index array's positions along its axis, added to what is there
    or stored; the target is handed out (a read-only one copied first, the copy handed out)."""

    def allocate(self, context, builder, shape, arrays) -> None:
        operand = self.operand
        if operand.into is not None:
            super().allocate(context, builder, shape, arrays)
            return
        target = arrays[operand.output.into]
        self.array = _Array.new(context, builder, operand.type, target.shapes, self.name)
        with cgutils.loop_nest(builder, target.shapes, _INTP) as at:
            self.array.store(context, builder, at, target.load(context, builder, at, None))

    def store(self, context, builder, indices, item, positions) -> None:
        operand = self.operand
        k, mode = operand.output.indexed
        at = list(indices)
        at[operand.axis] = _wrapped(builder, positions[k], self.array.shapes[operand.axis])
        pointer = self.array.pointer(context, builder, at)
        dtype = operand.type.dtype
        value = named(context.cast(builder, item, operand.result_type, dtype), f"{self.name}.item")
        if mode == "inc":
            there = named(context.unpack_value(builder, dtype, pointer), f"{self.name}.load")
            value = named(combine_rule("add", dtype)(context, builder, there, value), f"{self.name}.sum")
        context.pack_value(builder, dtype, value, pointer)

    def value(self, context, builder, values):
        if self.operand.into is None:
            return self.array.value
        return super().value(context, builder, values)


@dataclass(frozen=True)
class _TypedLoop:
    """A loop typed for a function and its inputs: the function's signature, the inputs' element types, one
    `_Operand` per output, and the tuple type the loop returns."""

    spec: LoopSpec
    function: types.Type
    signature: object
    inputs: types.BaseTuple
    elements: tuple
    operands: tuple[_Operand, ...]
    return_type: types.Tuple

    def _read_inputs(self, context, builder, inputs_value, names) -> tuple[list, dict]:
        """The inputs' values in the tuple ``inputs_value`` (float scalars fenced, `_fenced`) and the `_Array` of
        each array input (an output's ``within`` vector: its inner elements), named ``names``."""
        values = [_fenced(builder, builder.extract_value(inputs_value, k, name=name)) for k, name in enumerate(names)]
        arrays = {
            k: _Array.of(context, builder, t, v, name)
            for k, (t, v, name) in enumerate(zip(self.inputs, values, names))
            if isinstance(t, types.Array)
        }
        for operand in self.operands:
            if operand.output.within is not None and operand.into is not None:
                arrays[operand.into] = _inner(context, builder, arrays[operand.into], operand.output.within)
        return values, arrays

    def emit(self, context, builder, inputs_value):
        """Emit the loop on the tuple ``inputs_value``; return the tuple of its outputs. Its values are named
        after the call's arguments and outputs (`llvm_backend_intrinsics.naming.call_names`)."""
        names = call_names(len(self.inputs), len(self.operands))
        values, arrays = self._read_inputs(context, builder, inputs_value, names.arguments)
        spec = self.spec
        shape = _emit_shape(context, builder, arrays, spec)
        _emit_target_shapes(context, builder, arrays, spec, shape)
        _emit_index_checks(context, builder, arrays, spec)
        emitters = [operand.emitter(name) for operand, name in zip(self.operands, names.outputs)]
        for emitter in emitters:
            emitter.allocate(context, builder, shape, arrays)
        for emitter in emitters:
            emitter.open_slot(context, builder)
        for emitter in emitters:
            emitter.fill(context, builder, shape)
        impl = context.get_function(self.function, self.signature)
        if isinstance(self.function, types.Dispatcher):
            declare_math_of(builder.module, self.function.dispatcher.overloads[self.signature.args].library)
        n = len(spec.broadcastable)
        once = self._read_once(context, builder, arrays, shape)
        with cgutils.loop_nest(builder, shape, _INTP) as indices:
            positions = [
                _position(context, builder, arrays[n + k], _INTP(0) if broadcastable else indices[axis])
                for k, (axis, broadcastable) in enumerate(spec.indices)
            ]
            arguments = [
                once[k] if k in once else self._argument(context, builder, arrays, values, k, indices, positions)
                for k in range(n)
            ]
            result = impl(builder, _call_arguments(context, builder, arguments, self.elements, self.signature.args))
            if isinstance(self.signature.return_type, types.BaseTuple):
                items = [builder.extract_value(result, j, name=f"{e.name}.value") for j, e in enumerate(emitters)]
            else:
                items = [named(result, f"{emitters[0].name}.value")]
            for emitter, item in zip(emitters, items, strict=True):
                emitter.store(context, builder, indices, item, positions)
        declare_vector_variants(builder.module)
        returned = [emitter.value(context, builder, values) for emitter in emitters]
        return context.make_tuple(builder, self.return_type, returned)

    def _read_once(self, context, builder, arrays, shape) -> dict:
        """Per array input broadcastable along every axis of a loop of one or more, read through no index and
        written by no output: its one element, read before the loop (fenced as a scalar input, `_fenced`), and
        only when the loop runs, so an empty loop reads nothing. Read in the loop, it was read at every element:
        LLVM cannot tell that the loop's stores (an indexed write's, above all) leave it alone. None of them does:
        each writes a new array or an input the node destroys, which PyTensor keeps from being a view of another
        of its inputs."""
        spec = self.spec
        written = {operand.into for operand in self.operands} | {operand.output.into for operand in self.operands}
        once = [
            k
            for k, broadcastable in enumerate(spec.broadcastable)
            if k in arrays
            and broadcastable
            and all(broadcastable)
            and spec.read_through(k) is None
            and k not in written
        ]
        if not once:
            return {}
        runs = cgutils.true_bit
        for size in shape:
            runs = builder.and_(runs, builder.icmp_signed(">", size, _INTP(0)))
        slots = {}
        for k in once:
            array = arrays[k]
            element = context.get_value_type(array.type.dtype)
            slots[k] = alloca_once_value(builder, ir.Constant(element, None), f"{array.name}.once")
        with builder.if_then(named(runs, "loop.runs")):
            for k in once:
                array = arrays[k]
                builder.store(array.load(context, builder, [_INTP(0)] * spec.ndim, None), slots[k])
        return {k: _fenced(builder, named(builder.load(slots[k]), f"{arrays[k].name}.element")) for k in once}

    def _argument(self, context, builder, arrays, values, k, indices, positions):
        """The function's input ``k`` at loop ``indices``: a scalar's value, an array's element there (through
        its index array's position along that axis if it is read through one)."""
        if k not in arrays:
            return values[k]
        array, broadcastable = arrays[k], self.spec.broadcastable[k]
        index = self.spec.read_through(k)
        if index is None:
            return array.load(context, builder, indices, broadcastable)
        axis = self.spec.indices[index][0]
        at = [
            _wrapped(builder, positions[index], array.shapes[d]) if d == axis else _INTP(0) if b else i
            for d, (i, b) in enumerate(zip(indices, broadcastable, strict=True))
        ]
        element = context.unpack_value(builder, array.type.dtype, array.pointer(context, builder, at))
        return named(element, f"{array.name}.load")


def _fenced(builder, value):
    """A float scalar input through ``llvm.arithmetic.fence`` (named after it), else ``value``."""
    if not isinstance(value.type, ir.DoubleType | ir.FloatType):
        return value
    fence = cgutils.get_or_insert_function(
        builder.module,
        ir.FunctionType(value.type, [value.type]),
        f"llvm.arithmetic.fence.{'f64' if isinstance(value.type, ir.DoubleType) else 'f32'}",
    )
    return builder.call(fence, [value], name=f"{value.name}.fenced")


def _placed(spec: LoopSpec, inputs) -> list[tuple[int | None, types.Type]]:
    """Per output of ``spec``: the input it is written into (`_written_into`) and the numba type handed out."""
    placed = []
    for output in spec.outputs:
        into = _written_into(output, spec.ndim, inputs)
        placed.append((into, _output_type(output, spec.ndim, inputs, into)))
    return placed


def _operands(spec: LoopSpec, placed: list, result_types: list) -> tuple[_Operand, ...]:
    """One `_Operand` per output of ``spec``, given where each is placed (`_placed`) and the function's value
    types."""
    operands = []
    for output, (into, output_type), result_type in zip(spec.outputs, placed, result_types, strict=True):
        if output.indexed is not None:
            axis = spec.indices[output.indexed[0]][0]
            operands.append(_Operand(output, output_type, into, result_type, axis=axis))
        elif output.reduce is None:
            operands.append(_Operand(output, output_type, into, result_type))
        else:
            accumulator = from_dtype(output.acc_dtype)
            rule = combine_rule(output.reduce, accumulator)
            operands.append(_Operand(output, output_type, into, result_type, accumulator, rule))
    return tuple(operands)


def _typed_loop(spec: LoopSpec, typingctx, function, inputs):
    """``spec``'s loop typed for ``function`` (the type of an ``@njit`` function or of an intrinsic) and the
    tuple type ``inputs``: the tuple type of its outputs and ``emit(context, builder, inputs value)``, which
    emits the loop and returns that tuple."""
    if not isinstance(function, types.Dispatcher | types.Function):
        raise errors.TypingError(f"loop: function must be an @njit function or an intrinsic, got {function}")
    _check_inputs(spec, inputs)
    placed = _placed(spec, inputs)
    elements = tuple(t.dtype if isinstance(t, types.Array) else t for t in inputs.types[: len(spec.broadcastable)])
    function_sig = typingctx.resolve_function_type(function, elements, {})
    if function_sig is None:
        raise errors.TypingError(f"loop: cannot call {function} on {elements}")
    results = function_sig.return_type
    result_types = list(results) if isinstance(results, types.BaseTuple) else [results]
    if len(result_types) != len(spec.outputs):
        raise errors.TypingError(f"loop: {function} returns {results}, not {len(spec.outputs)} values")
    operands = _operands(spec, placed, result_types)
    return_type = types.Tuple([operand.type for operand in operands])
    typed = _TypedLoop(spec, function, function_sig, inputs, elements, operands, return_type)
    return return_type, typed.emit


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
                return body_builder.extract_value(result, 0, name="result") if single else result

            return call_as_function(context, builder, signature, args, emit_body, "llvm_loop")

        return (return_type[0] if single else return_type)(arguments), codegen

    return node
