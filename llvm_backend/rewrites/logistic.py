"""Sigmoids and softpluses of one value inside a Composite share one ``exp`` and one ``log1p``.

A logistic model's log-density and gradient, fused, evaluate at every element several of ``sigmoid(z)``,
``sigmoid(-z)``, ``softplus(z)`` and ``softplus(-z)`` of the same ``z``: a Bernoulli with ``logit_p`` holds
``switch(y, -softplus(-z), -softplus(z))`` (a Composite computes both branches) and ``sigmoid(-z)`` in its
gradient, each an ``exp`` of its own and the softpluses a ``log1p`` each: 3 ``exp`` and 2 ``log1p`` per
observation, where a hand-written loop computes 1 of each. With ``t = exp(-|z|)``, each of them is a few
arithmetic operations on ``t`` and ``log1p(t)``::

    sigmoid(z) = (1 if z >= 0 else t) / (1 + t)      sigmoid(-z) = (t if z >= 0 else 1) / (1 + t)
    softplus(z) = max(z, 0) + log1p(t)               softplus(-z) = max(-z, 0) + log1p(t)

``share_logistic_exps`` rewrites an ``Elemwise{Composite}`` whose inner graph has two or more of them of one
value (or of its negation) into these forms, computed once. They are exact where stock's are (stock's sigmoid
is ``1 / (1 + exp(-z))``, its softplus piecewise: ``exp(z)`` below -37, ``log1p(exp(z))``, ``z + exp(-z)``
from 18, ``z`` from 33.3) and within a rounding of them elsewhere; NaN and infinities give what stock's give.
Lone ones keep stock's forms. Only float inputs are rewritten (stock upcasts unsigned ones first).
"""

import numpy as np
import pytensor.scalar as ps
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.scalar.math import Sigmoid, Softplus
from pytensor.tensor.elemwise import Elemwise

from llvm_backend.rewrites.registry import REWRITES_NAME, register_llvm_rewrite

__all__ = ["share_exponentials", "share_logistic_exps"]

_SHARED = (Sigmoid, Softplus)


def _argument(var):
    """``(value, negated)`` of a sigmoid's or softplus's argument: ``(z, True)`` for ``-z``."""
    if var.owner is not None and isinstance(var.owner.op, ps.Neg):
        return var.owner.inputs[0], True
    return var, False


def _groups(composite: ps.Composite) -> dict:
    """Value -> the sigmoid and softplus nodes of it (or of its negation) in ``composite``, for each value with
    two or more of them and a float dtype."""
    groups = {}
    for node in composite.fgraph.toposort():
        if isinstance(node.op, _SHARED) and node.inputs[0].type.dtype in ("float32", "float64"):
            value, _ = _argument(node.inputs[0])
            groups.setdefault(value, []).append(node)
    return {value: nodes for value, nodes in groups.items() if len(nodes) >= 2}


def _shared_forms(z) -> dict:
    """Each of ``(op class, negated)`` of ``z`` written on ``t = exp(-|z|)`` and ``log1p(t)``."""
    dtype = z.type.dtype
    one, zero = ps.constant(np.dtype(dtype).type(1.0)), ps.constant(np.dtype(dtype).type(0.0))
    t = ps.exp(ps.neg(ps.abs(z)))
    denominator, log1p_t = ps.add(one, t), ps.log1p(t)
    nonnegative = ps.ge(z, zero)
    return {
        (Sigmoid, False): ps.true_div(ps.switch(nonnegative, one, t), denominator),
        (Sigmoid, True): ps.true_div(ps.switch(nonnegative, t, one), denominator),
        (Softplus, False): ps.add(ps.maximum(z, zero), log1p_t),
        (Softplus, True): ps.add(ps.maximum(ps.neg(z), zero), log1p_t),
    }


def share_exponentials(composite: ps.Composite) -> ps.Composite | None:
    """``composite`` with every group of two or more sigmoids and softpluses of one value (`_groups`) written on
    one ``exp`` and one ``log1p`` of it (`_shared_forms`); None if it has no such group."""
    groups = _groups(composite)
    if not groups:
        return None
    members = {node: value for value, nodes in groups.items() for node in nodes}
    forms = {}
    new = {var: var for var in composite.fgraph.inputs}
    for node in composite.fgraph.toposort():
        if node in members:
            value = members[node]
            if value not in forms:
                forms[value] = _shared_forms(new.get(value, value))
            outputs = [forms[value][type(node.op), _argument(node.inputs[0])[1]]]
        else:
            outputs = node.op.make_node(*(new.get(inp, inp) for inp in node.inputs)).outputs
        new.update(zip(node.outputs, outputs, strict=True))
    return ps.Composite(composite.fgraph.inputs, [new.get(out, out) for out in composite.fgraph.outputs])


@register_llvm_rewrite(REWRITES_NAME, position=0.6)
@node_rewriter([Elemwise])
def share_logistic_exps(fgraph, node):
    """Elemwise{Composite} with two or more sigmoids and softpluses of one value -> one exp and log1p of it."""
    op = node.op
    if not isinstance(op.scalar_op, ps.Composite) or op.inplace_pattern:
        return None
    shared = share_exponentials(op.scalar_op)
    if shared is None:
        return None
    outputs = Elemwise(shared)(*node.inputs, return_list=True)
    if any(old.type != new.type for old, new in zip(node.outputs, outputs, strict=True)):
        return None
    return outputs
