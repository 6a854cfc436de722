"""``IncSubtensor`` (``x[2:] = y``, ``x[i] += y``) as an intrinsic emitted in the graph function
(`llvm_backend_intrinsics.updates`): stock's bounds checks and ValueError, without the function stock generates and
compiles per node. Updates of booleans keep stock's function."""

from pytensor.tensor.subtensor import IncSubtensor

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend.lowerings.views import index_entries
from llvm_backend_intrinsics.updates import basic_update

__all__ = ["lower_inc_subtensor", "writes_numbers"]


def writes_numbers(node) -> bool:
    """x and y of numbers, not booleans"""
    return "bool" not in (node.inputs[0].type.dtype, node.inputs[1].type.dtype)


@register_lowering(IncSubtensor, basic_update, when=writes_numbers)
def lower_inc_subtensor(context: LoweringContext):
    op = context.op
    entries = index_entries(op)
    kind = "set" if op.set_instead_of_inc else "inc"
    return basic_update(entries, kind, op.inplace), lowering_cache_key(op, entries=entries)
