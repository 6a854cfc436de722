"""``CheckAndRaise`` (and ``Assert``) as an intrinsic emitted in the graph function
(`llvm_backend_intrinsics.checks`): stock's exception class and message, without the function stock compiles per
node."""

from pytensor.raise_op import CheckAndRaise

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.checks import check_and_raise

__all__ = ["lower_check_and_raise"]


@register_lowering(CheckAndRaise, check_and_raise)
def lower_check_and_raise(context: LoweringContext):
    op = context.op
    return check_and_raise(op.exc_type, op.msg), lowering_cache_key(op)
