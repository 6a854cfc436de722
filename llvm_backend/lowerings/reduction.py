"""PyTensor's ``ScalarCAReduce`` (a full reduction handing out a native scalar) -> ``llvm_backend_intrinsics.reduction.
full_reduce``: the accumulator in a stack slot that LLVM keeps in registers, float sums and products split
across vector lanes. A ``CAReduce`` left in the graph (over some axes, into an array) -> ``llvm_backend_intrinsics.
axis_reduction.axis_reduce``, a loop nest of the graph's module where stock compiles a generated function per node.
Reductions ``full_reduce`` has no op for (and a complex accumulator summed into a real output, which numba cannot
cast) keep stock's function.

For ``ScalarCAReduce{Sum}`` of a float64 vector the node function is::

    def scalar_careduce(x):
        return full_reduce(x, "add", identity, acc_dtype, out_dtype)  # identity = 0.0, both float64
"""

import numpy as np
import pytensor.scalar as ps
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.rewriting.scalarize import ScalarCAReduce

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.axis_reduction import axis_reduce
from llvm_backend_intrinsics.reduction import full_reduce

__all__ = [
    "REDUCTION_OPS",
    "lower_careduce",
    "lower_scalar_careduce",
    "reduces_kinds",
    "reduction_identity",
    "uses_axis_reduce",
    "uses_full_reduce",
]

REDUCTION_OPS = {
    ps.Add: "add",
    ps.Mul: "mul",
    ps.ScalarMaximum: "maximum",
    ps.ScalarMinimum: "minimum",
    ps.AND: "and",
    ps.OR: "or",
    ps.XOR: "xor",
}
"""Scalar op of a ``CAReduce`` -> the ``full_reduce`` op that computes it."""

_KINDS = {"add": "biufc", "mul": "biufc", "maximum": "iuf", "minimum": "iuf"}
"""The dtype kinds each op reduces (the bitwise ops: bool and integers)."""


def _careduce(op: ScalarCAReduce) -> CAReduce:
    [node] = [n for n in op.fgraph.apply_nodes if isinstance(n.op, CAReduce)]
    return node.op


def _dtypes(careduce: CAReduce, node) -> tuple[np.dtype, np.dtype, np.dtype]:
    """The input, accumulator and output dtypes."""
    out_dtype = np.dtype(node.outputs[0].dtype)
    return np.dtype(node.inputs[0].dtype), np.dtype(getattr(careduce, "acc_dtype", None) or out_dtype), out_dtype


def reduces_kinds(name: str) -> str:
    """The dtype kinds the ``full_reduce`` op ``name`` reduces."""
    return _KINDS.get(name, "biu")


def uses_full_reduce(node) -> bool:
    """a Sum, Prod, Max, Min, All, Any or bitwise reduction of dtypes full_reduce takes"""
    return _reduces(_careduce(node.op), node)


def uses_axis_reduce(node) -> bool:
    """a Sum, Prod, Max, Min, All, Any or bitwise reduction of dtypes axis_reduce takes (full_reduce's)"""
    return _reduces(node.op, node)


def _reduces(careduce: CAReduce, node) -> bool:
    """Whether ``careduce`` (``node``'s own op or the one within it) has an op of `REDUCTION_OPS` and dtypes it
    reduces."""
    name = REDUCTION_OPS.get(type(careduce.scalar_op))
    if name is None:
        return False
    in_dtype, acc_dtype, out_dtype = _dtypes(careduce, node)
    kinds = reduces_kinds(name)
    complex_into_real = acc_dtype.kind == "c" and out_dtype.kind != "c"
    return in_dtype.kind in kinds and out_dtype.kind in kinds and not complex_into_real


def reduction_identity(scalar_op, acc_dtype: np.dtype):
    """The reduction's identity in the accumulator's dtype: integer max/min start at the dtype's bounds, an
    integer AND at all bits set (-1 wrapped to the dtype, for unsigned ones too)."""
    if isinstance(scalar_op, ps.ScalarMaximum | ps.ScalarMinimum) and acc_dtype.kind in "iu":
        info = np.iinfo(acc_dtype)
        return info.min if isinstance(scalar_op, ps.ScalarMaximum) else info.max
    return np.array(scalar_op.identity).astype(acc_dtype)[()]


@register_lowering(ScalarCAReduce, full_reduce, when=uses_full_reduce)
def lower_scalar_careduce(context: LoweringContext):
    op, node = context.op, context.node
    careduce = _careduce(op)
    name = REDUCTION_OPS[type(careduce.scalar_op)]
    in_dtype, acc_dtype, out_dtype = _dtypes(careduce, node)
    identity = reduction_identity(careduce.scalar_op, acc_dtype)

    @numba_njit
    def scalar_careduce(x):
        return full_reduce(x, name, identity, acc_dtype, out_dtype)

    dtypes = (str(in_dtype), str(acc_dtype), str(out_dtype))
    return scalar_careduce, lowering_cache_key(op, reduction=name, dtypes=dtypes, ndim=node.inputs[0].ndim)


@register_lowering(CAReduce, axis_reduce, when=uses_axis_reduce)
def lower_careduce(context: LoweringContext):
    op, node = context.op, context.node
    name = REDUCTION_OPS[type(op.scalar_op)]
    in_dtype, acc_dtype, out_dtype = _dtypes(op, node)
    identity = reduction_identity(op.scalar_op, acc_dtype).item()
    axes = tuple(range(node.inputs[0].ndim)) if op.axis is None else tuple(sorted(op.axis))
    reduce = axis_reduce(axes, name, identity, str(acc_dtype), str(out_dtype))
    dtypes = (str(in_dtype), str(acc_dtype), str(out_dtype))
    # keyed without props: ``scalar_op``'s pickle is not the same in every process
    key = lowering_cache_key(op, use_props=False, reduction=name, dtypes=dtypes, axes=axes, identity=repr(identity))
    return reduce, key
