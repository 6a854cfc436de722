"""Elemwise, ScalarizedElemwise and FusedElemwise -> ``llvm_backend_intrinsics.loops.node_loop_intrinsic``: one loop
nest of ours,
the scalar function typed once, full reductions in stack accumulators.

Stock lowers each through numba's generated-source vectorize machinery (``_vectorized``, and for a
`FusedElemwise` a generated implementation around it). Ours emits the loop directly: the scalar function of
the node's `Composite` (`llvm_backend.lowerings.composite`'s plan under the LLVM mode) called at each
element, scalar inputs read once, each full reduction in an accumulator LLVM keeps in a register. For
``FusedElemwise{Composite{...}, reduce[add@(0,)]}(x, s)`` the node function is the intrinsic
``node_loop_intrinsic(LoopSpec(((False,), None), ...), scalar_function)``, which the graph function calls as
``node(x, s)`` and emits in its own module: the loop is optimized and compiled once, in the graph. A
Composite's scalar function is `composite_intrinsic`'s, emitted in the loop too.

An in-place output is written into the input the node destroys, which it returns; a reduction over some
axes accumulates in its output array. A `FusedElemwise`'s indexed reads and writes (``indexed_inputs``,
``indexed_outputs``) are the loop's where each index is a vector of integers along one axis of sources and
targets of the loop's ndim (`_indexing`). Nodes it does not take keep stock's function: other indexing,
reductions ``full_reduce`` has no op for, complex accumulators, a reduction over some axes in an accumulator
dtype other than its output's, and an in-place reduced output.
"""

from dataclasses import replace

import numpy as np
from numba.core.dispatcher import Dispatcher
from numba.core.extending import _Intrinsic
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key, numba_njit
from pytensor.scalar import Composite, ScalarType
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.rewriting.scalarize import ScalarizedElemwise
from pytensor.tensor.type import TensorType

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend.lowerings.composite import composite_intrinsic
from llvm_backend.lowerings.reduction import REDUCTION_OPS, reduces_kinds, reduction_identity
from llvm_backend_intrinsics.loops import LoopOutput, LoopSpec, node_loop_intrinsic

__all__ = ["loop_spec", "lower_loop", "lowers_loop"]


def _elemwise(node):
    """The node's `Elemwise`: the node's own op, or the one in the inner graph of a wrapping op."""
    if isinstance(node.op, Elemwise):
        return node
    [elemwise] = [n for n in node.op.fgraph.apply_nodes if isinstance(n.op, Elemwise)]
    return elemwise


def _reduction(node, i, ndim: int) -> LoopOutput | None:
    """Output ``i``'s full reduction as a `LoopOutput`, or None if it is not one the loop takes."""
    scalar_op, axes, _, acc_dtype = node.op.reduced_outputs[i]
    name = REDUCTION_OPS.get(type(scalar_op))
    if name is None:
        return None
    acc_dtype, out_dtype = np.dtype(acc_dtype), np.dtype(node.outputs[i].type.dtype)
    kinds = reduces_kinds(name).replace("c", "")
    if acc_dtype.kind not in kinds or out_dtype.kind not in kinds:
        return None
    identity = reduction_identity(scalar_op, acc_dtype)
    if sorted(axes) == list(range(ndim)):
        return LoopOutput(out_dtype, name, acc_dtype, identity, isinstance(node.outputs[i].type, ScalarType))
    if acc_dtype != out_dtype:
        return None
    return LoopOutput(out_dtype, name, acc_dtype, identity, axes=tuple(sorted(axes)))


def loop_spec(node) -> LoopSpec | None:
    """indexed reads and writes by vectors along one axis, an array input, and only reductions full_reduce has

    The loop running ``node``, or None when the loop does not take it (see the module's docstring): the
    reductions' ops are ``full_reduce``'s, on bool, integer or float accumulators, of the output's dtype unless
    the reduction is over every axis, none in place. The first line is the condition `llvm-backend lowerings`
    shows."""
    elemwise = _elemwise(node)
    indexing = _indexing(node, elemwise)
    if indexing is None:
        return None
    indices, reads, writes = indexing
    inputs = node.inputs[: len(elemwise.inputs)]
    # what the function reads: an indexed input's view (x[idx]) is the inner Elemwise's input
    reading = reads or (None,) * len(inputs)
    viewed = [i if read is None else inner for i, inner, read in zip(inputs, elemwise.inputs, reading, strict=True)]
    broadcastable = tuple(None if isinstance(v.type, ScalarType) else v.type.broadcastable for v in viewed)
    if all(b is None for b in broadcastable):
        return None
    ndim = elemwise.outputs[0].type.ndim
    reduced = getattr(node.op, "reduced_outputs", None) or (None,) * len(node.outputs)
    outputs = []
    for i, out in enumerate(node.outputs):
        if i in writes:
            target, k, mode = writes[i]
            outputs.append(LoopOutput(np.dtype(out.type.dtype), into=target, indexed=(k, mode)))
        elif reduced[i] is None:
            outputs.append(LoopOutput(np.dtype(out.type.dtype), into=_destroyed(node, elemwise, i)))
        elif i not in elemwise.op.inplace_pattern and (reduction := _reduction(node, i, ndim)) is not None:
            outputs.append(reduction)
        else:
            return None
    return LoopSpec(broadcastable, tuple(outputs), indices, reads)


def _indexing(node, elemwise) -> tuple | None:
    """``(indices, reads, writes)`` of a `FusedElemwise`'s indexed reads and writes as `LoopSpec` says them
    (``writes``: output -> its target's input, its index, its mode); ``((), (), {})`` for a node without any;
    None when the loop does not take them: an index that is not a vector of integers, a source or target
    of another ndim than the loop's, a target broadcastable where the output is not (or the reverse), a
    written output that is reduced, in place, or not declared to destroy a target of its own, or an ``inc`` of a
    target that is not a number. A written output's target is the input its ``destroy_map`` names, among those
    after the index arrays: PyTensor appends one per written output, an index writing several outputs included."""
    if not isinstance(node.op, FusedElemwise) or not any(
        e is not None for e in (*node.op.indexed_inputs, *node.op.indexed_outputs)
    ):
        return (), (), {}
    n, ndim = len(elemwise.inputs), elemwise.outputs[0].type.ndim
    reduced = node.op.reduced_outputs or (None,) * len(node.outputs)
    indices, reads, writes = [], [None] * n, {}
    targets = range(n + len(node.op.indexed_inputs), len(node.inputs))
    for k, (read, write) in enumerate(zip(node.op.indexed_inputs, node.op.indexed_outputs, strict=True)):
        index = node.inputs[n + k]
        if not (isinstance(index.type, TensorType) and index.type.ndim == 1 and index.type.numpy_dtype.kind in "iu"):
            return None
        axis = (read or write)[1]
        indices.append((axis, index.type.broadcastable[0]))
        for j in read[0] if read is not None else ():
            if node.inputs[j].type.ndim != ndim:
                return None
            reads[j] = k
        if write is None:
            continue
        for j in write[0]:
            destroyed = node.op.destroy_map.get(j, [])
            if len(destroyed) != 1 or destroyed[0] not in targets:
                return None
            position = destroyed[0]
            if any(position == taken for taken, _, _ in writes.values()):
                return None
            target, out = node.inputs[position].type, elemwise.outputs[j].type
            if target.ndim != ndim or target.dtype != out.dtype or write[2] not in ("inc", "set"):
                return None
            if any(target.broadcastable[d] != out.broadcastable[d] for d in range(ndim) if d != axis):
                return None
            if reduced[j] is not None or j in elemwise.op.inplace_pattern:
                return None
            if write[2] == "inc" and np.dtype(target.dtype).kind not in "iuf":
                return None
            writes[j] = (position, k, write[2])
    return tuple(indices), tuple(reads), writes


def _destroyed(node, elemwise, i: int) -> int | None:
    """The input array output ``i`` is written into: the one the Elemwise's in-place pattern names, where the
    node's ``destroy_map`` says so too (PyTensor then knows the output is that input) and the input has the
    output's type; else None, a new array."""
    j = elemwise.op.inplace_pattern.get(i)
    if j is None or node.op.destroy_map.get(i) != [j]:
        return None
    return j if node.inputs[j].type == node.outputs[i].type else None


def lowers_loop(node) -> bool:
    """Whether the loop takes ``node`` (`loop_spec`)."""
    return loop_spec(node) is not None


@register_lowering(Elemwise, node_loop_intrinsic, spec=loop_spec)
@register_lowering(ScalarizedElemwise, node_loop_intrinsic, spec=loop_spec)
@register_lowering(FusedElemwise, node_loop_intrinsic, spec=loop_spec)
def lower_loop(context: LoweringContext):
    """The loop of ``context.spec`` (`loop_spec`'s). The hint ``within = (i, before, after)``: output ``i`` is
    written within a new vector, a join's output (`LoopOutput.within`; `llvm_backend.lowerings.join.fill_joins`
    says where)."""
    op, node, spec, within = context.op, context.node, context.spec, context.hints.get("within")
    if within is not None:
        i, before, after = within
        outputs = list(spec.outputs)
        outputs[i] = replace(outputs[i], within=(before, after))
        spec = replace(spec, outputs=tuple(outputs))
    elemwise = _elemwise(node)
    scalar_op = elemwise.op.scalar_op
    if isinstance(scalar_op, Composite):
        scalar_function, scalar_key = composite_intrinsic(scalar_op, **context.stock_kwargs)
    else:
        scalar_node = elemwise.op.make_scalar_node(*elemwise.inputs)
        scalar_function, scalar_key = numba_funcify_and_cache_key(scalar_op, node=scalar_node, **context.stock_kwargs)
    if not isinstance(scalar_function, Dispatcher | _Intrinsic):
        scalar_function = numba_njit(scalar_function)
    # The scalar function's key says what the Elemwise's scalar op computes, the spec all the rest.
    key = None if scalar_key is None else lowering_cache_key(op, use_props=False, loop=repr(spec), scalar=scalar_key)
    return node_loop_intrinsic(spec, scalar_function), key
