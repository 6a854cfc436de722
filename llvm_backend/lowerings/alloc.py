"""``Alloc`` as an intrinsic emitted in the graph function (`llvm_backend_intrinsics.alloc`): a loop nest filling a
new array, where stock compiles a function per node whose scalar fill is numba's array assignment. The values, and
the ValueErrors of a value that does not broadcast into the shape asked for, are stock's. An ``AllocEmpty`` is
``np.empty`` emitted in the graph function (`alloc_empty`), an ``ARange`` of signed integers numba's ``np.arange``
(`alloc_range`)."""

import numpy as np
from pytensor.tensor.basic import Alloc, AllocEmpty, ARange

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.alloc import alloc_empty, alloc_fill, alloc_range

__all__ = ["lower_alloc", "lower_alloc_empty", "lower_arange", "of_signed_integers"]


@register_lowering(Alloc, alloc_fill)
def lower_alloc(context: LoweringContext):
    broadcast = tuple(length == 1 for length in context.node.inputs[0].type.shape)
    return alloc_fill(broadcast), lowering_cache_key(context.op, broadcast=broadcast)


@register_lowering(AllocEmpty, alloc_empty)
def lower_alloc_empty(context: LoweringContext):
    dtype = np.dtype(context.op.dtype)
    return alloc_empty(dtype), lowering_cache_key(context.op, dtype=str(dtype))


def of_signed_integers(node) -> bool:
    """signed integer bounds and step, an output of integers or floats"""
    bounds = all(variable.type.dtype.startswith("int") for variable in node.inputs)
    return bounds and np.dtype(node.outputs[0].type.dtype).kind in "if"


@register_lowering(ARange, alloc_range, when=of_signed_integers)
def lower_arange(context: LoweringContext):
    dtype = np.dtype(context.op.dtype)
    return alloc_range(dtype), lowering_cache_key(context.op, dtype=str(dtype))
