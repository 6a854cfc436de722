"""The layout: the backend proper never imports the tools, and `LOWERINGS` is the one table of what we lower."""

import ast
import dataclasses
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytensor.tensor as pt
import pytest
from pytensor.tensor.basic import Join, MakeVector
from pytensor.tensor.rewriting.scalarize import ScalarCAReduce, ScalarizedJoin

import llvm_backend
from llvm_backend.dispatch import LOWERINGS, MAX_ITEMS, lowering_for, packed_arguments, register_lowering
from llvm_backend_intrinsics.join import linear_join
from llvm_backend_intrinsics.reduction import full_reduce

BACKEND = Path(llvm_backend.__file__).parent
TOOL_PACKAGES = ("llvm_backend.tools", "llvm_backend_bench", "llvm_backend_devtools")


def test_importing_the_backend_imports_no_tool():
    code = "import sys, llvm_backend; print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "llvm_backend.linker" in loaded
    assert [name for name in loaded if name.startswith(TOOL_PACKAGES)] == []


def _imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_backend_module_imports_a_tool_even_lazily():
    backend_files = [p for p in BACKEND.rglob("*.py") if "tools" not in p.relative_to(BACKEND).parts]
    assert BACKEND / "linker.py" in backend_files
    offenders = {
        str(p.relative_to(BACKEND)): sorted(m for m in _imported_modules(p) if m.startswith(TOOL_PACKAGES))
        for p in backend_files
    }
    assert {path: modules for path, modules in offenders.items() if modules} == {}


PACKAGE_FOLDERS = {
    "llvm_backend_intrinsics": BACKEND.parent / "intrinsics" / "llvm_backend_intrinsics",
    "llvm_backend_bench": BACKEND.parent / "bench" / "llvm_backend_bench",
}
"""The packages that live below a folder of the repository's, each in a folder of its import name."""


@pytest.mark.parametrize(
    "package", ["llvm_backend", "llvm_backend_intrinsics", "llvm_backend_bench", "llvm_backend_devtools"]
)
def test_each_package_is_imported_from_a_folder_of_its_name(package):
    folder = Path(importlib.util.find_spec(package).origin).parent
    assert folder.name == package
    assert folder == PACKAGE_FOLDERS.get(package, BACKEND.parent / package)


def test_the_tests_mirror_the_packages():
    tests = BACKEND.parent / "tests"
    folders = [p.relative_to(tests) for p in tests.rglob("*") if p.is_dir() and p.name != "__pycache__"]
    folders = [folder for folder in folders if folder.parts[0] != "pymc"]  # what the `pymc` extra needs
    assert Path("llvm_backend", "rewrites") in folders
    assert [folder for folder in folders if not _is_package(".".join(folder.parts))] == []


def _is_package(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    return spec is not None and spec.submodule_search_locations is not None


MAX_FUNCTION_LINES = 60
"""The longest function the packages may hold, docstring included."""


def test_no_function_of_the_packages_is_over_60_lines():
    root = BACKEND.parent
    packages = [root / "llvm_backend", *PACKAGE_FOLDERS.values(), root / "llvm_backend_devtools"]
    long = [
        f"{path.relative_to(root)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for package in packages
        for path in sorted(package.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert all(package.is_dir() for package in packages)
    assert long == []


def test_lowerings_records_say_intrinsic_condition_and_pack_start():
    assert LOWERINGS[Join].intrinsic is linear_join and LOWERINGS[Join].condition.startswith("at most 1,000")
    assert LOWERINGS[ScalarizedJoin].pack_start == 0
    make_vector = LOWERINGS[MakeVector]
    assert make_vector.intrinsic is linear_join and make_vector.pack_start == 0
    assert make_vector.condition.startswith("at least one entry")
    reduce = LOWERINGS[ScalarCAReduce]
    assert reduce.intrinsic is full_reduce and reduce.pack_start is None and reduce.condition != "always"


def test_lookup_follows_the_ops_mro():
    class SubJoin(Join):
        pass

    assert lowering_for(SubJoin(0)) is LOWERINGS[Join]
    assert lowering_for(pt.argmax(pt.dvector()).owner.op) is None


def test_registering_an_op_twice_is_refused():
    with pytest.raises(ValueError, match="Join already has a lowering"):
        register_lowering(Join, linear_join)(lambda op, node: None)


def test_pack_starts_come_from_the_registry(monkeypatch):
    xs = [pt.dvector(f"x{k}") for k in range(MAX_ITEMS + 1)]
    node = pt.concatenate(xs).owner
    assert packed_arguments(node) == 0
    monkeypatch.setitem(LOWERINGS, Join, dataclasses.replace(LOWERINGS[Join], pack_start=None))
    assert packed_arguments(node) is None
    narrow = pt.stack([pt.dscalar(f"s{k}") for k in range(MAX_ITEMS)]).owner
    assert isinstance(narrow.op, MakeVector) and packed_arguments(narrow) is None


def test_the_lowerings_command_prints_every_record(capsys):
    from llvm_backend.tools.cli import main

    assert main(["lowerings"]) == 0
    out = capsys.readouterr().out
    assert "Switch as llvm_backend_intrinsics.select.select" in out
    rows = [line for line in out.splitlines() if line.startswith("| pytensor.")]
    assert len(rows) == len(LOWERINGS)
    [make_vector] = [row for row in rows if row.startswith("| pytensor.tensor.basic.MakeVector |")]
    assert make_vector.split(" | ")[1:4] == [
        "llvm_backend_intrinsics.join.linear_join",
        LOWERINGS[MakeVector].condition,
        "0",
    ]
