"""Conditions checked where they are used, raising a given exception: PyTensor's ``CheckAndRaise`` (and its
``Assert``), which PyMC puts on a model's parameters and shapes.

Stock numba compiles each ``CheckAndRaise`` node as an ``@njit`` function (``if not cond: raise error(msg)``),
typed and lowered in every fresh process. Here it is a compare and a branch per condition in the graph's module,
raising the same exception class with the same message, in the conditions' order.

Layering: typing (`_check_types`) -> the ``@intrinsic`` glue (`check_and_raise`) -> the emitter `_emit_truth`.

    check_and_raise(ValueError, "sigma must be positive")(x, c0, c1)  # x, unless c0 or c1 is false
"""

from functools import cache

from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import load_item

from llvm_backend_intrinsics.naming import call_names, named

__all__ = ["check_and_raise"]


def _check_types(conditions) -> None:
    """A TypingError unless each condition is a boolean or a number, or a 0-d array of one."""
    for k, condition in enumerate(conditions):
        item = condition.dtype if isinstance(condition, types.Array) and condition.ndim == 0 else condition
        if not isinstance(item, types.Boolean | types.Number):
            raise errors.TypingError(f"check_and_raise: condition {k} must be a scalar or a 0-d array, got {condition}")


def _emit_truth(context, builder, condition_type, value, name: str):
    """Whether a condition (a scalar, or a 0-d array's item) is true, as Python's ``bool`` says."""
    if isinstance(condition_type, types.Array):
        array = context.make_array(condition_type)(context, builder, value)
        value = named(load_item(context, builder, condition_type, array.data), f"{name}.item")
        condition_type = condition_type.dtype
    return named(context.cast(builder, value, condition_type, types.boolean), f"{name}.true")


@cache
def check_and_raise(exception: type, message: str):
    """The intrinsic ``check(x, *conditions)``: ``x``, after raising ``exception(message)`` at the first false
    condition."""

    @intrinsic
    def check(typingctx, x, *conditions):
        _check_types(conditions)

        def codegen(context, builder, signature, args):
            value, packed = args
            names = call_names(1 + len(conditions), 1)
            for k, condition in enumerate(conditions):
                name = names.arguments[1 + k]
                truth = _emit_truth(context, builder, condition, builder.extract_value(packed, k, name=name), name)
                with cgutils.if_unlikely(builder, builder.not_(truth)):
                    context.call_conv.return_user_exc(builder, exception, (message,))
            return impl_ret_borrowed(context, builder, x, value)

        return x(x, types.StarArgTuple(conditions)), codegen

    return check
