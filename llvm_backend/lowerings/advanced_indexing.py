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
"""

from numba.core.dispatcher import Dispatcher
from pytensor.graph.basic import Constant
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering, stock_funcify_and_key
from llvm_backend_intrinsics.bounds import IndexCheck, check_indices

__all__ = ["index_checks", "indices_start", "lower_advanced_indexing"]


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


@register_lowering(AdvancedSubtensor, check_indices, spec=index_checks)
@register_lowering(AdvancedIncSubtensor, check_indices, spec=index_checks)
def lower_advanced_indexing(context: LoweringContext):
    """Stock's read or update, called once `check_indices` has found the node's indices of ``context.spec``
    (`index_checks`'s) within ``x``."""
    stock, stock_key = stock_funcify_and_key(context.op, node=context.node, **context.stock_kwargs)
    if not isinstance(stock, Dispatcher):
        stock = numba_njit(stock)
    checks = context.spec
    key = None if stock_key is None else lowering_cache_key(context.op, stock=stock_key, checks=checks)
    return _checked_call(check_indices(checks), stock, indices_start(context.op)), key
