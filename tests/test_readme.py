"""Every ```python block of README.md and docs/*.md runs as written, each in a fresh Python process, and so does
every `llvm-backend` command line of the README but those that take minutes, which are parsed."""

import ast
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from llvm_backend.tools.cli import _parser

ROOT = Path(__file__).parents[1]
TEXT = (ROOT / "README.md").read_text()
DOCUMENTS = {
    path.relative_to(ROOT).as_posix(): path.read_text() for path in [ROOT / "README.md", *ROOT.glob("docs/*.md")]
}
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.DOTALL | re.MULTILINE)
EXTRAS = ("pymc", "nutpie")
"""Modules of the ``pymc`` extra: a block importing one runs only where it is installed."""


def _section(text: str, offset: int) -> str:
    """The heading of the section of ``text`` that ``offset`` falls in."""
    return re.findall(r"^#+ (.*)$", text[:offset], re.MULTILINE)[-1]


SNIPPETS = [
    (f"{name}: {_section(text, m.start())}", m.group(1))
    for name, text in DOCUMENTS.items()
    for m in BLOCK.finditer(text)
]


def _imported(source: str) -> set[str]:
    """The top-level modules ``source`` imports."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_every_python_block_is_found():
    assert len(SNIPPETS) == sum(text.count("```python") for text in DOCUMENTS.values())
    assert {name.split(":")[0] for name, _ in SNIPPETS} >= {"README.md", "docs/adding_a_lowering.md"}


@pytest.mark.slow
@pytest.mark.parametrize("source", [source for _, source in SNIPPETS], ids=[section for section, _ in SNIPPETS])
def test_snippet_runs(source, tmp_path):
    for module in sorted(_imported(source) & set(EXTRAS)):
        pytest.importorskip(module)
    done = subprocess.run([sys.executable, "-c", source], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


COMMANDS = [shlex.split(line.strip(), comments=True) for line in re.findall(r"^    (llvm-backend .*)$", TEXT, re.M)]
SLOW = ("bench", "fuzz", "report")
"""Subcommands that take minutes: CI parses their lines (the options must exist and take the values shown)
and runs `bench --quick` and bounded fuzz runs in test_bench.py and test_fuzz.py."""


def test_every_command_line_is_found():
    assert len(COMMANDS) == len(re.findall(r"^    llvm-backend ", TEXT, re.M)) > 0
    assert {argv[1] for argv in COMMANDS} >= {"ir", "lowerings", "cache", "bench", "fuzz"}


@pytest.mark.slow
@pytest.mark.parametrize("argv", [argv for argv in COMMANDS if argv[1] not in SLOW], ids=" ".join)
def test_readme_command_runs(argv, tmp_path):
    # the console script installed beside this interpreter, whether or not its folder is on PATH
    command = [str(Path(sys.executable).parent / argv[0]), *argv[1:]]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()


@pytest.mark.parametrize("argv", [argv for argv in COMMANDS if argv[1] in SLOW], ids=" ".join)
def test_readme_slow_command_parses(argv):
    args = _parser().parse_args(argv[1:])
    assert args.command == argv[1]
