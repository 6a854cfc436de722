"""A reduction of a vector made of scalars is an elementwise op of the scalars.

PyMC's ``check_parameters`` gates a log-density on every parameter check with
``pt.all([pt.all(cond) for cond in conditions])``: an ``All`` of a ``MakeVector`` of 0-d booleans. Compiled, the
``MakeVector`` (a ``ScalarizedJoin`` once scalarized) allocates a vector of the conditions on every call, and
the ``All`` loops over it. ``reduce_make_vector`` writes ``All``, ``Any``, ``Max`` and ``Min`` of a
``MakeVector`` of two or more values as a chain of their scalar op (``and``, ``or``, ``maximum``, ``minimum``)
applied elementwise to the 0-d values: the same scalar op the reduction applies, so the same values, NaN
included. PyTensor's own ``local_sum_make_vector`` does this for ``Sum``; its ``local_reduce_join`` does it for a
``Join`` of two length-1 vectors, not for a ``MakeVector``.
"""

from functools import reduce

import pytensor.scalar as ps
from pytensor.graph.rewriting.basic import copy_stack_trace, node_rewriter
from pytensor.tensor.basic import MakeVector
from pytensor.tensor.elemwise import CAReduce, Elemwise

from llvm_backend.rewrites.registry import REWRITES_NAME, register_llvm_rewrite

__all__ = ["reduce_make_vector"]

_ELEMENTWISE = (ps.AND, ps.OR, ps.Maximum, ps.Minimum)


@register_llvm_rewrite(REWRITES_NAME, position=0.7)
@node_rewriter([CAReduce])
def reduce_make_vector(fgraph, node):
    """CAReduce{and, or, maximum, minimum}(MakeVector(a, b, ...)) -> Elemwise{the same op}(...(a, b), ...)."""
    op = node.op
    [vector] = node.inputs
    if not isinstance(op.scalar_op, _ELEMENTWISE) or vector.owner is None:
        return None
    if not isinstance(vector.owner.op, MakeVector) or op.axis not in (None, (0,)):
        return None
    elements = vector.owner.inputs
    [output] = node.outputs
    if len(elements) < 2 or vector.type.dtype != output.type.dtype:
        return None
    elementwise = Elemwise(op.scalar_op)
    result = reduce(elementwise, elements)
    if result.type != output.type:
        return None
    copy_stack_trace(output, result)
    return [result]
