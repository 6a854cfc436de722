"""Join, JoinScalars and MakeVector -> ``intrinsics.join.linear_join``: one allocation, one copy loop nest per
input dtype, linear IR in the input count. ``linear_join`` takes the scalar entries of a ``JoinScalars`` and
the 0-d entries of a ``MakeVector`` (a 1-d join of length-1 entries) directly.

For ``join(axis, x0, x1, x2)`` with a float64 output the node function is::

    def join(axis, *tensors):
        return linear_join(axis.item(), tensors, out_dtype)   # out_dtype = np.dtype("float64")
"""

import numpy as np
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.tensor.basic import Join, MakeVector

from intrinsics.join import linear_join
from llvm_backend.codegen import MAX_ITEMS
from llvm_backend.dispatch import lowering_cache_key, register_lowering
from llvm_backend.scalar_ops import JoinScalars

__all__ = ["lower_join", "lower_make_vector"]


@register_lowering(JoinScalars, linear_join)
@register_lowering(Join, linear_join)
def lower_join(op, node, **kwargs):
    out_dtype = np.dtype(node.outputs[0].dtype)

    @numba_njit
    def join(axis, *tensors):
        return linear_join(axis.item(), tensors, out_dtype)

    return join, lowering_cache_key(op, out_dtype=str(out_dtype))


@register_lowering(MakeVector, linear_join, when=lambda node: len(node.inputs) > MAX_ITEMS)
def lower_make_vector(op, node, **kwargs):
    """A wide ``MakeVector(x0, ..., xn)`` as ``linear_join(0, (x0, ..., xn), dtype)``, which also takes the
    entries as one pack. Up to ``MAX_ITEMS`` entries, stock's function (it has no wide-tuple problem there)."""
    out_dtype = np.dtype(node.outputs[0].dtype)

    @numba_njit
    def make_vector(*entries):
        return linear_join(0, entries, out_dtype)

    return make_vector, lowering_cache_key(op, out_dtype=str(out_dtype))
