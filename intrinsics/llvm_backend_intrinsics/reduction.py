"""Full reductions that return a scalar value accumulated in stack slots: no NRT allocation.

Stock numba boxes a full CAReduce result in a 0-d array, one heap allocation per call.  ``full_reduce``
and ``full_reduce_with`` fold every element of an array of any ndim and layout into an accumulator
that lives in an ``alloca_once`` slot of the entry block (LLVM promotes it to a register) and return
its value as a numba scalar.  Semantics are PyTensor's CAReduce with ``acc_dtype``: each element is cast to
``acc_dtype`` and combined; the accumulator starts at ``identity`` (so an empty input gives the
identity) and is cast to ``out_dtype`` at the end.

Layering, as numba's own concatenate: typing (``_numba_dtype``, ``_builtin_rule``,
``_reduce_signature``) -> the ``@intrinsic`` glue ``full_reduce`` / ``full_reduce_with`` ->
``_lower_reduce`` -> the IR emitters ``_emit_*``.

Float add and mul carry LLVM's ``reassoc`` flag, the licence its loop vectorizer needs to split the one
accumulator into vector lanes (with AVX-512, 4 x <8 x double>: 32 partial sums), and the add ``contract``,
so that a loop's accumulation fuses with a fastmath product into one FMA (as stock's loops do); max/min are
llvm.maximum/minimum, exact and vectorizable as they are (they order -0.0 below +0.0, where numpy keeps
the first of two zeros).  Summation order is therefore not sequential: the error of a float sum grows
~n/32 rather than ~n, while numpy's pairwise ``np.sum`` grows ~log n, so results may differ
from ``np.sum`` in the last bits, and an overflow to inf can depend on the order.  Integer reductions
vectorize without any flag.  Strided runs are kept scalar (the vectorizer's gathers were slower) and
use four independent accumulators instead.
"""

import operator

from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.core.typing import signature
from numba.extending import intrinsic

from llvm_backend_intrinsics.naming import named, unpack_named

_INTP = cgutils.intp_t
_STRIDED_LANES = 4

# ---------------------------------------------------------------- combine rules
# op name -> IR of ``acc (op) value`` for two values of the accumulator type, one table per kind.


def _float_intrinsic(name):
    """A rule calling the binary LLVM intrinsic ``name`` (e.g. llvm.maximum) on the acc type."""

    def rule(builder, acc, value):
        fnty = ir.FunctionType(acc.type, [acc.type, acc.type])
        return builder.call(builder.module.declare_intrinsic(name, [acc.type], fnty), [acc, value], name="acc.next")

    return rule


# ``reassoc`` lets LLVM's loop vectorizer split the one accumulator into vector lanes (its only
# licence: without it a float reduction is one serial chain).  ``contract`` on the add lets LLVM fuse it
# with a multiply into one FMA, where the multiply allows it too (numba's fastmath, PyTensor's default):
# ``sum(x * y)`` in a loop is then one vfmadd per vector of elements, not a vmulpd and a vaddpd.
# llvm.maximum/minimum propagate NaN like np.max and are exact, so they vectorize without any flag.
_FLOAT_RULES = {
    "add": lambda b, acc, v: b.fadd(acc, v, name="acc.next", flags=("reassoc", "contract")),
    "mul": lambda b, acc, v: b.fmul(acc, v, name="acc.next", flags=("reassoc",)),
    "maximum": _float_intrinsic("llvm.maximum"),
    "minimum": _float_intrinsic("llvm.minimum"),
}

_BITWISE_RULES = {
    "and": lambda b, acc, v: b.and_(acc, v, name="acc.next"),
    "or": lambda b, acc, v: b.or_(acc, v, name="acc.next"),
    "xor": lambda b, acc, v: b.xor(acc, v, name="acc.next"),
}

_SIGNED_RULES = {
    "add": lambda b, acc, v: b.add(acc, v, name="acc.next"),
    "mul": lambda b, acc, v: b.mul(acc, v, name="acc.next"),
    "maximum": lambda b, acc, v: b.select(b.icmp_signed(">=", acc, v, name="acc.kept"), acc, v, name="acc.next"),
    "minimum": lambda b, acc, v: b.select(b.icmp_signed("<=", acc, v, name="acc.kept"), acc, v, name="acc.next"),
    **_BITWISE_RULES,
}

_UNSIGNED_RULES = {
    **_SIGNED_RULES,
    "maximum": lambda b, acc, v: b.select(b.icmp_unsigned(">=", acc, v, name="acc.kept"), acc, v, name="acc.next"),
    "minimum": lambda b, acc, v: b.select(b.icmp_unsigned("<=", acc, v, name="acc.kept"), acc, v, name="acc.next"),
}

# numpy's bool arithmetic saturates: True + True is True, so add is or and mul is and.
_BOOL_RULES = {
    "add": _BITWISE_RULES["or"],
    "mul": _BITWISE_RULES["and"],
    "maximum": _BITWISE_RULES["or"],
    "minimum": _BITWISE_RULES["and"],
    **_BITWISE_RULES,
}

# Complex arithmetic is numba's own; complex numbers have no order, so no maximum/minimum.
_COMPLEX_OPERATORS = {"add": operator.add, "mul": operator.mul}

OPS = ("add", "mul", "maximum", "minimum", "and", "or", "xor")


def _rules_for(dtype):
    if isinstance(dtype, types.Boolean):
        return _BOOL_RULES
    if isinstance(dtype, types.Float):
        return _FLOAT_RULES
    if isinstance(dtype, types.Integer):
        return _SIGNED_RULES if dtype.signed else _UNSIGNED_RULES
    return {}


# ---------------------------------------------------------------- typing


def _numba_dtype(dtype, role):
    """The numba scalar type named by a ``np.float64``-like class or a ``np.dtype`` object."""
    if isinstance(dtype, types.NumberClass):
        return dtype.instance_type
    if isinstance(dtype, types.DType):
        return dtype.dtype
    raise errors.TypingError(f"full_reduce: {role} must be a numpy dtype or scalar class, got {dtype}")


def _builtin_rule(op, acc):
    """``rule(context, builder, acc, value)`` for the op named by the literal ``op`` on ``acc``."""
    if not isinstance(op, types.StringLiteral):
        raise errors.TypingError(f"full_reduce: op must be a string literal, got {op}")
    return combine_rule(op.literal_value, acc)


def combine_rule(name: str, acc):
    """``rule(context, builder, acc, value)`` emitting one step of the reduction ``name`` (one of `OPS`) on two
    values of the numba scalar type ``acc``; a TypingError if ``name`` is not defined on it."""
    if name not in OPS:
        raise errors.TypingError(f"full_reduce: unknown op {name!r}; expected one of {OPS}")
    if isinstance(acc, types.Complex) and name in _COMPLEX_OPERATORS:
        complex_sig = signature(acc, acc, acc)
        return lambda context, builder, a, v: named(
            context.get_function(_COMPLEX_OPERATORS[name], complex_sig)(builder, (a, v)), "acc.next"
        )
    rule = _rules_for(acc).get(name)
    if rule is None:
        raise errors.TypingError(f"full_reduce: op {name!r} is not defined on acc_dtype {acc}")
    return lambda context, builder, a, v: rule(builder, a, v)


def _reduce_signature(x, combine, identity, acc_dtype, out_dtype):
    """``out_dtype(x, combine, identity, acc_dtype, out_dtype)``; the identity is passed unliteral."""
    if not isinstance(x, types.Array):
        raise errors.TypingError(f"full_reduce: x must be an array, got {x}")
    if not isinstance(x.dtype, (types.Number, types.Boolean)):
        raise errors.TypingError(f"full_reduce: x has dtype {x.dtype}, not a number or bool")
    identity = types.unliteral(identity)
    if not isinstance(identity, (types.Number, types.Boolean)):
        raise errors.TypingError(f"full_reduce: identity must be a scalar, got {identity}")
    out = _numba_dtype(out_dtype, "out_dtype")
    return out(x, combine, identity, acc_dtype, out_dtype)


# ---------------------------------------------------------------- IR emission


def _emit_runs(builder, shape, strides, itemsize):
    """Outer loop counts, inner run length, and whether runs are unit-stride (an i1).

    Trailing dimensions contiguous with a unit-stride run merge into it (their count becomes 1), so
    an 'A'-typed array that happens to be contiguous is reduced as one vectorizable run.
    """
    run = shape[-1]
    unit_stride = builder.icmp_signed("==", strides[-1], _INTP(itemsize), name="unit_stride")
    merging = unit_stride
    counts = []
    for d in reversed(range(len(shape) - 1)):
        run_bytes = builder.mul(run, _INTP(itemsize), name=f"run_bytes{d}")
        merges = builder.icmp_signed("==", strides[d], run_bytes, name=f"merges{d}")
        merging = builder.and_(merging, merges, name=f"merging{d}")
        counts.insert(0, builder.select(merging, _INTP(1), shape[d], name=f"count{d}"))
        run = builder.select(merging, builder.mul(run, shape[d], name=f"merged_run{d}"), run, name="run")
    return counts, run, unit_stride


def _keep_scalar(builder, loop):
    """Tell LLVM's loop vectorizer to leave the finished ``for_range`` ``loop`` alone.

    On a strided run it emits gathers, which are slower than the scalar loads of independent lanes.
    The ``llvm.loop`` node must refer to itself, so it is made with a placeholder operand that is then
    replaced.
    """
    module = builder.module
    disable = module.add_metadata([ir.MetaDataString(module, "llvm.loop.vectorize.enable"), ir.IntType(1)(0)])
    loop_id = module.add_metadata([ir.MetaDataString(module, f"reduce.loop.{len(module.metadata)}")])
    loop_id.operands = (loop_id, disable)
    latch = loop.index.incomings[-1][1]
    latch.terminator.set_metadata("llvm.loop", loop_id)


def _emit_run(builder, lanes, count, fold_at):
    """``lane = fold(lane, element j)`` for j < ``count``, round-robin over ``lanes`` (stack slots).

    One lane is the plain loop LLVM vectorizes.  Several lanes are for the strided run it must not:
    blocks of ``len(lanes)`` elements feed one lane each (independent chains), the tail feeds lane 0.
    """
    n_lanes = len(lanes)
    if n_lanes == 1:
        with cgutils.for_range(builder, count) as loop:
            builder.store(fold_at(builder.load(lanes[0], name="acc"), loop.index), lanes[0])
        return
    blocks = builder.udiv(count, _INTP(n_lanes), name="blocks")
    with cgutils.for_range(builder, blocks) as loop:
        base = builder.mul(loop.index, _INTP(n_lanes), name="block.start")
        for k, lane in enumerate(lanes):
            at = builder.add(base, _INTP(k), name=f"lane{k}.at")
            builder.store(fold_at(builder.load(lane, name=f"lane{k}"), at), lane)
    _keep_scalar(builder, loop)
    tail = builder.mul(blocks, _INTP(n_lanes), name="tail.start")
    with cgutils.for_range(builder, count, start=tail) as loop:
        builder.store(fold_at(builder.load(lanes[0], name="acc"), loop.index), lanes[0])
    _keep_scalar(builder, loop)


def _emit_strided_runs(builder, array, layout, ndim, itemsize, lanes, fold_ptr):
    """Fold every element of ``array`` (a numba array struct proxy) into the slots ``lanes``."""

    def unit_items(start):
        return lambda value, j: fold_ptr(value, builder.gep(start, [j], name="element.ptr"))

    if layout in "CF" or ndim == 0:
        # Contiguous: one run over the memory, whatever the logical order (the ops commute).
        _emit_run(builder, lanes[:1], named(array.nitems, "x.size"), unit_items(named(array.data, "x.data")))
        return
    shape = unpack_named(builder, named(array.shape, "x.shape"), ndim, "x.shape")
    strides = unpack_named(builder, named(array.strides, "x.strides"), ndim, "x.stride")
    counts, run, unit_stride = _emit_runs(builder, shape, strides, itemsize)
    item_ptr_type = array.data.type
    with cgutils.loop_nest(builder, counts, _INTP) as index:
        start = builder.bitcast(named(array.data, "x.data"), cgutils.voidptr_t, name="run.start")
        for i, stride in zip(index, strides):
            start = builder.gep(start, [builder.mul(i, stride, name="run.offset")], name="run.start")
        # Two copies of the run loop so that the common unit-stride one vectorizes with plain loads.
        with builder.if_else(unit_stride, likely=True) as (on_unit, on_strided):
            with on_unit:
                _emit_run(builder, lanes[:1], run, unit_items(builder.bitcast(start, item_ptr_type, name="run.items")))
            with on_strided:
                _emit_run(
                    builder,
                    lanes,
                    run,
                    lambda value, j: fold_ptr(
                        value,
                        builder.bitcast(
                            builder.gep(start, [builder.mul(j, strides[-1], name="element.offset")]),
                            item_ptr_type,
                            name="element.ptr",
                        ),
                    ),
                )


def _emit_fold_lanes(builder, lanes, combine):
    """The lanes combined pairwise: (l0 . l1) . (l2 . l3)."""
    values = [builder.load(lane, name=f"lane{k}") for k, lane in enumerate(lanes)]
    while len(values) > 1:
        values = [combine(builder, a, b) for a, b in zip(values[::2], values[1::2])] + values[len(values) & ~1 :]
    return values[0]


def _emit_full_reduce(context, builder, array_type, array, identity, acc_dtype, combine):
    """Reduce every element of ``array`` into one ``acc_dtype`` value, starting from ``identity``.

    ``identity`` is already an ``acc_dtype`` value; ``combine(builder, acc, value)`` emits one step of
    the reduction on two of them.  The accumulators are ``alloca_once`` slots that mem2reg turns into
    registers (a phi per loop).  Equivalent Python of ``full_reduce(x, "add", 0.0, np.float64,
    np.float64)`` for a 2-d float64 'A'-layout ``x`` (C and F layouts are just the unit-stride run
    over ``x.size`` elements of ``x.data``)::

        lane = [0.0, 0.0, 0.0, 0.0]  # the stack slots
        rows, run, unit = x.shape[0], x.shape[1], x.strides[1] == 8
        if unit and x.strides[0] == run * 8:  # contiguous after all: one run
            rows, run = 1, run * x.shape[0]
        for i in range(rows):
            row = x.data + i * x.strides[0]  # a byte address
            if unit:
                for j in range(run):  # fadd reassoc: LLVM vectorizes this loop
                    lane[0] = lane[0] + float64(row.as_float64[j])
            else:
                at = lambda j: (row + j * x.strides[1]).as_float64[0]
                for b in range(run // 4):  # four independent chains; vectorizer disabled
                    for k in range(4):  # (unrolled in the IR)
                        lane[k] = lane[k] + float64(at(4 * b + k))
                for j in range(run // 4 * 4, run):
                    lane[0] = lane[0] + float64(at(j))
        return (lane[0] + lane[1]) + (lane[2] + lane[3])
    """
    in_dtype = array_type.dtype
    ary = context.make_array(array_type)(context, builder, array)
    named(ary._getpointer(), "x.struct")
    align = None if array_type.aligned else 1
    itemsize = context.get_abi_sizeof(context.get_data_type(in_dtype))
    contiguous = array_type.layout in "CF" or array_type.ndim == 0
    n_lanes = 1 if contiguous else _STRIDED_LANES
    lanes = [cgutils.alloca_once(builder, identity.type, name="reduce.acc") for _ in range(n_lanes)]
    for lane in lanes:
        builder.store(identity, lane)

    def fold_ptr(value, ptr):
        element = named(context.unpack_value(builder, in_dtype, ptr, align=align), "element")
        return combine(builder, value, named(context.cast(builder, element, in_dtype, acc_dtype), "element.cast"))

    _emit_strided_runs(builder, ary, array_type.layout, array_type.ndim, itemsize, lanes, fold_ptr)
    return _emit_fold_lanes(builder, lanes, combine)


def _lower_reduce(context, builder, sig, args, combine):
    """Codegen shared by both intrinsics: returns ``out_dtype(reduce(x))``."""
    x_type, _, identity_type, acc_dtype, _ = sig.args
    acc = _numba_dtype(acc_dtype, "acc_dtype")
    identity = named(context.cast(builder, args[2], identity_type, acc), "identity")
    value = _emit_full_reduce(context, builder, x_type, args[0], identity, acc, combine)
    return named(context.cast(builder, value, acc, sig.return_type), "total")


# ---------------------------------------------------------------- public intrinsics


@intrinsic(prefer_literal=True)
def full_reduce(typingctx, x, op, identity, acc_dtype, out_dtype):
    """``out_dtype(reduce(op, x.astype(acc_dtype), initial=identity))`` as a scalar, no allocation.

    ``op`` is a string literal in ``OPS``: "add", "mul", "maximum", "minimum" (NaN-propagating like
    ``np.max``), "and", "or", "xor" (bitwise, on integer and bool accumulators).  ``identity`` is the
    op's identity (0, 1, -inf, the dtype's min, ...), returned for an empty ``x``; it is cast to
    ``acc_dtype`` like any value, so give integer max/min an integer identity, not an infinity.
    """
    acc = _numba_dtype(acc_dtype, "acc_dtype")
    rule = _builtin_rule(op, acc)

    def codegen(context, builder, sig, args):
        def combine(b, a, v):
            return rule(context, b, a, v)

        return _lower_reduce(context, builder, sig, args, combine)

    return _reduce_signature(x, op, identity, acc_dtype, out_dtype), codegen


@intrinsic
def full_reduce_with(typingctx, x, combine, identity, acc_dtype, out_dtype):
    """``full_reduce`` with any binary ``combine(acc, value) -> acc``, an ``@njit`` function.

    ``combine`` must be associative and commutative with ``identity`` as its identity (PyTensor's
    CAReduce contract).  It is called once per element, in order, through its compiled overload
    for ``(acc_dtype, acc_dtype)``; LLVM inlines it, but vectorizes it only for integer arithmetic.
    """
    acc = _numba_dtype(acc_dtype, "acc_dtype")
    if not isinstance(combine, types.Dispatcher):
        raise errors.TypingError(f"full_reduce_with: combine must be an @njit function, got {combine}")
    combine_sig = typingctx.resolve_function_type(combine, (acc, acc), {})
    if combine_sig is None:
        raise errors.TypingError(f"full_reduce_with: cannot call {combine} on ({acc}, {acc})")

    def codegen(context, builder, sig, args):
        impl = context.get_function(combine, combine_sig)

        def step(b, a, v):
            return named(context.cast(b, named(impl(b, (a, v)), "combined"), combine_sig.return_type, acc), "acc.next")

        return _lower_reduce(context, builder, sig, args, step)

    return _reduce_signature(x, combine, identity, acc_dtype, out_dtype), codegen
