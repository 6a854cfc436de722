"""A product's factors that do not vary along the loop are multiplied together once.

PyTensor's gradient of a hierarchical model's ``y ~ Normal(mu_a + sigma_a * offset[group], sigma_y)`` by the
offsets scatters ``r * sigma_a / sigma_y`` into them, ``r`` the residuals over the observations: written
``(r * sigma_a) / sigma_y``, two operations per observation, and LLVM does not reassociate them across the
division it turned into a multiply by the reciprocal. ``product_of_invariant_factors`` writes::

    (r * a) / b   ->   r * (a / b)

for an elementwise tree of ``Mul`` and ``TrueDiv`` whose factors ``a`` and ``b`` are broadcastable along every
axis the product is not (so the same for every item of the loop): the invariant factors' product is computed once,
and each item costs one multiply for all of them. It looks through a ``Mul`` or ``TrueDiv`` only when its output is
used once (else the tree is computed for its other use anyway) and is of the product's dtype, a float; it applies
when it leaves fewer operations per item than there were (so it never rewrites what it wrote). The values are the
same products in another order: the rounding of a reassociation, as fast-math allows. The rewrite runs before
elemwise fusion, in ``llvm_rewrites_before_fusion``.
"""

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import copy_stack_trace, node_rewriter
from pytensor.tensor.elemwise import Elemwise

from llvm_backend.rewrites.registry import PRE_FUSION_NAME, register_llvm_rewrite

__all__ = ["product_of_invariant_factors"]

FLOATS = ("float32", "float64")


def _product_op(var):
    """``var``'s scalar op when it is the output of an elementwise ``Mul`` or ``TrueDiv``, else None."""
    node = var.owner
    if node is None or not isinstance(node.op, Elemwise) or not isinstance(node.op.scalar_op, ps.Mul | ps.TrueDiv):
        return None
    return node.op.scalar_op


class _Factors:
    """The factors of a product tree, each with its exponent (1 or -1), and the operations per item the tree
    costs: a ``Mul`` of k inputs k - 1, a ``TrueDiv`` 1, either none when its output is the same for every
    item."""

    def __init__(self, fgraph, loop_axes: list[int]):
        self.fgraph = fgraph
        self.loop_axes = loop_axes
        self.factors: list[tuple[int, object]] = []
        self.per_item = 0

    def invariant(self, var) -> bool:
        return all(var.type.broadcastable[axis] for axis in self.loop_axes)

    def add(self, var, exponent: int, top: bool = False) -> None:
        op = _product_op(var)
        looked_through = top or len(self.fgraph.clients[var]) == 1
        if op is None or not looked_through or var.owner.inputs[0].type.dtype != var.type.dtype:
            self.factors.append((exponent, var))
            return
        inputs = var.owner.inputs
        if not self.invariant(var):
            self.per_item += len(inputs) - 1
        if isinstance(op, ps.Mul):
            for factor in inputs:
                self.add(factor, exponent)
        else:
            self.add(inputs[0], exponent)
            self.add(inputs[1], -exponent)


def _product(factors: list, dtype: str):
    """The product of ``factors``, the constant 1 of ``dtype`` for none."""
    if not factors:
        return pt.constant(np.asarray(1, dtype=dtype))
    return pt.mul(*factors) if len(factors) > 1 else factors[0]


@register_llvm_rewrite(PRE_FUSION_NAME, position=0.68)
@node_rewriter([Elemwise])
def product_of_invariant_factors(fgraph, node):
    """(r * a) / b -> r * (a / b) for factors ``a`` and ``b`` that are the same for every item (see the module)."""
    if not isinstance(node.op.scalar_op, ps.Mul | ps.TrueDiv) or node.op.inplace_pattern:
        return None
    [output] = node.outputs
    dtype = output.type.dtype
    loop_axes = [axis for axis, broadcastable in enumerate(output.type.broadcastable) if not broadcastable]
    if dtype not in FLOATS or not loop_axes:
        return None
    tree = _Factors(fgraph, loop_axes)
    tree.add(output, 1, top=True)
    if any(factor.type.dtype != dtype for _, factor in tree.factors):
        return None
    invariant = [(e, factor) for e, factor in tree.factors if tree.invariant(factor)]
    varying = [(e, factor) for e, factor in tree.factors if not tree.invariant(factor)]
    varying_numerators = [factor for e, factor in varying if e > 0]
    varying_denominators = [factor for e, factor in varying if e < 0]
    # after: a multiply per varying numerator but the first, one per varying denominator but the first and a divide
    # by their product, one by the invariant factors' product
    per_item = len(varying_numerators) - 1 + len(varying_denominators) + 1
    if not invariant or not varying_numerators or per_item >= tree.per_item:
        return None
    numerators = [factor for e, factor in invariant if e > 0]
    denominators = [factor for e, factor in invariant if e < 0]
    once = _product(numerators, dtype) / _product(denominators, dtype) if denominators else _product(numerators, dtype)
    result = _product([*varying_numerators, once], dtype)
    if varying_denominators:
        result = result / _product(varying_denominators, dtype)
    if result.type != output.type:
        return None
    copy_stack_trace(output, result)
    return [result]
