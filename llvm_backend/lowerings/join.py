"""Join, ScalarizedJoin and wide MakeVector -> ``intrinsics.join.linear_join``: one allocation, one copy loop
nest per input dtype, linear IR in the input count. ``linear_join`` takes the scalar entries of PyTensor's
``ScalarizedJoin`` and the 0-d entries of a ``MakeVector`` (a 1-d join of length-1 entries) directly.

``Join`` holds its axis as a static property (``Join(axis)(*tensors)``), so every node function takes only
the entries. For ``Join(1)(x0, x1, x2)`` with a float64 output the node function is::

    def join(*entries):
        return linear_join(1, entries, out_dtype)  # out_dtype = np.dtype("float64")

When a 1-d join's entry is a new vector of one of our loops that only the join reads, the loop allocates the
join's output and writes the entry within it, and the join writes the others around it (`filled_joins`,
``intrinsics.join.filled_join``).

numba refuses an argument tuple of more than 1,000 values of one type, so a node of more entries is lowered
here only when they are tensors of one dtype and ndim, which the node function takes as one pack; stock's
function, which takes each entry as a parameter of its own, compiles the others.
"""

import numpy as np
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.scalar import ScalarType
from pytensor.tensor.basic import Join, MakeVector
from pytensor.tensor.rewriting.scalarize import ScalarizedJoin

from intrinsics.join import filled_join, linear_join
from llvm_backend.dispatch import (
    MAX_ITEMS,
    lowering_cache_key,
    lowering_for,
    one_pack,
    packed_arguments,
    register_lowering,
)
from llvm_backend.lowerings.loops import loop_spec, lower_loop

__all__ = [
    "NUMBA_MAX_TUPLE",
    "entries_fit_a_call",
    "filled_joins",
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
def lower_join(op, node, filled=None, **kwargs):
    """``filled = (k, before, after)``: entry ``k`` arrives as the output itself (`filled_joins`)."""
    out_dtype = np.dtype(node.outputs[0].dtype)
    if filled is not None:
        return filled_join(*filled, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype), filled=filled)
    return _joiner(op.axis, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype))


@register_lowering(ScalarizedJoin, linear_join, when=entries_fit_a_call, pack_start=0)
def lower_scalarized_join(op, node, filled=None, **kwargs):
    """PyTensor's 1-d join whose entries are vectors or ``ScalarType`` values (each one element). ``filled``:
    as `lower_join`'s."""
    out_dtype = np.dtype(node.outputs[0].dtype)
    entries = tuple(
        "scalar" if isinstance(i.type, ScalarType) else f"{i.type.dtype}[{i.type.ndim}]" for i in node.inputs
    )
    key = lowering_cache_key(op, out_dtype=str(out_dtype), entries=entries, filled=filled)
    if filled is not None:
        return filled_join(*filled, out_dtype), key
    return _joiner(0, out_dtype), key


def _static_length(var) -> int | None:
    """How many elements ``var`` adds to a 1-d join, if its type says: 1 for a scalar, a vector's static
    length."""
    if isinstance(var.type, ScalarType) or var.type.ndim == 0:
        return 1
    return var.type.shape[0] if var.type.ndim == 1 else None


def _window(fgraph, join, k: int, lengths: list) -> tuple[int, int, int] | None:
    """``(i, before, after)`` if entry ``k`` of ``join`` can be written by its producer within the join's
    output: it is output ``i`` of a loop of ours (`lower_loop`), a new 1-d array of the join's dtype, read by
    the join alone, once; and the join's other entries have static lengths, ``before`` elements of them
    before it and ``after`` after."""
    var = join.inputs[k]
    producer = var.owner
    if producer is None or var in fgraph.outputs or fgraph.clients[var] != [(join, k)]:
        return None
    if None in lengths[:k] + lengths[k + 1 :]:
        return None
    lowering = lowering_for(producer.op)
    if lowering is None or lowering.funcify is not lower_loop or not lowering.applies(producer):
        return None
    i = producer.outputs.index(var)
    spec = loop_spec(producer)
    output = spec.outputs[i]
    if spec.ndim != 1 or output.reduce is not None or output.into is not None:
        return None
    if output.dtype != np.dtype(join.outputs[0].type.dtype):
        return None
    return i, sum(lengths[:k]), sum(lengths[k + 1 :])


def filled_joins(fgraph, order) -> dict:
    """Node -> the arguments its lowering takes so that a 1-d join's output is allocated by the loop making
    one of its entries, which writes that entry in place (``lower_loop(..., within=(i, before, after))``),
    and the join writes the others around it (``lower_join(..., filled=(k, before, after))``,
    `intrinsics.join.filled_join`): one allocation and one copy fewer, such as the gradient of a vector
    parameter in ``logp_dlogp_function``'s joined gradient.

    Per join of our lowering (one not taking its entries as one pack), the first entry `_window` allows;
    one entry per producer."""
    hints = {}
    for node in order:
        if not isinstance(node.op, Join | ScalarizedJoin) or node.outputs[0].type.ndim != 1:
            continue
        lowering = lowering_for(node.op)
        if lowering is None or lowering.funcify not in (lower_join, lower_scalarized_join):
            continue
        if not lowering.applies(node) or packed_arguments(node) is not None:
            continue
        lengths = [_static_length(var) for var in node.inputs]
        for k, var in enumerate(node.inputs):
            window = _window(fgraph, node, k, lengths) if var.owner not in hints else None
            if window is not None:
                hints[var.owner] = {"within": window}
                hints[node] = {"filled": (k, *window[1:])}
                break
    return hints


def wider_than_a_call(node) -> bool:
    """more than 30 (MAX_ITEMS) inputs, and at most 1,000 or all of one dtype"""
    return len(node.inputs) > MAX_ITEMS and entries_fit_a_call(node)


@register_lowering(MakeVector, linear_join, when=wider_than_a_call, pack_start=0)
def lower_make_vector(op, node, **kwargs):
    """A wide ``MakeVector(x0, ..., xn)`` as ``linear_join(0, (x0, ..., xn), dtype)``, which also takes the
    entries as one pack. Up to ``MAX_ITEMS`` entries, stock's function (it has no wide-tuple problem there)."""
    out_dtype = np.dtype(node.outputs[0].dtype)
    return _joiner(0, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype))
