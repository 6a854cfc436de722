"""An array's shape read and checked where it is used: PyTensor's ``SpecifyShape``, ``Shape_i`` and ``Shape``.

Every ``pm.Data`` of a PyMC model reaches its log-density through a ``SpecifyShape``, whose stock numba function
asserts each dimension with a message formatted in nopython code (``f"... has shape {x.shape[0]}, expected
{shape_0.item()}."``): numba types and lowers its integer-to-string machinery for it in every fresh process, most
of a small model's cold compile. Here the check is a compare and a branch per dimension in the graph's module, and
the message is formatted in Python when the exception is raised (`llvm_backend_intrinsics.messages`), worded as
stock's.

Layering: typing (`_expected_type`) -> the ``@intrinsic`` glue (`specify_shape`, `shape_entry`, `array_shape`)
-> the emitters ``_emit_*``.

What each computes, as the Python of stock's functions:

    specify_shape(x, 3, None)  # x, after: assert x.shape[0] == 3, specify_shape_message(0, x.shape[0], 3)
    shape_entry(1)(x)  # np.asarray(x.shape[1]), a new 0-d int64 array
    array_shape(x)  # np.asarray(x.shape), a new int64 vector of x.ndim entries
"""

from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_borrowed, impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl

from llvm_backend_intrinsics.messages import MessageType, raise_formatted
from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array, emit_box, emit_intp, integer_type

__all__ = ["array_shape", "shape_entry", "specify_shape", "specify_shape_message"]

_SHAPE_TYPE = types.int64
"""The dtype of what ``Shape`` and ``Shape_i`` return (PyTensor's ``int64``)."""


def specify_shape_message(dim, size, expected) -> str:
    """Stock's message when dimension ``dim`` of a ``SpecifyShape``'s input has ``size``, not ``expected``."""
    return f"SpecifyShape: dim {dim} of input has shape {size}, expected {expected}."


# ---------------------------------------------------------------- typing


def _expected_type(ty, dim: int):
    """The integer type of an expected size (an integer, or a 0-d integer array read as its item), or None for
    a dimension left unchecked (a ``None`` argument)."""
    if isinstance(ty, types.NoneType | types.Omitted):
        return None
    return integer_type(ty, f"specify_shape: the size of dim {dim} (or None)")


# ---------------------------------------------------------------- emitters


def _emit_vector(context, builder, values, name: str):
    """A new contiguous int64 vector holding ``values`` (``intp``\\ s), named ``name``."""
    vector_type = types.Array(_SHAPE_TYPE, 1, "C")
    vector = _empty_nd_impl(context, builder, vector_type, [cgutils.intp_t(len(values))])
    data = named(vector.data, f"{name}.data")
    for k, value in enumerate(values):
        stored = context.cast(builder, value, types.intp, _SHAPE_TYPE)
        builder.store(stored, builder.gep(data, [cgutils.intp_t(k)], name=f"{name}.slot{k}"))
    return impl_ret_new_ref(context, builder, vector_type, named(vector._getvalue(), name))


def _emit_box(context, builder, value, name: str):
    """A new 0-d int64 array holding ``value`` (an ``intp``), named ``name``."""
    return emit_box(context, builder, _SHAPE_TYPE, context.cast(builder, value, types.intp, _SHAPE_TYPE), name)


# ---------------------------------------------------------------- intrinsics


_MISMATCH = MessageType(specify_shape_message, (types.intp, types.intp, types.intp))


@intrinsic
def specify_shape(typingctx, x, *expected):
    """``x`` itself, once each of its dimensions with an expected size (an integer or a 0-d integer array; None
    leaves the dimension unchecked) has that size; else stock's ``AssertionError``, for the first dimension that
    differs, its message `specify_shape_message`."""
    if not isinstance(x, types.Array):
        raise errors.TypingError(f"specify_shape: x must be an array, got {x}")
    if len(expected) != x.ndim:
        raise errors.TypingError(f"specify_shape: {len(expected)} sizes for an array of {x.ndim} dimensions")
    expected_types = [_expected_type(ty, d) for d, ty in enumerate(expected)]

    def codegen(context, builder, signature, args):
        names = call_names(1 + len(expected), 1)
        source, packed = args
        _, shapes, _ = emit_array(context, builder, x, source, names.arguments[0])
        for d, ty in enumerate(expected_types):
            if ty is None:
                continue
            name = names.arguments[1 + d]
            want = emit_intp(context, builder, expected[d], builder.extract_value(packed, d, name=name))
            differs = builder.icmp_signed("!=", shapes[d], want, name=f"{names.arguments[0]}.shape{d}.differs")
            with cgutils.if_unlikely(builder, differs):
                raise_formatted(context, builder, AssertionError, _MISMATCH, (cgutils.intp_t(d), shapes[d], want))
        return impl_ret_borrowed(context, builder, x, source)

    return x(x, types.StarArgTuple(expected)), codegen


@cache
def shape_entry(axis: int):
    """The intrinsic ``entry(x)``: ``np.asarray(x.shape[axis])``, a new 0-d int64 array."""

    @intrinsic
    def entry(typingctx, x):
        if not isinstance(x, types.Array) or not 0 <= axis < x.ndim:
            raise errors.TypingError(f"shape_entry({axis}): x must be an array with axis {axis}, got {x}")

        def codegen(context, builder, signature, args):
            names = call_names(1, 1)
            _, shapes, _ = emit_array(context, builder, x, args[0], names.arguments[0])
            return _emit_box(context, builder, shapes[axis], names.outputs[0])

        return types.Array(_SHAPE_TYPE, 0, "C")(x), codegen

    return entry


@intrinsic
def array_shape(typingctx, x):
    """``np.asarray(x.shape)`` as PyTensor's ``Shape`` types it: a new int64 vector of ``x.ndim`` entries."""
    if not isinstance(x, types.Array):
        raise errors.TypingError(f"array_shape: x must be an array, got {x}")

    def codegen(context, builder, signature, args):
        names = call_names(1, 1)
        _, shapes, _ = emit_array(context, builder, x, args[0], names.arguments[0])
        return _emit_vector(context, builder, shapes, names.outputs[0])

    return types.Array(_SHAPE_TYPE, 1, "C")(x), codegen
