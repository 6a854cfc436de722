"""Join, ScalarizedJoin and MakeVector -> ``llvm_backend_intrinsics.join.linear_join``: one allocation, one copy
loop
nest per input dtype, linear IR in the input count. ``linear_join`` takes the scalar entries of PyTensor's
``ScalarizedJoin`` and the 0-d entries of a ``MakeVector`` (a 1-d join of length-1 entries) directly.

``Join`` holds its axis as a static property (``Join(axis)(*tensors)``), so every node's call takes only
the entries. For ``Join(1)(x0, x1, x2)`` with a float64 output the node's call is the intrinsic
``joiner(1, np.dtype("float64"))(x0, x1, x2)``, ``linear_join(1, (x0, x1, x2), np.float64)`` emitted in the graph
function, without a function of its own per node.

When a 1-d join's entry is a new vector of one of our loops that only the join reads, the loop allocates the
join's output and writes the entry within it, and the join writes the others around it (`fill_joins`, a graph
pass annotating the plan, and ``llvm_backend_intrinsics.join.filled_join``).

numba refuses an argument tuple of more than 1,000 values of one type, so a node of more entries is lowered
here only when they are tensors of one dtype and ndim, which the node function takes as one pack; stock's
function, which takes each entry as a parameter of its own, compiles the others.
"""

import numpy as np
from pytensor.scalar import ScalarType
from pytensor.tensor.basic import Join, MakeVector
from pytensor.tensor.rewriting.scalarize import ScalarizedJoin

from llvm_backend.dispatch import (
    LoweringContext,
    LoweringPlan,
    lowering_cache_key,
    one_pack,
    plan_graph,
    register_graph_pass,
    register_lowering,
)
from llvm_backend_intrinsics.join import filled_join, joiner, linear_join
from llvm_backend_intrinsics.loops import LoopSpec

__all__ = [
    "NUMBA_MAX_TUPLE",
    "entries_fit_a_call",
    "entries_to_join",
    "fill_joins",
    "filled_joins",
    "lower_join",
    "lower_make_vector",
    "lower_scalarized_join",
]

NUMBA_MAX_TUPLE = 1000
"""The most values of one type numba takes as one tuple argument (``numba.core.ir_utils``, issue 2195)."""


def entries_fit_a_call(node) -> bool:
    """at most 1,000 entries, or tensors of one dtype and ndim (one pack)"""
    return len(node.inputs) <= NUMBA_MAX_TUPLE or one_pack(node.inputs)


@register_lowering(Join, linear_join, when=entries_fit_a_call, pack_start=0)
def lower_join(context: LoweringContext):
    """The hint ``filled = (k, before, after)``: entry ``k`` arrives as the output itself (`fill_joins`)."""
    op, filled = context.op, context.hints.get("filled")
    out_dtype = np.dtype(context.node.outputs[0].dtype)
    if filled is not None:
        return filled_join(*filled, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype), filled=filled)
    return joiner(op.axis, out_dtype), lowering_cache_key(op, out_dtype=str(out_dtype))


@register_lowering(ScalarizedJoin, linear_join, when=entries_fit_a_call, pack_start=0)
def lower_scalarized_join(context: LoweringContext):
    """PyTensor's 1-d join whose entries are vectors or ``ScalarType`` values (each one element). The hint
    ``filled``: as `lower_join`'s."""
    op, node, filled = context.op, context.node, context.hints.get("filled")
    out_dtype = np.dtype(node.outputs[0].dtype)
    entries = tuple(
        "scalar" if isinstance(i.type, ScalarType) else f"{i.type.dtype}[{i.type.ndim}]" for i in node.inputs
    )
    key = lowering_cache_key(op, out_dtype=str(out_dtype), entries=entries, filled=filled)
    if filled is not None:
        return filled_join(*filled, out_dtype), key
    return joiner(0, out_dtype), key


def _static_length(var) -> int | None:
    """How many elements ``var`` adds to a 1-d join, if its type says: 1 for a scalar, a vector's static
    length."""
    if isinstance(var.type, ScalarType) or var.type.ndim == 0:
        return 1
    return var.type.shape[0] if var.type.ndim == 1 else None


def _window(fgraph, plan: LoweringPlan, join, k: int, lengths: list) -> tuple[list, int, int] | None:
    """``(writers, before, after)`` if entry ``k`` of ``join`` can be written by its producers within the join's
    output: ``writers`` are ``(node, i)`` from the join's entry back, each a loop of ours (its plan entry's spec
    a 1-d `LoopSpec`) whose array output ``i``, of the join's dtype, is read by the next alone, once (the first
    by the join); each but the last writes it into its input, the output of the next, in place, and the last
    makes it new. The join's other entries have static lengths, ``before`` elements of them before it and
    ``after`` after. An indexed gradient (``grad[group] += ...``, in place on the prior's gradient, a loop's
    new vector) is such a chain of two."""
    if None in lengths[:k] + lengths[k + 1 :]:
        return None
    dtype, var, reader, writers = np.dtype(join.outputs[0].type.dtype), join.inputs[k], (join, k), []
    while True:
        producer = var.owner
        if producer is None or var in fgraph.outputs or fgraph.clients[var] != [reader]:
            return None
        spec = plan[producer].spec
        if not isinstance(spec, LoopSpec) or spec.ndim != 1:
            return None
        i = producer.outputs.index(var)
        output = spec.outputs[i]
        if output.reduce is not None or output.dtype != dtype:
            return None
        writers.append((producer, i))
        if output.into is None:
            return writers, sum(lengths[:k]), sum(lengths[k + 1 :])
        var, reader = producer.inputs[output.into], (producer, output.into)


@register_graph_pass
def fill_joins(fgraph, plan: LoweringPlan) -> dict:
    """Node -> the hints its lowering takes so that a 1-d join's output is allocated by the loop making one of
    its entries, which writes that entry in place (``within = (i, before, after)`` for `lower_loop`; loops
    writing the entry in place after it, into their input, get the same hint), and the join writes the others
    around it (``filled = (k, before, after)`` for `lower_join`,
    `llvm_backend_intrinsics.join.filled_join`): one allocation and one copy fewer, such as the gradient of a vector
    parameter in ``logp_dlogp_function``'s joined gradient.

    Per join of our lowering (one not taking its entries as one pack), the first entry `_window` allows;
    one window per writer."""
    hints = {}
    for node, entry in plan.entries.items():
        if entry.lowering is None or entry.lowering.funcify not in (lower_join, lower_scalarized_join):
            continue
        if node.outputs[0].type.ndim != 1 or entry.pack_start is not None:
            continue
        lengths = [_static_length(var) for var in node.inputs]
        for k in range(len(node.inputs)):
            window = _window(fgraph, plan, node, k, lengths)
            if window is None or any(writer in hints for writer, _ in window[0]):
                continue
            writers, before, after = window
            for writer, i in writers:
                hints[writer] = {"within": (i, before, after)}
            hints[node] = {"filled": (k, before, after)}
            break
    return hints


def filled_joins(fgraph, order=None) -> dict:
    """Node -> its hints in ``fgraph``'s plan (`plan_graph`), for the nodes that have any: `fill_joins`'s."""
    return {node: dict(entry.hints) for node, entry in plan_graph(fgraph, order).entries.items() if entry.hints}


def entries_to_join(node) -> bool:
    """at least one entry; at most 1,000, or tensors of one dtype and ndim (one pack)"""
    return len(node.inputs) > 0 and entries_fit_a_call(node)


@register_lowering(MakeVector, linear_join, when=entries_to_join, pack_start=0)
def lower_make_vector(context: LoweringContext):
    """``MakeVector(x0, ..., xn)`` as ``linear_join(0, (x0, ..., xn), dtype)``, each 0-d entry cast to the
    output's dtype, emitted in the graph function (stock compiles a function per node); over ``MAX_ITEMS``
    entries, the entries come as one pack."""
    out_dtype = np.dtype(context.node.outputs[0].dtype)
    return joiner(0, out_dtype), lowering_cache_key(context.op, out_dtype=str(out_dtype))
