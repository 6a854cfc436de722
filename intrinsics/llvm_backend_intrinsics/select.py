"""``select(condition, x, y)``: ``x if condition else y`` of scalars as one LLVM ``select``, without a branch.

Written as a Python conditional expression (or a function with an ``if``), a switch is two basic blocks and a
merge; numba's SSA reconstruction and type inference grow with blocks times variables, so each switch of a body
of a thousand scalar values (a PyMC model's bounds checks, fused into one Composite) adds to the compile of all of
them. ``select`` keeps the body one block: both operands are already
computed values (a scalar Composite evaluates every inner node), and the result is LLVM's ``select`` of the two.

Typing is numba's for ``x if condition else y``: the result type is ``x`` and ``y`` unified
(``typingctx.unify_pairs``), both converted to it with ``context.cast``, and ``condition`` is read as
``bool(condition)`` (``context.is_true``: nonzero, NaN included). Arguments that do not unify, or that are not
scalars, are a TypingError.
"""

from numba.core import errors, types
from numba.extending import intrinsic

from llvm_backend_intrinsics.naming import named

__all__ = ["select"]

_SCALARS = (types.Boolean, types.Integer, types.Float, types.Complex)


@intrinsic
def select(typingctx, condition, x, y):
    """``x if condition else y`` for scalars ``condition``, ``x`` and ``y``, as one ``select`` instruction (named
    ``selected``, its condition ``truth``)."""
    for name, ty in (("condition", condition), ("x", x), ("y", y)):
        if not isinstance(ty, _SCALARS):
            raise errors.TypingError(f"select: {name} must be a scalar, got {ty}")
    result = typingctx.unify_pairs(x, y)
    if result is None or not isinstance(result, _SCALARS):
        raise errors.TypingError(f"select: {x} and {y} have no common type")

    def codegen(context, builder, signature, args):
        condition_value, x_value, y_value = args
        truth = named(context.is_true(builder, condition, condition_value), "truth")
        return builder.select(
            truth,
            named(context.cast(builder, x_value, x, result), "x.cast"),
            named(context.cast(builder, y_value, y, result), "y.cast"),
            name="selected",
        )

    return result(condition, x, y), codegen
