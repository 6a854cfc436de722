"""Reads and updates of an array by leading integer index arrays, emitted where they are called: ``x[i]``,
``m[i, j]``, ``x[i] = y``, ``x[i] += y`` (duplicates accumulating, as ``np.add.at``).

Stock numba compiles each such node as an ``@njit`` function generated for it (broadcasting the index arrays,
transposing, a loop over the broadcast shape), typed and lowered in every fresh process. Here it is one loop nest of
the graph's module over the broadcast shape of the index arrays followed by the axes of ``x`` they leave.

What it keeps true: the index arrays named by ``checks`` are checked first (numpy's ``IndexError``,
`llvm_backend_intrinsics.bounds`), so nothing is read or written unless every position is within its axis; a
negative position counts from the end. Index arrays whose shapes do not broadcast, and an update value that does
not broadcast into the indexed shape, raise stock's ``ValueError``s before anything is written. A read makes a new
C-contiguous array; an update writes into ``x`` itself when ``inplace``, else into a C-contiguous copy, and
returns what it wrote into.

Layering: typing (`_check_types`) -> the ``@intrinsic`` glue (`indexed_access`) -> the emitters ``_emit_*``.

    indexed_access("read", checks, False)(m, i, j)  # m[i, j], i and j integer arrays of one ndim
    indexed_access("inc", checks, False)(x, y, i)  # np.add.at(x.copy(), i, y)
"""

import operator
from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_borrowed, impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _array_copy, _empty_nd_impl, load_item, store_item

from llvm_backend_intrinsics.bounds import emit_index_check
from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array

__all__ = [
    "INDEX_BROADCAST_ERROR",
    "KINDS",
    "VALUE_BROADCAST_ERROR",
    "broadcast_at",
    "emit_store",
    "emit_value_check",
    "indexed_access",
]

_INTP = cgutils.intp_t

INDEX_BROADCAST_ERROR = "shape mismatch: objects cannot be broadcast to a single shape"
"""Stock's ``ValueError`` (numba's ``np.broadcast_shapes``) for index arrays whose shapes do not broadcast."""
VALUE_BROADCAST_ERROR = "operands could not be broadcast together with remapped shapes"
"""Stock's ``ValueError`` (numba's ``np.broadcast_to``) for an update value that does not fit the indexed shape."""
KINDS = ("read", "set", "inc")


# ---------------------------------------------------------------- typing


def _check_types(kind: str, x, arguments):
    """``(y, indices, result type)``, ``y`` None for a read; a TypingError unless ``x`` is an array of numbers, the
    indices are integer arrays of one ndim (at least 1), no more than ``x`` has axes, and an update's ``y`` is a
    number or an array of numbers of no more axes than the indexed shape."""
    if kind not in KINDS:
        raise errors.TypingError(f"indexed_access: kind must be one of {KINDS}, got {kind!r}")
    if not (isinstance(x, types.Array) and isinstance(x.dtype, types.Number)):
        raise errors.TypingError(f"indexed_access: x must be an array of numbers, got {x}")
    y, indices = (None, arguments) if kind == "read" else (arguments[0], arguments[1:])
    if not indices or len(indices) > x.ndim:
        raise errors.TypingError(f"indexed_access: {len(indices)} index arrays for the {x.ndim} axes of x")
    ndims = {index.ndim if isinstance(index, types.Array) else 0 for index in indices}
    for k, index in enumerate(indices):
        if not (isinstance(index, types.Array) and isinstance(index.dtype, types.Integer)):
            raise errors.TypingError(f"indexed_access: index {k} must be an integer array, got {index}")
    if len(ndims) != 1 or 0 in ndims:
        raise errors.TypingError(f"indexed_access: the index arrays must have one ndim, at least 1, got {indices}")
    indexed_ndim = ndims.pop() + x.ndim - len(indices)
    if y is not None:
        dtype = y.dtype if isinstance(y, types.Array) else y
        if not isinstance(dtype, types.Number) or (isinstance(y, types.Array) and y.ndim > indexed_ndim):
            raise errors.TypingError(f"indexed_access: y must be a number or an array of numbers that fits, got {y}")
    return y, indices, indexed_ndim


# ---------------------------------------------------------------- emitters


def _emit_broadcast_shape(context, builder, index_shapes, ndim: int, name: str) -> list:
    """The broadcast shape of the index arrays (`INDEX_BROADCAST_ERROR` if they do not broadcast)."""
    one = _INTP(1)
    shape, mismatch = [], cgutils.false_bit
    for d in range(ndim):
        length = one
        for k, shapes in enumerate(index_shapes):
            size = shapes[d]
            not_one = builder.icmp_signed("!=", size, one)
            conflict = builder.and_(
                builder.and_(not_one, builder.icmp_signed("!=", length, one)), builder.icmp_signed("!=", size, length)
            )
            mismatch = builder.or_(mismatch, conflict)
            length = builder.select(not_one, size, length, name=f"{name}.shape{d}.{k}")
        shape.append(length)
    with cgutils.if_unlikely(builder, mismatch):
        context.call_conv.return_user_exc(builder, ValueError, (INDEX_BROADCAST_ERROR,))
    return shape


def emit_value_check(context, builder, y_shapes, shape) -> None:
    """`VALUE_BROADCAST_ERROR` unless each axis of an update value ``y`` (aligned with the last of ``shape``, the
    shape written) is 1 or its length."""
    mismatch = cgutils.false_bit
    for size, length in zip(y_shapes, shape[len(shape) - len(y_shapes) :]):
        differs = builder.and_(
            builder.icmp_signed("!=", size, _INTP(1)), builder.icmp_signed("!=", size, length, name="y.shape.differs")
        )
        mismatch = builder.or_(mismatch, differs)
    with cgutils.if_unlikely(builder, mismatch):
        context.call_conv.return_user_exc(builder, ValueError, (VALUE_BROADCAST_ERROR,))


def broadcast_at(builder, shapes, at) -> list:
    """Position ``at`` of a broadcast shape read in an array of ``shapes`` (its last axes): 0 along a length-1 axis."""
    at = at[len(at) - len(shapes) :]
    return [builder.select(builder.icmp_signed("==", size, _INTP(1)), _INTP(0), i) for size, i in zip(shapes, at)]


class _Indexed:
    """``x`` and its index arrays taken apart, for the positions in ``x`` a loop over the indexed shape reaches."""

    def __init__(self, context, builder, x, x_value, index_types, index_values, name: str):
        self.context, self.builder, self.x, self.index_types = context, builder, x, index_types
        self.array, self.shapes, self.strides = emit_array(context, builder, x, x_value, name)
        self.indices = [
            emit_array(context, builder, ty, value, f"index{k}")
            for k, (ty, value) in enumerate(zip(index_types, index_values))
        ]
        self.index_ndim = index_types[0].ndim

    def positions(self, at) -> list:
        """The position in ``x`` that position ``at`` of the indexed shape reads: each index array's value at
        ``at``'s first axes (a negative one counted from the end; the bounds were checked), then ``at``'s others."""
        context, builder, positions = self.context, self.builder, []
        for k, (index_type, (array, shapes, strides)) in enumerate(zip(self.index_types, self.indices)):
            within = broadcast_at(builder, shapes, at[: self.index_ndim])
            pointer = cgutils.get_item_pointer2(
                context, builder, array.data, shapes, strides, index_type.layout, within
            )
            item = load_item(context, builder, index_type, pointer)
            position = context.cast(builder, item, index_type.dtype, types.intp)
            negative = builder.icmp_signed("<", position, _INTP(0))
            wrapped = builder.select(negative, builder.add(position, self.shapes[k]), position)
            positions.append(named(wrapped, f"at{k}"))
        return positions + list(at[self.index_ndim :])


def _emit_read(context, builder, indexed: _Indexed, result_type, shape):
    """A new C-contiguous array of ``shape`` holding ``x``'s values at the indexed positions."""
    x = indexed.x
    result = _empty_nd_impl(context, builder, result_type, shape)
    strides = cgutils.unpack_tuple(builder, result.strides, result_type.ndim)
    with cgutils.loop_nest(builder, shape, _INTP) as at:
        pointer = cgutils.get_item_pointer2(
            context, builder, indexed.array.data, indexed.shapes, indexed.strides, x.layout, indexed.positions(at)
        )
        out = cgutils.get_item_pointer2(context, builder, result.data, shape, strides, "C", list(at))
        store_item(context, builder, result_type, load_item(context, builder, x, pointer), out)
    return result._getvalue()


def _emit_write(context, builder, kind: str, indexed: _Indexed, y, y_value, target_type, target, shape) -> None:
    """Set (``kind`` ``"set"``) or add (``"inc"``) ``y``, broadcast into ``shape`` (`emit_value_check` passed), at
    the indexed positions of ``target`` (``x`` or its copy, of type ``target_type``)."""
    x = indexed.x
    if isinstance(y, types.Array):
        y_array, y_shapes, y_strides = emit_array(context, builder, y, y_value, "y")
    array = context.make_array(target_type)(context, builder, target)
    strides = cgutils.unpack_tuple(builder, array.strides, x.ndim)
    with cgutils.loop_nest(builder, shape, _INTP) as at:
        pointer = cgutils.get_item_pointer2(
            context, builder, array.data, indexed.shapes, strides, target_type.layout, indexed.positions(at)
        )
        if isinstance(y, types.Array):
            within = broadcast_at(builder, y_shapes, list(at))
            y_pointer = cgutils.get_item_pointer2(context, builder, y_array.data, y_shapes, y_strides, y.layout, within)
            item, item_type = load_item(context, builder, y, y_pointer), y.dtype
        else:
            item, item_type = y_value, y
        emit_store(context, builder, kind, x, pointer, context.cast(builder, item, item_type, x.dtype))


def emit_store(context, builder, kind: str, x, pointer, item) -> None:
    """Store ``item`` (of array type ``x``'s dtype) at ``pointer``: set it, or add it (``kind`` ``"inc"``)."""
    if kind == "inc":
        add = context.get_function(operator.add, x.dtype(x.dtype, x.dtype))
        item = add(builder, (load_item(context, builder, x, pointer), item))
    store_item(context, builder, x, item, pointer)


# ---------------------------------------------------------------- intrinsic


@cache
def indexed_access(kind: str, checks: tuple, inplace: bool):
    """The intrinsic ``access(x, *indices)`` (a read) or ``access(x, y, *indices)`` (``kind`` ``"set"`` or
    ``"inc"``): ``x[indices]``, a new array; or ``x`` with ``x[indices] = y`` (``+= y``, each duplicate position
    adding) written into ``x`` itself when ``inplace``, else into a copy. The index arrays cover ``x``'s leading
    axes; ``checks`` (`llvm_backend_intrinsics.bounds.IndexCheck`, positions among the indices) are bounds-checked
    first."""

    @intrinsic
    def access(typingctx, x, *arguments):
        y, indices, indexed_ndim = _check_types(kind, x, arguments)
        if kind == "read":
            result_type = types.Array(x.dtype, indexed_ndim, "C")
        else:
            result_type = x if inplace else types.Array(x.dtype, x.ndim, "C")

        def codegen(context, builder, signature, args):
            names = call_names(1 + len(arguments), 1)
            source, packed = args
            values = [builder.extract_value(packed, k, name=names.arguments[1 + k]) for k in range(len(arguments))]
            y_value, index_values = (None, values) if kind == "read" else (values[0], values[1:])
            indexed = _Indexed(context, builder, x, source, indices, index_values, names.arguments[0])
            for check in checks:
                index_type, index = indices[check.position], index_values[check.position]
                emit_index_check(context, builder, index_type, index, indexed.shapes[check.axis], check.axis)
            index_shapes = [shapes for _, shapes, _ in indexed.indices]
            shape = _emit_broadcast_shape(context, builder, index_shapes, indexed.index_ndim, "indexed")
            shape += indexed.shapes[len(indices) :]
            if kind == "read":
                result = _emit_read(context, builder, indexed, result_type, shape)
                return impl_ret_new_ref(context, builder, result_type, named(result, names.outputs[0]))
            if isinstance(y, types.Array):
                emit_value_check(context, builder, emit_array(context, builder, y, y_value, "y")[1], shape)
            if inplace:
                _emit_write(context, builder, kind, indexed, y, y_value, result_type, source, shape)
                return impl_ret_borrowed(context, builder, result_type, source)
            target = _array_copy(context, builder, result_type(x), [source])
            _emit_write(context, builder, kind, indexed, y, y_value, result_type, target, shape)
            return impl_ret_new_ref(context, builder, result_type, target)

        return result_type(x, types.StarArgTuple(arguments)), codegen

    return access
