"""``SolveTriangular`` and ``ExtractDiag`` as intrinsics emitted in the graph function, without the function per
node stock compiles for each: a triangular solve by BLAS's ``?trsm`` (`llvm_backend_intrinsics.blas`), the routine
stock's ``_solve_triangular`` calls, with stock's checks, errors and zero-pivot NaNs; a diagonal copied by one loop
nest over its strided view (`llvm_backend_intrinsics.diagonal`). Systems of mixed or other dtypes keep stock's
function, which casts."""

from pytensor.tensor.basic import ExtractDiag
from pytensor.tensor.linalg.solvers.triangular import SolveTriangular

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend.lowerings.dot import one_float_dtype
from llvm_backend_intrinsics.blas import triangular_solver
from llvm_backend_intrinsics.diagonal import diagonal

__all__ = ["lower_extract_diag", "lower_solve_triangular"]


@register_lowering(SolveTriangular, triangular_solver, when=one_float_dtype)
def lower_solve_triangular(context: LoweringContext):
    op = context.op
    solver = triangular_solver(op.lower, op.unit_diagonal)
    return solver, lowering_cache_key(op, dtype=context.node.outputs[0].type.dtype)


@register_lowering(ExtractDiag, diagonal)
def lower_extract_diag(context: LoweringContext):
    op = context.op
    return diagonal(op.offset, op.axis1, op.axis2), lowering_cache_key(op)
