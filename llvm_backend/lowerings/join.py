"""Join, ScalarizedJoin and wide MakeVector -> ``intrinsics.join.linear_join``: one allocation, one copy loop
nest per input dtype, linear IR in the input count. ``linear_join`` takes the scalar entries of PyTensor's
``ScalarizedJoin`` and the 0-d entries of a ``MakeVector`` (a 1-d join of length-1 entries) directly.

``Join`` holds its axis as a static property (``Join(axis)(*tensors)``), so every node function takes only
the entries. For ``Join(1)(x0, x1, x2)`` with a float64 output the node function is::

    def join(*entries):
        return linear_join(1, entries, out_dtype)  # out_dtype = np.dtype("float64")

numba refuses an argument tuple of more than 1,000 values of one type, so a node of more entries is lowered
here only when they are tensors of one dtype and ndim, which the node function takes as one pack; stock's
function, which takes each entry as a parameter of its own, compiles the others.
"""

import numpy as np
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.scalar import ScalarType
from pytensor.tensor.basic import Join, MakeVector
from pytensor.tensor.rewriting.scalarize import ScalarizedJoin

from intrinsics.join import linear_join
from llvm_backend.dispatch import MAX_ITEMS, lowering_cache_key, one_pack, register_lowering

__all__ = [
    "NUMBA_MAX_TUPLE",
    "entries_fit_a_call",
    "lower_join",
    "lower_make_vector",
    "lower_scalarized_join",
    "wider_than_a_call",
]

NUMBA_MAX_TUPLE = 1000
"""The most values of one type numba takes as one tuple argument (``numba.core.ir_utils``, issue 2195)."""


def entries_fit_a_call(node) -> bool:
    """at most 1,000 entries, or tensors of one dtype and ndim (one pack)"""
    return len(node.inputs) <= NUMBA_MAX_TUPLE or one_pack(node.inputs)


def _joiner(axis: int, out_dtype: np.dtype):
    @numba_njit
    def join(*entries):
        return linear_join(axis, entries, out_dtype)

    return join


@register_lowering(Join, linear_join, when=entries_fit_a_call, pack_start=0)
def lower_join(op, node, **kwargs):
    out_dtype = np.dtype(node.outputs[0].dtype)
    return _joiner(op.axis, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype))


@register_lowering(ScalarizedJoin, linear_join, when=entries_fit_a_call, pack_start=0)
def lower_scalarized_join(op, node, **kwargs):
    """PyTensor's 1-d join whose entries are vectors or ``ScalarType`` values (each one element)."""
    out_dtype = np.dtype(node.outputs[0].dtype)
    entries = tuple(
        "scalar" if isinstance(i.type, ScalarType) else f"{i.type.dtype}[{i.type.ndim}]" for i in node.inputs
    )
    return _joiner(0, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype), entries=entries)


def wider_than_a_call(node) -> bool:
    """more than 30 (MAX_ITEMS) inputs, and at most 1,000 or all of one dtype"""
    return len(node.inputs) > MAX_ITEMS and entries_fit_a_call(node)


@register_lowering(MakeVector, linear_join, when=wider_than_a_call, pack_start=0)
def lower_make_vector(op, node, **kwargs):
    """A wide ``MakeVector(x0, ..., xn)`` as ``linear_join(0, (x0, ..., xn), dtype)``, which also takes the
    entries as one pack. Up to ``MAX_ITEMS`` entries, stock's function (it has no wide-tuple problem there)."""
    out_dtype = np.dtype(node.outputs[0].dtype)
    return _joiner(0, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype))
