"""Join and JoinScalars -> ``intrinsics.join.linear_join``: one allocation, one copy loop nest per input dtype,
linear IR in the input count. ``linear_join`` takes the scalar entries of a ``JoinScalars`` directly.

For ``join(axis, x0, x1, x2)`` with a float64 output the node function is::

    def join(axis, *tensors):
        return linear_join(axis.item(), tensors, out_dtype)   # out_dtype = np.dtype("float64")
"""

import numpy as np
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.tensor.basic import Join

from intrinsics.join import linear_join
from llvm_backend.dispatch import lowering_cache_key, register_lowering
from llvm_backend.scalar_ops import JoinScalars

__all__ = ["lower_join"]


@register_lowering(JoinScalars, linear_join)
@register_lowering(Join, linear_join)
def lower_join(op, node, **kwargs):
    out_dtype = np.dtype(node.outputs[0].dtype)

    @numba_njit
    def join(axis, *tensors):
        return linear_join(axis.item(), tensors, out_dtype)

    return join, lowering_cache_key(op, out_dtype=str(out_dtype))
