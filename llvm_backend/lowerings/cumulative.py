"""``CumOp`` (``pt.cumsum``, ``pt.cumprod``) as an intrinsic emitted in the graph function
(`llvm_backend_intrinsics.cumulative`): stock's values to the bit, without the function stock compiles per node.
Integer and boolean inputs keep stock's function (numpy widens their cumulative sums)."""

from pytensor.tensor.extra_ops import CumOp

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.cumulative import cumulative

__all__ = ["lower_cumop", "of_floats"]


def of_floats(node) -> bool:
    """a float32 or float64 input and output of its dtype"""
    dtypes = {node.inputs[0].type.dtype, node.outputs[0].type.dtype}
    return dtypes in ({"float64"}, {"float32"})


@register_lowering(CumOp, cumulative, when=of_floats)
def lower_cumop(context: LoweringContext):
    op = context.op
    return cumulative(op.axis, op.mode), lowering_cache_key(op)
