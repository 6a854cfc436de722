"""Tuple helpers whose IR is linear in the number of items.

CPython compiles a tuple display or call with more than 30 items into ``BUILD_LIST`` + ``LIST_TO_TUPLE``,
which numba's peephole turns into a chain of tuple additions: O(n²) IR. Generated code instead builds
groups of at most 30 items and joins them with ``flatten_tuple``.
"""

from numba.core import errors, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from llvm_backend_intrinsics.naming import named_aggregate

__all__ = ["flatten_tuple"]


def _flat_type(nested):
    """The tuple type of ``nested``'s items in order; TypingError unless ``nested`` is a tuple of tuples."""
    if not isinstance(nested, types.BaseTuple):
        raise errors.TypingError(f"flatten_tuple: expected a tuple of tuples, got {nested}")
    for k, group in enumerate(nested):
        if not isinstance(group, types.BaseTuple):
            raise errors.TypingError(f"flatten_tuple: item {k} of the tuple is {group}, not a tuple")
    return types.BaseTuple.from_types([item for group in nested for item in group])


def _emit_flatten(context, builder, nested_type, flat_type, nested):
    """The items of the tuple of tuples ``nested`` in one tuple: group ``i`` named ``g<i>``, item ``n`` ``x<n>``, the
    tuple ``t``, filled through item ``n`` ``t.<n>``."""
    items = []
    for i, group_type in enumerate(nested_type):
        group = builder.extract_value(nested, i, name=f"g{i}")
        first = len(items)
        items.extend(builder.extract_value(group, j, name=f"x{first + j}") for j in range(len(group_type)))
    return named_aggregate(context.make_tuple(builder, flat_type, items), "t")


@intrinsic
def flatten_tuple(typingctx, nested):
    """``((a, b), (c,))`` -> ``(a, b, c)``: one ``extractvalue`` and one ``insertvalue`` per item.

    For ``flatten_tuple(((x0, x1), (x2,)))`` of three float64 values the emitted IR is::

        %g0 = extractvalue {{double, double}, {double}} %nested, 0
        %x0 = extractvalue {double, double} %g0, 0
        %x1 = extractvalue {double, double} %g0, 1
        %g1 = extractvalue {{double, double}, {double}} %nested, 1
        %x2 = extractvalue {double} %g1, 0
        %t.0 = insertvalue {double, double, double} undef, double %x0, 0
        %t.1 = insertvalue {double, double, double} %t.0, double %x1, 1
        %t = insertvalue {double, double, double} %t.1, double %x2, 2
    """
    flat_type = _flat_type(nested)

    def codegen(context, builder, signature, args):
        flat = _emit_flatten(context, builder, signature.args[0], signature.return_type, args[0])
        return impl_ret_borrowed(context, builder, signature.return_type, flat)

    return flat_type(nested), codegen
