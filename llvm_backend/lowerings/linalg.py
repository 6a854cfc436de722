"""``SolveTriangular`` as an intrinsic emitted in the graph function (`llvm_backend_intrinsics.blas`): BLAS's
``?trsm``, the routine stock's ``_solve_triangular`` calls, with stock's checks, errors and zero-pivot NaNs,
without the function stock compiles per node. Systems of mixed or other dtypes keep stock's function, which
casts."""

from pytensor.tensor.linalg.solvers.triangular import SolveTriangular

from llvm_backend.dispatch import LoweringContext, lowering_cache_key, register_lowering
from llvm_backend.lowerings.dot import one_float_dtype
from llvm_backend_intrinsics.blas import triangular_solver

__all__ = ["lower_solve_triangular"]


@register_lowering(SolveTriangular, triangular_solver, when=one_float_dtype)
def lower_solve_triangular(context: LoweringContext):
    op = context.op
    solver = triangular_solver(op.lower, op.unit_diagonal)
    return solver, lowering_cache_key(op, dtype=context.node.outputs[0].type.dtype)
