"""``Split`` as an intrinsic emitted in the graph function (`llvm_backend_intrinsics.split`): the outputs are views
of the input, as stock's, after stock's checks of the sizes, without the function per node in which stock formats
its message and calls ``np.split``."""

from pytensor.tensor.basic import Split

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.split import split_views

__all__ = ["lower_split"]


@register_lowering(Split, split_views)
def lower_split(context: LoweringContext):
    op, node = context.op, context.node
    axis = op.axis % node.inputs[0].type.ndim
    return split_views(axis, op.len_splits), lowering_cache_key(op, axis=axis)
