"""Lowerings of the scalarization ops (``llvm_backend.scalar_ops``): no 0-d array boxes.

``ScalarCAReduce`` -> ``intrinsics.reduction.full_reduce`` (stack accumulator, returns a register);
``ScalarSubtensor`` -> a bounds-checked element read; ``ScalarizedElemwise`` -> the stock ``Elemwise``
function with scalars passed as ``intrinsics.boxing.stack_array`` views; a ``ScalarOp`` on scalars ->
stock's scalar function with its results cast to their declared dtypes (``intrinsics.boxing.cast_to``).
"""

import operator

import numpy as np
import pytensor.scalar as ps
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key, numba_njit

from intrinsics.boxing import cast_to, stack_array
from intrinsics.reduction import full_reduce
from intrinsics.tuples import flatten_tuple
from llvm_backend.codegen import call_source, tuple_source
from llvm_backend.dispatch import lowering_cache_key, register_lowering, wrapping_cache_key
from llvm_backend.scalar_ops import ScalarCAReduce, ScalarizedElemwise, ScalarSubtensor
from llvm_backend.scalarize import SCALAR_REDUCTIONS

__all__ = [
    "lower_scalar_careduce",
    "lower_scalar_op",
    "lower_scalar_subtensor",
    "lower_scalarized_elemwise",
]


def _identity(scalar_op, acc_dtype: np.dtype):
    """The reduction's identity in the accumulator's dtype (integer max/min start at the dtype's bounds)."""
    if isinstance(scalar_op, ps.ScalarMaximum | ps.ScalarMinimum) and acc_dtype.kind in "iu":
        info = np.iinfo(acc_dtype)
        return info.min if isinstance(scalar_op, ps.ScalarMaximum) else info.max
    return acc_dtype.type(scalar_op.identity)


@register_lowering(ScalarCAReduce, full_reduce)
def lower_scalar_careduce(op, node, **kwargs):
    careduce = op.careduce
    name = SCALAR_REDUCTIONS[type(careduce.scalar_op)]
    out_dtype = np.dtype(node.outputs[0].dtype)
    acc_dtype = np.dtype(getattr(careduce, "acc_dtype", None) or out_dtype)
    identity = _identity(careduce.scalar_op, acc_dtype)

    @numba_njit
    def scalar_careduce(x):
        return full_reduce(x, name, identity, acc_dtype, out_dtype)

    return scalar_careduce, lowering_cache_key(op)


@register_lowering(ScalarSubtensor, operator.getitem)
def lower_scalar_subtensor(op, node, **kwargs):
    # Stock Subtensor is compiled with boundscheck=True too: out-of-range indices raise IndexError.
    @numba_njit(boundscheck=True)
    def scalar_subtensor(x, *indices):
        return x[indices]

    return scalar_subtensor, lowering_cache_key(op)


@register_lowering(ScalarizedElemwise, stack_array)
def lower_scalarized_elemwise(op, node, **kwargs):
    """The stock ``Elemwise`` function, fed each scalar as a size-1 array on this function's stack.

    For an ``Elemwise`` of ``(theta, mu)`` with ``mu`` a scalar seen as a vector, the source is::

        def scalarized_elemwise(i0, i1):
            return elemwise_fn(i0, stack_array(i1, 1))

    The stack arrays never escape: a ``ScalarizedElemwise`` is never made inplace, so its outputs are
    fresh arrays, and the stock function only reads its inputs.
    """
    inner = op.inner_node(node.inputs)
    elemwise_fn, stock_key = numba_funcify_and_cache_key(op.elemwise, node=inner)
    ndims = dict(op.scalar_inputs)
    params = [f"i{k}" for k in range(len(node.inputs))]
    args = [f"stack_array({p}, {ndims[k]})" if k in ndims else p for k, p in enumerate(params)]
    source = f"def scalarized_elemwise({', '.join(params)}):\n    return {call_source('elemwise_fn', args)}\n"
    fn = compile_numba_function_src(
        source,
        "scalarized_elemwise",
        global_env={"elemwise_fn": elemwise_fn, "stack_array": stack_array, "flatten_tuple": flatten_tuple},
    )
    return numba_njit(fn), wrapping_cache_key(stock_key, scalar_inputs=op.scalar_inputs)


@register_lowering(ps.ScalarOp, cast_to)
def lower_scalar_op(op, node, **kwargs):
    """A scalar op on ``ScalarType`` values, its results cast to their declared dtypes.

    Stock's scalar function computes in numba's promoted types (``int8 * int8`` is int64); inside a loop the
    store into the output array casts, between scalar nodes nothing would. For ``Composite{i0 * 2}``
    on an int8 the source is::

        def scalar_op(i0):
            o0 = scalar_fn(i0)
            return cast_to(o0, out0)
    """
    scalar_fn, stock_key = numba_funcify_and_cache_key(op, node=node)
    params = [f"i{k}" for k in range(len(node.inputs))]
    results = [f"o{k}" for k in range(len(node.outputs))]
    casts = [f"cast_to({r}, out{k})" for k, r in enumerate(results)]
    body = f"{', '.join(results)} = {call_source('scalar_fn', params)}\n    return {casts[0] if len(casts) == 1 else tuple_source(casts)}"
    source = f"def scalar_op({', '.join(params)}):\n    {body}\n"
    out_dtypes = {f"out{k}": np.dtype(out.dtype) for k, out in enumerate(node.outputs)}
    fn = compile_numba_function_src(
        source,
        "scalar_op",
        global_env={"scalar_fn": scalar_fn, "cast_to": cast_to, "flatten_tuple": flatten_tuple, **out_dtypes},
    )
    types = tuple(str(v.type) for v in node.inputs + node.outputs)
    return numba_njit(fn), wrapping_cache_key(stock_key, types=types)
