"""Who imports whom: no import cycle among our modules, the change mechanism imports nothing of ours, only the
``llvm_backend.nutpie`` subpackage knows PyMC or nutpie, and the intrinsics know no PyTensor."""

import ast
import subprocess
import sys
from pathlib import Path

import llvm_backend
import llvm_backend_intrinsics

PACKAGES = {
    "llvm_backend": Path(llvm_backend.__file__).parent,
    "llvm_backend_intrinsics": Path(llvm_backend_intrinsics.__file__).parent,
}


def _modules() -> dict[str, Path]:
    """Every module of our runtime packages, by dotted name."""
    modules = {}
    for package, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = [package, *path.relative_to(root).with_suffix("").parts]
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _imported(path: Path) -> set[str]:
    """The absolute names ``path`` imports anywhere (at the top or inside functions); ``from a import b`` names
    ``a.b``, which `_importers` resolves to module ``a`` when ``b`` is no module."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _imports_of_ours(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (a name resolved to its longest prefix that is a module)."""
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imported(path):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan's algorithm, iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            successor = next(successors, None)
            if successor is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    if len(component) > 1:
                        found.append(sorted(component))
            elif successor not in index:
                index[successor] = low[successor] = len(index)
                stack.append(successor)
                on_stack.add(successor)
                work.append((successor, iter(sorted(graph[successor]))))
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
    return found


def test_the_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_our_modules():
    modules = _modules()
    graph = _imports_of_ours(modules)
    assert "llvm_backend.nutpie.compile_model" in graph["llvm_backend.nutpie"]
    assert "llvm_backend.nutpie" in graph["llvm_backend.process"]
    assert _cycles(graph) == []


def test_the_change_mechanism_imports_nothing_of_ours():
    modules = _modules()
    assert _imports_of_ours(modules)["llvm_backend.changes"] == set()


def test_only_the_nutpie_subpackage_imports_pymc_or_nutpie():
    knowing = {
        name
        for name, path in _modules().items()
        if any(imported.split(".")[0] in ("pymc", "nutpie") for imported in _imported(path))
    }
    assert "llvm_backend.nutpie.compile_model" in knowing
    assert {name for name in knowing if not name.startswith("llvm_backend.nutpie")} == set()


def test_the_intrinsics_import_no_pytensor():
    intrinsics = sorted(name for name in _modules() if name.startswith("llvm_backend_intrinsics"))
    assert "llvm_backend_intrinsics.loops" in intrinsics
    code = (
        "import importlib, sys\n"
        f"for name in {intrinsics!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted({name.split('.')[0] for name in sys.modules}))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'llvm_backend_intrinsics'" in loaded
    assert "'pytensor'" not in loaded
    assert "'llvm_backend'" not in loaded
