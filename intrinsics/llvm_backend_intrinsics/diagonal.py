"""Diagonals of an array, emitted where they are called: PyTensor's ``ExtractDiag`` (``pt.diagonal``,
``pt.diag`` of a matrix, the diagonal of a Cholesky factor in ``MvNormal``'s log-density).

Stock numba compiles each ``ExtractDiag`` node as an ``@njit`` function (``np.diag``, or a loop over the diagonal
copying one slice per element), typed and lowered in every fresh process. Here the diagonal is a strided view
of the input (its two axes replaced by one whose stride is their sum) copied by one loop nest, in the graph's
module.

What it keeps true: the values, shape and order are ``np.diagonal``'s (the input's other axes in order, the
diagonal last, of length 0 when the offset is past the matrix); the result is a new C-contiguous array, as
stock's, and the input is never written.

    diagonal(offset, axis1, axis2)(x)  # np.diagonal(x, offset, axis1, axis2).copy(), axis1 < axis2
"""

from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl

from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array, emit_copy_into

__all__ = ["diagonal"]

_INTP = cgutils.intp_t


def _emit_length(builder, rows, cols, offset: int):
    """The diagonal's length: ``min(rows, max(0, cols - offset))``, or ``min(cols, max(0, rows + offset))`` below
    the main diagonal."""
    along, across = (cols, rows) if offset >= 0 else (rows, cols)
    rest = builder.sub(along, _INTP(abs(offset)))
    rest = builder.select(builder.icmp_signed("<", rest, _INTP(0)), _INTP(0), rest)
    return builder.select(builder.icmp_signed("<", across, rest), across, rest)


@cache
def diagonal(offset: int, axis1: int, axis2: int):
    """The intrinsic ``extract_diag(x)``: the diagonals of ``x`` along axes ``axis1 < axis2`` at ``offset``, as
    ``np.diagonal`` takes them, in a new C-contiguous array."""

    @intrinsic
    def extract_diag(typingctx, x):
        if not (isinstance(x, types.Array) and 0 <= axis1 < axis2 < x.ndim):
            raise errors.TypingError(f"extract_diag: axes {axis1} and {axis2} of an array, got {x}")
        out_type = types.Array(x.dtype, x.ndim - 1, "C")

        def codegen(context, builder, signature, args):
            names = call_names(1, 1)
            x_name, out = names.arguments[0], names.outputs[0]
            array, shapes, strides = emit_array(context, builder, x, args[0], x_name)
            length = named(_emit_length(builder, shapes[axis1], shapes[axis2], offset), f"{out}.length")
            kept = [axis for axis in range(x.ndim) if axis not in (axis1, axis2)]
            view_shapes = [shapes[axis] for axis in kept] + [length]
            view_strides = [strides[axis] for axis in kept] + [builder.add(strides[axis1], strides[axis2])]
            start = builder.mul(strides[axis2] if offset >= 0 else strides[axis1], _INTP(abs(offset)))
            data = cgutils.pointer_add(builder, array.data, start)
            result = _empty_nd_impl(context, builder, out_type, view_shapes)
            with builder.if_then(builder.icmp_signed(">", length, _INTP(0))):
                emit_copy_into(context, builder, data, "A", view_shapes, view_strides, result)
            return impl_ret_new_ref(context, builder, out_type, named(result._getvalue(), out))

        return out_type(x), codegen

    return extract_diag
