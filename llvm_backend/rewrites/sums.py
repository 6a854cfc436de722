"""A sum's terms that do not vary along the summed axes are added once, times the number of items summed; its
constant terms are summed when the graph is rewritten.

PyMC's log-density of n observations ``y ~ Normal(mu, sigma)`` is ``sum(-0.5 * r**2 - log(sigma) - 0.919)``: two
of its three terms are the same for every observation (``log(sigma)`` is broadcast along them). Elemwise fusion
folds the sum into the loop over the observations, which then adds both at every item: per observation, a
square, a multiply-add of the constants and the add into the sum, where a sum of squares needs one multiply-add.
``sum_of_invariant_terms`` writes::

    Sum(a + b - c)   ->   Sum(a) + n * (b' - c')

for an elementwise tree of ``Add``, ``Sub`` and ``Neg`` under the sum, whose terms ``b`` and ``c`` are
broadcastable along every summed axis (``b'`` and ``c'`` without those axes), and ``n`` the number of items summed,
known from the static shape and positive. A constant term ``C`` (data, such as the ``log(sigma)`` of observed
scales, one per group) is summed along the axes when the graph is rewritten, when the sum's input has
a static shape: ``Sum(a + C) -> Sum(a) + c``, ``c`` the constant of those sums. PyTensor's own
``local_sum_prod_of_mul_or_div`` then takes the constant factor out of ``Sum(-0.5 * r**2)``, in the same pass:
the loop adds ``r * r`` into one accumulator.

It applies when the sum's input, its dtype and its accumulator's are one float dtype (a term of a narrower one is
cast as the sum's ``Add`` casts it), and each ``Add``, ``Sub`` or ``Neg`` it looks through is used only under the
sum (else the tree is computed for its other use anyway and the split costs a loop more work,
not less). The values are the same sums in another order: the rounding of a reassociation, as fast-math allows.
An infinity or NaN among the invariant or constant terms makes the result that infinity or NaN, as the sum's was
(``n`` is at least 1). The rewrite runs before elemwise fusion, in ``llvm_rewrites_before_fusion``.
"""

import math

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import copy_stack_trace, node_rewriter
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Sum
from pytensor.tensor.rewriting.basic import constant_folding
from pytensor.tensor.rewriting.math import local_sum_prod_of_mul_or_div
from pytensor.tensor.variable import TensorConstant

from llvm_backend.rewrites.registry import PRE_FUSION_NAME, register_llvm_rewrite

__all__ = ["sum_of_invariant_terms"]

FLOATS = ("float32", "float64")


def _signed_terms(fgraph, var, sign: int, terms: list, dtype: str) -> None:
    """Append ``(sign, term)`` for each term of the ``Add``/``Sub``/``Neg`` tree of ``var``, looking through a node
    only when its output is used once and of the sum's ``dtype`` (a narrower ``Add`` rounds as the sum does not)."""
    node = var.owner
    scalar_op = node.op.scalar_op if node is not None and isinstance(node.op, Elemwise) else None
    looked_through = len(fgraph.clients[var]) == 1 and var.type.dtype == dtype
    if not isinstance(scalar_op, ps.Add | ps.Sub | ps.Neg) or not looked_through:
        terms.append((sign, var))
    elif isinstance(scalar_op, ps.Add):
        for term in node.inputs:
            _signed_terms(fgraph, term, sign, terms, dtype)
    elif isinstance(scalar_op, ps.Sub):
        _signed_terms(fgraph, node.inputs[0], sign, terms, dtype)
        _signed_terms(fgraph, node.inputs[1], -sign, terms, dtype)
    else:
        _signed_terms(fgraph, node.inputs[0], -sign, terms, dtype)


def _added(terms: list):
    """The elementwise sum of ``terms`` (at least one)."""
    return pt.add(*terms) if len(terms) > 1 else terms[0]


def _signed_sum(terms: list):
    """The elementwise sum of ``(sign, term)`` pairs: the positive ones added, the negative ones subtracted."""
    plus = [term for sign, term in terms if sign > 0]
    minus = [term for sign, term in terms if sign < 0]
    if not minus:
        return _added(plus)
    return _added(plus) - _added(minus) if plus else -_added(minus)


@register_llvm_rewrite(PRE_FUSION_NAME, position=0.65, together_with=(local_sum_prod_of_mul_or_div, constant_folding))
@node_rewriter([Sum])
def sum_of_invariant_terms(fgraph, node):
    """Sum(a + b - c) -> Sum(a) + n * (b' - c') for terms ``b`` and ``c`` broadcastable along the summed axes, a
    constant term summed now (see the module)."""
    [summed] = node.inputs
    [output] = node.outputs
    dtype = summed.type.dtype
    if dtype not in FLOATS or not output.type.dtype == node.op.acc_dtype == dtype or len(fgraph.clients[summed]) != 1:
        return None
    axes = tuple(range(summed.type.ndim)) if node.op.axis is None else tuple(node.op.axis)
    lengths = [summed.type.shape[axis] for axis in axes]
    if not axes or any(length is None for length in lengths) or math.prod(lengths) < 1:
        return None
    terms = []
    _signed_terms(fgraph, summed, 1, terms, dtype)
    shape = summed.type.shape
    data, invariant, varying = [], [], []
    for sign, term in terms:
        if isinstance(term, TensorConstant) and None not in shape:
            data.append((sign, term))
            continue
        # cast first, as the Add casts its inputs: the terms are then combined in the sum's dtype
        term = term if term.type.dtype == dtype else pt.cast(term, dtype)
        if all(term.type.broadcastable[axis] for axis in axes):
            invariant.append((sign, term))
        else:
            varying.append((sign, term))
    if not data and not invariant:
        return None
    outside = [node.op(_signed_sum(varying))] if varying else []
    if invariant:
        count = pt.constant(np.asarray(math.prod(lengths), dtype=dtype))
        outside.append(count * _signed_sum([(sign, term.squeeze(axes)) for sign, term in invariant]))
    if data:
        folded = sum(sign * np.broadcast_to(term.data, shape).sum(axis=axes, dtype=dtype) for sign, term in data)
        outside.append(pt.constant(np.asarray(folded, dtype=dtype)))
    result = _added(outside)
    if result.type != output.type:
        return None
    copy_stack_trace(output, result)
    return [result]
