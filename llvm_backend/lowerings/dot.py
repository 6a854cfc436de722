"""``Dot`` as an intrinsic emitted in the graph function (`llvm_backend_intrinsics.blas`): the BLAS call stock's
``_gemm`` makes in the end, chosen by a few compares in the graph's module, without the function per node stock
compiles to choose it. Products of other dtypes (integers, complex, mixed) keep stock's function, which casts."""

from pytensor.tensor.math import Dot

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend_intrinsics.blas import matmul

__all__ = ["lower_dot"]


def one_float_dtype(node) -> bool:
    """inputs and output of one dtype, float32 or float64"""
    dtypes = {variable.type.dtype for variable in (*node.inputs, *node.outputs)}
    return dtypes in ({"float64"}, {"float32"})


@register_lowering(Dot, matmul, when=one_float_dtype)
def lower_dot(context: LoweringContext):
    return matmul, lowering_cache_key(context.op, dtype=context.node.outputs[0].type.dtype)
