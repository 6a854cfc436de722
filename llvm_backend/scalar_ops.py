"""Ops that hand out or take logically-scalar values as ``ScalarType`` instead of 0-d arrays.

Each keeps a faithful ``perform``, so a graph our rewrites produced still runs on every backend; the LLVM
mode lowers them through our intrinsics (``llvm_backend.lowerings.scalar``).
"""

import numpy as np
import pytensor.scalar as ps
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.tensor.basic import as_tensor_variable
from pytensor.tensor.type import TensorType

__all__ = ["JoinScalars", "ScalarCAReduce", "ScalarSubtensor", "ScalarizedElemwise"]


class ScalarCAReduce(Op):
    """A full ``CAReduce`` whose result is a ``ScalarType`` value instead of a 0-d array."""

    __props__ = ("careduce",)

    def __init__(self, careduce):
        self.careduce = careduce

    def make_node(self, x):
        x = as_tensor_variable(x)
        reduced = self.careduce.make_node(x).outputs[0]
        if reduced.ndim != 0:
            raise ValueError(f"{self.careduce} does not reduce {x.type} to a scalar")
        return Apply(self, [x], [ps.get_scalar_type(reduced.dtype)()])

    def perform(self, node, inputs, output_storage):
        storage = [[None]]
        self.careduce.perform(self.careduce.make_node(node.inputs[0]), inputs, storage)
        output_storage[0][0] = node.outputs[0].type.filter(storage[0][0])

    def __str__(self):
        return f"Scalar{self.careduce}"


class ScalarSubtensor(Op):
    """``x[i, j, ...]`` with one scalar index per dimension, as a ``ScalarType`` value."""

    __props__ = ("subtensor",)

    def __init__(self, subtensor):
        self.subtensor = subtensor

    def make_node(self, x, *indices):
        element = self.subtensor.make_node(x, *indices).outputs[0]
        if element.ndim != 0:
            raise ValueError(f"{self.subtensor} does not index {x.type} down to a scalar")
        return Apply(self, [as_tensor_variable(x), *indices], [ps.get_scalar_type(element.dtype)()])

    def perform(self, node, inputs, output_storage):
        storage = [[None]]
        self.subtensor.perform(self.subtensor.make_node(*node.inputs), inputs, storage)
        output_storage[0][0] = node.outputs[0].type.filter(storage[0][0])

    def __str__(self):
        return f"Scalar{self.subtensor}"


class JoinScalars(Op):
    """``join(axis, *entries)`` of a vector, where an entry is a vector or a ``ScalarType`` value.

    A scalar entry counts as a length-1 vector. The output dtype is the upcast of the entries'.
    """

    __props__ = ()

    def make_node(self, axis, *entries):
        axis = as_tensor_variable(axis)
        entries = [e if isinstance(e.type, ps.ScalarType) else as_tensor_variable(e) for e in entries]
        if any(isinstance(e.type, TensorType) and e.ndim != 1 for e in entries):
            raise TypeError("JoinScalars joins vectors and scalars only")
        lengths = [1 if isinstance(e.type, ps.ScalarType) else e.type.shape[0] for e in entries]
        length = None if None in lengths else sum(lengths)
        dtype = ps.upcast(*(e.dtype for e in entries))
        return Apply(self, [axis, *entries], [TensorType(dtype, shape=(length,))()])

    def perform(self, node, inputs, output_storage):
        axis, *entries = inputs
        dtype = node.outputs[0].dtype
        output_storage[0][0] = np.concatenate([np.atleast_1d(e) for e in entries], axis=axis).astype(dtype)


class ScalarizedElemwise(Op):
    """An ``Elemwise`` some of whose size-1 (broadcast) inputs come as ``ScalarType`` values.

    ``scalar_inputs`` holds ``(position, ndim)`` of each such input: the ``Elemwise`` sees it as an
    array of shape ``(1,) * ndim``.
    """

    __props__ = ("elemwise", "scalar_inputs")

    def __init__(self, elemwise, scalar_inputs):
        self.elemwise = elemwise
        self.scalar_inputs = tuple(scalar_inputs)

    def inner_node(self, inputs) -> Apply:
        """The ``Elemwise`` node this op computes, on tensor stand-ins for ``inputs``."""
        ndims = dict(self.scalar_inputs)
        tensors = [
            TensorType(i.dtype, shape=(1,) * ndims[k])() if k in ndims else i.type()
            for k, i in enumerate(inputs)
        ]
        return self.elemwise.make_node(*tensors)

    def make_node(self, *inputs):
        outputs = [out.type() for out in self.inner_node(inputs).outputs]
        return Apply(self, list(inputs), outputs)

    def perform(self, node, inputs, output_storage):
        ndims = dict(self.scalar_inputs)
        arrays = [
            np.full((1,) * ndims[k], v, dtype=node.inputs[k].dtype) if k in ndims else v
            for k, v in enumerate(inputs)
        ]
        inner = self.inner_node(node.inputs)
        self.elemwise.prepare_node(inner, None, None, "py")
        self.elemwise.perform(inner, arrays, output_storage)

    def __str__(self):
        return f"Scalarized{self.elemwise}"
