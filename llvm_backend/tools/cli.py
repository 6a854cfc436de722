"""The ``llvm-backend`` command: ``report``, ``ir``, ``lowerings``, ``rewrites``, ``changes`` and ``cache``, and the
subcommands installed packages register in the entry-point group ``llvm_backend.commands`` (the bench's ``bench``,
the developer tools' ``fuzz``): each entry point is a function given the subparsers action, which adds its parser
and sets ``run``."""

import argparse
import json
import re
import sys
from importlib.metadata import entry_points
from pathlib import Path

__all__ = ["COMMAND_PLUGINS", "UsageError", "changes_table", "lowerings_table", "main", "rewrites_table"]

COMMAND_PLUGINS = "llvm_backend.commands"
"""The entry-point group of subcommands other packages add to ``llvm-backend``."""


class UsageError(Exception):
    """A request a command cannot carry out as given (an unknown mode, target, ...): `main` prints it on one
    line and exits with status 2, as argparse does for a bad argument."""


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _check_modes(modes) -> None:
    """UsageError naming the first of ``modes`` that names no PyTensor mode."""
    from pytensor.compile.mode import get_mode, predefined_modes

    for mode in modes:
        try:
            get_mode(mode)
        except ValueError:
            raise UsageError(f"unknown mode {mode!r} (modes: {' '.join(sorted(predefined_modes))})") from None


def _report(args) -> int:
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend.tools.graphs import GRAPHS
    from llvm_backend.tools.measurements import DEFAULT_MODES, as_json, format_table, run_report

    graphs, modes = args.graph or list(GRAPHS), args.mode or list(DEFAULT_MODES)
    _check_modes(modes)
    results = run_report(graphs=graphs, modes=modes, progress=_progress)
    print(format_table(results))
    if args.json:
        with Path(args.json).open("w") as f:
            json.dump(as_json(results), f, indent=2)
    return 0


def _ir_output(args, inspections: dict) -> str:
    from llvm_backend.tools.inspect_ir import format_diff, format_stats

    scope = "kernel function" if args.kernel_only else "whole module"
    if args.stats:
        stats = {mode: i.stats(args.stage, args.kernel_only) for mode, i in inspections.items()}
        return format_stats(stats, f"{args.stage} IR, {scope}")
    texts = {mode: i.text(args.stage, args.kernel_only) for mode, i in inspections.items()}
    if args.diff:
        (mode, before), (diff_mode, after) = texts.items()
        label = f"{args.target} ({args.stage})"
        return format_diff(before, after, f"{label} [{mode}]", f"{label} [{diff_mode}]")
    return texts[args.mode]


def _ir_notes(args) -> None:
    from llvm_backend.tools.inspect_ir import NUMBA_STAGES

    if args.stage in NUMBA_STAGES:
        _progress(
            f"llvm-backend ir: recompiling {args.target} with PyTensor's numba cache off (numba__cache=False): "
            "under the cache the dispatcher is a one-line *args wrapper whose IR is a stub"
        )
    if args.stage == "llvm" and args.diff:
        _progress(
            f"llvm-backend ir: numba emits a helper once per process, so {args.diff}'s llvm stage lacks "
            f"the helpers {args.mode} compiled first (llvm-opt, linked, has them all)"
        )


def _ir(args) -> int:
    import pytensor

    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend.tools.inspect_ir import Inspection, InspectionError, load_target

    if args.diff == args.mode:
        raise UsageError(f"--diff {args.diff} compares {args.mode} with itself")
    modes = [args.mode, args.diff] if args.diff else [args.mode]
    _check_modes(modes)
    try:
        inputs, outputs = load_target(args.target)
        inspections = {mode: Inspection(pytensor.function(inputs, outputs, mode=mode)) for mode in modes}
        output = _ir_output(args, inspections)
    except InspectionError as error:
        raise UsageError(str(error)) from error
    _ir_notes(args)
    print(output)
    return 0


def _add_report(commands) -> None:
    from llvm_backend.tools.graphs import GRAPHS
    from llvm_backend.tools.measurements import DEFAULT_MODES

    report = commands.add_parser(
        "report",
        help="compile built-in graphs under NUMBA and LLVM and compare compile time, "
        "per-call time, allocations and kernel IR size",
    )
    report.add_argument(
        "--graph", action="append", choices=list(GRAPHS), help="graph to measure (repeatable; default: all)"
    )
    report.add_argument(
        "--mode", action="append", help=f"mode to measure (repeatable; default: {' '.join(DEFAULT_MODES)})"
    )
    report.add_argument("--json", metavar="FILE", help="also write the measurements to FILE as JSON")
    report.set_defaults(run=_report)


def _add_ir(commands) -> None:
    from llvm_backend.tools.inspect_ir import IR_STAGES, STAGES

    ir = commands.add_parser("ir", help="show the graph, generated code, LLVM IR or assembly a mode compiles")
    ir.add_argument(
        "target",
        metavar="TARGET",
        help="a built-in graph name, path/to/file.py:function or module:function returning (inputs, outputs)",
    )
    ir.add_argument("--stage", choices=STAGES, default="llvm-opt", help="what to show (default: llvm-opt)")
    ir.add_argument("--mode", default="LLVM", help="PyTensor mode to compile under (default: LLVM)")
    ir.add_argument(
        "--kernel-only", action="store_true", help="the kernel function alone, not numba's wrappers and callees"
    )
    ir.add_argument(
        "--stats",
        action="store_true",
        help="instruction counts by opcode, NRT allocation sites, calls and loops instead of text "
        f"(stages {', '.join(IR_STAGES)})",
    )
    ir.add_argument(
        "--diff", metavar="MODE", help="compare with a second mode: stats side by side, text as a unified diff"
    )
    ir.set_defaults(run=_ir)


def _cache(args) -> int:
    from llvm_backend.rewrite_cache.store import DEFAULT

    if args.action == "clear":
        print(f"removed {DEFAULT.clear()} rewritten graphs from {DEFAULT.directory}")
    else:
        entries = DEFAULT.entries()
        size = sum(p.stat().st_size for p in entries)
        print(f"{DEFAULT.directory}: {len(entries)} rewritten graphs, {size / 1e6:.1f} MB")
    return 0


def lowerings_table() -> str:
    """``LOWERINGS`` as a Markdown table: per op class, the intrinsic its lowering calls, the condition on the
    node, where its pack starts, and the function that builds the node function."""
    from llvm_backend.dispatch import LOWERINGS

    def name(obj) -> str:
        return f"{obj.__module__}.{obj.__qualname__}"

    rows = [
        [
            name(r.op_type),
            name(r.intrinsic),
            r.condition,
            "-" if r.pack_start is None else str(r.pack_start),
            name(r.funcify),
        ]
        for r in sorted(LOWERINGS.values(), key=lambda r: name(r.op_type))
    ]
    return _markdown_table(["op class", "intrinsic", "when", "pack start", "lowering"], rows)


def _lowerings(args) -> int:
    import llvm_backend  # noqa: F401  (registers our lowerings)

    print(lowerings_table())
    print(
        "Scalar Composites (in any Elemwise, FusedElemwise or ScalarizedElemwise): one function each, a plan of"
        " calls typed once per signature (llvm_backend.lowerings.composite): Add and Mul as + and *, Switch as"
        " llvm_backend_intrinsics.select.select, numpy-ufunc scalar ops as their ufunc; other inner ops call stock's."
    )
    print("Every other op: PyTensor's stock numba function, with its own cache entry.")
    return 0


def _add_lowerings(commands) -> None:
    lowerings = commands.add_parser("lowerings", help="the ops the LLVM mode lowers itself, and through what")
    lowerings.set_defaults(run=_lowerings)


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """``header`` and ``rows`` as a Markdown table, a ``|`` within a cell escaped."""
    escaped = [[cell.replace("|", r"\|") for cell in row] for row in rows]
    lines = [f"| {' | '.join(header)} |", f"| {' | '.join('---' for _ in header)} |"]
    lines += [f"| {' | '.join(row)} |" for row in escaped]
    return "\n".join(lines)


def rewrites_table() -> str:
    """The LLVM mode's rewrites (``llvm_backend.rewrites.registry``) as a Markdown table, in the order they run:
    per rewrite, the database it is registered in (``optdb`` or one of ours, itself a row of ``optdb``), its
    position there, the module defining it and the first sentence of its docstring, with the node rewriters run
    in one pass with it."""
    from llvm_backend.rewrites.registry import in_running_order

    def does(record) -> str:
        together = ", ".join(f"`{name}`" for name in record.together_with)
        return f"{record.summary} In one pass with {together}." if together else record.summary

    rows = [[r.name, r.database, str(r.position), r.module, does(r)] for r in in_running_order()]
    return _markdown_table(["rewrite", "database", "position", "module", "what it does"], rows)


def _rewrites(args) -> int:
    print(rewrites_table())
    return 0


def _add_rewrites(commands) -> None:
    rewrites = commands.add_parser("rewrites", help="the LLVM mode's own rewrites, where and in what order they run")
    rewrites.set_defaults(run=_rewrites)


def _first_sentence(doc: str) -> str:
    """The first sentence of a docstring, on one line."""
    return re.split(r"(?<=\.)\s+(?=[A-Z`])", " ".join(doc.split()), maxsplit=1)[0]


def changes_table() -> str:
    """Every process-wide change as a Markdown table, in the order ``import llvm_backend`` makes them
    (``llvm_backend.process.CHANGES``), then ``NUMBA_IS_LLVM``, made only while ``numba_is_llvm()`` is open: its
    name, its kind (the `Change` subclass), the library release series its seam is checked against, and the first
    sentence of its docstring."""
    from llvm_backend.adapters.pytensor import NUMBA_IS_LLVM
    from llvm_backend.process import CHANGES

    rows = []
    for change in (*CHANGES, NUMBA_IS_LLVM):
        seam = change.checked
        checked = "-" if seam is None else f"{seam.library} {seam.series}.x"
        rows.append([f"`{change.name}`", type(change).__name__, checked, _first_sentence(change.__doc__)])
    return _markdown_table(["change", "kind", "checked against", "what it changes"], rows)


def _changes(args) -> int:
    print(changes_table())
    return 0


def _add_changes(commands) -> None:
    changes = commands.add_parser(
        "changes", help="what importing llvm_backend changes in PyTensor, PyMC, nutpie and numba, and the checks"
    )
    changes.set_defaults(run=_changes)


def _add_cache(commands) -> None:
    cache = commands.add_parser("cache", help="the LLVM mode's cache of rewritten graphs: its size, or clear it")
    cache.add_argument("action", choices=["info", "clear"], nargs="?", default="info")
    cache.set_defaults(run=_cache)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="llvm-backend",
        description="Measure, inspect, benchmark and fuzz PyTensor's LLVM mode: report, ir, bench, lowerings, "
        "rewrites, changes, cache and fuzz.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _add_report(commands)
    _add_ir(commands)
    _add_lowerings(commands)
    _add_rewrites(commands)
    _add_changes(commands)
    _add_cache(commands)
    for plugin in sorted(entry_points(group=COMMAND_PLUGINS), key=lambda entry: entry.name):
        plugin.load()(commands)
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except UsageError as error:
        print(f"llvm-backend {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
