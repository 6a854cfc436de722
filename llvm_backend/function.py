"""The compiled function of the LLVM mode: PyTensor's `Function`, safe to call from several threads, whose common
call skips PyTensor's bookkeeping and keeps its checks.

PyTensor's ``Function.__call__`` writes its arguments into the input storage cells it shares with the linker's
thunk, calls the thunk, which reads them back, and then empties the cells. Two threads calling one function
interleave those steps wherever CPython switches threads: one thread's call reads the other's arguments (a
wrong value, silently) or cells the other has emptied already. A 60-scalar graph called from 4 threads got
about one of each per 4,000 calls. `LLVMFunction` makes each call one critical section of the function, so a
call sees only its own arguments. It costs no parallelism: numba's compiled code holds the GIL, so calls from
Python threads never ran at once. The lock is re-entrant: a call made from inside the function's own call (an
op's ``perform`` calling it) goes on as stock's would instead of deadlocking.

What ``Function.__call__`` does around the compiled code (each argument through ``_validate_inputs``' loops and
``TensorType.filter``, the ``provided`` counts, the outputs written into their cells by the thunk and read back)
cost 2.6-3.4 µs a call of PyMC's log-density and gradient, more than their ``jit_fn``; PyMC's NUTS calls it at
each leapfrog step. So calling an `LLVMFunction` calls its lean call, code written per function
(`lean_call_source`): for as many positional arguments as the function has explicit inputs, it keeps each
argument that ``filter`` would return unchanged (an aligned `numpy.ndarray` of the input's dtype, ndim and static
shape) and filters any other with that very ``filter``, unless ``trust_input`` is set; then, holding the lock, it
writes them into the input cells, calls the thunk's own ``call_graph`` (which reads the cells: packs, native
scalars and all, so a call computes, and fails, as the thunk's does), stores the updates and empties the cells as
``Function.__call__`` does, and returns the outputs. PyTensor's call makes every other call: keyword arguments,
fewer or more arguments (inputs left to their defaults, or PyTensor's error), a profiled function, ``vm.allow_gc``
off (PyTensor then leaves values in the cells), inputs that may alias (``In(borrow=True)``, whose arguments
PyTensor copies) when checked, or an argument ``filter`` rejects (PyTensor raises the error again, with its note).

Every `Mode` whose linker is ours makes them, a plain ``Mode(linker="llvm")`` and the one PyMC's ``compile``
rebuilds on our linker too: ``Mode.function_maker`` is `function_maker` (``llvm_functions`` in
``llvm_backend.process``).

``fn.vm.jit_fn`` shares no state between calls (it packs its arguments on its own stack) and needs no lock:
nutpie's chains call it from their own threads. The lean call does not call it: ``jit_fn``'s entry calls the
graph function by address, which no cache keeps, so it is compiled in every process, where ``call_graph`` runs
the cached graph function.
"""

import threading
from functools import partial
from operator import attrgetter
from types import MethodType

import numpy as np
from pytensor.compile.executor import Function
from pytensor.compile.maker import FunctionMaker
from pytensor.link.utils import raise_with_op
from pytensor.tensor.type import TensorType

from llvm_backend.linker import LLVMLinker

__all__ = ["LLVMFunction", "LLVMFunctionMaker", "function_maker", "lean_call_source", "make_lean_call"]

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


def pytensor_call(fn, given: tuple, more: tuple, kwargs: dict):
    """PyTensor's call of ``fn``, holding its lock, on the arguments a lean call was given: those of its
    parameters that are not `NOT_GIVEN`, then ``more``, and ``kwargs``."""
    args = [*(arg for arg in given if arg is not NOT_GIVEN), *more]
    with fn.call_lock:
        return Function.__call__(fn, *args, **kwargs)


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


def _checked_arguments(input_types: list, fall_back: str) -> list[str]:
    """The lines of a lean call that filter each argument ``a{k}`` unless `unchanged_by_filter`, into ``v{k}``."""
    lines = []
    for k, input_type in enumerate(input_types):
        lines += [f"        if not ({unchanged_by_filter(f'a{k}', k, input_type)}):"]
        lines += [f"            v{k} = filtered(container{k}, a{k})", f"            if v{k} is REJECTED:"]
        lines += [f"                {fall_back}"]
    return lines


def lean_call_source(
    input_types: list, checks: bool, cleared: list[int], updates: list[tuple[int, int]], n_outputs: int, n_returned: int
) -> str:
    """The source of ``lean_call(fn, a0, ..., /, *more, **kwargs)``, ``fn``'s call on one argument per type in
    ``input_types`` (each input's but the implicit ones'), returning what ``Function.__call__`` returns.
    `pytensor_call` makes the call instead when there are fewer or more arguments or keywords, ``fn`` is
    profiled, its vm's ``allow_gc`` is off, or an argument is one ``filter`` rejects (or any checked call when
    not ``checks``: inputs PyTensor may copy). Unless ``fn.trust_input``, each argument is kept when
    `unchanged_by_filter`, else filtered. Then, holding the lock, the arguments go into their cells, the thunk's
    ``call_graph`` runs, output ``j`` goes into cell ``k`` for each update ``(j, k)``, and the cells of
    ``cleared`` (the required inputs) are emptied. Written out, so each argument costs a few expressions and no
    Python call of ours. A vector and a shared variable updated by the second of two outputs::

        def lean_call(fn, a0=NOT_GIVEN, /, *more, **kwargs):
            if more or kwargs or a0 is NOT_GIVEN or fn.profile or not vm.allow_gc:
                return pytensor_call(fn, (a0,), more, kwargs)
            v0 = a0
            if not fn.trust_input:
                if not (type(a0) is ndarray and a0.dtype is dtype0 and a0.ndim == 1 and a0.flags.aligned):
                    v0 = filtered(container0, a0)
                    if v0 is REJECTED:
                        return pytensor_call(fn, (a0,), more, kwargs)
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
            returned = [o0]
            return returned[0] if fn.unpack_single else None if fn.return_none else returned
    """
    names = [f"a{k}" for k in range(len(input_types))]
    outputs = [f"o{j}" for j in range(n_outputs)]
    fall_back = f"return pytensor_call(fn, {_tuple_display(names)}, more, kwargs)"
    parameters = ["fn", *(f"{name}=NOT_GIVEN" for name in names), "/", "*more", "**kwargs"]
    refused = ["more", "kwargs", *(f"{name} is NOT_GIVEN" for name in names[-1:]), "fn.profile", "not vm.allow_gc"]
    lines = [f"def lean_call({', '.join(parameters)}):", f"    if {' or '.join(refused)}:", f"        {fall_back}"]
    lines += [f"    v{k} = {name}" for k, name in enumerate(names)]
    if names:
        checked = _checked_arguments(input_types, fall_back) if checks else [f"        {fall_back}"]
        lines += ["    if not fn.trust_input:", *checked]
    lines += ["    acquire()", "    try:", *(f"        cell{k}[0] = v{k}" for k in range(len(names)))]
    unpacked = "(o0,)" if n_outputs == 1 else ", ".join(outputs)
    called = f"{unpacked} = call_graph()" if outputs else "call_graph()"
    lines += ["        try:", f"            {called}", "        except Exception:", "            raise_as_thunk()"]
    lines += [f"        cell{k}[0] = o{j}" for j, k in updates]
    lines += [f"        cell{k}[0] = None" for k in cleared]
    lines += ["    finally:", "        release()", f"    returned = [{', '.join(outputs[:n_returned])}]"]
    lines += ["    return returned[0] if fn.unpack_single else None if fn.return_none else returned"]
    return "\n".join(lines) + "\n"


def make_lean_call(fn: Function):
    """``fn``'s lean call (`lean_call_source`), bound to ``fn``: of as many arguments as it has inputs that are
    not implicit (a shared variable's); a call of fewer, leaving inputs to their default values, is PyTensor's."""
    containers = fn.input_storage
    n_args = len([container for container in containers if not container.implicit])
    lock = fn.call_lock
    namespace = {
        "ndarray": np.ndarray,
        "NOT_GIVEN": NOT_GIVEN,
        "REJECTED": REJECTED,
        "filtered": filtered,
        "pytensor_call": pytensor_call,
        "vm": fn.vm,
        "call_graph": fn.vm.call_graph,
        "acquire": lock.acquire,
        "release": lock.release,
        "raise_as_thunk": partial(raise_as_thunk, fn.maker.fgraph, fn.vm),
    }
    for k, container in enumerate(containers):
        namespace |= {f"container{k}": container, f"cell{k}": container.storage}
        if isinstance(container.type, TensorType):
            namespace[f"dtype{k}"] = container.type.numpy_dtype
    cleared = [k for k, container in enumerate(containers) if container.required]
    updates = [(j, containers.index(container)) for j, container in fn._update_input_storage]
    types = [container.type for container in containers[:n_args]]
    checks = not fn._potential_aliased_input_groups
    source = lean_call_source(types, checks, cleared, updates, len(fn.output_storage), fn._n_returned_outputs)
    exec(compile(source, "<llvm_backend lean_call>", "exec"), namespace)
    return MethodType(namespace["lean_call"], fn)


class LLVMFunction(Function):
    """A `Function` whose calls hold a lock of its own: the thread that sets its inputs is the one whose
    call reads them. A call runs its `lean_call`, which hands what it does not take to PyTensor's. It pickles as
    PyTensor's `Function` does (``pickle_llvm_function`` in ``llvm_backend.process``: copyreg keys PyTensor's
    pickling by the exact class)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.call_lock = threading.RLock()
        self.lean_call = make_lean_call(self)

    __call__ = property(
        attrgetter("lean_call"),
        doc="""The function's `lean_call`: calling the function calls it, and nothing in between (a ``__call__``
        method calling it took a Python frame and its ``*args`` and ``**kwargs`` more, about 0.3 µs).""",
    )


class LLVMFunctionMaker(FunctionMaker):
    """PyTensor's `FunctionMaker`, making `LLVMFunction`\\ s unless told otherwise (``Function.copy`` passes
    the class of the function it copies)."""

    def __init__(self, *args, function_class=LLVMFunction, **kwargs):
        super().__init__(*args, function_class=function_class, **kwargs)


def function_maker(mode):
    """``Mode.function_maker`` while the package is imported: `LLVMFunctionMaker` for a mode whose linker is an
    `LLVMLinker`, PyTensor's `FunctionMaker` for any other (a subclass's own, such as DebugMode's, still wins)."""
    return LLVMFunctionMaker if isinstance(mode.linker, LLVMLinker) else FunctionMaker
