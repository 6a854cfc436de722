"""Measurement primitives for compiled PyTensor functions (LLVM, stock NUMBA, any Numba-linked mode).

- ``numba_dispatcher(fn)``: the numba dispatcher PyTensor calls for ``fn``.
- ``uncached_kernel(fn)``: ``fn``'s graph recompiled with PyTensor's numba cache off, so its IR is real.
  Under the default cache the dispatcher's entry point is a one-line ``*args`` wrapper whose body may
  be loaded from disk, and ``inspect_llvm()`` shows that wrapper (a stub), not the kernel.
- ``kernel_ir(fn)`` / ``kernel_instruction_count(fn)``: optimized LLVM IR of the kernel function alone
  (not numba's CPython wrapper, which has NRT and Python C-API calls of its own).
- ``unoptimized_ir_size(fn)``: instruction counts of the IR numba emits before LLVM optimizes it.
- ``allocations_per_call(fn, inputs)``: NRT MemInfo allocations per call, total and net of the one
  MemInfo numba makes to unbox each ndarray argument.
- ``time_per_call(fn, inputs)`` / ``times_per_call(cases)``: seconds per call of the raw numba function,
  medians of (interleaved) timeit rounds; ``seconds_per_call(calls)`` does the same for any callables.
- ``compile_recording_ir(dispatcher, arg_types)``: compile any numba dispatcher, keeping its unoptimized IR;
  ``recording_ir_modules()`` records what any code compiles; ``nrt_allocations_per_call(call)`` counts
  the heap allocations of any call of numba code.
"""

import statistics
import timeit
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import llvmlite.binding as llvm
import numpy as np
from numba.core.codegen import CPUCodeLibrary
from numba.core.registry import CPUDispatcher
from numba.core.runtime import _nrt_python, rtsys
from pytensor import config
from pytensor.link.numba.dispatch.basic import get_numba_type
from pytensor.link.numba.linker import NumbaLinker

from llvm_backend.linker import ConvertedGraph
from llvm_backend_intrinsics.argpack import ArrayPack

__all__ = [
    "Allocations",
    "Kernel",
    "UnoptimizedIR",
    "allocations_per_call",
    "compile_recording_ir",
    "defined_instruction_count",
    "function_and_locals",
    "function_instruction_count",
    "function_text",
    "input_values",
    "kernel_instruction_count",
    "kernel_ir",
    "nrt_allocations_per_call",
    "numba_dispatcher",
    "prepare_inputs",
    "recording_ir_modules",
    "seconds_per_call",
    "thunk_function",
    "time_per_call",
    "times_per_call",
    "uncached_kernel",
    "unoptimized_ir_size",
]


def thunk_function(fn):
    """What a Numba-linked ``Function``'s thunk calls on its input cells' values: ``fn.vm.jit_fn`` under stock,
    the graph function (``fn.vm.graph_fn``) under the LLVM linker, whose ``jit_fn`` may be an entry around it
    taking the graph's inputs instead of its packs and constant parameters."""
    if not isinstance(fn.maker.linker, NumbaLinker):
        raise TypeError(f"{fn} was not compiled by a Numba linker (linker: {fn.maker.linker})")
    return getattr(fn.vm, "graph_fn", fn.vm.jit_fn)


def numba_dispatcher(fn) -> CPUDispatcher:
    """The numba dispatcher a compiled PyTensor ``Function``'s thunk calls (`thunk_function`, or the dispatcher
    inside it when the LLVM linker reorders outputs returned in lists)."""
    function = thunk_function(fn)
    return getattr(function, "dispatcher", function)


def input_values(fn, inputs) -> list:
    """One value per input of ``fn`` (shared ones included): ``inputs`` converted by their types'
    ``filter``, as ``fn`` does, and the shared variables' values from ``fn``'s own storage."""
    explicit = [i for i, spec in enumerate(fn.maker.inputs) if not spec.shared]
    if len(inputs) != len(explicit):
        raise ValueError(f"{fn} takes {len(explicit)} inputs, got {len(inputs)}")
    values = [container.storage[0] for container in fn.input_storage]
    for i, value in zip(explicit, inputs, strict=True):
        values[i] = fn.maker.inputs[i].variable.type.filter(value)
    return values


def prepare_inputs(fn, inputs) -> list:
    """The arguments ``fn`` passes its numba function when called with ``inputs``.

    ``inputs`` are converted by their types' ``filter``, as ``fn`` does; shared variables and any
    constants the linker passes as arguments come from ``fn``'s own storage. Under an `LLVMLinker`
    the arguments follow its graph function's parameters: direct inputs, array packs, constants.
    """
    values = input_values(fn, inputs)
    graph = getattr(fn.vm, "graph_source", None)
    if graph is None:
        return values
    return graph.arguments([*values, *(value for _, value in graph.constant_params)])


@dataclass(frozen=True)
class Kernel:
    """A graph's function compiled without PyTensor's cache, for one argument signature."""

    dispatcher: CPUDispatcher
    signature: tuple
    unoptimized_modules: tuple[str, ...]
    """IR text of every module numba emitted during the compile, before optimization."""

    @property
    def name(self) -> str:
        """The kernel function's symbol in the LLVM module."""
        return self.dispatcher.overloads[self.signature].fndesc.mangled_name

    @property
    def optimized_ir(self) -> str:
        return self.dispatcher.overloads[self.signature].library.get_llvm_str()


@contextmanager
def recording_ir_modules():
    """The llvmlite ``ir.Module`` objects numba emits while the block runs, before optimization.

    Kept as objects (``str()`` them afterwards), so recording adds nothing measurable to a timed compile.
    """
    modules = []
    add_ir_module = CPUCodeLibrary.add_ir_module

    def recording(library, ir_module):
        modules.append(ir_module)
        return add_ir_module(library, ir_module)

    with mock.patch.object(CPUCodeLibrary, "add_ir_module", recording):
        yield modules


def defined_instruction_count(ir_text: str) -> int:
    """Instructions in every function the IR module ``ir_text`` defines."""
    functions = llvm.parse_assembly(ir_text).functions
    return sum(1 for f in functions if not f.is_declaration for block in f.blocks for _ in block.instructions)


def uncached_kernel(fn, arg_types: tuple | None = None) -> Kernel:
    """Recompile ``fn``'s graph with a fresh linker of its kind and the numba cache off.

    ``arg_types`` defaults to C-contiguous arrays of the graph inputs' types (what fresh ndarrays
    give), then the types of any constants the linker passes as arguments. Numba functions already
    compiled in this process (helpers shared across graphs) are reused, so their IR is not in
    ``unoptimized_modules``.
    """
    linker = type(fn.maker.linker)()
    with config.change_flags(numba__cache=False):
        converted = linker.fgraph_convert(fn.maker.fgraph)
        jitted = linker.jit_compile(converted)
        dispatcher = getattr(jitted, "dispatcher", jitted)
        if arg_types is None:
            arg_types = [get_numba_type(var.type, layout="C") for var in fn.maker.fgraph.inputs]
            if isinstance(converted, ConvertedGraph):
                arg_types = converted.graph.argument_types(arg_types)
        return compile_recording_ir(dispatcher, arg_types)


def compile_recording_ir(dispatcher, arg_types) -> Kernel:
    """Compile ``dispatcher`` for ``arg_types``, keeping the unoptimized IR numba emits meanwhile."""
    with recording_ir_modules() as modules:
        dispatcher.compile(tuple(arg_types))
    return Kernel(dispatcher, tuple(arg_types), tuple(map(str, modules)))


_LOCAL_LINKAGES = (llvm.Linkage.internal, llvm.Linkage.private)


def function_and_locals(module, name: str) -> list:
    """Function ``name`` of the parsed ``module`` and the module-local (internal or private) functions it
    calls, directly or through each other, the named one first: its code, whatever LLVM chose not to inline
    (the graph intrinsic emits a graph's calls in a local function,
    `llvm_backend_intrinsics.functions.call_as_function`)."""
    found = [module.get_function(name)]
    names = {name}
    for function in found:
        for block in function.blocks:
            for instruction in block.instructions:
                if instruction.opcode != "call":
                    continue
                callee = list(instruction.operands)[-1].name
                if callee in names or not callee:
                    continue
                names.add(callee)
                try:
                    target = module.get_function(callee)
                except NameError:
                    continue
                if not target.is_declaration and target.linkage in _LOCAL_LINKAGES:
                    found.append(target)
    return found


def function_instruction_count(ir_text: str, name: str) -> int:
    """Number of instructions in the definition of function ``name`` in ``ir_text`` and of the module-local
    functions it calls (`function_and_locals`)."""
    module = llvm.parse_assembly(ir_text)
    return sum(1 for f in function_and_locals(module, name) for block in f.blocks for _ in block.instructions)


def function_text(ir_text: str, name: str) -> str:
    """Function ``name`` of the IR module ``ir_text`` and the module-local functions it calls
    (`function_and_locals`), as text."""
    return "\n".join(str(f) for f in function_and_locals(llvm.parse_assembly(ir_text), name))


def kernel_ir(fn) -> str:
    """Optimized LLVM IR of ``fn``'s kernel function alone (with the module-local functions it calls), as
    text."""
    kernel = uncached_kernel(fn)
    return function_text(kernel.optimized_ir, kernel.name)


def kernel_instruction_count(fn) -> int:
    """Instructions in the optimized kernel function of ``fn`` (node functions inlined into it count, and
    the module-local functions it calls)."""
    kernel = uncached_kernel(fn)
    return function_instruction_count(kernel.optimized_ir, kernel.name)


@dataclass(frozen=True)
class UnoptimizedIR:
    kernel: int
    """Instructions in the kernel function (the generated graph function) before optimization."""
    total: int
    """Instructions in every function defined in the modules emitted for this compile."""


def unoptimized_ir_size(fn) -> UnoptimizedIR:
    """Instruction counts of ``fn``'s IR as numba emits it, before LLVM optimization."""
    kernel = uncached_kernel(fn)
    kernel_count = total = 0
    for text in kernel.unoptimized_modules:
        for function in llvm.parse_assembly(text).functions:
            if function.is_declaration:
                continue
            count = sum(1 for block in function.blocks for _ in block.instructions)
            total += count
            if function.name == kernel.name:
                kernel_count = count
    return UnoptimizedIR(kernel=kernel_count, total=total)


@dataclass(frozen=True)
class Allocations:
    total: float
    """NRT MemInfo allocations per call."""
    unboxing: int
    """Of which numba makes one per ndarray argument to unbox it."""

    @property
    def net(self) -> float:
        return self.total - self.unboxing


@contextmanager
def _nrt_stats():
    enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        yield
    finally:
        if not enabled:
            _nrt_python.memsys_disable_stats()


def allocations_per_call(fn, inputs, n_calls: int = 100) -> Allocations:
    """NRT heap allocations per call of ``fn``'s numba function on ``inputs``."""
    args = prepare_inputs(fn, inputs)
    jit_fn = numba_dispatcher(fn)
    total = nrt_allocations_per_call(lambda: jit_fn(*args), n_calls)
    unboxing = sum(len(a.arrays) if isinstance(a, ArrayPack) else isinstance(a, np.ndarray) for a in args)
    return Allocations(total=total, unboxing=unboxing)


def nrt_allocations_per_call(call: Callable[[], object], n_calls: int = 100) -> float:
    """NRT MemInfo allocations per call of ``call()``, a call of some numba function (called once first)."""
    call()  # compile outside the counted window
    with _nrt_stats():
        before = rtsys.get_allocation_stats().mi_alloc
        for _ in range(n_calls):
            call()
        after = rtsys.get_allocation_stats().mi_alloc
    return (after - before) / n_calls


def times_per_call(cases: dict, rounds: int = 9) -> dict:
    """Seconds per call of each case's raw numba function, as medians of interleaved rounds.

    ``cases`` maps a label to ``(fn, inputs)``. Each round times every case once (timeit, with the
    loop count timeit's autorange picked for that case), so load on a noisy machine hits all alike.
    """
    calls = {}
    for label, (fn, inputs) in cases.items():
        args = prepare_inputs(fn, inputs)
        jit_fn = numba_dispatcher(fn)
        calls[label] = lambda jit_fn=jit_fn, args=args: jit_fn(*args)
    return seconds_per_call(calls, rounds)


def seconds_per_call(calls: dict[str, Callable[[], object]], rounds: int = 9) -> dict:
    """Seconds per call of each labelled zero-argument callable, as medians of interleaved rounds.

    Each callable is called once first (numba compiles on the first call), then timed like
    ``times_per_call`` times raw numba functions: timeit, with the loop count its autorange picked.
    """
    timers = {}
    for label, call in calls.items():
        call()
        timer = timeit.Timer(call)
        timers[label] = (timer, timer.autorange()[0])
    samples = {label: [] for label in calls}
    for _ in range(rounds):
        for label, (timer, number) in timers.items():
            samples[label].append(timer.timeit(number) / number)
    return {label: statistics.median(s) for label, s in samples.items()}


def time_per_call(fn, inputs, rounds: int = 9) -> float:
    """Seconds per call of ``fn``'s raw numba function on ``inputs`` (median of ``rounds``)."""
    return times_per_call({"fn": (fn, inputs)}, rounds)["fn"]
