"""Hoist the loop-invariant part of a fused Elemwise out of its loop.

PyTensor's fusion pass folds scalar math on broadcast inputs into the loops of vector Elemwise nodes: in a
model's log-density, the sum of many scalar parameters that shifts a location vector becomes part of a
Composite of as many inputs, evaluated at every element. ``hoist_invariants`` splits such a node in two: an
Elemwise over only the all-broadcastable inputs computing, once, every inner value that depends on
nothing else (scalarization then makes it a scalar Composite), and the loop, taking those values as
inputs. The loop gets narrower (which numba compiles in less time) and does less per element.

For ``Elemwise{Composite{(i0 + i1 + i2) * i3}}(a, b, c, x)`` with ``a``, ``b``, ``c`` of shape ``(1,)`` and
``x`` a vector, the result is::

    s = Elemwise{Composite{i0 + i1 + i2}}(a, b, c)      # shape (1,)
    Elemwise{Composite{i0 * i1}}(s, x)
"""

import pytensor.scalar as ps
from pytensor.graph.basic import Constant
from pytensor.graph.rewriting.basic import node_rewriter
from pytensor.graph.traversal import io_toposort
from pytensor.tensor.elemwise import Elemwise

from llvm_backend.rewrites.registry import REWRITES_NAME, register_llvm_rewrite

__all__ = ["hoist_invariants", "split_invariant"]


def _all_broadcastable(var) -> bool:
    return all(var.type.broadcastable)


ASSOCIATIVE = (ps.Add, ps.Mul)
"""n-ary scalar ops whose invariant operands are grouped before splitting (PyTensor's canonicalizer
flattens ``mu + o1 + ... + o60 + tau * theta`` into one Add, whose invariant part is then hoistable)."""


def _group_invariant_operands(composite: ps.Composite, invariant_inputs: set[int]) -> ps.Composite:
    """``composite`` with each `ASSOCIATIVE` node of two or more invariant and some other operands, all of
    its output dtype, rewritten ``op(op(*invariant), *others)``; ``composite`` itself if there is none."""
    invariant = {composite.fgraph.inputs[i] for i in invariant_inputs}
    new = {var: var for var in composite.fgraph.inputs}
    changed = False
    for node in composite.fgraph.toposort():
        inputs = [new.get(inp, inp) for inp in node.inputs]
        inv = [
            inp for inp, old in zip(inputs, node.inputs, strict=True) if old in invariant or isinstance(old, Constant)
        ]
        others = [
            inp
            for inp, old in zip(inputs, node.inputs, strict=True)
            if not (old in invariant or isinstance(old, Constant))
        ]
        same_dtype = all(inp.type == node.outputs[0].type for inp in inputs)
        if isinstance(node.op, ASSOCIATIVE) and len(inv) >= 2 and others and same_dtype:
            outputs = [node.op(node.op(*inv), *others)]
            changed = True
        else:
            outputs = node.op.make_node(*inputs).outputs
        if all(inp in invariant or isinstance(inp, Constant) for inp in node.inputs):
            invariant.update(node.outputs)
        new.update(zip(node.outputs, outputs, strict=True))
    if not changed:
        return composite
    return ps.Composite(composite.fgraph.inputs, [new.get(out, out) for out in composite.fgraph.outputs])


def split_invariant(composite: ps.Composite, invariant_inputs: set[int]):
    """Split ``composite`` given which of its inputs are loop-invariant.

    Invariant operands of associative ops are grouped first (`_group_invariant_operands`). Returns ``None``
    if no inner node depends on invariant inputs alone, else ``(hoisted, hoisted_inputs,
    loop, loop_inputs)``: ``hoisted`` a Composite of the invariant inputs at positions ``hoisted_inputs``;
    ``loop`` a Composite whose inputs are, in order, the original inputs at positions ``loop_inputs`` and
    then ``hoisted``'s outputs; ``loop`` computes ``composite``'s outputs.
    """
    composite = _group_invariant_operands(composite, invariant_inputs)
    inner_inputs = composite.fgraph.inputs
    order = composite.fgraph.toposort()
    invariant = {inner_inputs[i] for i in invariant_inputs}
    hoistable = []
    for node in order:
        if all(inp in invariant or isinstance(inp, Constant) for inp in node.inputs):
            invariant.update(node.outputs)
            hoistable.append(node)
    if not hoistable:
        return None
    hoisted_vars = {out for node in hoistable for out in node.outputs}
    clients = {}
    for node in order:
        for inp in node.inputs:
            clients.setdefault(inp, []).append(node)
    frontier = [
        var
        for node in hoistable
        for var in node.outputs
        if var in composite.fgraph.outputs or any(c.outputs[0] not in hoisted_vars for c in clients.get(var, ()))
    ]
    used_by_hoisted = {inp for node in hoistable for inp in node.inputs}
    hoisted_inputs = [i for i in sorted(invariant_inputs) if inner_inputs[i] in used_by_hoisted]
    hoisted = ps.Composite([inner_inputs[i] for i in hoisted_inputs], frontier)

    replacements = {var: var.type() for var in frontier}
    new = dict(replacements)
    for node in order:
        if not all(out in new for out in node.outputs):
            outputs = node.op.make_node(*(new.get(inp, inp) for inp in node.inputs)).outputs
            new.update(zip(node.outputs, outputs, strict=True))
    loop_outputs = [new.get(out, out) for out in composite.fgraph.outputs]
    loop_outputs = [ps.identity(out) if out in replacements.values() else out for out in loop_outputs]
    needed = set(loop_outputs)
    for node in io_toposort([*inner_inputs, *replacements.values()], loop_outputs):
        needed.update(node.inputs)
    loop_inputs = [i for i, var in enumerate(inner_inputs) if var in needed]
    loop = ps.Composite([*(inner_inputs[i] for i in loop_inputs), *replacements.values()], loop_outputs)
    return hoisted, hoisted_inputs, loop, loop_inputs


@register_llvm_rewrite(REWRITES_NAME, position=0.5)
@node_rewriter([Elemwise])
def hoist_invariants(fgraph, node):
    """Elemwise{Composite} with all-broadcastable and other inputs -> hoisted Elemwise + narrower loop."""
    op = node.op
    if not isinstance(op.scalar_op, ps.Composite) or op.inplace_pattern:
        return None
    invariant_inputs = {i for i, inp in enumerate(node.inputs) if _all_broadcastable(inp)}
    if not invariant_inputs or len(invariant_inputs) == len(node.inputs):
        return None
    split = split_invariant(op.scalar_op, invariant_inputs)
    if split is None:
        return None
    hoisted, hoisted_inputs, loop, loop_inputs = split
    hoisted_outputs = Elemwise(hoisted)(*(node.inputs[i] for i in hoisted_inputs), return_list=True)
    outputs = Elemwise(loop)(*(node.inputs[i] for i in loop_inputs), *hoisted_outputs, return_list=True)
    for old, new in zip(node.outputs, outputs, strict=True):
        if old.type != new.type:
            return None
    return outputs
