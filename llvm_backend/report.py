"""``llvm-backend report``: built-in graphs under stock NUMBA and LLVM, measured side by side."""

from dataclasses import asdict, dataclass

import pytensor

from llvm_backend.coldcompile import cold_compile_seconds
from llvm_backend.graphs import GRAPHS
from llvm_backend.measure import (
    allocations_per_call,
    kernel_instruction_count,
    times_per_call,
)

__all__ = ["DEFAULT_MODES", "Measurement", "as_json", "format_table", "measure_graph", "run_report"]

DEFAULT_MODES = ("NUMBA", "LLVM")


@dataclass(frozen=True)
class Measurement:
    graph: str
    mode: str
    cold_compile_s: float
    us_per_call: float
    allocs_per_call: float
    net_allocs_per_call: float
    kernel_ir_instructions: int


def measure_graph(name: str, modes=DEFAULT_MODES) -> list[Measurement]:
    """Measure built-in graph ``name`` under each mode: cold compile, µs/call, allocations, IR size.

    Per-call times are medians of rounds interleaved across the modes.
    """
    graph = GRAPHS[name]()
    fns = {mode: pytensor.function(graph.inputs, graph.outputs, mode=mode) for mode in modes}
    seconds = times_per_call({mode: (fn, graph.values) for mode, fn in fns.items()})
    results = []
    for mode, fn in fns.items():
        allocations = allocations_per_call(fn, graph.values)
        results.append(
            Measurement(
                graph=name,
                mode=mode,
                cold_compile_s=cold_compile_seconds(name, mode),
                us_per_call=seconds[mode] * 1e6,
                allocs_per_call=allocations.total,
                net_allocs_per_call=allocations.net,
                kernel_ir_instructions=kernel_instruction_count(fn),
            )
        )
    return results


def run_report(graphs=tuple(GRAPHS), modes=DEFAULT_MODES, progress=None) -> list[Measurement]:
    """Measure every graph under every mode; ``progress(message)`` is called before each graph."""
    results = []
    for name in graphs:
        if progress is not None:
            progress(f"measuring {name} under {', '.join(modes)}")
        results.extend(measure_graph(name, modes))
    return results


_COLUMNS = (
    ("cold compile s", "cold_compile_s", "{:.2f}"),
    ("us/call", "us_per_call", "{:.2f}"),
    ("allocs/call", "allocs_per_call", "{:.1f}"),
    ("net allocs/call", "net_allocs_per_call", "{:.1f}"),
    ("kernel IR instr", "kernel_ir_instructions", "{:d}"),
)


def _ratio(value, base) -> str:
    return f"{value / base:.2f}x" if base else "-"


def format_table(results: list[Measurement], baseline: str = "NUMBA") -> str:
    """A Markdown table, one row per graph and mode, plus a ratio row against ``baseline``."""
    header = ["graph", "mode", *(title for title, _, _ in _COLUMNS)]
    rows = [header, ["---"] * len(header)]
    for r in results:
        rows.append([r.graph, r.mode, *(fmt.format(getattr(r, f)) for _, f, fmt in _COLUMNS)])
        base = next((b for b in results if b.graph == r.graph and b.mode == baseline), None)
        if base is not None and r.mode != baseline:
            ratios = [_ratio(getattr(r, f), getattr(base, f)) for _, f, _ in _COLUMNS]
            rows.append([r.graph, f"{r.mode}/{baseline}", *ratios])
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def as_json(results: list[Measurement]) -> list[dict]:
    return [asdict(r) for r in results]
