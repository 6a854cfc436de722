"""An elementwise op of a short vector made of scalars is the vector made of the op of its scalars.

A gradient by a few parameters is often assembled as a vector of 0-d values and then combined elementwise: a
logistic regression's ``dot(X.T, d) - beta``, once ``data_columns`` has written ``dot(X.T, d)`` as its k row sums,
is ``MakeVector(s_1, ..., s_k) - beta``. Compiled, the ``MakeVector`` allocates a vector of the sums at every call
and a loop of k elements reads it. ``elemwise_of_make_vector`` writes an `Elemwise` (one output, not in place) of
a ``MakeVector`` of at most `MAX_ITEMS` items whose other inputs are vectors of that static length, or of length
1, as the ``MakeVector`` of the op applied to each item::

    Elemwise{op}(MakeVector(s_1, ..., s_k), v, u)  ->  MakeVector(op(s_1, v[0], u[0]), ..., op(s_k, v[k-1], u[0]))

The same scalar op on the same values, so the same values; scalarization then computes them as scalars. The
other inputs are read item by item as they are: one computed by a loop of its own (``2 * beta``) stays that loop's
vector.

``join_of_make_vector`` writes a ``Join`` along its one axis of ``MakeVector`` and vectors of length 1 (a
gradient joined from a parameter's own and a vector of the others') as one ``MakeVector`` of their items, which
scalarization makes one vector of the scalars, where a join of the made vector copied a vector it had allocated.
"""

import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import copy_stack_trace, node_rewriter
from pytensor.tensor.basic import Join, MakeVector
from pytensor.tensor.elemwise import Elemwise

from llvm_backend.rewrites.registry import PRE_FUSION_NAME, register_llvm_rewrite

__all__ = ["MAX_ITEMS", "elemwise_of_make_vector", "join_of_make_vector"]

MAX_ITEMS = 16
"""The most items of a ``MakeVector`` whose elementwise ops are written item by item."""


def _made(var) -> bool:
    """Whether ``var`` is a ``MakeVector``'s output."""
    return var.owner is not None and isinstance(var.owner.op, MakeVector)


def _items(var, length: int) -> list | None:
    """``var``'s ``length`` items as 0-d values: a ``MakeVector``'s inputs, a vector's ``var[i]`` (its one item,
    its axis dropped, repeated when of length 1); None for any other input."""
    if _made(var):
        return list(var.owner.inputs) if len(var.owner.inputs) == length else None
    if var.type.ndim != 1:
        return None
    if var.type.shape[0] == 1:
        return [var.dimshuffle()] * length
    return [var[i] for i in range(length)] if var.type.shape[0] == length else None


@node_rewriter([Join])
def join_of_make_vector(fgraph, node):
    """Join{axis=0}(MakeVector(...), x, ...) of ``MakeVector`` and length-1 vectors -> one ``MakeVector``."""
    [output] = node.outputs
    if output.type.ndim != 1 or not any(map(_made, node.inputs)):
        return None
    items = []
    for var in node.inputs:
        if _made(var):
            items += var.owner.inputs
        elif var.type.shape == (1,):
            items.append(var.dimshuffle())
        else:
            return None
    result = pt.stack(items)
    if result.type != output.type:
        return None
    copy_stack_trace(output, result)
    return [result]


@register_llvm_rewrite(PRE_FUSION_NAME, position=0.7, name="made_vectors", together_with=(join_of_make_vector,))
@node_rewriter([Elemwise])
def elemwise_of_make_vector(fgraph, node):
    """Elemwise{op}(MakeVector(...), ...) -> MakeVector(op(...), ...) (see the module)."""
    if len(node.outputs) != 1 or node.op.inplace_pattern or node.outputs[0].type.ndim != 1:
        return None
    made = [var for var in node.inputs if _made(var)]
    if not made:
        return None
    length = len(made[0].owner.inputs)
    if not 1 <= length <= MAX_ITEMS:
        return None
    items = [_items(var, length) for var in node.inputs]
    if any(item is None for item in items):
        return None
    [output] = node.outputs
    result = pt.stack([node.op(*values) for values in zip(*items, strict=True)])
    if result.type != output.type:
        return None
    copy_stack_trace(output, result)
    return [result]
