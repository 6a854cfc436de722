"""The ``llvm-backend`` command."""

import argparse
import json
import sys

__all__ = ["main"]


def _report(args) -> int:
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend.report import as_json, format_table, run_report

    def progress(message):
        print(message, file=sys.stderr, flush=True)

    results = run_report(graphs=args.graph, modes=args.mode, progress=progress)
    print(format_table(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(as_json(results), f, indent=2)
    return 0


def _parser() -> argparse.ArgumentParser:
    from llvm_backend.graphs import GRAPHS
    from llvm_backend.report import DEFAULT_MODES

    parser = argparse.ArgumentParser(prog="llvm-backend", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    report = commands.add_parser(
        "report",
        help="compile built-in graphs under NUMBA and LLVM and compare compile time, "
        "per-call time, allocations and kernel IR size",
    )
    report.add_argument(
        "--graph", action="append", choices=list(GRAPHS), help="graph to measure (repeatable; default: all)"
    )
    report.add_argument("--mode", action="append", help=f"mode to measure (repeatable; default: {' '.join(DEFAULT_MODES)})")
    report.add_argument("--json", metavar="FILE", help="also write the measurements to FILE as JSON")
    report.set_defaults(run=_report)
    return parser


def main(argv=None) -> int:
    from llvm_backend.graphs import GRAPHS
    from llvm_backend.report import DEFAULT_MODES

    args = _parser().parse_args(argv)
    if args.command == "report":
        args.graph = args.graph or list(GRAPHS)
        args.mode = args.mode or list(DEFAULT_MODES)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
