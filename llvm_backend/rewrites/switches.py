"""A sum gated by one condition is the condition's switch of the sum.

PyMC's ``check_parameters`` gates each term of a log-density on the model's checks: ``sum(switch(c, logp, -inf))``
with ``c`` one boolean broadcast over the observations (a logistic regression's ``0 <= p <= 1``, itself two
``All`` reductions over the observations). The sum then needs ``c`` before it starts, so the loop that computes
the checks and the loop that sums the log-density cannot be one: the first writes the values the second reads
into vectors, allocated and passed between them at every call. ``sum_of_scalar_switch`` writes::

    Sum(Switch(c, a, k))   ->   Switch(c', Sum(a), k)       (and Switch(c, k, a) alike)

where ``c`` has every dimension broadcastable (``c'`` its one value), ``a`` is a vector and ``k`` a broadcastable
constant of one value: 0, or an infinity when ``a``'s length is known and positive (a sum of n >= 1 copies of an
infinity is that infinity; of 0, 0). The sum no longer waits for ``c``, and elemwise fusion folds the checks and
the sum into one loop. The values are the same: ``Sum(a)`` when ``c`` holds, ``k`` (the sum of ``k``\\ s) when
not, NaN where ``a`` has one and ``c`` holds. The rewrite runs before elemwise fusion, in
``llvm_rewrites_before_fusion``.
"""

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.rewriting.basic import copy_stack_trace, node_rewriter
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Sum
from pytensor.tensor.variable import TensorConstant

from llvm_backend.rewrites.registry import PRE_FUSION_NAME, register_llvm_rewrite

__all__ = ["sum_of_scalar_switch"]


def _constant_value(var, length) -> float | None:
    """The one value of ``var``, a broadcastable float constant, when a sum of ``length`` copies of it is that
    value: 0 for any length, an infinity for a known positive length; else None."""
    if not isinstance(var, TensorConstant) or not all(var.type.broadcastable):
        return None
    values = np.unique(var.data)
    if values.size != 1 or var.type.dtype not in ("float32", "float64"):
        return None
    value = float(values[0])
    return value if value == 0 or (np.isinf(value) and length is not None and length > 0) else None


def _scalar_condition(c):
    """``c``'s one value as a 0-d tensor: the 0-d ``x`` of ``ExpandDims{axis=0}(x)``, else ``c`` with its
    broadcastable axis dropped."""
    node = c.owner
    if node is not None and isinstance(node.op, DimShuffle) and node.op.new_order == ("x",):
        return node.inputs[0]
    return c.dimshuffle()


@register_llvm_rewrite(PRE_FUSION_NAME, position=0.6)
@node_rewriter([Sum])
def sum_of_scalar_switch(fgraph, node):
    """Sum(Switch(c, a, k)) -> Switch(c', Sum(a), k) for a broadcastable ``c`` and a constant ``k`` (see the module)."""
    [switched] = node.inputs
    [output] = node.outputs
    if node.op.axis not in (None, (0,)) or switched.type.ndim != 1 or switched.owner is None:
        return None
    if not isinstance(switched.owner.op, Elemwise) or not isinstance(switched.owner.op.scalar_op, ps.Switch):
        return None
    c, if_true, if_false = switched.owner.inputs
    if c.type.broadcastable != (True,) or not output.type.dtype == node.op.acc_dtype == switched.type.dtype:
        return None
    length = switched.type.shape[0]
    for k, a, k_if_true in ((if_false, if_true, False), (if_true, if_false, True)):
        value = _constant_value(k, length)
        if value is not None and a.type.broadcastable == (False,) and a.type.dtype == switched.type.dtype:
            total, constant = pt.sum(a), pt.constant(np.asarray(value, dtype=output.type.dtype))
            result = pt.switch(_scalar_condition(c), *((constant, total) if k_if_true else (total, constant)))
            if result.type != output.type:
                return None
            copy_stack_trace(output, result)
            return [result]
    return None
