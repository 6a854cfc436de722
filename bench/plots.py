"""PNG plots of a benchmark run (matplotlib, Agg canvas: no display needed).

- ``compile_vs_n.png``: cold compile seconds against N, log-log, a panel per family over N (join, N
  outputs, sum of N sums), one line per mode.
- ``per_call.png``: µs per call of every case, one bar per mode, labelled with its ratio to NUMBA.

A mode is drawn in the same colour in every figure, whichever modes a run measured (`mode_colour`).
"""

import zlib
from pathlib import Path

from llvm_backend_bench.cases import FLOOR, REFERENCE
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from llvm_backend.tools.measurements import Measurement

__all__ = [
    "COMPILE_PLOT",
    "MODE_COLOURS",
    "PER_CALL_PLOT",
    "compile_time_figure",
    "compile_time_plot",
    "draw_plots",
    "mode_colour",
    "per_call_figure",
    "per_call_plot",
]

COMPILE_PLOT = "compile_vs_n.png"
PER_CALL_PLOT = "per_call.png"
BASELINE = "NUMBA"
MODE_COLOURS = {
    "NUMBA": "tab:blue",
    "LLVM": "tab:orange",
    "CVM": "tab:green",
    REFERENCE: "tab:red",
    FLOOR: "tab:gray",
}
"""The colour of each mode the bench measures (`llvm_backend_bench.cases.MODES`), its reference and its floor."""
SPARE_COLOURS = ("tab:purple", "tab:brown", "tab:pink", "tab:olive", "tab:cyan")
"""For a mode outside `MODE_COLOURS` (`llvm_backend_bench.run.run_bench` takes any PyTensor mode)."""


def mode_colour(mode: str) -> str:
    """``mode``'s colour: its `MODE_COLOURS` entry, or a spare colour fixed by its name."""
    return MODE_COLOURS.get(mode) or SPARE_COLOURS[zlib.crc32(mode.encode()) % len(SPARE_COLOURS)]


def _figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _modes(results: list[Measurement]) -> list[str]:
    return list(dict.fromkeys(r.mode for r in results))


def compile_time_figure(results: list[Measurement], cases: dict) -> Figure | None:
    """Cold compile time against N, one log-log panel per family of cases that have an N, one line per
    mode; ``None`` when none was cold-compiled."""
    families = list(dict.fromkeys(info["family"] for info in cases.values() if info.get("n")))
    panels = {}
    for family in families:
        for mode in _modes(results):
            points = sorted(
                (cases[r.graph]["n"], r.cold_compile_s)
                for r in results
                if r.mode == mode
                and cases[r.graph]["family"] == family
                and cases[r.graph].get("n")
                and r.cold_compile_s is not None
            )
            if points:
                panels.setdefault(family, {})[mode] = points
    if not panels:
        return None
    figure = _figure(4.5 * len(panels), 4)
    for k, (family, lines) in enumerate(panels.items(), start=1):
        axes = figure.add_subplot(1, len(panels), k)
        for mode, points in lines.items():
            axes.plot(*zip(*points, strict=True), marker="o", label=mode, color=mode_colour(mode))
        axes.set(xscale="log", yscale="log", xlabel="N", ylabel="cold compile (s)")
        axes.set_title(f"{family} (fresh process, empty caches)", fontsize=9)
        axes.legend(fontsize=7)
        axes.grid(True, which="both", alpha=0.3)
    return figure


def compile_time_plot(results: list[Measurement], cases: dict, path: Path) -> Path | None:
    """`compile_time_figure` saved to ``path``; ``None`` (nothing written) without a figure."""
    return _save(compile_time_figure(results, cases), path)


def per_call_figure(results: list[Measurement]) -> Figure | None:
    """Grouped bars of µs/call per case and mode (log scale), each labelled with its ratio to NUMBA; None
    without results (a run of the intrinsics' microbenchmarks alone)."""
    if not results:
        return None
    names = list(dict.fromkeys(r.graph for r in results))
    modes = _modes(results)
    by_key = {(r.graph, r.mode): r.us_per_call for r in results}
    figure = _figure(max(6.0, 0.75 * len(names) + 2), 4.5)
    axes = figure.add_subplot()
    width = 0.8 / len(modes)
    for k, mode in enumerate(modes):
        xs = [i + (k - (len(modes) - 1) / 2) * width for i, name in enumerate(names) if (name, mode) in by_key]
        heights = [by_key[name, mode] for name in names if (name, mode) in by_key]
        bars = axes.bar(xs, heights, width, label=mode, color=mode_colour(mode))
        if mode != BASELINE:
            labels = [_ratio_label(by_key, name, mode) for name in names if (name, mode) in by_key]
            axes.bar_label(bars, labels, rotation=90, fontsize=6, padding=2)
    axes.set_yscale("log")
    axes.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=7)
    axes.set_ylabel("µs per call (log)")
    axes.set_title(f"Per-call time; labels: ratio to {BASELINE} (CVM timed through its PyTensor Function)", fontsize=9)
    axes.legend(fontsize=7)
    axes.margins(y=0.25)
    return figure


def per_call_plot(results: list[Measurement], path: Path) -> Path | None:
    """`per_call_figure` saved to ``path``; ``None`` (nothing written) without results."""
    return _save(per_call_figure(results), path)


def _save(figure: Figure | None, path: Path) -> Path | None:
    if figure is None:
        return None
    figure.savefig(path, dpi=90)
    return path


def _ratio_label(by_key: dict, name: str, mode: str) -> str:
    base = by_key.get((name, BASELINE))
    return f"{by_key[name, mode] / base:.2f}x" if base else ""


def draw_plots(results: list[Measurement], cases: dict, out_dir: Path) -> list[Path]:
    """Draw every plot the results allow into ``out_dir``; the paths written."""
    written = [
        compile_time_plot(results, cases, out_dir / COMPILE_PLOT),
        per_call_plot(results, out_dir / PER_CALL_PLOT),
    ]
    return [path for path in written if path is not None]
