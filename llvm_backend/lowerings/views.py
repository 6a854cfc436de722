"""Basic indexing, dimension shuffles, the scalar <-> 0-d array nodes and lone scalar ops, as intrinsics
emitted in the graph function (`llvm_backend_intrinsics.views`; a scalar op through
`llvm_backend.lowerings.composite.composite_intrinsic`).

Stock gives each such node an ``@njit`` function, which numba types, lowers, optimizes and compiles as a module
of its own before the graph's; these are most of a PyMC log-density's nodes. Here each is emitted in the graph
function's module and goes through LLVM once. The nodes lowered here, and what their node function is:

- ``Subtensor`` (basic indexing: integers and slices) -> ``basic_index(entries, box=True)``: a view, or the
  element in a new 0-d array;
- PyTensor's ``ScalarSubtensor`` (scalarization's ``x[i]`` handing out a native scalar) ->
  ``basic_index(entries, box=False)``;
- ``DimShuffle`` -> ``dimshuffle_view(new_order, drop, unit_axes)``;
- ``TensorFromScalar`` -> ``box_scalar``, ``ScalarFromTensor`` -> ``unbox_scalar``;
- a scalar op applied to native scalars (``exp(x[1])`` after scalarization) that a Composite's plan computes
  with no function of stock's (`composite.needs_no_stock_function`) -> the `composite_intrinsic` of a
  one-node Composite.
"""

from pytensor.scalar.basic import Composite, ScalarInnerGraphOp, ScalarOp
from pytensor.tensor.basic import ScalarFromTensor, TensorFromScalar
from pytensor.tensor.elemwise import DimShuffle
from pytensor.tensor.rewriting.scalarize import ScalarSubtensor
from pytensor.tensor.subtensor import Subtensor

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend.lowerings.composite import composite_intrinsic, needs_no_stock_function
from llvm_backend_intrinsics.views import basic_index, box_scalar, dimshuffle_view, unbox_scalar

__all__ = [
    "index_entries",
    "lower_dimshuffle",
    "lower_scalar_from_tensor",
    "lower_scalar_op",
    "lower_scalar_subtensor",
    "lower_subtensor",
    "lower_tensor_from_scalar",
]


def index_entries(op: Subtensor) -> tuple:
    """``op``'s indices as `basic_index` takes them: per index the position among the node's index inputs of
    an integer, or a ``(start, stop, step)`` triple of positions (None where absent) for a slice."""
    return tuple((entry.start, entry.stop, entry.step) if isinstance(entry, slice) else entry for entry in op.idx_list)


def _inner_subtensor(op: ScalarSubtensor):
    """The Subtensor node of a ScalarSubtensor's inner graph, if it reads the inner inputs in order."""
    nodes = [node for node in op.fgraph.apply_nodes if isinstance(node.op, Subtensor)]
    if len(nodes) != 1 or list(nodes[0].inputs) != list(op.fgraph.inputs):
        return None
    return nodes[0]


def reads_inputs_in_order(node) -> bool:
    """its one Subtensor reads the inner inputs in order"""
    return _inner_subtensor(node.op) is not None


@register_lowering(Subtensor, basic_index)
def lower_subtensor(context: LoweringContext):
    entries = index_entries(context.op)
    return basic_index(entries, box=True), lowering_cache_key(context.op, entries=entries)


@register_lowering(ScalarSubtensor, basic_index, when=reads_inputs_in_order)
def lower_scalar_subtensor(context: LoweringContext):
    entries = index_entries(_inner_subtensor(context.op).op)
    return basic_index(entries, box=False), lowering_cache_key(context.op, entries=entries)


@register_lowering(DimShuffle, dimshuffle_view)
def lower_dimshuffle(context: LoweringContext):
    op, node = context.op, context.node
    unit_axes = frozenset(axis for axis, length in enumerate(node.inputs[0].type.shape) if length == 1)
    new_order, drop = tuple(op._new_order), tuple(op.drop)
    shuffle = dimshuffle_view(new_order, drop, unit_axes)
    return shuffle, lowering_cache_key(op, use_props=False, order=new_order, drop=drop, unit_axes=sorted(unit_axes))


@register_lowering(TensorFromScalar, box_scalar)
def lower_tensor_from_scalar(context: LoweringContext):
    return box_scalar, lowering_cache_key(context.op)


@register_lowering(ScalarFromTensor, unbox_scalar)
def lower_scalar_from_tensor(context: LoweringContext):
    return unbox_scalar, lowering_cache_key(context.op)


def computes_without_stock(node) -> bool:
    """a scalar op a Composite's plan computes with no stock function (Add, Mul, Switch, a numpy ufunc)"""
    return not isinstance(node.op, ScalarInnerGraphOp) and needs_no_stock_function(node)


@register_lowering(ScalarOp, composite_intrinsic, when=computes_without_stock)
def lower_scalar_op(context: LoweringContext):
    node = context.node
    inputs = [var.type() for var in node.inputs]
    return composite_intrinsic(Composite(inputs, node.op.make_node(*inputs).outputs), **context.stock_kwargs)
