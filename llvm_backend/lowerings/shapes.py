"""``SpecifyShape``, ``Shape_i``, ``Shape`` and ``Reshape`` as intrinsics emitted in the graph function
(`llvm_backend_intrinsics.shapes`, `llvm_backend_intrinsics.reshape`).

Stock's ``SpecifyShape`` function formats its assertion's message in nopython code, whose string machinery numba
types and lowers in every fresh process, most of a small model's cold compile; every ``pm.Data`` of a PyMC model
passes through one. Here each node is a
few instructions of the graph's module; the values returned, the exception raised (``AssertionError``) and its
message are stock's. A ``Reshape`` is a view of its input (or of a copy, if its input is not C-contiguous), as
stock's, without the function per node stock compiles for ``np.reshape``.
"""

from pytensor.tensor.shape import Reshape, Shape, Shape_i, SpecifyShape

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.reshape import reshape_view
from llvm_backend_intrinsics.shapes import array_shape, shape_entry, specify_shape

__all__ = ["lower_reshape", "lower_shape", "lower_shape_i", "lower_specify_shape"]


@register_lowering(SpecifyShape, specify_shape)
def lower_specify_shape(context: LoweringContext):
    return specify_shape, lowering_cache_key(context.op)


@register_lowering(Shape_i, shape_entry)
def lower_shape_i(context: LoweringContext):
    return shape_entry(context.op.i), lowering_cache_key(context.op)


@register_lowering(Shape, array_shape)
def lower_shape(context: LoweringContext):
    return array_shape, lowering_cache_key(context.op)


@register_lowering(Reshape, reshape_view)
def lower_reshape(context: LoweringContext):
    return reshape_view(context.op.ndim), lowering_cache_key(context.op)
