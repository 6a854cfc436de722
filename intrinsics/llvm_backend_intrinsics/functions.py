"""An intrinsic's code emitted as a function of its own, so numba can prune the reference counts around it.

numba increfs each array in the tuple it passes an intrinsic (and a ``*args`` function's arguments, packed into one) and
decrefs it after. Its reference-count pruning, run on each function before the module is linked, removes such a pair
when every path from the incref reaches the decref or a raise, with no other decref between: true of one call whose
failure is marked a raise (`llvm_backend_intrinsics.abi.raise_status`), not of code emitted inline that releases arrays
of its own or can fail unmarked (an allocation's MemoryError) before the decref, which keeps an atomic incref and decref
per input at every call. LLVM inlines the function after the pruning where it is small enough: internal, and called
once.

`address_call` calls a compiled function through its address instead of linking its IR into the caller.
"""

from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.extending import intrinsic

from llvm_backend_intrinsics.abi import call_numba, excinfo_slot, function_type, raise_status, return_slot
from llvm_backend_intrinsics.naming import named, named_status, output_name

__all__ = ["address_call", "call_as_function", "chosen_address_call"]


def call_as_function(context, builder, signature, args, emit_body, name: str):
    """Emit ``emit_body(builder, decoded arguments)`` (which returns a value of ``signature.return_type``) as a
    function ``name`` of its own, internal to the module, and call it, propagating its exception status. The call's
    values are named after the function (``llvm_loop.code``, ``llvm_loop.is_error``), its result after the call's
    output (`llvm_backend_intrinsics.naming.output_name`)."""
    body_type = function_type(context, signature.return_type, signature.args)
    body = ir.Function(builder.module, body_type, builder.module.get_unique_name(name))
    body.linkage = "internal"
    context.call_conv.decorate_function(body, [f"argument{k}" for k in range(len(signature.args))], signature.args)
    body_builder = ir.IRBuilder(body.append_basic_block("entry"))
    decoded = context.call_conv.decode_arguments(body_builder, signature.args, body)
    returned = context.get_return_value(body_builder, signature.return_type, emit_body(body_builder, decoded))
    context.call_conv.return_value(body_builder, returned)
    status, result = context.call_conv.call_function(builder, body, signature.return_type, signature.args, args)
    named_status(status, body.name)
    named(status.code.args[0], f"{body.name}.returned")
    with cgutils.if_unlikely(builder, status.is_error):
        raise_status(context, builder, status)
    return named(result, output_name(f"{body.name}.value"))


def address_call(dispatcher):
    """The intrinsic ``call(arguments)``: ``dispatcher(*arguments)``, its compiled code called through its address
    (`chosen_address_call` of ``dispatcher`` whatever the arguments' types).

    A call of a dispatcher from compiled code links the dispatcher's whole module into the caller's, where LLVM
    optimizes and compiles it to machine code once more, for every caller. Through the address, the caller's module
    holds a declaration of the function type and a load of the address, nothing else. numba marks the address a
    dynamic global (``add_dynamic_addr``), so it caches no function calling this one, whose code would hold an
    address of this process; the dispatcher itself stays cacheable.
    """
    return chosen_address_call(lambda _: dispatcher, getattr(dispatcher, "__name__", "function"))


def chosen_address_call(choose, label: str):
    """The intrinsic ``call(arguments)``: ``choose(argument types)(*arguments)``, the dispatcher ``choose`` returns
    for the tuple of the arguments' numba types (at typing time; it may raise a ``TypingError``) called through
    the address of its compiled code, as `address_call` calls one."""

    @intrinsic
    def call(typingctx, arguments):
        if not isinstance(arguments, types.BaseTuple):
            raise errors.TypingError(f"address_call({label}): the arguments must be a tuple, got {arguments}")
        dispatcher = choose(tuple(arguments))
        dispatcher_type = typingctx.resolve_value_type(dispatcher)
        target = typingctx.resolve_function_type(dispatcher_type, tuple(arguments), {})
        if target is None:
            raise errors.TypingError(f"address_call: {label} cannot take {tuple(arguments)}")
        parameters = [] if target.pysig is None else target.pysig.parameters.values()
        if len(target.args) != len(arguments) or any(p.kind == p.VAR_POSITIONAL for p in parameters):
            raise errors.TypingError(f"address_call: {label} must take its arguments one by one")

        def emit(context, builder, decoded):
            compiled = dispatcher.overloads[target.args]
            fndesc = compiled.fndesc
            address = compiled.library.get_pointer_to_function(fndesc.llvm_func_name)
            pointer = builder.bitcast(
                named(context.add_dynamic_addr(builder, address, info=fndesc.llvm_func_name), "address"),
                function_type(context, fndesc.restype, fndesc.argtypes).as_pointer(),
                name="callee",
            )
            tupled = decoded[0]
            values = [
                named(context.cast(builder, builder.extract_value(tupled, k, name=f"in{k}"), t, s), f"in{k}.cast")
                for k, (t, s) in enumerate(zip(arguments, target.args))
            ]
            returned, excinfo = return_slot(context, builder, fndesc.restype), excinfo_slot(builder)
            return call_numba(context, builder, pointer, fndesc, values, returned, excinfo)[1]

        def codegen(context, builder, signature, args):
            return call_as_function(
                context, builder, signature, args, lambda body, decoded: emit(context, body, decoded), "llvm_call"
            )

        return target.return_type(arguments), codegen

    return call
