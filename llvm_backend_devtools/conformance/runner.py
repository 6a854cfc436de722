"""``python -m llvm_backend_devtools.conformance``: PyTensor's numba suite under stock NUMBA, then under LLVM.

Both runs are pytest subprocesses in the extracted suite (its rootdir), with the same environment; the
LLVM run adds ``-p llvm_backend_devtools.conformance.plugin --llvm-mode``. They run one after the other, echoing
their output, or with ``--concurrent`` at the same time (a core each; their output goes to the logs only).
The runner prints a table of outcome counts from their JUnit reports and the tests that pass under stock
but not under LLVM; it exits with 1 if there is any, 2 if the LLVM run did not compile through `LLVMLinker`.
``--stock-only`` runs NUMBA alone (its report is what ``--reuse-stock`` reuses later) and lists the tests it
does not pass; it exits with 0 once the run has written its report.
"""

import argparse
import importlib.metadata
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from llvm_backend.rewrite_cache.fingerprint import OWN_PACKAGES
from llvm_backend_devtools.conformance import SUMMARY_PREFIX
from llvm_backend_devtools.conformance.junit import OUTCOMES, count, read_outcomes
from llvm_backend_devtools.conformance.suite import (
    DEFAULT_REPO,
    MissingTag,
    default_cache_dir,
    extract_suite,
    installed_tag,
    suite_environment,
)

__all__ = ["RUNS", "import_path", "main", "regressions", "table"]

SUITE = "tests/link/numba"

RUNS = {
    "NUMBA": [],
    "LLVM": ["-p", "llvm_backend_devtools.conformance.plugin", "--llvm-mode"],
}
"""Run name -> the pytest arguments that make it."""

COMPILED = re.compile(rf"^{re.escape(SUMMARY_PREFIX)} LLVMLinker compiled (\d+) graphs.*$", re.MULTILINE)
REWRITES = re.compile(rf"^{re.escape(SUMMARY_PREFIX)} rewrite cache: .*$", re.MULTILINE)


def parse_args(argv):
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m llvm_backend_devtools.conformance", description=__doc__)
    parser.add_argument(
        "--pytensor-repo",
        default=DEFAULT_REPO,
        help="a PyTensor git repository: a path (clone or bare mirror) or a URL (default: %(default)s)",
    )
    parser.add_argument("--tag", default=installed_tag(), help="the tag to test (default: %(default)s)")
    parser.add_argument(
        "--cache-dir", type=Path, default=default_cache_dir(), help="where the suite goes (default: %(default)s)"
    )
    parser.add_argument("-k", dest="keyword", help="pytest's -k expression")
    parser.add_argument(
        "--reuse-stock",
        action="store_true",
        help="take the NUMBA run's outcomes from the last run's JUnit report in the logs, if there is one"
        " (the stock run does not depend on our code); run LLVM only",
    )
    parser.add_argument(
        "--stock-only",
        action="store_true",
        help="run NUMBA only, writing the report that a later --reuse-stock reuses; list the tests it fails",
    )
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="run NUMBA and LLVM at the same time, writing their output to the logs only",
    )
    parser.add_argument("files", nargs="*", default=[SUITE], help=f"test files or dirs (default: {SUITE})")
    args = parser.parse_args(argv)
    if args.stock_only and (args.reuse_stock or args.concurrent):
        parser.error("--stock-only runs NUMBA alone: it takes neither --reuse-stock nor --concurrent")
    return args


def resolve(tree: Path, name: str) -> str:
    """A test path relative to the suite tree; a bare file name is looked up in ``tests/link/numba``."""
    if (tree / name).exists() or not (tree / SUITE / name).exists():
        return name
    return f"{SUITE}/{name}"


def import_path(links: Path) -> str:
    """``PYTHONPATH`` for the runs: ``links``, holding a link to each of ``OWN_PACKAGES`` and nothing else,
    then the caller's entries except those holding a ``tests`` package (our repository's would
    shadow the suite's)."""
    for name in OWN_PACKAGES:
        (links / name).symlink_to(Path(importlib.util.find_spec(name).origin).parent)
    inherited = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [entry for entry in inherited if entry and not Path(entry, "tests", "__init__.py").exists()]
    return os.pathsep.join([str(links), *kept])


def pytest_command(args: list[str]) -> list[str]:
    """The pytest command line of a run."""
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE", *args]


def run_pytest(name: str, args: list[str], tree: Path, env: dict[str, str], logs: Path) -> str:
    """Run pytest in ``tree``, echoing its output and saving it to ``logs/<name>.log``; return the output."""
    command = pytest_command(args)
    print(f"== {name}: {' '.join(command)}  (in {tree})", flush=True)
    lines = []
    with subprocess.Popen(
        command, cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            lines.append(line)
    output = "".join(lines)
    (logs / f"{name}.log").write_text(output)
    return output


def run_pytest_concurrently(runs: dict[str, list[str]], tree: Path, env: dict[str, str], logs: Path) -> dict[str, str]:
    """Run pytest in ``tree`` once per ``runs`` entry, all at the same time, each writing its output to
    ``logs/<name>.log``; return run name -> output once every run has ended."""
    procs = {}
    for name, args in runs.items():
        command = pytest_command(args)
        print(f"== {name}: {' '.join(command)}  (in {tree}; output in {logs / name}.log)", flush=True)
        with (logs / f"{name}.log").open("w") as log:
            procs[name] = subprocess.Popen(command, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
    for proc in procs.values():
        proc.wait()
    return {name: (logs / f"{name}.log").read_text() for name in runs}


def regressions(stock: dict[str, str], llvm: dict[str, str]) -> dict[str, str]:
    """Tests passing under stock that do not pass under LLVM -> their LLVM outcome (``missing`` if absent)."""
    return {
        test: llvm.get(test, "missing")
        for test, outcome in stock.items()
        if outcome == "passed" and llvm.get(test) != "passed"
    }


def table(results: dict[str, dict[str, str]]) -> str:
    """A Markdown table of outcome counts, one row per run."""
    rows = ["| run | " + " | ".join(OUTCOMES) + " | total |", "| --- |" + " ---: |" * (len(OUTCOMES) + 1)]
    for name, outcomes in results.items():
        counts = count(outcomes)
        rows.append(f"| {name} | " + " | ".join(str(counts[o]) for o in OUTCOMES) + f" | {len(outcomes)} |")
    return "\n".join(rows)


def run_suite(args, tree: Path, logs: Path) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Run every ``RUNS`` entry (but a reused stock run); return run name -> test outcomes, and run name ->
    pytest's output for the runs it ran. A reused run needs only its JUnit report."""
    selection = [*(["-k", args.keyword] if args.keyword else []), *(resolve(tree, f) for f in args.files)]
    env = suite_environment(tree)
    reused = {"NUMBA"} if args.reuse_stock and (logs / "NUMBA.xml").exists() else set()
    wanted = ["NUMBA"] if args.stock_only else list(RUNS)
    runs = {name: [*RUNS[name], f"--junitxml={logs / name}.xml", *selection] for name in wanted if name not in reused}
    for name in runs:
        (logs / f"{name}.xml").unlink(missing_ok=True)
    for name in reused:
        print(f"== {name}: reusing {logs / name}.xml", flush=True)
    with tempfile.TemporaryDirectory() as links:
        env["PYTHONPATH"] = import_path(Path(links))
        if args.concurrent:
            outputs = run_pytest_concurrently(runs, tree, env, logs)
        else:
            outputs = {name: run_pytest(name, run_args, tree, env, logs) for name, run_args in runs.items()}
    results = {}
    for name in wanted:
        junit = logs / f"{name}.xml"
        if not junit.exists():
            sys.exit(f"the {name} run wrote no JUnit report: see {logs / name}.log")
        results[name] = read_outcomes(junit)
    return results, outputs


def main(argv=None) -> int:
    """Run the conformance comparison; the exit code says whether LLVM conforms."""
    args = parse_args(argv)
    try:
        tree = extract_suite(args.pytensor_repo, args.tag, args.cache_dir)
    except MissingTag as error:
        sys.exit(f"error: {error}")
    logs = args.cache_dir / "conformance-logs" / args.tag
    logs.mkdir(parents=True, exist_ok=True)
    if args.tag != installed_tag():
        print(f"== the suite of {args.tag} against the installed PyTensor {importlib.metadata.version('pytensor')}")
    results, outputs = run_suite(args, tree, logs)
    print(f"\nPyTensor {args.tag}, {' '.join(args.files)}{f' -k {args.keyword!r}' if args.keyword else ''}")
    print(table(results))
    if args.stock_only:
        unpassed = {test: outcome for test, outcome in results["NUMBA"].items() if outcome in ("failed", "error")}
        print(f"\nFailing under NUMBA: {len(unpassed)}")
        for test, outcome in sorted(unpassed.items()):
            print(f"  {outcome:8} {test}")
        print(f"(log and JUnit report in {logs}; --reuse-stock reuses them)")
        return 0
    compiled = COMPILED.search(outputs["LLVM"])
    print(compiled.group(0) if compiled else f"{SUMMARY_PREFIX} no compile count in the LLVM run's output")
    if rewrites := REWRITES.search(outputs["LLVM"]):
        print(rewrites.group(0))
    lost = regressions(results["NUMBA"], results["LLVM"])
    print(f"\nPassing under NUMBA, not under LLVM: {len(lost)}")
    for test, outcome in sorted(lost.items()):
        print(f"  {outcome:8} {test}")
    print(f"(logs and JUnit reports in {logs})")
    if lost:
        return 1
    return 0 if compiled and int(compiled.group(1)) > 0 else 2
