"""Advanced indexed updates (``AdvancedIncSubtensor``: ``x[i] += y``, ``x[i] = y``, inplace or not) with numpy's
``IndexError`` for an index out of range.

Stock's function for such a node reads each index without a bounds check, so a position past the end of its
axis (or below ``-n``) writes outside ``x``, or wraps, where the ``py`` linker's numpy raises. The node function
here checks every index array first (`llvm_backend_intrinsics.bounds.check_indices`: each position of an integer
index within its axis, a boolean mask's shape that of the axes it indexes), then calls stock's function, which
does the update: nothing is written, even by an inplace node, unless all indices are good. A node whose index
arrays are all known to fit ``x`` (`index_checks`) keeps stock's function.

PyTensor 3.3.8 has no ``AdvancedIncSubtensor1``: ``x[i]`` updated by an index vector is an
``AdvancedIncSubtensor`` of ``idx_list == (0,)``. A gather's gradient that elemwise fusion folds into a
``FusedElemwise`` with an indexed output is checked by the loop itself (``llvm_backend_intrinsics.loops``).
"""

from numba.core.dispatcher import Dispatcher
from pytensor.graph.basic import Constant
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.tensor.subtensor import AdvancedIncSubtensor

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering, stock_funcify_and_key
from llvm_backend_intrinsics.bounds import IndexCheck, check_indices

__all__ = ["index_checks", "lower_advanced_inc_subtensor"]


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

    The `IndexCheck` of each index array of an ``AdvancedIncSubtensor`` node that may not fit ``x``, in the order
    of its ``idx_list``: its position among the node's index inputs, the axis of ``x`` it indexes (a slice or an
    integer index takes one axis, a boolean mask as many as it has) and whether it is a mask; None if there is
    none (stock's function is then as good). A slice's bounds are not checked (a slice clips)."""
    x, checks, axis = node.inputs[0], [], 0
    for entry in node.op.idx_list:
        if isinstance(entry, slice):
            axis += 1
            continue
        index = node.inputs[2 + entry]
        mask = index.type.dtype == "bool"
        if _may_not_fit(x, index, axis, mask):
            checks.append(IndexCheck(entry, axis, mask))
        axis += index.type.ndim if mask else 1
    return tuple(checks) or None


def _checked_update(check, update):
    """An ``@njit`` function ``(x, y, *indices)``: ``check(x, *indices)``, then ``update(x, y, *indices)``."""

    @numba_njit
    def checked_update(x, y, *indices):
        check(x, *indices)
        return update(x, y, *indices)

    return checked_update


@register_lowering(AdvancedIncSubtensor, check_indices, spec=index_checks)
def lower_advanced_inc_subtensor(context: LoweringContext):
    """Stock's update, called once `check_indices` has found the node's indices of ``context.spec``
    (`index_checks`'s) within ``x``."""
    update, stock_key = stock_funcify_and_key(context.op, node=context.node, **context.stock_kwargs)
    if not isinstance(update, Dispatcher):
        update = numba_njit(update)
    checks = context.spec
    key = None if stock_key is None else lowering_cache_key(context.op, stock=stock_key, checks=checks)
    return _checked_update(check_indices(checks), update), key
