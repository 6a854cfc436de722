"""nutpie's two C entry points, emitted with llvmlite over a numba function's compiled code: no numba typing.

nutpie samples by calling two C functions through their addresses, from its own (Rust) threads:

- logp: ``int64 (uint64 dim, double *x, double *grad, double *logp, void *user_data)``;
- expand: ``int64 (uint64 dim, uint64 n_expanded, double *x, double *out, void *user_data)``.

``user_data`` points at nutpie's record of the model's shared data (one numpy record of the addresses, sizes and
shapes of every shared array, which ``CompiledPyMCModel.with_data`` rewrites). nutpie's own entry points are two
``numba.cfunc``\\ s compiled in every process (their closure holds the dispatcher and the data, so numba caches
neither): numba types and compiles them, the graph call and the array copies in them, in every process, warm
or cold. Here each is a few basic blocks: the graph's arrays built on the stack from ``x`` and the record, a call
of the graph's function (or of an entry building its packs) through the address of its code, and a
loop copying its outputs out, with nutpie's return codes: -1 for a wrong ``dim`` or ``n_expanded``, 1 (logp)
or -2 (expand) when the graph raised, 3 for a gradient that is not finite, 4 for a log density that is not.

The graph's exception info, when it raised, is dropped: numba allocates one only for an exception whose
message it formats at run time, which the graph functions raise only for a shape or index out of bounds.
"""

import functools
from dataclasses import dataclass

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import cpu_target
from numba.core.runtime import rtsys
from numba.np.numpy_support import from_dtype

from llvm_backend_intrinsics.abi import excinfo_slot, function_type, return_slot
from llvm_backend_intrinsics.naming import alloca_once_value, named, named_aggregate, named_status, unpack_named

__all__ = ["NutpieEntry", "SharedSlot", "expand_entry", "logp_entry"]

I64 = ir.IntType(64)
DOUBLE = ir.DoubleType()
VOIDPTR = ir.IntType(8).as_pointer()


@dataclass(frozen=True)
class SharedSlot:
    """Where one shared array lies in nutpie's record: the byte offsets of its data address (``uintp``) and of
    its shape (``ndim`` unsigned 64-bit integers), and its dtype."""

    data_offset: int
    shape_offset: int
    ndim: int
    dtype: np.dtype

    @property
    def numba_type(self) -> types.Array:
        return types.Array(from_dtype(self.dtype), self.ndim, "C")


@dataclass(frozen=True)
class NutpieEntry:
    """A compiled entry point: its ``address`` (what nutpie calls), the code library holding it (kept alive
    with it) and the entry of the graph it calls, whose code must outlive it too."""

    address: int
    library: object
    callee: object


@functools.cache
def _context():
    """numba's CPU target context with its runtime enabled (as ``@njit`` compiles), for the outputs' decrefs."""
    return cpu_target.target_context.subtarget(enable_nrt=True)


def _field(builder, base, offset: int, ty: ir.Type, name: str) -> ir.Value:
    """The ``ty`` at byte ``offset`` of ``base`` (an ``i8*``), named ``name``."""
    at = builder.gep(base, [I64(offset)], name=f"{name}.at")
    return builder.load(builder.bitcast(at, ty.as_pointer(), name=f"{name}.ptr"), name=name)


def _array(context, builder, aryty: types.Array, data, shape: list, name: str) -> ir.Value:
    """A C-contiguous array of ``aryty`` over ``data`` (owned by the caller: no meminfo) of ``shape``, named
    ``name``."""
    itemsize = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
    strides, stride = [], I64(itemsize)
    for d, extent in reversed(list(enumerate(shape))):
        strides.insert(0, stride)
        stride = builder.mul(stride, extent, name=f"{name}.stride{d - 1}" if d else f"{name}.nbytes")
    array = context.make_array(aryty)(context, builder)
    named(array._getpointer(), f"{name}.struct")
    context.populate_array(
        array,
        data=builder.bitcast(data, array.data.type, name=f"{name}.data"),
        shape=named_aggregate(cgutils.pack_array(builder, shape, I64), f"{name}.shape"),
        strides=named_aggregate(cgutils.pack_array(builder, strides, I64), f"{name}.strides"),
        itemsize=I64(itemsize),
        meminfo=None,
    )
    return named(array._getvalue(), name)


def _arguments(context, builder, x, n_dim: int, user_data, shared: list[SharedSlot], argument_types) -> list:
    """The callee's arguments: ``x`` and each shared array, built on the stack over nutpie's memory; a shared
    0-d array the callee takes as a native scalar (``argument_types``) is read instead."""
    x_array = _array(context, builder, types.Array(types.float64, 1, "C"), x, [I64(n_dim)], "x.array")
    arguments = [x_array]
    for k, (slot, argument_type) in enumerate(zip(shared, argument_types[1:], strict=True)):
        name = f"shared{k}"
        address = _field(builder, user_data, slot.data_offset, I64, f"{name}.address")
        data = builder.inttoptr(address, VOIDPTR, name=f"{name}.bytes")
        if isinstance(argument_type, types.Array):
            shape = [
                _field(builder, user_data, slot.shape_offset + 8 * d, I64, f"{name}.shape{d}") for d in range(slot.ndim)
            ]
            arguments.append(_array(context, builder, slot.numba_type, data, shape, name))
            continue
        dtype = slot.numba_type.dtype
        pointer = builder.bitcast(data, context.get_data_type(dtype).as_pointer(), name=f"{name}.ptr")
        value = builder.load(pointer, name=name)
        arguments.append(named(context.cast(builder, value, dtype, argument_type), f"{name}.cast"))
    return arguments


def _is_finite(builder, value) -> ir.Value:
    """An i1 named ``<value's name>.finite``: is the double ``value`` finite (``|value| < inf``)?"""
    fabs = builder.module.declare_intrinsic("llvm.fabs", [DOUBLE])
    magnitude = builder.call(fabs, [value], name=f"{value.name}.abs")
    return builder.fcmp_ordered("<", magnitude, DOUBLE(np.inf), name=f"{value.name}.finite")


def _call_graph(context, builder, callee, inputs: tuple, on_error: int):
    """The callee's outputs on ``inputs`` (`_arguments`' but the argument types), or a return of ``on_error``
    when it raised."""
    fndesc = callee.fndesc
    arguments = _arguments(context, builder, *inputs, fndesc.argtypes)
    address = callee.library.get_pointer_to_function(fndesc.llvm_func_name)
    callee_type = function_type(context, fndesc.restype, fndesc.argtypes).as_pointer()
    pointer = builder.inttoptr(I64(address), callee_type, name="graph")
    returned, excinfo = return_slot(context, builder, fndesc.restype), excinfo_slot(builder)
    flat = context.get_arg_packer(fndesc.argtypes).as_arguments(builder, arguments)
    code = builder.call(pointer, [returned, excinfo, *flat], name="graph.code")
    loaded = builder.load(excinfo, name="graph.excinfo")
    status = named_status(context.call_conv._get_return_status(builder, code, loaded), "graph")
    with builder.if_then(status.is_error, likely=False):
        builder.ret(I64(on_error))
    return context.get_returned_value(builder, fndesc.restype, builder.load(returned, name="graph.returned"))


def _copy_out(context, builder, aryty, value, out, count: int, release, on_error: int, finite_flag=None) -> None:
    """Copy the ``count`` elements of the float64 vector ``value`` into ``out``, or, if it has another length,
    ``release()`` the outputs and return ``on_error``; with ``finite_flag`` (an i1 alloca), clear it where an
    element is not finite."""
    name = value.name
    array = context.make_array(aryty)(context, builder, value=value)
    named(array._getpointer(), f"{name}.struct")
    length = unpack_named(builder, named(array.shape, f"{name}.shape"), 1, f"{name}.shape")[0]
    with builder.if_then(builder.icmp_signed("!=", length, I64(count), name=f"{name}.wrong_length"), likely=False):
        release()
        builder.ret(I64(on_error))
    stride = unpack_named(builder, named(array.strides, f"{name}.strides"), 1, f"{name}.stride")[0]
    base = builder.ptrtoint(named(array.data, f"{name}.data"), I64, name=f"{name}.base")
    with cgutils.for_range(builder, I64(count)) as loop:
        offset = builder.mul(loop.index, stride, name="element.offset")
        address = builder.add(base, offset, name="element.address")
        element = builder.load(builder.inttoptr(address, DOUBLE.as_pointer(), name="element.ptr"), name="element")
        builder.store(element, builder.gep(out, [loop.index], name="out.ptr"))
        if finite_flag is not None:
            finite = builder.and_(
                builder.load(finite_flag, name="finite.load"), _is_finite(builder, element), name="finite.next"
            )
            builder.store(finite, finite_flag)


def _scalar(context, builder, ty, value) -> ir.Value:
    """The float64 ``value``, or the item of the 0-d array ``value``, named ``<value's name>.item``."""
    if isinstance(ty, types.Array):
        array = context.make_array(ty)(context, builder, value=value)
        named(array._getpointer(), f"{value.name}.struct")
        return builder.load(named(array.data, f"{value.name}.data"), name=f"{value.name}.item")
    return value


def _named_arguments(function: ir.Function, names: tuple) -> list:
    """The arguments of ``function``, named ``names``."""
    for argument, name in zip(function.args, names, strict=True):
        argument.name = name
    return list(function.args)


def _check_vector(ty, what: str) -> None:
    if not (isinstance(ty, types.Array) and ty.ndim == 1 and ty.dtype == types.float64):
        raise TypeError(f"nutpie's {what} must be a float64 vector, the graph's is {ty}")


@global_compiler_lock
def _finish(context, module, name: str, callee) -> NutpieEntry:
    library = context.codegen().create_library(name)
    library.add_ir_module(module)
    library.add_linking_library(rtsys.library)
    library.finalize()
    return NutpieEntry(library.get_pointer_to_function(name), library, callee)


def logp_entry(callee, n_dim: int, shared: list[SharedSlot]) -> NutpieEntry:
    """nutpie's logp entry point over ``callee`` (the compiled overload of a numba function taking ``x`` and the
    ``shared`` arrays, returning the log density, a float64 or 0-d float64 array, and the gradient)."""
    context = _context()
    restype = callee.fndesc.restype
    if not (isinstance(restype, types.BaseTuple) and len(restype) == 2):
        raise TypeError(f"nutpie's logp graph must return the log density and the gradient, not {restype}")
    logp_type, grad_type = restype
    if not (
        logp_type == types.float64
        or (isinstance(logp_type, types.Array) and logp_type.ndim == 0 and logp_type.dtype == types.float64)
    ):
        raise TypeError(f"nutpie's log density must be a float64, the graph's is {logp_type}")
    _check_vector(grad_type, "gradient")
    module = context.create_module("nutpie_logp")
    function = ir.Function(
        module,
        ir.FunctionType(I64, [I64, DOUBLE.as_pointer(), DOUBLE.as_pointer(), DOUBLE.as_pointer(), VOIDPTR]),
        "nutpie_logp",
    )
    dim, x, grad, logp, user_data = _named_arguments(function, ("dim", "x", "grad_out", "logp_out", "user_data"))
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    with builder.if_then(builder.icmp_unsigned("!=", dim, I64(n_dim), name="wrong_dim"), likely=False):
        builder.ret(I64(-1))
    outputs = _call_graph(context, builder, callee, (x, n_dim, user_data, shared), 1)
    logp_value, grad_value = (builder.extract_value(outputs, k, name=name) for k, name in enumerate(("logp", "grad")))
    value = _scalar(context, builder, logp_type, logp_value)
    builder.store(value, logp)
    finite = alloca_once_value(builder, ir.IntType(1)(1), "finite")

    def release():
        context.nrt.decref(builder, restype, outputs)

    _copy_out(context, builder, grad_type, grad_value, grad, n_dim, release, 1, finite)
    release()
    with builder.if_then(builder.not_(builder.load(finite, name="finite.load"), name="grad.not_finite"), likely=False):
        builder.ret(I64(3))
    with builder.if_then(builder.not_(_is_finite(builder, value), name="logp.not_finite"), likely=False):
        builder.ret(I64(4))
    builder.ret(I64(0))
    return _finish(context, module, "nutpie_logp", callee)


def expand_entry(callee, n_dim: int, n_expanded: int, shared: list[SharedSlot]) -> NutpieEntry:
    """nutpie's expand entry point over ``callee`` (the compiled overload of a numba function taking ``x`` and
    the ``shared`` arrays, returning a 1-tuple of the float64 vector of ``n_expanded`` values to store)."""
    context = _context()
    restype = callee.fndesc.restype
    if not (isinstance(restype, types.BaseTuple) and len(restype) == 1):
        raise TypeError(f"nutpie's expand graph must return one vector, not {restype}")
    _check_vector(restype[0], "expanded values")
    module = context.create_module("nutpie_expand")
    function = ir.Function(
        module, ir.FunctionType(I64, [I64, I64, DOUBLE.as_pointer(), DOUBLE.as_pointer(), VOIDPTR]), "nutpie_expand"
    )
    dim, expanded, x, out, user_data = _named_arguments(function, ("dim", "n_expanded", "x", "out", "user_data"))
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    wrong = builder.or_(
        builder.icmp_unsigned("!=", dim, I64(n_dim), name="wrong_dim"),
        builder.icmp_unsigned("!=", expanded, I64(n_expanded), name="wrong_expanded"),
        name="wrong",
    )
    with builder.if_then(wrong, likely=False):
        builder.ret(I64(-1))
    outputs = _call_graph(context, builder, callee, (x, n_dim, user_data, shared), -2)

    def release():
        context.nrt.decref(builder, restype, outputs)

    expanded_value = builder.extract_value(outputs, 0, name="expanded")
    _copy_out(context, builder, restype[0], expanded_value, out, n_expanded, release, -2)
    release()
    builder.ret(I64(0))
    return _finish(context, module, "nutpie_expand", callee)
