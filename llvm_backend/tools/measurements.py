"""``llvm-backend report``: built-in graphs under stock NUMBA and LLVM, measured side by side.

The machinery is shared with the benchmarks (``bench/``): a `Runner` is one way of running a graph (a
PyTensor mode, or a hand-written ``@njit`` reference) with the code it runs already compiled;
``measure_runners`` times runners in interleaved rounds and counts their allocations and IR; tables
report each metric with its ratio against stock NUMBA.
"""

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import partial

import numba
import numpy as np
import pytensor
from numba import typeof
from pytensor import config
from pytensor.link.numba.linker import NumbaLinker

from llvm_backend.tools.coldcompile import cold_compile_seconds
from llvm_backend.tools.graphs import GRAPHS, Graph
from llvm_backend.tools.measure import (
    Kernel,
    compile_recording_ir,
    function_instruction_count,
    input_values,
    nrt_allocations_per_call,
    numba_dispatcher,
    prepare_inputs,
    seconds_per_call,
    thunk_function,
)
from llvm_backend_intrinsics.argpack import ArrayPack

__all__ = [
    "DEFAULT_MODES",
    "FUNCTION_CALL",
    "NUMBA_CALL",
    "Measurement",
    "Runner",
    "as_json",
    "call_floor_runner",
    "compile_runner",
    "format_inline_table",
    "format_table",
    "jitted_runner",
    "measure_graph",
    "measure_runners",
    "run_report",
    "thunk_call",
]

DEFAULT_MODES = ("NUMBA", "LLVM")

NUMBA_CALL = "numba function"
"""What µs/call times for Numba-linked modes and ``@njit`` references: the jitted function, called as the
mode's thunk calls it (`thunk_call`) or, for a reference, directly."""
FUNCTION_CALL = "PyTensor Function"
"""What µs/call times for other modes (CVM, ...), which have no numba dispatcher: the Function itself."""


@dataclass(frozen=True)
class Measurement:
    graph: str
    mode: str
    cold_compile_s: float | None
    us_per_call: float
    allocs_per_call: float | None
    net_allocs_per_call: float | None
    kernel_ir_instructions: int | None
    unoptimized_ir_instructions: int | None = None
    """Instructions numba emitted for a cold compile, before LLVM optimized them (all functions)."""
    timed: str = NUMBA_CALL
    warm_compile_s: float | None = None
    """The cold compile's work in a second fresh process, on the caches the first one filled."""


@dataclass(frozen=True)
class Runner:
    """One way of running a graph on its example inputs, compiled and ready to call."""

    mode: str
    call: Callable[[], object]
    """One call on the example inputs, already converted."""
    timed: str
    kernel: Kernel | None = None
    """The numba code ``call`` runs (``None`` when it runs none)."""
    unboxed_arrays: int = 0
    """ndarray arguments, each of which numba unboxes into one MemInfo per call."""


def _pytensor_function(graph: Graph, mode: str):
    return pytensor.function(graph.inputs, graph.outputs, mode=mode)


def compile_runner(graph: Graph, mode: str, compile: Callable[[Graph, str], object] | None = None) -> Runner:
    """Compile ``graph`` under PyTensor ``mode`` with ``compile(graph, mode)`` (default ``pytensor.function``;
    a PyMC case compiles as PyMC does, with its rewrites) and call it once.

    The numba cache is off, so the dispatcher called is the kernel itself and its IR is the code
    timed (under the cache it is a ``*args`` wrapper whose IR may be a stub loaded from disk).
    """
    with config.change_flags(numba__cache=False):
        fn = (compile or _pytensor_function)(graph, mode)
    if not isinstance(fn.maker.linker, NumbaLinker):
        variables = [i.variable for i in fn.maker.inputs if not i.shared]
        fn.trust_input = True
        args = [var.type.filter(value) for var, value in zip(variables, graph.values, strict=True)]
        return Runner(mode, partial(fn, *args), FUNCTION_CALL)
    runner = jitted_runner(mode, numba_dispatcher(fn), prepare_inputs(fn, graph.values))
    return replace(runner, call=thunk_call(fn, graph.values))


def thunk_call(fn, values) -> Callable[[], object]:
    """A call of ``fn``'s jitted function as its thunk makes it, on ``values`` (converted once, stored in
    ``fn``'s input cells): reading every thunk input cell, which under LLVM builds the array packs and reads
    native scalars (the thunk's own ``call_graph``), and putting listed outputs back in order."""
    for container, value in zip(fn.input_storage, input_values(fn, values), strict=True):
        container.storage[0] = value
    call_graph = getattr(fn.vm, "call_graph", None)
    if call_graph is not None:
        return call_graph
    function, cells = thunk_function(fn), fn.vm.inputs
    return lambda: function(*[cell[0] for cell in cells])


def _arrays_in(value) -> int:
    """ndarrays in ``value``, looking into tuples and array packs (numba unboxes their arrays one by one)."""
    if isinstance(value, tuple):
        return sum(_arrays_in(v) for v in value)
    if isinstance(value, ArrayPack):
        return len(value.arrays)
    return isinstance(value, np.ndarray)


def jitted_runner(mode: str, dispatcher, args) -> Runner:
    """A runner calling numba ``dispatcher`` on ``args``, compiled now with its IR recorded."""
    args = tuple(args)
    kernel = compile_recording_ir(dispatcher, tuple(typeof(a) for a in args))
    return Runner(mode, partial(dispatcher, *args), NUMBA_CALL, kernel, _arrays_in(args))


def call_floor_runner(mode: str, graph: Graph) -> Runner:
    """An ``@njit`` function of ``graph``'s inputs that does nothing, called on the values ``fn.vm.jit_fn``
    takes (an array per input): what any numba function of that signature costs per call from Python
    (dispatch on the argument types, unboxing each array) before its first instruction."""
    parameters = ", ".join(f"a{i}" for i in range(len(graph.inputs)))
    namespace = {}
    exec(f"def call_floor({parameters}):\n    return None\n", namespace)
    args = [var.type.filter(value) for var, value in zip(graph.inputs, graph.values, strict=True)]
    return jitted_runner(mode, numba.njit(namespace["call_floor"]), args)


def _measurement(graph: str, runner: Runner, seconds: float, cold: dict, n_calls: int) -> Measurement:
    allocations = net = instructions = None
    if runner.kernel is not None:
        allocations = nrt_allocations_per_call(runner.call, n_calls)
        net = allocations - runner.unboxed_arrays
        instructions = function_instruction_count(runner.kernel.optimized_ir, runner.kernel.name)
    return Measurement(
        graph,
        runner.mode,
        cold.get("seconds"),
        seconds * 1e6,
        allocations,
        net,
        instructions,
        cold.get("unoptimized_ir_instructions"),
        runner.timed,
        cold.get("warm_seconds"),
    )


def measure_runners(
    graph: str, runners: list[Runner], cold_compiles: dict, rounds: int = 9, n_calls: int = 100
) -> list[Measurement]:
    """Measure each runner of ``graph``: µs/call (medians of rounds interleaved across the runners),
    NRT allocations per call and optimized kernel IR size (numba runners only).

    ``cold_compiles`` maps a mode to what its cold compile measured (``coldcompile.cold_call``'s dict:
    ``seconds``, maybe ``unoptimized_ir_instructions``); a mode not in it was not cold-compiled.
    """
    seconds = seconds_per_call({r.mode: r.call for r in runners}, rounds)
    return [_measurement(graph, r, seconds[r.mode], cold_compiles.get(r.mode, {}), n_calls) for r in runners]


def measure_graph(name: str, modes=DEFAULT_MODES) -> list[Measurement]:
    """Measure built-in graph ``name`` under each mode: cold compile, µs/call, allocations, IR size.

    Per-call times are medians of rounds interleaved across the modes.
    """
    graph = GRAPHS[name]()
    runners = [compile_runner(graph, mode) for mode in modes]
    cold = {mode: {"seconds": cold_compile_seconds(name, mode)} for mode in modes}
    return measure_runners(name, runners, cold)


def run_report(graphs=tuple(GRAPHS), modes=DEFAULT_MODES, progress=None) -> list[Measurement]:
    """Measure every graph under every mode; ``progress(message)`` is called before each graph."""
    results = []
    for name in graphs:
        if progress is not None:
            progress(f"measuring {name} under {', '.join(modes)}")
        results.extend(measure_graph(name, modes))
    return results


Column = tuple[str, str, str]
"""(title, Measurement field, format)."""

_COLUMNS: tuple[Column, ...] = (
    ("cold compile s", "cold_compile_s", "{:.2f}"),
    ("us/call", "us_per_call", "{:.2f}"),
    ("allocs/call", "allocs_per_call", "{:.1f}"),
    ("net allocs/call", "net_allocs_per_call", "{:.1f}"),
    ("kernel IR instr", "kernel_ir_instructions", "{:d}"),
)


def _cell(value, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _ratio(value, base) -> str:
    return f"{value / base:.2f}x" if value is not None and base else "-"


def _baseline(results: list[Measurement], r: Measurement, baseline: str) -> Measurement | None:
    return next((b for b in results if b.graph == r.graph and b.mode == baseline), None)


def _markdown(rows: list[list[str]]) -> str:
    rows = [rows[0], ["---"] * len(rows[0]), *rows[1:]]
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def format_table(results: list[Measurement], baseline: str = "NUMBA", columns=_COLUMNS) -> str:
    """A Markdown table, one row per graph and mode, plus a ratio row against ``baseline``."""
    rows = [["graph", "mode", *(title for title, _, _ in columns)]]
    for r in results:
        rows.append([r.graph, r.mode, *(_cell(getattr(r, f), fmt) for _, f, fmt in columns)])
        base = _baseline(results, r, baseline)
        if base is not None and r.mode != baseline:
            ratios = [_ratio(getattr(r, f), getattr(base, f)) for _, f, _ in columns]
            rows.append([r.graph, f"{r.mode}/{baseline}", *ratios])
    return _markdown(rows)


def _value_and_ratio(r: Measurement, base: Measurement | None, field: str, fmt: str) -> str:
    value = getattr(r, field)
    if base is None or base is r or value is None:
        return _cell(value, fmt)
    return f"{_cell(value, fmt)} ({_ratio(value, getattr(base, field))})"


def format_inline_table(results: list[Measurement], columns: tuple[Column, ...], baseline: str = "NUMBA") -> str:
    """A Markdown table, one row per graph and mode, each value followed by its ratio to ``baseline``.

    A mode timed through its PyTensor Function rather than a numba function is starred. A column no result
    has a value for is left out.
    """
    columns = tuple(c for c in columns if any(getattr(r, c[1]) is not None for r in results))
    rows = [["case", "mode", *(title for title, _, _ in columns)]]
    for r in results:
        base = _baseline(results, r, baseline)
        mode = f"{r.mode}*" if r.timed == FUNCTION_CALL else r.mode
        rows.append([r.graph, mode, *(_value_and_ratio(r, base, field, fmt) for _, field, fmt in columns)])
    return _markdown(rows)


def as_json(results: list[Measurement]) -> list[dict]:
    return [asdict(r) for r in results]
