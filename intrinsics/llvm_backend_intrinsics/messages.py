"""Exceptions whose message is formatted from values known only at run time, worded as stock's are.

Stock's numba functions format such messages in nopython code (``f"... has shape {x.shape[0]}"``), for which numba
types and lowers its string machinery in every fresh process. Here the emitted code only
stores the integers of the message and returns a dynamic exception; numba boxes its argument when the exception
reaches Python, and a `MessageType` boxes to ``formatter(*fields)``, a plain ``str``: the exception raised has
one argument, the message, as stock's has.

    raise_formatted(context, builder, IndexError, MessageType(out_of_bounds_message, (intp,) * 3), values)
    # raises, in Python: IndexError(out_of_bounds_message(*values))
"""

from collections.abc import Callable, Sequence

from numba.core import cgutils, types
from numba.extending import box, models, register_model

from llvm_backend_intrinsics.naming import named, named_aggregate

__all__ = ["MessageType", "raise_formatted"]


class MessageType(types.Type):
    """The integers (or other numba scalars) ``fields`` of an exception's message, boxed to
    ``formatter(*fields)``. ``formatter`` must be picklable by reference (a module-level function): numba
    serializes it into the code that boxes the message."""

    def __init__(self, formatter: Callable[..., str], fields: tuple):
        self.formatter = formatter
        self.fields = fields
        formatter_name = f"{formatter.__module__}.{formatter.__qualname__}"
        super().__init__(name=f"Message({formatter_name}, {', '.join(map(str, fields))})")


@register_model(MessageType)
class _MessageModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [(f"f{k}", field) for k, field in enumerate(fe_type.fields)])


@box(MessageType)
def _box_message(typ, val, c):
    fields = [
        named(c.box(field, c.builder.extract_value(val, k, name=f"field{k}")), f"field{k}.boxed")
        for k, field in enumerate(typ.fields)
    ]
    formatter = named(c.pyapi.unserialize(c.pyapi.serialize_object(typ.formatter)), "formatter")
    message = named(c.pyapi.call_function_objargs(formatter, fields), "message")
    for obj in (formatter, *fields):
        c.pyapi.decref(obj)
    return message


def raise_formatted(context, builder, exception: type, message_type: MessageType, values: Sequence) -> None:
    """Return ``exception(message_type.formatter(*values))`` from the function being emitted (``values``, one
    per field, are stored in a struct named ``message``)."""
    message = named_aggregate(cgutils.make_anonymous_struct(builder, list(values)), "message")
    context.call_conv.return_dynamic_user_exc(builder, exception, (message,), (message_type,))
