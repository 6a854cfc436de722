"""Advanced indexing by index arrays, read (``AdvancedSubtensor``: ``x[i]``, ``m[i, j]``, ``t[i, 1:, j]``) or
updated (``AdvancedIncSubtensor``: ``x[i] += y``, ``x[i] = y``, inplace or not), with numpy's ``IndexError`` for an
index out of range.

Stock's function for such a node reads each index without a bounds check, so a position past the end of its
axis (or below ``-n``) reads or writes outside ``x``, or wraps, where the ``py`` linker's numpy raises. The node
function here checks every index array first (`llvm_backend_intrinsics.bounds.check_indices`: each position of an
integer index within its axis, a boolean mask's shape that of the axes it indexes), then calls stock's function,
which reads or updates: nothing is written, even by an inplace update, unless all indices are good. A node whose
index arrays are all known to fit ``x`` (`index_checks`) keeps stock's function.

Both ops take ``x`` first and their index inputs last: a read's start right after ``x``, an update's after ``x``
and ``y`` (`indices_start`). PyTensor 3.3.8 has no ``AdvancedSubtensor1`` nor ``AdvancedIncSubtensor1``: ``x[i]``
by an index vector is an ``AdvancedSubtensor`` (an ``AdvancedIncSubtensor``) of ``idx_list == (0,)``. A read that
elemwise fusion folds into a ``FusedElemwise`` as an indexed input, and a gather's gradient folded in as an
indexed output, are checked by the loop itself (``llvm_backend_intrinsics.loops``).

A node whose indices are integer arrays of one ndim over ``x``'s leading axes (``x[i]``, ``m[i, j]``, their
updates; `leading_index_arrays`) is not stock's function at all: it is `llvm_backend_intrinsics.indexed`, a loop
nest emitted in the graph function, with the same checks first and stock's ValueErrors, where stock compiles a
function generated per node in every fresh process.
"""

from typing import NamedTuple

from numba.core.dispatcher import Dispatcher
from pytensor.graph.basic import Constant
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering, stock_funcify_and_key
from llvm_backend_intrinsics.bounds import IndexCheck, check_indices
from llvm_backend_intrinsics.indexed import indexed_access

__all__ = [
    "IndexingPlan",
    "index_checks",
    "indexing_plan",
    "indices_start",
    "leading_index_arrays",
    "lower_advanced_indexing",
]


def indices_start(op) -> int:
    """Where a node of ``op`` (an ``AdvancedSubtensor`` or ``AdvancedIncSubtensor``) has its index inputs: after
    ``x`` for a read, after ``x`` and ``y`` for an update."""
    return 2 if isinstance(op, AdvancedIncSubtensor) else 1


def _may_not_fit(x, index, axis: int, mask: bool) -> bool:
    """Whether ``index`` may not fit ``x`` from ``axis`` on: unless ``x``'s lengths there are static and the index is
    empty, a mask of their shape, or a constant within them."""
    if not mask and 0 in index.type.shape:
        return False
    lengths = x.type.shape[axis : axis + (index.type.ndim if mask else 1)]
    if None in lengths:
        return True
    if mask:
        return index.type.shape != lengths
    if not isinstance(index, Constant):
        return True
    return bool(index.data.min() < -lengths[0] or index.data.max() >= lengths[0])


def index_checks(node) -> tuple[IndexCheck, ...] | None:
    """an index array that may not fit x (not a constant within, or a mask of, x's static shape)

    The `IndexCheck` of each index array of an ``AdvancedSubtensor`` or ``AdvancedIncSubtensor`` node that may not
    fit ``x``, in the order of its ``idx_list``: its position among the node's index inputs (`indices_start` on),
    the axis of ``x`` it indexes (a slice or an integer index takes one axis, a boolean mask as many as it has)
    and whether it is a mask; None if there is none (stock's function is then as good). A slice's bounds are not
    checked (a slice clips)."""
    x, start, checks, axis = node.inputs[0], indices_start(node.op), [], 0
    for entry in node.op.idx_list:
        if isinstance(entry, slice):
            axis += 1
            continue
        index = node.inputs[start + entry]
        mask = index.type.dtype == "bool"
        if _may_not_fit(x, index, axis, mask):
            checks.append(IndexCheck(entry, axis, mask))
        axis += index.type.ndim if mask else 1
    return tuple(checks) or None


def _checked_call(check, stock, start: int):
    """An ``@njit`` function of a node's inputs ``(x, *rest)``, its indices from ``rest[start - 1]`` on:
    ``check(x, *indices)``, then ``stock(x, *rest)``."""
    skip = start - 1

    @numba_njit
    def checked_call(x, *rest):
        check(x, *rest[skip:])
        return stock(x, *rest)

    return checked_call


def leading_index_arrays(node) -> str | None:
    """What `llvm_backend_intrinsics.indexed.indexed_access` does for ``node`` (``"read"``, ``"set"`` or ``"inc"``),
    or None if it does not take it: it takes indices that are integer arrays of one ndim over ``x``'s leading axes
    (no slice, no mask, no scalar), ``x`` of numbers, and an increment only if duplicates accumulate."""
    op, x = node.op, node.inputs[0]
    indices = node.inputs[indices_start(op) :]
    if op.idx_list != tuple(range(len(indices))) or x.type.dtype == "bool" or x.type.dtype.startswith("complex"):
        return None
    if not all(index.type.dtype.startswith(("int", "uint")) for index in indices):
        return None
    if len({index.type.ndim for index in indices}) != 1 or indices[0].type.ndim == 0:
        return None
    if not isinstance(op, AdvancedIncSubtensor):
        return "read"
    if op.set_instead_of_inc:
        return "set"
    return None if op.ignore_duplicates else "inc"


class IndexingPlan(NamedTuple):
    """How a node is lowered: ``kind`` (`leading_index_arrays`'s) by `indexed_access`, or with ``kind`` None by
    stock's function after `check_indices`; ``checks`` are the index arrays to check first (`index_checks`)."""

    kind: str | None
    checks: tuple[IndexCheck, ...]


def indexing_plan(node) -> IndexingPlan | None:
    """integer index arrays over x's leading axes, or an index array that may not fit x

    The node's `IndexingPlan`, or None where stock's function is as good (no index array to check and not one
    `indexed_access` takes)."""
    kind, checks = leading_index_arrays(node), index_checks(node) or ()
    if kind is None and not checks:
        return None
    return IndexingPlan(kind, checks)


@register_lowering(AdvancedSubtensor, indexed_access, spec=indexing_plan)
@register_lowering(AdvancedIncSubtensor, indexed_access, spec=indexing_plan)
def lower_advanced_indexing(context: LoweringContext):
    """`indexed_access` for a node it takes; otherwise stock's read or update, called once `check_indices` has found
    the node's indices of ``context.spec`` within ``x``."""
    op, (kind, checks) = context.op, context.spec
    if kind is not None:
        inplace = isinstance(op, AdvancedIncSubtensor) and op.inplace
        return indexed_access(kind, checks, inplace), lowering_cache_key(op, kind=kind, checks=checks)
    stock, stock_key = stock_funcify_and_key(op, node=context.node, **context.stock_kwargs)
    if not isinstance(stock, Dispatcher):
        stock = numba_njit(stock)
    key = None if stock_key is None else lowering_cache_key(op, stock=stock_key, checks=checks)
    return _checked_call(check_indices(checks), stock, indices_start(op)), key
