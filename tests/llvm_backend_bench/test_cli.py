"""The bench depends on the backend and its tools, never the reverse: no module under ``llvm_backend/`` imports
``llvm_backend_bench``, and ``llvm-backend bench`` is the bench's own subcommand, found through an entry point."""

import ast
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import llvm_backend
from llvm_backend.tools.cli import COMMAND_PLUGINS, main

BACKEND = Path(llvm_backend.__file__).parent
BENCH = "llvm_backend_bench"


def _bench_references(path: Path) -> list[str]:
    """The imports of the bench in ``path``, and the strings naming one of its modules (``import_module``'s or
    ``cold_call``'s ``"module:function"``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
    return [name for name in found if name == BENCH or name.startswith((f"{BENCH}.", f"{BENCH}:"))]


def test_no_module_of_llvm_backend_names_the_bench():
    modules = sorted(BACKEND.rglob("*.py"))
    assert BACKEND / "tools" / "cli.py" in modules
    offenders = {str(p.relative_to(BACKEND)): _bench_references(p) for p in modules}
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_scan_sees_every_way_of_naming_the_bench(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        f"import {BENCH}\nfrom {BENCH}.run import run_bench\ndef f():\n    import {BENCH}.cases as cases\n"
        f"job = '{BENCH}.cases:cold_compile_job'\nplain = 'text about {BENCH}'\n"
    )
    assert _bench_references(module) == [BENCH, f"{BENCH}.run", f"{BENCH}.cases", f"{BENCH}.cases:cold_compile_job"]


def test_the_cli_loads_without_the_bench():
    code = "import sys, llvm_backend.tools.cli; print('\\n'.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert "llvm_backend.tools.cli" in loaded
    assert [name for name in loaded if name.startswith(BENCH)] == []


def test_the_bench_registers_its_subcommand():
    plugins = [entry for entry in entry_points(group=COMMAND_PLUGINS) if entry.name == "bench"]
    assert len(plugins) == 1, "the installed metadata predates the entry point: pip install -e ."
    assert plugins[0].value == f"{BENCH}.cli:add_bench"


def test_an_unknown_bench_mode_goes_through_the_plugin(capsys):
    assert main(["bench", "--quick", "--mode", "BAD"]) == 2
    assert capsys.readouterr().err.startswith("llvm-backend bench: error: unknown mode BAD (modes: ")
