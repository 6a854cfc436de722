"""The docs stay true: docs/architecture.md is short and names only what exists, the import rules it states hold,
and the runtime packages' docstrings and comments quote no benchmark figures (those are docs/decisions.md's and
bench/results/'s)."""

import ast
import importlib
import importlib.util
import io
import re
import sys
import tokenize
from importlib.metadata import entry_points
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
RUNTIME = [ROOT / "llvm_backend", ROOT / "intrinsics" / "llvm_backend_intrinsics"]
IMPORTABLE = ("llvm_backend", "llvm_backend_intrinsics", "llvm_backend_bench", "llvm_backend_devtools", "pytensor")

FIGURE = re.compile(
    r"\d(?:[\d,]*\d)?(?:\.\d+)?\s?(?:µs|us|ns|ms|s)\b"  # a time: 0.12 µs, 45 ns, 1.3 s
    r"|\b\d+(?:\.\d+)?x\b"  # a ratio: 1.3x
    r"|\b(?:pymc|pymc_limit|model|logp_grad|wide|join|reduction|index)/\w+_\d+\w*"  # a benchmark case
)
"""What a benchmark figure looks like in prose."""


def _spans(text: str) -> list[str]:
    """The backticked spans of ``text``, outside fenced blocks."""
    prose = re.sub(r"^```.*?^```$", "", text, flags=re.DOTALL | re.MULTILINE)
    return re.findall(r"`([^`\n]+)`", prose)


def _resolves(dotted: str) -> bool:
    """Whether ``dotted`` names a module, or an attribute reached from one; a module of ours that imports a
    library of an extra not installed here (``llvm_backend.nutpie.model_functions`` imports PyMC) is found by its
    spec."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        module = ".".join(parts[:end])
        try:
            target = importlib.import_module(module)
        except ModuleNotFoundError as error:
            if end == len(parts) and not error.name.startswith(IMPORTABLE) and importlib.util.find_spec(module):
                return True
            continue
        except ImportError:
            continue
        for name in parts[end:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


def test_the_architecture_page_is_at_most_150_lines():
    assert len(ARCHITECTURE.read_text().splitlines()) <= 150


def _source_text() -> str:
    return "\n".join(p.read_text() for folder in (*RUNTIME, ROOT / "bench") for p in folder.rglob("*.py"))


def test_every_path_and_name_the_architecture_page_gives_exists():
    """A path exists under the repository; a dotted name from one of our packages or PyTensor resolves to a module
    or an attribute (or is an entry-point group); any other identifier, or part of a dotted name
    (``LLVMLinker.fgraph_convert``), is a word of our source."""
    import llvm_backend  # noqa: F401  (registers what the page names)

    source = _source_text()
    missing = []
    for span in _spans(ARCHITECTURE.read_text()):
        if re.fullmatch(r"[\w.]+/[\w./]*", span):
            found = (ROOT / span).exists()
        elif re.fullmatch(r"\w+(\.\w+)+", span) and span.startswith(IMPORTABLE):
            found = _resolves(span) or bool(entry_points(group=span))
        elif re.fullmatch(r"@?\w+(\.\w+)*(\(\))?", span):
            found = all(re.search(rf"\b{part}\b", source) for part in span.strip("@()").split("."))
        else:
            continue
        if not found:
            missing.append(span)
    assert missing == []


def _top_level_imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_intrinsics_import_numba_llvmlite_numpy_and_scipy_only():
    allowed = {"numba", "llvmlite", "numpy", "scipy", "llvm_backend_intrinsics", *sys.stdlib_module_names}
    found = {p.name: sorted(_top_level_imports(p) - allowed) for p in RUNTIME[1].glob("*.py")}
    assert {name: modules for name, modules in found.items() if modules} == {}


@pytest.mark.parametrize("module", ["changes.py", "nutpie/model_functions.py"])
def test_a_module_of_mechanism_imports_nothing_of_the_package(module):
    assert "llvm_backend" not in _top_level_imports(ROOT / "llvm_backend" / module)


def test_the_rewrites_import_no_lowering_linker_or_intrinsic():
    found = {}
    for path in (ROOT / "llvm_backend" / "rewrites").glob("*.py"):
        tree = ast.parse(path.read_text())
        modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        ours = (m for m in modules if m.startswith("llvm_backend") and m != "llvm_backend.codegen")
        found[path.name] = sorted(m for m in ours if not m.startswith("llvm_backend.rewrites"))
    assert {name: modules for name, modules in found.items() if modules} == {}


def _prose(path: Path):
    """``(line, text)`` of every docstring (a string statement: modules', classes', functions' and attributes')
    and every comment of ``path``."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def test_the_runtime_docstrings_and_comments_quote_no_benchmark_figure():
    quoted = [
        f"{path.relative_to(ROOT)}:{line}: {', '.join(FIGURE.findall(text))}"
        for package in RUNTIME
        for path in sorted(package.rglob("*.py"))
        for line, text in _prose(path)
        if FIGURE.search(text)
    ]
    assert quoted == []


@pytest.mark.parametrize(
    "text", ["0.12 µs a call", "45 ns", "took 1.3 s", "2.6-3.4 µs", "1.40x the @njit", "pymc/regression_65p"]
)
def test_the_figure_pattern_finds_figures(text):
    assert FIGURE.search(text)


@pytest.mark.parametrize("text", ["a 400x48 matrix", "0x7f", "30 inputs", "logp_grad's loop", "its 2 outputs"])
def test_the_figure_pattern_leaves_other_numbers(text):
    assert not FIGURE.search(text)
