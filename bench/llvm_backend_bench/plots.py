"""PNG plots of a benchmark run (matplotlib, Agg canvas: no display needed).

- ``compile_vs_n.png``: cold compile seconds against N, log-log, a panel per family over N (join, N
  outputs, sum of N sums), one line per mode.
- ``per_call.png``: µs per call of every case, one bar per mode, labelled with its ratio to NUMBA.
- ``time_to_posterior.png``: the ``pymc/time_to_posterior`` family, a panel per model and process (cold, warm),
  one bar per nutpie backend stacking its seconds per phase.

A mode is drawn in the same colour in every figure, whichever modes a run measured (`mode_colour`); so is each
phase of the time to posterior (`PHASE_COLOURS`), whose bars are outlined in their backend's colour.
"""

import zlib
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from llvm_backend.tools.measurements import Measurement
from llvm_backend_bench.cases import FLOOR, REFERENCE
from llvm_backend_bench.time_to_posterior import PHASES, Posterior

__all__ = [
    "COMPILE_PLOT",
    "MODE_COLOURS",
    "PER_CALL_PLOT",
    "PHASE_COLOURS",
    "PHASE_PLOT",
    "compile_time_figure",
    "compile_time_plot",
    "draw_plots",
    "mode_colour",
    "per_call_figure",
    "per_call_plot",
    "phase_figure",
    "phase_plot",
]

COMPILE_PLOT = "compile_vs_n.png"
PER_CALL_PLOT = "per_call.png"
PHASE_PLOT = "time_to_posterior.png"
PHASE_PANELS_PER_ROW = 6
"""The time-to-posterior plot's panels side by side: the corpus's 25 models in one row made a figure 80 inches wide."""
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
PHASE_COLOURS = dict(
    zip(PHASES, ("#66c2a5", "#fc8d62", "#8da0cb", "#e78ac3", "#a6d854", "#ffd92f", "#e5c494", "#b3b3b3"), strict=True)
)
"""The colour of each phase of the time to posterior (ColorBrewer's Set2, pale beside the modes' colours, which
outline the bars)."""


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


def _phase_panel(axes, rows: list[Posterior]) -> None:
    """One bar per row, its phases stacked in the order of `PHASES`, outlined and ticked in its backend's colour,
    labelled with its total seconds and its ratio to NUMBA's."""
    backends = [r.backend for r in rows]
    edges = [mode_colour(backend) for backend in backends]
    tops = [0.0] * len(rows)
    for phase, title in PHASES.items():
        heights = [r.phases.get(phase, 0.0) for r in rows]
        axes.bar(range(len(rows)), heights, 0.6, tops, label=title, color=PHASE_COLOURS[phase], edgecolor=edges)
        tops = [top + height for top, height in zip(tops, heights, strict=True)]
    base = next((r.total_s for r in rows if r.backend == BASELINE), None)
    for x, row in enumerate(rows):
        ratio = f"\n{row.total_s / base:.2f}x" if base and row.backend != BASELINE else ""
        axes.annotate(f"{row.total_s:.2f} s{ratio}", (x, tops[x]), ha="center", va="bottom", fontsize=7)
    axes.set_xticks(range(len(rows)), backends, fontsize=8)
    for tick, edge in zip(axes.get_xticklabels(), edges, strict=True):
        tick.set_color(edge)
    axes.set_ylabel("seconds", fontsize=8)
    axes.set_ylim(0, 1.3 * max(tops))  # room for the labels: each stacked bar's bottom edge stops autoscaling


def phase_figure(rows: list[Posterior]) -> Figure | None:
    """The ``pymc/time_to_posterior`` family: a panel per model and process, one stacked bar of seconds per phase for
    each nutpie backend (`_phase_panel`), the models in rows of at most `PHASE_PANELS_PER_ROW` panels, every cold
    process's row above the warm ones; None without rows."""
    if not rows:
        return None
    cases = list(dict.fromkeys(r.case for r in rows))
    processes = list(dict.fromkeys(r.process for r in rows))
    columns = min(len(cases), PHASE_PANELS_PER_ROW)
    per_process = -(-len(cases) // columns)
    figure = _figure(3.0 * columns + 1.6, 3.2 * len(processes) * per_process)
    for i, process in enumerate(processes):
        for j, case in enumerate(cases):
            at = (i * per_process + j // columns) * columns + j % columns + 1
            axes = figure.add_subplot(len(processes) * per_process, columns, at)
            _phase_panel(axes, [r for r in rows if (r.case, r.process) == (case, process)])
            axes.set_title(f"{case.rsplit('/', 1)[-1]}, {process}", fontsize=9)
    handles, labels = figure.axes[0].get_legend_handles_labels()
    figure.legend(handles[::-1], labels[::-1], loc="outside right center", fontsize=7)  # top to bottom, as stacked
    figure.suptitle(f"Time to posterior through nutpie, by phase; labels: total, ratio to {BASELINE}", fontsize=9)
    return figure


def phase_plot(rows: list[Posterior], path: Path) -> Path | None:
    """`phase_figure` saved to ``path``; ``None`` (nothing written) without rows."""
    return _save(phase_figure(rows), path)


def draw_plots(results: list[Measurement], cases: dict, out_dir: Path, posterior: list[Posterior] = ()) -> list[Path]:
    """Draw every plot the results (and the time-to-posterior rows ``posterior``) allow into ``out_dir``; the paths
    written."""
    written = [
        compile_time_plot(results, cases, out_dir / COMPILE_PLOT),
        per_call_plot(results, out_dir / PER_CALL_PLOT),
        phase_plot(list(posterior), out_dir / PHASE_PLOT),
    ]
    return [path for path in written if path is not None]
