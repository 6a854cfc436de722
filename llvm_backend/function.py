"""The compiled function of the LLVM mode: PyTensor's `Function`, safe to call from several threads, whose common
call skips PyTensor's bookkeeping and keeps its checks.

PyTensor's ``Function.__call__`` writes its arguments into the input storage cells it shares with the linker's
thunk, calls the thunk, which reads them back, and then empties the cells. Two threads calling one function
interleave those steps wherever CPython switches threads: one thread's call reads the other's arguments (a
wrong value, silently) or cells the other has emptied already. `LLVMFunction` makes each call through the cells one
critical section of the function, so a call sees only its own arguments (a call passing its arguments to the graph
function itself uses no cell and takes no lock). It costs no parallelism: numba's compiled code holds the GIL, so
calls from Python threads never ran at once. The lock is re-entrant: a call made from inside the function's own call
(an op's ``perform`` calling it) goes on as stock's would instead of deadlocking.

What ``Function.__call__`` does around the compiled code (each argument through ``_validate_inputs``' loops and
``TensorType.filter``, the ``provided`` counts, the outputs written into their cells by the thunk and read back)
can cost more than the compiled code of a small model's log-density and gradient, which PyMC's NUTS calls at
each leapfrog step. So calling an `LLVMFunction` calls its lean call, code written per function
(`lean_call_source`): for as many positional arguments as the function has explicit inputs, it keeps each
argument that ``filter`` would return unchanged (an aligned `numpy.ndarray` of the input's dtype, ndim and static
shape) and filters any other with that very ``filter``, unless ``trust_input`` is set; then it passes them to the
graph function as the thunk would, where the call shares no state with other calls (`calls_the_graph_directly`),
and otherwise, holding the lock, writes them into the input cells, calls the thunk's own ``call_graph`` (which
reads the cells: packs, native scalars and all, so a call computes, and fails, as the thunk's does), stores the
updates and empties the cells as ``Function.__call__`` does; it returns the outputs. PyTensor's call makes every
other call: keyword arguments, fewer or more arguments (inputs left to their defaults, or PyTensor's error), a
profiled function, ``vm.allow_gc`` off (PyTensor then leaves values in the cells), inputs that may alias
(``In(borrow=True)``, whose arguments PyTensor copies) when checked, or an argument ``filter`` rejects (PyTensor
raises the error again, with its note).

Every `Mode` whose linker is ours makes them, a plain ``Mode(linker="llvm")`` and the one PyMC's ``compile``
rebuilds on our linker too: ``Mode.function_maker`` is `function_maker` (``llvm_functions`` in
``llvm_backend.adapters.pytensor``).

``fn.vm.jit_fn`` shares no state between calls (it packs its arguments on its own stack) and needs no lock:
nutpie's chains call it from their own threads. The lean call does not call it: ``jit_fn``'s entry calls the
graph function by address, which no cache keeps, so it is compiled in every process, where ``call_graph`` runs
the cached graph function.
"""

import threading
from functools import partial
from types import MethodType

import numpy as np
from numba import typeof
from numba.core.typing.typeof import Purpose
from pytensor.compile.executor import Function, _pickle_Function
from pytensor.compile.maker import FunctionMaker
from pytensor.link.utils import raise_with_op
from pytensor.tensor.type import TensorType

from llvm_backend.codegen import NATIVE_SCALARS
from llvm_backend.collector import paced_collections
from llvm_backend.linker import LLVMLinker
from llvm_backend_intrinsics.argpack import ArrayPack

__all__ = [
    "LLVMFunction",
    "LLVMFunctionMaker",
    "compiled_entry",
    "function_maker",
    "lean_call_source",
    "make_lean_call",
    "paced_first_call",
]

NOT_GIVEN = object()
"""The default of each parameter of a lean call: the argument was not given."""
REJECTED = object()
"""What `filtered` returns for an argument its input type's ``filter`` rejects."""


def filtered(container, value):
    """``value`` through its input type's ``filter``, as ``_validate_inputs`` stores it in ``container``, or
    `REJECTED` when ``filter`` raises (PyTensor's call then raises it again, with its note)."""
    try:
        return container.type.filter(value, strict=container.strict, allow_downcast=container.allow_downcast)
    except Exception:
        return REJECTED


def pytensor_call(fn, *args, **kwargs):
    """PyTensor's call of ``fn``, holding its lock: a profiled function's lean call."""
    with fn.call_lock:
        return Function.__call__(fn, *args, **kwargs)


def given_to_pytensor(fn, given: tuple, more: tuple, kwargs: dict):
    """`pytensor_call` of the arguments a lean call was given: those of its parameters that are not `NOT_GIVEN`,
    then ``more``, and ``kwargs``."""
    return pytensor_call(fn, *(arg for arg in given if arg is not NOT_GIVEN), *more, **kwargs)


def raise_as_thunk(fgraph, thunk):
    """Re-raise the exception being handled as the linker's thunk does: with ``raise_with_op``'s notes on the
    graph's first output node."""
    output_nodes = [out.owner for out in fgraph.outputs if out.owner is not None][:1]
    raise_with_op(fgraph, output_nodes[0], thunk)


def unchanged_by_filter(name: str, k: int, input_type) -> str:
    """The test that argument ``name`` of input ``k`` is what ``input_type.filter`` returns unchanged: an aligned
    `numpy.ndarray` of the type's dtype (the very dtype object, so not byte-swapped), ndim and static shape
    (``dtype{k}`` in the lean call's globals); ``False`` for an input that is not a tensor."""
    if not isinstance(input_type, TensorType):
        return "False"
    shape = input_type.shape
    fits = [f"{name}.ndim == {len(shape)}"]
    # len() is the first axis's length, without the tuple .shape makes
    fits += [f"len({name}) == {shape[0]}"] if shape and shape[0] is not None else []
    fits += [f"{name}.shape[{axis}] == {length}" for axis, length in enumerate(shape) if axis and length is not None]
    return " and ".join([f"type({name}) is ndarray", f"{name}.dtype is dtype{k}", *fits, f"{name}.flags.aligned"])


def _tuple_display(names: list[str]) -> str:
    return f"({names[0]},)" if len(names) == 1 else f"({', '.join(names)})"


def _checked_arguments(input_types: list, fall_back: str, entry: bool) -> list[str]:
    """The lines of a lean call that filter each argument ``a{k}`` unless `unchanged_by_filter`, into ``v{k}``.
    With ``entry``, the call is ``entry`` (`compiled_entry`) unless an argument is not also a C-contiguous,
    writeable array (``flags.carray``: aligned, writeable and C-contiguous, the very numba type the entry takes),
    when it is ``graph_fn``, numba's dispatcher, and the argument is filtered unless unchanged by it."""
    lines = ["    call = entry"] if entry else []
    for k, input_type in enumerate(input_types):
        unchanged = unchanged_by_filter(f"a{k}", k, input_type)
        filtering = [f"if not ({unchanged}):", f"    v{k} = filtered(container{k}, a{k})", f"    if v{k} is REJECTED:"]
        filtering += [f"        {fall_back}"]
        if entry:
            carray = unchanged.replace(f"a{k}.flags.aligned", f"a{k}.flags.carray")
            lines += [f"    if not ({carray}):", "        call = graph_fn", *(f"        {line}" for line in filtering)]
        else:
            lines += [f"    {line}" for line in filtering]
    return lines


def _returned(outputs: list[str], fn: Function) -> str:
    """What the lean call of ``fn`` returns of its ``outputs`` (the returned ones), as ``Function.__call__`` does for
    ``fn``'s ``unpack_single`` and ``return_none``."""
    if fn.unpack_single:
        return outputs[0] if outputs else "[][0]"
    return "None" if fn.return_none else f"[{', '.join(outputs)}]"


def lean_call_source(fn: Function, entry: bool = False) -> str:
    """The source of ``lean_call(fn, a0, ..., /, *more, **kwargs)``, ``fn``'s call on one argument per explicit
    input, returning what ``Function.__call__`` returns; written for ``fn``'s current ``trust_input``,
    ``unpack_single`` and ``return_none`` (`LLVMFunction` writes it again when one is set), and with ``entry``
    for the graph function's `compiled_entry`.
    `given_to_pytensor` makes the call instead when there are fewer or more arguments or keywords, ``fn``'s vm's
    ``allow_gc`` is off, or an argument is one ``filter`` rejects (or any checked call of inputs that may alias,
    which PyTensor copies). Unless ``fn.trust_input``, each argument is kept when `unchanged_by_filter`, else
    filtered. Where `calls_the_graph_directly`, the arguments then go to the graph function as the thunk passes them
    (`graph_arguments`), to its `compiled_entry` when there is one and every argument is kept and a C-contiguous,
    writeable array, else to numba's dispatcher of it; else, holding the lock, they go into their cells, the thunk's
    ``call_graph`` runs, each update's output goes into its input's cell, and the cells of the required inputs are
    emptied. Written out, so each argument costs a few expressions and no Python call of ours. A vector and a
    scalar, the graph function taking the scalar as a float::

        def lean_call(fn, a0=NOT_GIVEN, a1=NOT_GIVEN, /, *more, **kwargs):
            if more or kwargs or a1 is NOT_GIVEN or not vm.allow_gc:
                return given_to_pytensor(fn, (a0, a1), more, kwargs)
            v0 = a0
            v1 = a1
            if not (type(a0) is ndarray and a0.dtype is dtype0 and a0.ndim == 1 and a0.flags.aligned):
                v0 = filtered(container0, a0)
                if v0 is REJECTED:
                    return given_to_pytensor(fn, (a0, a1), more, kwargs)
            if not (type(a1) is ndarray and a1.dtype is dtype1 and a1.ndim == 0 and a1.flags.aligned):
                v1 = filtered(container1, a1)
                if v1 is REJECTED:
                    return given_to_pytensor(fn, (a0, a1), more, kwargs)
            try:
                o0, o1 = graph_fn(v0, float64(v1))
            except Exception:
                cell0[0] = v0
                cell1[0] = v1
                raise_as_thunk()
            return [o0, o1]
    """
    containers = fn.input_storage
    names = [f"a{k}" for k, container in enumerate(containers) if not container.implicit]
    outputs = [f"o{j}" for j in range(len(fn.output_storage))]
    fall_back = f"return given_to_pytensor(fn, {_tuple_display(names)}, more, kwargs)"
    parameters = ["fn", *(f"{name}=NOT_GIVEN" for name in names), "/", "*more", "**kwargs"]
    refused = ["more", "kwargs", *(f"{name} is NOT_GIVEN" for name in names[-1:]), "not vm.allow_gc"]
    lines = [f"def lean_call({', '.join(parameters)}):", f"    if {' or '.join(refused)}:", f"        {fall_back}"]
    lines += [f"    v{k} = {name}" for k, name in enumerate(names)]
    if names and not fn.trust_input:
        types = [container.type for container in containers[: len(names)]]
        aliased = fn._potential_aliased_input_groups
        lines += [f"    {fall_back}"] if aliased else _checked_arguments(types, fall_back, entry)
    returned = f"    return {_returned(outputs[: fn._n_returned_outputs], fn)}"
    if calls_the_graph_directly(fn):
        lines += _direct_call_lines(fn, len(names), outputs, entry)
    else:
        lines += _locked_call_lines(fn, len(names), outputs)
    lines.append(returned)
    return "\n".join(lines) + "\n"


def _unpacked(outputs: list[str]) -> str:
    return "(o0,)" if len(outputs) == 1 else ", ".join(outputs)


def _direct_call_lines(fn: Function, n_arguments: int, outputs: list[str], entry: bool) -> list[str]:
    """The lines of a lean call that pass its ``n_arguments`` checked values ``v{k}`` to the graph function as the
    thunk does (`graph_arguments`): to ``call`` (the `compiled_entry` or numba's dispatcher) with ``entry``, else to
    ``graph_fn``; a call that fails leaves its arguments in the cells, as PyTensor's does, and raises as the thunk
    does. With ``entry``, the vector and the scalar of `lean_call_source`'s example::

        def lean_call(fn, a0=NOT_GIVEN, a1=NOT_GIVEN, /, *more, **kwargs):
            if more or kwargs or a1 is NOT_GIVEN or not vm.allow_gc:
                return given_to_pytensor(fn, (a0, a1), more, kwargs)
            v0 = a0
            v1 = a1
            call = entry
            if not (type(a0) is ndarray and a0.dtype is dtype0 and a0.ndim == 1 and a0.flags.carray):
                call = graph_fn
                if not (type(a0) is ndarray and a0.dtype is dtype0 and a0.ndim == 1 and a0.flags.aligned):
                    v0 = filtered(container0, a0)
                    if v0 is REJECTED:
                        return given_to_pytensor(fn, (a0, a1), more, kwargs)
            if not (type(a1) is ndarray and a1.dtype is dtype1 and a1.ndim == 0 and a1.flags.carray):
                call = graph_fn
                if not (type(a1) is ndarray and a1.dtype is dtype1 and a1.ndim == 0 and a1.flags.aligned):
                    v1 = filtered(container1, a1)
                    if v1 is REJECTED:
                        return given_to_pytensor(fn, (a0, a1), more, kwargs)
            try:
                o0, o1 = call(v0, float64(v1))
            except Exception:
                cell0[0] = v0
                cell1[0] = v1
                raise_as_thunk()
            return [o0, o1]
    """
    called = f"{'call' if entry else 'graph_fn'}({', '.join(graph_arguments(fn, n_arguments))})"
    called = f"{_unpacked(outputs)} = {called}" if outputs else called
    kept = [f"        cell{k}[0] = v{k}" for k in range(n_arguments)]
    return ["    try:", f"        {called}", "    except Exception:", *kept, "        raise_as_thunk()"]


def _locked_call_lines(fn: Function, n_arguments: int, outputs: list[str]) -> list[str]:
    """The lines of a lean call that, holding ``fn``'s lock, write its ``n_arguments`` checked values into their
    cells, run the thunk's ``call_graph``, write each update's output into its input's cell and empty the cells of
    the required inputs. A vector and a shared variable updated by the second of two outputs::

        def lean_call(fn, a0=NOT_GIVEN, /, *more, **kwargs):
            if more or kwargs or a0 is NOT_GIVEN or not vm.allow_gc:
                return given_to_pytensor(fn, (a0,), more, kwargs)
            v0 = a0
            if not (type(a0) is ndarray and a0.dtype is dtype0 and a0.ndim == 1 and a0.flags.aligned):
                v0 = filtered(container0, a0)
                if v0 is REJECTED:
                    return given_to_pytensor(fn, (a0,), more, kwargs)
            acquire()
            try:
                cell0[0] = v0
                try:
                    o0, o1 = call_graph()
                except Exception:
                    raise_as_thunk()
                cell1[0] = o1
                cell0[0] = None
            finally:
                release()
            return o0
    """
    containers = fn.input_storage
    lines = ["    acquire()", "    try:", *(f"        cell{k}[0] = v{k}" for k in range(n_arguments))]
    called = f"{_unpacked(outputs)} = call_graph()" if outputs else "call_graph()"
    lines += ["        try:", f"            {called}", "        except Exception:", "            raise_as_thunk()"]
    lines += [f"        cell{containers.index(container)}[0] = o{j}" for j, container in fn._update_input_storage]
    lines += [f"        cell{k}[0] = None" for k, container in enumerate(containers) if container.required]
    return [*lines, "    finally:", "        release()"]


def calls_the_graph_directly(fn: Function) -> bool:
    """Whether ``fn``'s lean call passes its arguments to the graph function itself, neither through the input
    cells nor under the lock: when the call shares no state with other calls, as for a function with no updates
    (whose read, compute and write of a shared value must be one critical section), no explicit input with a
    default (whose cell keeps a value given, for later calls) and no scalar pack (whose one object, passed at
    every call, holds the input cells)."""
    explicit = [container for container in fn.input_storage if not container.implicit]
    return (
        not fn._update_input_storage
        and all(container.required for container in explicit)
        and not any(pack.scalar for pack in fn.vm.graph_source.packs)
    )


def graph_arguments(fn: Function, n_explicit: int) -> list[str]:
    """The graph function's arguments in the lean call, as the thunk's ``call_graph`` passes them but from the
    checked arguments ``v{k}`` of the explicit inputs: an implicit input's (a shared variable's) cell read, a 0-d
    input taken as a native scalar converted (``float64(v0)``: `NATIVE_SCALARS` in the call's globals), an array
    pack built of its items (``pack{p}`` its `PackParam`), the constant parameters (``constant{c}``)."""
    graph = fn.vm.graph_source
    sources = [f"v{k}" if k < n_explicit else f"cell{k}[0]" for k in range(len(fn.input_storage))]
    sources += [f"constant{c}" for c in range(len(graph.constant_params))]
    packs = {id(pack): p for p, pack in enumerate(graph.packs)}

    def pack(spec, items):
        p = packs[id(spec)]
        return f"ArrayPack(pack{p}.numba_type, pack{p}.dtype, [{', '.join(items)}])"

    return graph.arguments(sources, pack=pack, scalar=lambda dtype, source: f"{dtype}({source})")


def compiled_entry(fn: Function, namespace: dict):
    """The CPython entry numba compiled for ``fn``'s graph function on canonical arguments, which the lean call
    calls without numba's dispatcher: explicit inputs only, each a C-contiguous, writeable, aligned array of its
    dtype (what the lean call checks), passed as the lean call passes them (`graph_arguments`, evaluated in
    ``namespace`` on such arrays), their numba types the signature of a compiled overload. None when there is none
    (the graph function is compiled at the first call; a graph function with listed outputs is a wrapper of one,
    not numba's dispatcher), or when the lean call does not call the graph function directly, checks no argument,
    or passes a cell's value."""
    containers = fn.input_storage
    if (
        fn.trust_input
        or not containers
        or not calls_the_graph_directly(fn)
        or fn._potential_aliased_input_groups
        or not all(not c.implicit and isinstance(c.type, TensorType) for c in containers)
    ):
        return None
    examples = {
        f"v{k}": np.zeros([1 if n is None else n for n in c.type.shape], dtype=c.type.numpy_dtype)
        for k, c in enumerate(containers)
    }
    arguments = eval(f"({', '.join(graph_arguments(fn, len(containers)))},)", namespace | examples)
    signature = tuple(typeof(argument, Purpose.argument) for argument in arguments)
    compiled = getattr(fn.vm.graph_fn, "overloads", {}).get(signature)
    return None if compiled is None else compiled.entry_point


def make_lean_call(fn: Function):
    """``fn``'s lean call (`lean_call_source`), bound to ``fn``, calling its `compiled_entry` if there is one; for
    a profiled function, `pytensor_call` (the profile times PyTensor's call)."""
    if fn.profile:
        return MethodType(pytensor_call, fn)
    lock = fn.call_lock
    namespace = {
        "ndarray": np.ndarray,
        "NOT_GIVEN": NOT_GIVEN,
        "REJECTED": REJECTED,
        "filtered": filtered,
        "given_to_pytensor": given_to_pytensor,
        "vm": fn.vm,
        "call_graph": fn.vm.call_graph,
        "graph_fn": fn.vm.graph_fn,
        "ArrayPack": ArrayPack,
        **NATIVE_SCALARS,
        **{f"pack{p}": pack for p, pack in enumerate(fn.vm.graph_source.packs)},
        **{f"constant{c}": value for c, (_, value) in enumerate(fn.vm.graph_source.constant_params)},
        "acquire": lock.acquire,
        "release": lock.release,
        "raise_as_thunk": partial(raise_as_thunk, fn.maker.fgraph, fn.vm),
    }
    for k, container in enumerate(fn.input_storage):
        namespace |= {f"container{k}": container, f"cell{k}": container.storage}
        if isinstance(container.type, TensorType):
            namespace[f"dtype{k}"] = container.type.numpy_dtype
    namespace["entry"] = compiled_entry(fn, namespace)
    exec(compile(lean_call_source(fn, namespace["entry"] is not None), "<llvm_backend lean_call>", "exec"), namespace)
    return MethodType(namespace["lean_call"], fn)


def paced_first_call(lean_call: MethodType) -> MethodType:
    """``lean_call``, bound to its function ``fn``, run with the garbage collector paced (`paced_collections`) until
    a call of it returns: the first call is where numba compiles the graph function (typing, lowering and LLVM
    of the whole graph, building objects by the hundred thousand). Once one has returned, ``fn``'s lean call is
    written again (`make_lean_call`: now with the graph function's `compiled_entry`), and calls pay nothing for
    the pacing (unless the lean call was written again meanwhile); one made through this wrapper, kept from
    before, pays a Python call and runs ``lean_call``."""
    paced = True

    def first_call(fn, *args, **kwargs):
        nonlocal paced
        if not paced:
            return lean_call(*args, **kwargs)
        with paced_collections():
            result = lean_call(*args, **kwargs)
        paced = False
        if getattr(fn.lean_call, "__func__", None) is first_call:
            fn.lean_call = make_lean_call(fn)
        return result

    return MethodType(first_call, lean_call.__self__)


def _writes_the_lean_call(name: str) -> property:
    """`Function`'s attribute ``name``, which the lean call is written for: setting it to another value writes the
    lean call again (once the function has one), so that a call reads none of them."""
    slot = vars(Function)[name]

    def set_and_write(fn, value):
        rewrite = "_lean_call" in vars(fn) and slot.__get__(fn) is not value
        slot.__set__(fn, value)
        if rewrite:
            fn.lean_call = paced_first_call(make_lean_call(fn))

    return property(slot.__get__, set_and_write, doc=f"``Function.{name}``; setting it writes the lean call again.")


class LLVMFunction(Function):
    """A `Function` whose calls hold a lock of its own: the thread that sets its inputs is the one whose
    call reads them. A call runs its lean call (`make_lean_call`), which hands what it does not take to PyTensor's;
    until one has returned, with the garbage collector paced (`paced_first_call`).

    Each is made of a class of its own: a subclass of its maker's class, of the same name, whose ``__call__`` is
    the function's lean call (`lean_call`), so that calling the function calls it with nothing in between (no
    property returning it, no method calling it). It pickles as PyTensor's `Function` does (``__reduce__``:
    PyTensor's own pickling, which copyreg keys by the exact class)."""

    trust_input = _writes_the_lean_call("trust_input")
    profile = _writes_the_lean_call("profile")
    unpack_single = _writes_the_lean_call("unpack_single")
    return_none = _writes_the_lean_call("return_none")

    def __init__(self, *args, **kwargs):
        self.call_lock = threading.RLock()
        super().__init__(*args, **kwargs)
        made_as = type(self)
        self.__class__ = type(made_as.__name__, (made_as,), {"__module__": made_as.__module__})
        self.lean_call = paced_first_call(make_lean_call(self))

    @property
    def lean_call(self) -> MethodType:
        """The function's lean call, bound to it; setting it makes it the ``__call__`` of the function's class."""
        return self._lean_call

    @lean_call.setter
    def lean_call(self, call: MethodType) -> None:
        self._lean_call = call
        type(self).__call__ = call.__func__

    def __reduce__(self):
        return _pickle_Function(self)


class LLVMFunctionMaker(FunctionMaker):
    """PyTensor's `FunctionMaker`, making `LLVMFunction`\\ s unless told otherwise (``Function.copy`` passes
    the class its maker was given, not the function's own class). Its rewriting (in ``__init__``) and its linking
    (``create``) run with the garbage collector paced (`paced_collections`)."""

    def __init__(self, *args, function_class=LLVMFunction, **kwargs):
        with paced_collections():
            super().__init__(*args, function_class=function_class, **kwargs)

    def create(self, *args, **kwargs):
        with paced_collections():
            return super().create(*args, **kwargs)


def function_maker(mode):
    """``Mode.function_maker`` while the package is imported: `LLVMFunctionMaker` for a mode whose linker is an
    `LLVMLinker`, PyTensor's `FunctionMaker` for any other (a subclass's own, such as DebugMode's, still wins)."""
    return LLVMFunctionMaker if isinstance(mode.linker, LLVMLinker) else FunctionMaker
