"""The ``fuzz`` subcommand of ``llvm-backend``, registered by this package: ``pyproject.toml`` names `add_fuzz` in
the entry-point group ``llvm_backend.commands``, which `llvm_backend.tools.cli` loads, so that the backend never
imports the developer tools."""

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["add_fuzz"]


def _fuzz(args) -> int:
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend_devtools.fuzz.isolated import run_isolated

    end = "\r" if sys.stderr.isatty() else "\n"

    def progress(summary, note: str) -> None:
        print(f"{summary.status()}{note and ', '}{note}", end=end, file=sys.stderr, flush=True)

    summary = run_isolated(args.seed, args.graphs, args.minutes, Path(args.out), progress)
    print(file=sys.stderr)
    print(summary.format())
    return 1 if summary.failures else 0


def _positive(kind: type) -> Callable[[str], int | float]:
    """An argparse type: ``kind`` of the argument, refused (argparse's error, status 2) unless it is above 0."""

    def parse(text: str) -> int | float:
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text} (a fuzz run must check something)")
        return value

    parse.__name__ = kind.__name__  # argparse names it in "invalid int value: 'x'"
    return parse


def add_fuzz(commands) -> None:
    fuzz = commands.add_parser(
        "fuzz", help="check random graphs under LLVM against the py linker and stock NUMBA; write reproducers"
    )
    fuzz.add_argument("--seed", type=int, default=0, help="hypothesis seed (default: 0)")
    fuzz.add_argument(
        "--graphs", type=_positive(int), help="stop after this many graphs (default: 100 unless --minutes)"
    )
    fuzz.add_argument("--minutes", type=_positive(float), help="stop after this many minutes")
    fuzz.add_argument("--out", metavar="DIR", default="fuzz-results", help="where to write reproducers")
    fuzz.set_defaults(run=_fuzz)
