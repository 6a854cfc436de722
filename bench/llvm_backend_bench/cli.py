"""The ``bench`` subcommand of ``llvm-backend``, registered by this package: ``pyproject.toml`` names `add_bench` in
the entry-point group ``llvm_backend.commands``, which `llvm_backend.tools.cli` loads, so that the backend and its
tools never import the bench."""

import re
import sys
from pathlib import Path

from llvm_backend.tools.cli import UsageError

__all__ = ["add_bench"]


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)  # noqa: T201  (a command-line front end)


def _bench(args) -> int:
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend_bench.cases import FLOOR, MODES, REFERENCE, select_cases
    from llvm_backend_bench.intrinsics import select_micro
    from llvm_backend_bench.run import format_bench_table, run_bench, write_results
    from llvm_backend_bench.time_to_posterior import select_posterior

    if args.filter is not None:
        try:
            re.compile(args.filter)
        except re.error as error:
            raise UsageError(f"--filter {args.filter!r} is not a regular expression: {error}") from None
    cases = select_cases(quick=args.quick, pattern=args.filter)
    micro = [] if args.quick else select_micro(args.filter)
    posterior = [] if args.quick else select_posterior(args.filter)
    if not cases and not micro and not posterior:
        raise UsageError(f"no case matches {args.filter!r}")
    known = (*MODES, REFERENCE, FLOOR)
    modes = tuple(args.mode or known)
    unknown = sorted(set(modes) - set(known))
    if unknown:
        raise UsageError(f"unknown mode {', '.join(unknown)} (modes: {' '.join(known)})")
    run = run_bench(cases, quick=args.quick, progress=_progress, modes=modes, micro=micro, posterior=posterior)
    print(format_bench_table(run))  # noqa: T201
    for path in write_results(run, Path(args.out)):
        _progress(f"wrote {path}")
    return 0


def add_bench(commands) -> None:
    """Add ``bench`` to the subcommands of ``llvm-backend`` (an ``argparse`` subparsers action)."""
    bench = commands.add_parser(
        "bench", help="benchmark the LLVM mode against NUMBA, CVM and hand-written @njit code; table, JSON, plots"
    )
    bench.add_argument(
        "--quick", action="store_true", help="a few small cases, few cold compiles (CI; under 3 minutes)"
    )
    bench.add_argument("--filter", metavar="PATTERN", help="only cases whose name matches this regular expression")
    bench.add_argument(
        "--mode",
        action="append",
        help="mode to measure (repeatable; default: NUMBA LLVM CVM @njit, the hand-written reference, and floor, a"
        " do-nothing @njit of the graph's inputs); leaving NUMBA out drops the ratio columns",
    )
    bench.add_argument("--out", metavar="DIR", default="bench-results", help="where to write bench.json and the plots")
    bench.set_defaults(run=_bench)
