"""Join (concatenate) whose IR and compile time grow linearly in the number of inputs.

numba's ``np.concatenate`` emits one specialised copy loop nest per input, so LLVM optimizes N
loop nests.  ``linear_join`` emits a few stores per input into stack tables (data pointer, shape,
strides), then one validation loop over the tables and one copy loop nest per distinct input dtype:
the number of loops does not depend on the number of inputs.  In a 1-d join, a scalar entry is one store.

Layering, as numba's own concatenate: typing (``_join_ndim``, ``_output_dtype``) -> the
``@intrinsic`` ``linear_join`` (the public function itself) -> the pure IR emitters
``_emit_*(context, builder, ...)``.  The public function is the intrinsic rather than an
``@overload`` wrapper around it because a wrapper is a second compiled function whose signature
carries the whole n-tuple of arrays, which makes a wide join compile markedly slower.
"""

from functools import cache, partial
from typing import NamedTuple

import numpy as np
from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.extending import intrinsic
from numba.np import numpy_support
from numba.np.arrayobj import _empty_nd_impl

from llvm_backend_intrinsics.argpack import ArrayPackType
from llvm_backend_intrinsics.messages import MessageType, raise_formatted
from llvm_backend_intrinsics.naming import alloca_once_value, call_names, named, unpack_named

_INTP = cgutils.intp_t


def shape_mismatch_message(bad_input, dim, size, first_size, axis):
    """The message of the ValueError a join raises when input ``bad_input`` has the wrong size."""
    return (
        f"Join: input {bad_input} has size {size} along dimension {dim},"
        f" but input 0 has size {first_size} (join axis {axis})"
    )


_SHAPE_MISMATCH = MessageType(shape_mismatch_message, (types.intp,) * 5)


class _InputTable(NamedTuple):
    """Stack tables indexed by input position."""

    data: ir.Value  # [n x i8*]
    shapes: ir.Value  # [n x [ndim x intp]]
    strides: ir.Value  # [n x [ndim x intp]] in bytes
    offsets: ir.Value  # [n x intp]: where each input starts along the join axis


class _Output(NamedTuple):
    """The output array as the copy loops address it."""

    data: ir.Value  # i8*
    strides: list
    axis_stride: ir.Value
    dtype: types.Type


# ---------------------------------------------------------------- typing


def _join_ndim(arrays):
    """The ndim of a join of ``arrays``; TypingError unless it is well defined."""
    if not isinstance(arrays, types.BaseTuple) or len(arrays) == 0:
        raise errors.TypingError(f"Join: expected a non-empty tuple of arrays, got {arrays}")
    for k, entry in enumerate(arrays):
        if not isinstance(entry, (types.Array, types.Number, types.Boolean)):
            raise errors.TypingError(f"Join: input {k} is {entry}, not an array or a scalar")
    array_ndims = [(k, entry.ndim) for k, entry in enumerate(arrays) if isinstance(entry, types.Array) and entry.ndim]
    first, ndim = array_ndims[0] if array_ndims else (0, 1)
    for k, entry_ndim in array_ndims:
        if entry_ndim != ndim:
            raise errors.TypingError(
                f"Join: input {k} has {entry_ndim} dimensions, but input {first} has {ndim};"
                " all inputs must have the same number of dimensions"
            )
    if ndim > 1 and len(array_ndims) < len(arrays):
        raise errors.TypingError(
            f"Join: cannot join {ndim}-d inputs with scalars or 0-d arrays; those join only as 1-d"
        )
    return ndim


def _output_dtype(dtype):
    """The numba dtype named by a ``np.float64``-like class or a ``np.dtype`` object."""
    if isinstance(dtype, types.NumberClass):
        return dtype.instance_type
    if isinstance(dtype, types.DType):
        return dtype.dtype
    raise errors.TypingError(f"Join: dtype must be a numpy dtype or scalar class, got {dtype}")


def _entry_dtype(entry):
    return entry.dtype if isinstance(entry, types.Array) else entry


def _groups_by_dtype(in_types):
    """Input positions keyed by element dtype, in first-seen order."""
    groups = {}
    for k, entry in enumerate(in_types):
        groups.setdefault(_entry_dtype(entry), []).append(k)
    return groups


# ---------------------------------------------------------------- IR emission


def _alloca_table(builder, n_inputs, ndim):
    dims = ir.ArrayType(_INTP, ndim)
    return _InputTable(
        data=cgutils.alloca_once(builder, cgutils.voidptr_t, size=n_inputs, name="join.data"),
        shapes=cgutils.alloca_once(builder, dims, size=n_inputs, name="join.shapes"),
        strides=cgutils.alloca_once(builder, dims, size=n_inputs, name="join.strides"),
        offsets=cgutils.alloca_once(builder, _INTP, size=n_inputs, name="join.offsets"),
    )


def _store_entry(context, builder, table, k, entry_type, value):
    """Store input ``k``'s data pointer, shape and strides: ten instructions for an array."""
    if isinstance(entry_type, types.Array) and entry_type.ndim == 0:
        # A 0-d array joins as a length-1 vector viewing its element.
        position = context.data_model_manager[entry_type].get_field_position("data")
        data = builder.extract_value(value, position, name="entry.data")
        itemsize = context.get_abi_sizeof(context.get_data_type(entry_type.dtype))
        shape = ir.Constant(ir.ArrayType(_INTP, 1), [1])
        strides = ir.Constant(ir.ArrayType(_INTP, 1), [itemsize])
    elif isinstance(entry_type, types.Array):
        model = context.data_model_manager[entry_type]
        data, shape, strides = (
            builder.extract_value(value, model.get_field_position(field), name=f"entry.{field}")
            for field in ("data", "shape", "strides")
        )
    else:
        # A scalar joins as a length-1 vector held in its own stack slot, read only by this function.
        data = alloca_once_value(builder, context.get_value_as_data(builder, entry_type, value), "entry.element")
        itemsize = context.get_abi_sizeof(context.get_data_type(entry_type))
        shape = ir.Constant(ir.ArrayType(_INTP, 1), [1])
        strides = ir.Constant(ir.ArrayType(_INTP, 1), [itemsize])
    k = _INTP(k) if isinstance(k, int) else k
    data = builder.bitcast(data, cgutils.voidptr_t, name="entry.bytes")
    builder.store(data, builder.gep(table.data, [k], name="entry.data.slot"))
    builder.store(shape, builder.gep(table.shapes, [k], name="entry.shape.slot"))
    builder.store(strides, builder.gep(table.strides, [k], name="entry.strides.slot"))


def _load_dims(builder, dims_table, k, ndim):
    """Entry ``k``'s ``ndim`` sizes (or strides) in the stack table ``dims_table``, named after it."""
    name = dims_table.name.removeprefix("join.")
    return [
        builder.load(builder.gep(dims_table, [k, _INTP(d)], name=f"{name}{d}.slot"), name=f"{name}{d}")
        for d in range(ndim)
    ]


def _select_dim(builder, values, axis):
    """``values[axis]`` for a run-time ``axis``."""
    selected = values[0]
    for d in range(1, len(values)):
        on_axis = builder.icmp_signed("==", axis, _INTP(d), name=f"axis_is{d}")
        selected = builder.select(on_axis, values[d], selected, name="on_axis")
    return selected


def _emit_size_checks(context, builder, k, shape, first_shape, axis):
    """Raise ValueError if input ``k`` differs from input 0 off the join axis."""
    bad_dim, bad = _INTP(0), cgutils.false_bit
    # Reversed so that the lowest mismatching dimension is the one reported.
    for d in reversed(range(len(shape))):
        mismatch = builder.and_(
            builder.icmp_signed("!=", axis, _INTP(d), name=f"off_axis{d}"),
            builder.icmp_signed("!=", shape[d], first_shape[d], name=f"shape{d}.differs"),
            name=f"mismatch{d}",
        )
        bad_dim = builder.select(mismatch, _INTP(d), bad_dim, name="bad_dim")
        bad = builder.or_(bad, mismatch, name="bad")
    with builder.if_then(bad, likely=False):
        sizes = (_select_dim(builder, shape, bad_dim), _select_dim(builder, first_shape, bad_dim))
        raise_formatted(context, builder, ValueError, _SHAPE_MISMATCH, (k, bad_dim, *sizes, axis))


def _emit_validation(context, builder, table, n_inputs, ndim, axis):
    """One loop checking sizes and filling ``table.offsets``; returns the output shape."""
    first_shape = _load_dims(builder, table.shapes, _INTP(0), ndim)
    total = alloca_once_value(builder, _INTP(0), "join.total")
    with cgutils.for_range(builder, _INTP(n_inputs)) as loop:
        shape = _load_dims(builder, table.shapes, loop.index, ndim)
        _emit_size_checks(context, builder, loop.index, shape, first_shape, axis)
        start = builder.load(total, name="offset")
        builder.store(start, builder.gep(table.offsets, [loop.index], name="offset.slot"))
        builder.store(builder.add(start, _select_dim(builder, shape, axis), name="offset.next"), total)
    total = builder.load(total, name="total")
    return [
        builder.select(builder.icmp_signed("==", axis, _INTP(d), name=f"axis_is{d}"), total, size, name=f"out.shape{d}")
        for d, size in enumerate(first_shape)
    ]


def _emit_normalized_axis(context, builder, axis, ndim):
    """``axis`` wrapped into [0, ndim); AxisError (an IndexError, as numba's concatenate) if out of range."""
    ll_ndim = _INTP(ndim)
    negative = builder.icmp_signed("<", axis, _INTP(0), name="axis.negative")
    wrapped = builder.select(negative, builder.add(axis, ll_ndim, name="axis.from_end"), axis, name="axis.wrapped")
    out_of_range = builder.or_(
        builder.icmp_signed("<", wrapped, _INTP(0), name="axis.below"),
        builder.icmp_signed(">=", wrapped, ll_ndim, name="axis.above"),
        name="axis.out_of_range",
    )
    with builder.if_then(out_of_range, likely=False):
        context.call_conv.return_dynamic_user_exc(
            builder, np.exceptions.AxisError, (axis, ll_ndim), (types.intp, types.intp)
        )
    return wrapped


def _emit_element_loop(context, builder, count, src_at, dst, in_dtype, out_dtype, align):
    """``dst[i] = cast(*src_at(i))`` for i < count; ``dst`` points to the output dtype."""
    with cgutils.for_range(builder, count) as loop:
        value = named(context.unpack_value(builder, in_dtype, src_at(loop.index), align=align), "element")
        value = named(context.cast(builder, value, in_dtype, out_dtype), "element.cast")
        context.pack_value(builder, out_dtype, value, builder.gep(dst, [loop.index], name="element.out_ptr"))


def _emit_run_copy(context, builder, src, dst, count, src_stride, contiguous, in_dtype, out_dtype, align):
    """Copy ``count`` elements from ``src`` (byte stride ``src_stride``) to contiguous ``dst``."""
    in_ptr_type = context.get_data_type(in_dtype).as_pointer()
    out_items = builder.bitcast(dst, context.get_data_type(out_dtype).as_pointer(), name="run.out")
    with builder.if_else(contiguous, likely=True) as (on_contiguous, on_strided):
        with on_contiguous:
            # A unit-stride element loop, which LLVM vectorizes: it measured faster than a memcpy
            # call per run, and it covers the casting copies too.
            in_items = builder.bitcast(src, in_ptr_type, name="run.in")
            _emit_element_loop(
                context,
                builder,
                count,
                lambda i: builder.gep(in_items, [i], name="element.ptr"),
                out_items,
                in_dtype,
                out_dtype,
                align,
            )
        with on_strided:
            _emit_element_loop(
                context,
                builder,
                count,
                lambda i: builder.bitcast(
                    builder.gep(src, [builder.mul(i, src_stride, name="element.offset")], name="element.address"),
                    in_ptr_type,
                    name="element.ptr",
                ),
                out_items,
                in_dtype,
                out_dtype,
                align,
            )


def _collapse_contiguous(builder, shape, strides, in_itemsize, out):
    """Outer loop counts and inner run length, merging trailing dims contiguous on both sides.

    A merged dimension gets count 1, so a C-contiguous input joined along axis 0 is one run.
    """
    out_itemsize = out.strides[-1]
    run = shape[-1]
    contiguous = builder.icmp_signed("==", strides[-1], _INTP(in_itemsize), name="contiguous")
    merging = contiguous
    counts = []
    for d in reversed(range(len(shape) - 1)):
        in_contiguous = builder.icmp_signed(
            "==", strides[d], builder.mul(run, _INTP(in_itemsize), name=f"in.run_bytes{d}"), name=f"in.merges{d}"
        )
        out_contiguous = builder.icmp_signed(
            "==", out.strides[d], builder.mul(run, out_itemsize, name=f"out.run_bytes{d}"), name=f"out.merges{d}"
        )
        both = builder.and_(in_contiguous, out_contiguous, name=f"merges{d}")
        merging = builder.and_(merging, both, name=f"merging{d}")
        counts.insert(0, builder.select(merging, _INTP(1), shape[d], name=f"count{d}"))
        run = builder.select(merging, builder.mul(run, shape[d], name=f"merged_run{d}"), run, name="run")
    return counts, run, contiguous


def _emit_block_copy(context, builder, src, dst, shape, strides, in_dtype, out, align):
    """Copy one input (``src``, ``shape``, ``strides``) to its block of the output at ``dst``."""
    in_itemsize = context.get_abi_sizeof(context.get_data_type(in_dtype))
    counts, run, contiguous = _collapse_contiguous(builder, shape, strides, in_itemsize, out)
    with cgutils.loop_nest(builder, counts, _INTP) as index:
        src_run, dst_run = src, dst
        for i, src_stride, out_stride in zip(index, strides, out.strides):
            src_run = builder.gep(src_run, [builder.mul(i, src_stride, name="src.offset")], name="src.run")
            dst_run = builder.gep(dst_run, [builder.mul(i, out_stride, name="dst.offset")], name="dst.run")
        _emit_run_copy(context, builder, src_run, dst_run, run, strides[-1], contiguous, in_dtype, out.dtype, align)


def _emit_group_copy(context, builder, table, members, in_dtype, out, align):
    """One loop over the inputs ``members`` (all of ``in_dtype``), copying each to its block."""
    ndim = len(out.strides)
    member_table = alloca_once_value(builder, ir.Constant(ir.ArrayType(_INTP, len(members)), members), "join.members")
    with cgutils.for_range(builder, _INTP(len(members))) as loop:
        k = builder.load(builder.gep(member_table, [_INTP(0), loop.index], name="member.slot"), name="member")
        start = builder.load(builder.gep(table.offsets, [k], name="offset.slot"), name="offset")
        dst = builder.gep(out.data, [builder.mul(start, out.axis_stride, name="dst.offset")], name="dst")
        _emit_block_copy(
            context,
            builder,
            builder.load(builder.gep(table.data, [k], name="src.slot"), name="src"),
            dst,
            _load_dims(builder, table.shapes, k, ndim),
            _load_dims(builder, table.strides, k, ndim),
            in_dtype,
            out,
            align,
        )


def _emit_join(context, builder, axis, in_types, fill_table, out_type):
    """Emit the join of inputs of ``in_types`` along the run-time ``axis`` (intp); returns the new array.

    ``fill_table(table)`` emits the stores of every input's entry into the stack tables.
    Raises (through numba's call convention, so the function must use it) before allocating.
    """
    ndim = out_type.ndim
    axis = _emit_normalized_axis(context, builder, axis, ndim)
    table = _alloca_table(builder, len(in_types), ndim)
    fill_table(table)
    out = _empty_nd_impl(
        context, builder, out_type, _emit_validation(context, builder, table, len(in_types), ndim, axis)
    )
    out_strides = unpack_named(builder, named(out.strides, "out.strides"), ndim, "out.stride")
    output = _Output(
        builder.bitcast(named(out.data, "out.data"), cgutils.voidptr_t, name="out.bytes"),
        out_strides,
        _select_dim(builder, out_strides, axis),
        out_type.dtype,
    )
    for in_dtype, members in _groups_by_dtype(in_types).items():
        aligned = all(getattr(in_types[k], "aligned", True) for k in members)
        _emit_group_copy(context, builder, table, members, in_dtype, output, None if aligned else 1)
    return out._getvalue()


def _is_element(entry) -> bool:
    """A scalar or a 0-d array: one element of a 1-d join."""
    return not isinstance(entry, types.Array) or entry.ndim == 0


def _emit_element(context, builder, entry_type, value):
    """A scalar entry, or the element of a 0-d array entry, and its type."""
    if not isinstance(entry_type, types.Array):
        return value, entry_type
    data = context.make_array(entry_type)(context, builder, value).data
    align = None if entry_type.aligned else 1
    return named(context.unpack_value(builder, entry_type.dtype, data, align=align), "element"), entry_type.dtype


def _emit_vector_join(context, builder, axis, in_types, values, out_type, filled=None):
    """A 1-d join with elements (scalars, 0-d arrays) among its entries (a ``ScalarizedJoin``, a ``MakeVector``).

    After the axis check, each entry's offset is a running sum in straight-line code (an element adds 1, a
    vector its length), so no validation loop is needed; each element is one store at its offset, and only the
    vectors go through the stack tables and the copy loops (none when every entry is an element: of scalars
    only, it is ``out = np.empty(n, dtype); out[0] = s0; ...; out[n - 1] = sn``, as stock's join of scalars).

    With ``filled = (k, before, after)``, entry ``k`` is the output itself, the entry already at ``before``
    (`filled_join`): the other entries are written around it, after checking that they fill exactly the
    ``before`` and ``after`` elements left to them (else ValueError, before any write)."""
    _emit_normalized_axis(context, builder, axis, 1)
    filled_at = None if filled is None else filled[0]
    vectors = [k for k, entry in enumerate(in_types) if not _is_element(entry) and k != filled_at]
    position = {k: j for j, k in enumerate(vectors)}
    table = _alloca_table(builder, len(vectors), 1) if vectors else None
    offsets, total = [], _INTP(0)
    for k, (entry_type, value) in enumerate(zip(in_types, values)):
        offsets.append(total)
        if k == filled_at:
            out = context.make_array(out_type)(context, builder, value)
            _, before, after = filled
            [length] = unpack_named(builder, named(out.shape, "out.shape"), 1, "out.shape")
            before_fits = builder.icmp_signed("==", total, _INTP(before), name="before.fits")
            total = builder.sub(length, _INTP(after), name="offset")
            continue
        if _is_element(entry_type):
            total = builder.add(total, _INTP(1), name="offset")
            continue
        j = position[k]
        _store_entry(context, builder, table, j, entry_type, value)
        builder.store(total, builder.gep(table.offsets, [_INTP(j)], name="offset.slot"))
        total = builder.add(total, _load_dims(builder, table.shapes, _INTP(j), 1)[0], name="offset")
    if filled is None:
        out = _empty_nd_impl(context, builder, out_type, [total])
    else:
        fits = builder.and_(before_fits, builder.icmp_signed("==", total, length, name="after.fits"), name="fits")
        with builder.if_then(builder.not_(fits, name="misfits"), likely=False):
            message = f"Join: the entries around input {filled_at} do not have the lengths its output was made for"
            context.call_conv.return_user_exc(builder, ValueError, (message,))
        context.nrt.incref(builder, out_type, out._getvalue())
    for k, (entry_type, value) in enumerate(zip(in_types, values)):
        if _is_element(entry_type):
            element, element_type = _emit_element(context, builder, entry_type, value)
            element = named(context.cast(builder, element, element_type, out_type.dtype), "element.cast")
            target = builder.gep(named(out.data, "out.data"), [offsets[k]], name="element.out_ptr")
            context.pack_value(builder, out_type.dtype, element, target)
    if vectors:
        [stride] = unpack_named(builder, named(out.strides, "out.strides"), 1, "out.stride")
        data = builder.bitcast(named(out.data, "out.data"), cgutils.voidptr_t, name="out.bytes")
        output = _Output(data, [stride], stride, out_type.dtype)
        vector_types = [in_types[k] for k in vectors]
        for in_dtype, members in _groups_by_dtype(vector_types).items():
            aligned = all(vector_types[j].aligned for j in members)
            _emit_group_copy(context, builder, table, members, in_dtype, output, None if aligned else 1)
    return out._getvalue()


def _fill_from_tuple(context, builder, entry_types, entries, table):
    """Store each entry of the tuple ``entries`` (of ``entry_types``) in the stack tables: straight-line code."""
    for k, (entry_type, value) in enumerate(
        zip(entry_types, unpack_named(builder, entries, len(entry_types), "entry"))
    ):
        _store_entry(context, builder, table, k, entry_type, value)


def _fill_from_pack(context, builder, pack, entries, table):
    """Store each array of the pack in the 1-tuple ``entries`` in the stack tables: one loop over its table."""
    [items] = unpack_named(builder, entries, 1, "pack")
    with cgutils.for_range(builder, _INTP(pack.count)) as loop:
        value = builder.load(builder.gep(items, [loop.index], name="entry.ptr"), name="entry")
        _store_entry(context, builder, table, loop.index, pack.array_type, value)


def _emit_linear_join(context, builder, sig, args, in_types, pack, out_type):
    """`linear_join`'s code, its entries ``in_types`` (a pack's arrays, for a ``pack``): a 1-d join of a tuple with
    elements among its entries is `_emit_vector_join`'s, any other join `_emit_join`'s."""
    join_axis = named(context.cast(builder, args[0], sig.args[0], types.intp), "axis")
    if pack is not None:
        fill = partial(_fill_from_pack, context, builder, pack, args[1])
    elif any(_is_element(entry) for entry in in_types):
        values = unpack_named(builder, args[1], len(in_types), "entry")
        return _emit_vector_join(context, builder, join_axis, list(in_types), values, out_type)
    else:
        fill = partial(_fill_from_tuple, context, builder, in_types, args[1])
    return _emit_join(context, builder, join_axis, list(in_types), fill, out_type)


# ---------------------------------------------------------------- public intrinsic


@intrinsic
def linear_join(typingctx, axis, arrays, dtype):
    """Join the tuple ``arrays`` along ``axis`` into a new C-contiguous array of ``dtype``; ``arrays`` may also be
    a 1-tuple holding an ``ArrayPack`` (`argpack`), whose arrays are joined, read from its table.

    Callable from ``@numba.njit`` code only. ``axis`` is a run-time integer, negative counts from the end.
    ``arrays`` holds arrays of one ndim >= 1, of any layout and dtype; in a 1-d join an entry may also be a
    scalar or a 0-d array, joined as a length-1 vector (so a ``MakeVector`` is a 1-d join of its entries), and
    then only the vectors go through the tables (`_emit_vector_join`). ``dtype`` is a scalar class or dtype
    (``np.float64``, ``np.dtype("float64")``); elements are converted with numba's ``context.cast``.

    Raises ``np.exceptions.AxisError`` (an IndexError, as numba's ``np.concatenate``) for an axis out of range,
    and ``ValueError`` (as stock's Join) naming the input, dimension, sizes and axis when a non-join size differs
    from input 0's, before the output is allocated; inputs of different ndim, or non-array entries, are a TypingError.

    What it emits for ``linear_join(axis, (x0, x1, x2), np.float64)``, ``axis`` = 1 (the last), x0 and x1 float64
    and x2 int32 matrices, as Python (``data``, ``shapes``, ``strides`` and ``offsets`` are stack tables, addresses
    and strides are in bytes, ``load``/``store`` read and write one element)::

        data, shapes, strides, offsets = alloca(3), alloca(3), alloca(3), alloca(3)  # entry block
        if axis < 0:
            axis += 2
        if not 0 <= axis < 2:
            raise AxisError(axis, 2)
        data[0], shapes[0], strides[0] = x0.data, x0.shape, x0.strides
        data[1], shapes[1], strides[1] = x1.data, x1.shape, x1.strides
        data[2], shapes[2], strides[2] = x2.data, x2.shape, x2.strides
        total = 0
        for k in range(3):
            bad = [d for d in range(2) if d != axis and shapes[k][d] != shapes[0][d]]
            if bad:
                d = bad[0]
                raise ValueError(shape_mismatch_message(k, d, shapes[k][d], shapes[0][d], axis))
            offsets[k] = total
            total += shapes[k][axis]
        out = np.empty([total if d == axis else shapes[0][d] for d in range(2)], np.float64)
        for in_dtype, members in ((float64, (0, 1)), (int32, (2,))):
            for k in members:
                src, shape, stride, size = data[k], shapes[k], strides[k], in_dtype.itemsize
                dst = out.data + offsets[k] * out.strides[axis]
                contiguous = stride[1] == size
                # Rows contiguous in both the input and the output merge into one run.
                merged = contiguous and stride[0] == shape[1] * size and out.strides[0] == shape[1] * 8
                rows, run = (1, shape[0] * shape[1]) if merged else (shape[0], shape[1])
                for i0 in range(rows):
                    src_run = src + i0 * stride[0]
                    dst_run = dst + i0 * out.strides[0]
                    if contiguous:
                        for i in range(run):
                            store(dst_run + 8 * i, float64(load(in_dtype, src_run + size * i)))
                    else:
                        for i in range(run):
                            store(dst_run + 8 * i, float64(load(in_dtype, src_run + stride[1] * i)))
        return out
    """
    if not isinstance(axis, types.Integer):
        raise errors.TypingError(f"Join: axis must be an integer, got {axis}")
    pack = arrays[0] if len(arrays) == 1 and isinstance(arrays[0], ArrayPackType) else None
    in_types = types.UniTuple(pack.array_type, pack.count) if pack else arrays
    out_type = types.Array(_output_dtype(dtype), _join_ndim(in_types), "C")
    return out_type(axis, arrays, dtype), partial(_emit_linear_join, in_types=in_types, pack=pack, out_type=out_type)


@cache
def joiner(axis: int, dtype: np.dtype):
    """The intrinsic ``join(*entries)``: ``linear_join(axis, entries, dtype)`` (``entries`` its arrays and scalars,
    or one ``ArrayPack``), emitted in the module of the function calling it, as a node of a graph function is,
    without a function of its own that numba would type and compile for each node's entry types."""
    out_dtype = numpy_support.from_dtype(np.dtype(dtype))

    @intrinsic
    def join(typingctx, *entries):
        arguments = types.StarArgTuple(entries)
        pack = entries[0] if len(entries) == 1 and isinstance(entries[0], ArrayPackType) else None
        in_types = types.UniTuple(pack.array_type, pack.count) if pack else arguments
        out_type = types.Array(out_dtype, _join_ndim(in_types), "C")

        def codegen(context, builder, sig, args):
            linear = out_type(types.intp, arguments)
            return _emit_linear_join(context, builder, linear, (_INTP(axis), args[0]), in_types, pack, out_type)

        return out_type(arguments), codegen

    return join


def filled_join(filled: int, before: int, after: int, dtype: np.dtype):
    """The intrinsic ``join(*entries)``: a 1-d join whose entry ``filled`` is its output, made by the entry's
    producer (`llvm_backend_intrinsics.loops.LoopOutput.within`): a C-contiguous vector of ``dtype`` holding the entry
    at
    elements ``[before, len - after)``. It writes the other entries (scalars, 0-d arrays, vectors) around it
    and returns it, so the entry is neither allocated on its own nor copied. A graph function calling it
    emits it in its own module.

    The other entries must fill exactly ``before`` elements before it and ``after`` after it: ValueError,
    before any write, if they do not."""
    out_type = types.Array(numpy_support.from_dtype(np.dtype(dtype)), 1, "C")

    @intrinsic
    def join_around(typingctx, *entries):
        if not 0 <= filled < len(entries):
            raise errors.TypingError(f"Join: expected an entry {filled}, got {entries}")
        if entries[filled] != out_type:
            raise errors.TypingError(f"Join: entry {filled} must be the output, a {out_type}, got {entries[filled]}")
        arguments = types.StarArgTuple(entries)
        _join_ndim(arguments)

        def codegen(context, builder, sig, args):
            names = call_names(len(entries), 1)
            values = [builder.extract_value(args[0], k, name=name) for k, name in enumerate(names.arguments)]
            return _emit_vector_join(
                context, builder, _INTP(0), list(entries), values, out_type, (filled, before, after)
            )

        return out_type(arguments), codegen

    return join_around
