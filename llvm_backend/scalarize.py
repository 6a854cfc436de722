"""Scalarization: keep logically-scalar values as ``ScalarType`` instead of boxing them in 0-d arrays.

Stock numba boxes every scalar value in a 0-d (or size-1) array: one NRT heap allocation per value per call.
``ScalarizeGraph`` makes one forward walk over the graph:

- producers hand out a scalar: a full ``CAReduce`` becomes ``ScalarCAReduce``, a ``Subtensor`` with one
  scalar index per dimension becomes ``ScalarSubtensor``;
- consumers take scalars directly: an ``Elemwise`` whose inputs and outputs all have size 1 runs its scalar
  op on scalars (its outputs become scalars in turn), any other ``Elemwise`` becomes a
  ``ScalarizedElemwise`` taking its realised size-1 inputs as scalars, a ``DimShuffle`` of a size-1 value
  passes the scalar through, and a vector ``Join`` or a ``MakeVector`` becomes ``JoinScalars``, which
  takes scalar entries;
- every value realised as a scalar replaces the original by one shared box (``tensor_from_scalar``, plus
  broadcastable dimensions): a box whose consumers all bypassed it has no clients and is pruned, one that is
  still read stays as a single allocation, where stock had one for the same value. So the pass never adds
  allocations.
"""

import numpy as np
import pytensor.scalar as ps
from pytensor.graph.features import ReplaceValidate
from pytensor.graph.rewriting.basic import GraphRewriter
from pytensor.tensor.basic import Join, MakeVector, as_tensor_variable, scalar_from_tensor, tensor_from_scalar
from pytensor.tensor.elemwise import CAReduce, DimShuffle, Elemwise
from pytensor.tensor.subtensor import Subtensor
from pytensor.tensor.type import TensorType

from llvm_backend._compat import is_scalar_index
from llvm_backend.scalar_ops import JoinScalars, ScalarCAReduce, ScalarizedElemwise, ScalarSubtensor

__all__ = ["SCALAR_REDUCTIONS", "ScalarizeGraph"]

SCALAR_REDUCTIONS = {
    ps.Add: "add",
    ps.Mul: "mul",
    ps.ScalarMaximum: "maximum",
    ps.ScalarMinimum: "minimum",
    ps.AND: "and",
    ps.OR: "or",
    ps.XOR: "xor",
}
"""The ``CAReduce`` scalar ops we reduce in full to a scalar, by ``intrinsics.reduction`` op name."""


def _size_one(var) -> bool:
    return isinstance(var.type, TensorType) and all(s == 1 for s in var.type.shape)


def _box(scalar, like):
    """``scalar`` as a tensor of ``like``'s type: one 0-d array, viewed with ``like``'s size-1 dims."""
    boxed = tensor_from_scalar(scalar)
    return boxed.dimshuffle(["x"] * like.ndim) if like.ndim else boxed


def _reducible(node) -> bool:
    op = node.op
    x, out = node.inputs[0], node.outputs[0]
    if not isinstance(op, CAReduce) or out.ndim != 0 or x.ndim == 0:
        return False
    name = SCALAR_REDUCTIONS.get(type(op.scalar_op))
    kinds = {"add": "biufc", "mul": "biufc", "maximum": "iuf", "minimum": "iuf"}.get(name, "biu")
    acc = np.dtype(getattr(op, "acc_dtype", None) or out.dtype)
    if acc.kind == "c" and out.type.numpy_dtype.kind != "c":
        return False  # numba cannot cast a complex accumulator to a real output
    return name is not None and x.type.numpy_dtype.kind in kinds and out.type.numpy_dtype.kind in kinds


def _could_be_overwritten(var, node) -> bool:
    """Whether stock's inplace pass might compute ``node``'s output in ``var``'s buffer."""
    return var.owner is not None and any(
        var.dtype == out.dtype and var.type.broadcastable == out.type.broadcastable for out in node.outputs
    )


def _fully_indexed(node) -> bool:
    op = node.op
    return type(op) is Subtensor and node.outputs[0].ndim == 0 and all(map(is_scalar_index, op.idx_list))


class ScalarizeGraph(GraphRewriter):
    """One forward walk realising scalar producers and letting consumers bypass the boxes."""

    def add_requirements(self, fgraph):
        fgraph.attach_feature(ReplaceValidate())

    def apply(self, fgraph):
        scalar_of = {}
        self._reads = {}
        for node in fgraph.toposort():
            if node in fgraph.apply_nodes:  # consumers replaced so far may have pruned their producers
                self._visit(fgraph, node, scalar_of)
        boxes = [
            (var, _box(scalar, var))
            for var, scalar in scalar_of.items()
            if var in fgraph.variables and not isinstance(var.owner.op, DimShuffle)
        ]
        if boxes:
            fgraph.replace_all_validate(boxes, reason="scalarize")

    def _visit(self, fgraph, node, scalar_of):
        """Record the scalars ``node`` produces; replace it now if it is a consumer taking scalars.

        Consumers are replaced during the walk so that every later node, and every scalar built from
        it, reads the replacement rather than the original.
        """
        op = node.op
        replacements = []
        if _reducible(node):
            scalar_of[node.outputs[0]] = ScalarCAReduce(op)(node.inputs[0])
        elif _fully_indexed(node):
            scalar_of[node.outputs[0]] = ScalarSubtensor(op)(*node.inputs)
        elif isinstance(op, Elemwise) and all(map(_size_one, node.inputs + node.outputs)):
            if self._only_boxes_move(fgraph, node, scalar_of):
                return
            scalars = op.scalar_op.make_node(*(self._scalar(i, scalar_of) for i in node.inputs)).outputs
            scalar_of.update(zip(node.outputs, scalars, strict=True))
        elif isinstance(op, Elemwise):
            replacements = self._mixed_elemwise(node, scalar_of)
        elif isinstance(op, DimShuffle) and node.inputs[0] in scalar_of and _size_one(node.outputs[0]):
            scalar_of[node.outputs[0]] = scalar_of[node.inputs[0]]
        elif isinstance(op, Join | MakeVector):
            replacements = self._join(node, scalar_of)
        if replacements:
            fgraph.replace_all_validate(replacements, reason="scalarize")

    def _only_boxes_move(self, fgraph, node, scalar_of) -> bool:
        """Would scalarizing this size-1 ``node`` only trade its output array for a box?

        So it is when no input has a realised scalar and every output is read only as a graph output:
        the box allocates as the stock output would, and stock's inplace pass may write the output in an
        input's buffer (a scan step updating a scalar state allocates nothing), which a box cannot.
        """
        return all(self._realised(i, scalar_of) is None for i in node.inputs) and all(
            out in fgraph.outputs and len(fgraph.clients[out]) == 1 for out in node.outputs
        )

    @staticmethod
    def _realised(var, scalar_of):
        """The scalar realised for ``var`` or for the size-1 value it is a view of, if any."""
        while var not in scalar_of and var.owner is not None and isinstance(var.owner.op, DimShuffle):
            if not _size_one(var.owner.inputs[0]):
                return None
            var = var.owner.inputs[0]
        return scalar_of.get(var)

    def _scalar(self, var, scalar_of):
        """``var``'s value as a scalar: its realised scalar, or read out of it (``.item()``, no allocation)."""
        realised = self._realised(var, scalar_of)
        if realised is not None:
            return realised
        # Read the size-1 value under any chain of size-1 DimShuffles (an ExpandDims of a 0-d input
        # that fusion made for a loop), once per value for the whole walk.
        base = var
        while base.owner is not None and isinstance(base.owner.op, DimShuffle) and _size_one(base.owner.inputs[0]):
            base = base.owner.inputs[0]
        if base not in self._reads:
            self._reads[base] = scalar_from_tensor(base.dimshuffle([]) if base.ndim else base)
        return self._reads[base]

    def _mixed_elemwise(self, node, scalar_of):
        """Size-1 inputs with a realised scalar are passed as scalars; the rest stay arrays.

        Left alone when stock's inplace pass could write an output over one of its intermediate array
        inputs: a ``ScalarizedElemwise`` is never inplace, and its fresh output would cost the allocation
        that the bypassed boxes saved (more, if a box is still read elsewhere).
        """
        realised = [self._realised(i, scalar_of) if _size_one(i) else None for i in node.inputs]
        if all(r is None for r in realised) or any(
            r is None and _could_be_overwritten(i, node) for i, r in zip(node.inputs, realised, strict=True)
        ):
            return []
        scalar_inputs = [(k, i.ndim) for k, (i, r) in enumerate(zip(node.inputs, realised)) if r is not None]
        inputs = [i if r is None else r for i, r in zip(node.inputs, realised, strict=True)]
        outputs = ScalarizedElemwise(node.op, scalar_inputs)(*inputs, return_list=True)
        return list(zip(node.outputs, outputs, strict=True))

    def _join(self, node, scalar_of):
        out = node.outputs[0]
        if isinstance(node.op, MakeVector):
            axis, tensors = as_tensor_variable(0), node.inputs
            entries = [self._scalar(t, scalar_of) for t in tensors]
        else:
            axis, *tensors = node.inputs
            entries = [scalar_of.get(t, t) for t in tensors]
        if out.ndim != 1 or not any(t in scalar_of for t in tensors):
            return []
        joined = JoinScalars()(axis, *entries)
        return [(out, joined)] if joined.type == out.type else []
