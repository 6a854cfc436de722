"""The compiled function of the LLVM mode: PyTensor's `Function`, safe to call from several threads, and called
through ``fn.vm.jit_fn`` with PyTensor's checks of the arguments.

PyTensor's ``Function.__call__`` writes its arguments into the input storage cells it shares with the linker's
thunk, calls the thunk, which reads them back, and then empties the cells. Two threads calling one function
interleave those steps wherever CPython switches threads: one thread's call reads the other's arguments (a wrong
value, silently) or cells the other has emptied already. A 60-scalar graph called from 4 threads got about one
of each per 4,000 calls. `LLVMFunction` makes each call that goes through the cells one critical section of the
function, so a call sees only its own arguments. It costs no parallelism: numba's compiled code holds the GIL,
so calls from Python threads never ran at once. The lock is re-entrant: a call made from inside the function's
own call (an op's ``perform`` calling it) goes on as stock's would instead of deadlocking.

That round trip through the cells, with ``_validate_inputs``' bookkeeping, costs more than the compiled code of
a small graph: 2.6 µs a call of PyMC's eight-schools logp and gradient, whose ``jit_fn`` takes 0.95 µs.
PyMC's own NUTS sampler calls the function at each leapfrog step. So a call of the common kind, positional
arguments that are already arrays of the input types, takes the lean path of `LeanCall`: it checks each
argument as ``TensorType.filter`` would, converts those that are not (a list, a Python float) with that very
``filter``, and hands them to ``jit_fn``, cells untouched, without the lock when the function has no state to
share (no updates, no input with a default value). Every other call is PyTensor's own. On eight schools, what a
call adds to ``jit_fn``'s time went from 10.4 µs to 1.8 µs on a machine where ``jit_fn`` takes 3.4 µs (and
stock NUMBA's ``Function`` adds 10.8 µs): about 0.45 µs at the scale of the figures above.

Every `Mode` whose linker is ours makes them, a plain ``Mode(linker="llvm")`` and the one PyMC's ``compile``
rebuilds on our linker too: ``Mode.function_maker`` is `function_maker` (``llvm_functions`` in
``llvm_backend.process``).

``fn.vm.jit_fn`` shares no state between calls (it packs its arguments on its own stack) and needs no lock:
nutpie's chains call it from their own threads.
"""

import threading

import numpy as np
from pytensor.compile.executor import Function
from pytensor.compile.maker import FunctionMaker
from pytensor.link.utils import raise_with_op
from pytensor.tensor.type import TensorType

from llvm_backend.linker import LLVMLinker

__all__ = ["LLVMFunction", "LLVMFunctionMaker", "LeanCall", "function_maker"]


class LeanCall:
    """How `LLVMFunction` calls ``jit_fn`` itself, worked out once per function: `of` says which functions can
    and builds ``calls``, which `LLVMFunction` keeps as ``lean_calls``.

    A call of ``n`` positional arguments fills the first ``n`` input containers, as ``_validate_inputs`` does,
    so it is valid when every required input is among the first ``n`` and no implicit one (a shared variable's)
    is. ``calls[n]`` is, for each valid ``n``, the pair of functions (trusting, checking) that make a call of
    ``n`` arguments (`call_source`), indexed by ``not fn.trust_input``; there is none for any other ``n``, whose
    call is PyTensor's and raises its error.

    A function with a non-required input (an ``In`` with a container for value) or with updates is stateful:
    its call reads or writes containers that other calls of it write, so it holds the function's lock while it
    does. Any other call shares nothing with another: it reads its own arguments and this record, and
    ``jit_fn`` keeps no state, so it runs without the lock.
    """

    __slots__ = ("calls", "containers", "fgraph", "lock", "vm")

    def __init__(self, fn: Function, counts: range):
        self.containers = fn.input_storage
        self.lock = fn.call_lock
        self.fgraph = fn.maker.fgraph
        self.vm = fn.vm
        namespace = {
            "ndarray": np.ndarray,
            "jit_fn": fn.vm.jit_fn,
            "lock": fn.call_lock,
            "filtered": self.filtered,
            "raise_as_thunk": self.raise_as_thunk,
        }
        for k, container in enumerate(self.containers):
            namespace[f"dtype{k}"] = container.type.numpy_dtype
            namespace[f"shape{k}"] = container.type.shape
            namespace[f"cell{k}"] = container.storage
        shapes = [c.type.shape for c in self.containers]
        defaults = [k for k, c in enumerate(self.containers) if not c.required]
        updates = [(k, self.containers.index(c)) for k, c in fn._update_input_storage]
        returned = fn._n_returned_outputs if fn._has_updates else None
        self.calls = {}
        for n in counts:
            pair = []
            for checks in (False, True):
                source = call_source(shapes, n, checks, defaults, updates, returned)
                exec(compile(source, "<llvm_backend LeanCall.calls>", "exec"), namespace)
                pair.append(namespace.pop("call"))
            self.calls[n] = tuple(pair)

    @classmethod
    def of(cls, fn: Function) -> dict | None:
        """``calls`` of ``fn``, or None when each of its calls must be PyTensor's: an input not a tensor
        (``jit_fn``'s contract is about the thunk's arrays), inputs PyTensor may copy because they can alias
        each other (``In(borrow=True)``), no output or one no node computes (a constant or an input, returned
        as borrowed storage, which the thunk writes into), or no valid count of positional arguments."""
        fgraph = fn.maker.fgraph
        if (
            not all(isinstance(var.type, TensorType) for var in fgraph.inputs)
            or fn._potential_aliased_input_groups
            or not fgraph.outputs
            or any(var.owner is None for var in fgraph.outputs)
        ):
            return None
        implicit = [k for k, c in enumerate(fn.input_storage) if c.implicit]
        required = [k for k, c in enumerate(fn.input_storage) if c.required]
        counts = range(required[-1] + 1 if required else 0, (implicit[0] if implicit else len(fn.input_storage)) + 1)
        return cls(fn, counts).calls if counts else None

    def filtered(self, k: int, value):
        """What argument ``k`` is stored as by ``_validate_inputs``: its input type's ``filter`` of it, with the
        container's ``strict`` and ``allow_downcast``. None when ``filter`` raises or gives anything but an
        ndarray: PyTensor's call then runs, raises the same error with its notes and leaves the cells as
        stock's failed call does."""
        container = self.containers[k]
        try:
            value = container.type.filter(value, strict=container.strict, allow_downcast=container.allow_downcast)
        except Exception:
            return None
        return value if type(value) is np.ndarray else None

    def raise_as_thunk(self, values: tuple):
        """Raise the exception ``jit_fn`` raised (called in its ``except``) as the thunk does: with
        ``raise_with_op``'s notes on the graph's first output node and the argument values, read from the input
        cells, which stock's failed call leaves holding them."""
        with self.lock:
            for container, value in zip(self.containers, values):
                container.storage[0] = value
            raise_with_op(self.fgraph, self.fgraph.outputs[0].owner, self.vm)


def call_source(shapes: list[tuple], n: int, checks: bool, defaults: list, updates: list, returned: int | None) -> str:
    """The source of ``call(args)``, a call of ``n`` arguments of a function of inputs of static ``shapes``:
    what ``Function.__call__`` has for outputs before it unpacks them, or None when PyTensor's call must make
    it. With ``checks``, an argument is kept as it is when it is an aligned `numpy.ndarray` of the input's
    dtype, ndim and static shape (all ``filter`` would do with it), else replaced by ``filtered(k, arg)``,
    and None is returned when that is None. Written out, so each argument costs one expression and no Python
    call of ours. A vector of static length and a matrix::

        def call(args):
            (
                a0,
                a1,
            ) = args
            if not (type(a0) is ndarray and a0.dtype is dtype0 and a0.shape == shape0 and a0.flags.aligned):
                a0 = filtered(0, a0)
                if a0 is None:
                    return None
            if not (type(a1) is ndarray and a1.dtype is dtype1 and a1.ndim == 2 and a1.flags.aligned):
                a1 = filtered(1, a1)
                if a1 is None:
                    return None
            try:
                return jit_fn(a0, a1)
            except Exception:
                raise_as_thunk(
                    (
                        a0,
                        a1,
                    )
                )

    A shape only partly static, such as ``(None, 3)``, is left to ``filter``, which compares it axis by axis.
    A stateful function's call (`LeanCall`) holds the lock after its checks: it stores the arguments of
    non-required inputs (``defaults``) in their cells, as stock's call leaves them, reads the inputs past the
    arguments from theirs (``jit_fn(a0, cell1[0])``), and stores output ``j`` in the cell of input ``k`` for
    each update ``(j, k)`` (``cell1[0] = outputs[2]``) before it returns the first ``returned`` outputs."""
    names = [f"a{k}" for k in range(n)]
    lines = ["def call(args):"]
    if names:
        lines.append(f"    {', '.join(names)}, = args")
    for k, name in enumerate(names if checks else ()):
        if None not in shapes[k]:
            fits = f"{name}.shape == shape{k}"
        elif all(length is None for length in shapes[k]):
            fits = f"{name}.ndim == {len(shapes[k])}"
        else:
            fits = "False"
        lines += [
            f"    if not (type({name}) is ndarray and {name}.dtype is dtype{k} and {fits} and {name}.flags.aligned):",
            f"        {name} = filtered({k}, {name})",
            f"        if {name} is None:",
            "            return None",
        ]
    run = f"jit_fn({', '.join([*names, *(f'cell{k}[0]' for k in range(n, len(shapes)))])})"
    handler = ["except Exception:", f"    raise_as_thunk(({''.join(f'{name}, ' for name in names)}))"]
    if not (defaults or updates):
        lines += ["    try:", f"        return {run}", *(f"    {line}" for line in handler)]
    else:
        lines += ["    with lock:", *(f"        cell{k}[0] = a{k}" for k in defaults if k < n)]
        lines += ["        try:", f"            outputs = {run}", *(f"        {line}" for line in handler)]
        lines += [*(f"        cell{k}[0] = outputs[{j}]" for j, k in updates), f"    return outputs[:{returned}]"]
    return "\n".join(lines) + "\n"


class LLVMFunction(Function):
    """A `Function` whose calls of the common kind go straight to ``jit_fn`` (`LeanCall`), and whose other calls
    are PyTensor's, each holding a lock of the function: the thread that sets its inputs is the one whose call
    reads them. It pickles as PyTensor's `Function` does (``pickle_llvm_function`` in ``llvm_backend.process``:
    copyreg keys PyTensor's pickling by the exact class)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.call_lock = threading.RLock()
        self.lean_calls = LeanCall.of(self)

    def __call__(self, *args, **kwargs):
        """The lean call when it applies: positional arguments of a valid count, no profile (which times the
        thunk) and the vm's ``allow_gc`` on (off, stock's call leaves the last arguments and outputs in the
        cells); else, or when the lean call finds it must not make the call, PyTensor's, under the lock."""
        calls = self.lean_calls
        if calls is not None and not kwargs and not self.profile and self.vm.allow_gc:
            pair = calls.get(len(args))
            if pair is not None:
                outputs = pair[not self.trust_input](args)
                if outputs is not None:
                    return outputs[0] if self.unpack_single else None if self.return_none else list(outputs)
        with self.call_lock:
            return super().__call__(*args, **kwargs)


class LLVMFunctionMaker(FunctionMaker):
    """PyTensor's `FunctionMaker`, making `LLVMFunction`\\ s unless told otherwise (``Function.copy`` passes
    the class of the function it copies)."""

    def __init__(self, *args, function_class=LLVMFunction, **kwargs):
        super().__init__(*args, function_class=function_class, **kwargs)


def function_maker(mode):
    """``Mode.function_maker`` while the package is imported: `LLVMFunctionMaker` for a mode whose linker is an
    `LLVMLinker`, PyTensor's `FunctionMaker` for any other (a subclass's own, such as DebugMode's, still wins)."""
    return LLVMFunctionMaker if isinstance(mode.linker, LLVMLinker) else FunctionMaker
