"""``Alloc`` as an intrinsic emitted in the graph function (`llvm_backend_intrinsics.alloc`): a loop nest filling a
new array, where stock compiles a function per node whose scalar fill is numba's array assignment. The values, and
the ValueErrors of a value that does not broadcast into the shape asked for, are stock's."""

from pytensor.tensor.basic import Alloc

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.alloc import alloc_fill

__all__ = ["lower_alloc"]


@register_lowering(Alloc, alloc_fill)
def lower_alloc(context: LoweringContext):
    broadcast = tuple(length == 1 for length in context.node.inputs[0].type.shape)
    return alloc_fill(broadcast), lowering_cache_key(context.op, broadcast=broadcast)
