"""PyTensor's test suite at a tag, extracted from a PyTensor git repository into a cache directory.

The tests are not in PyTensor's wheel or sdist, so they come from its repository: a local clone or
mirror (bare or not), or a URL cloned shallowly at the tag. Nothing of them enters our repository.
"""

import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path
from unittest import mock

__all__ = [
    "DEFAULT_REPO",
    "default_cache_dir",
    "extract_suite",
    "installed_tag",
    "pytest_ini",
    "suite_environment",
]

DEFAULT_REPO = "https://github.com/pymc-devs/pytensor"

EXTRACTED = ("tests", "conftest.py")
"""What of the repository the suite needs: the ``tests`` package and the root conftest."""

DROPPED_INI_OPTIONS = ("addopts", "testpaths")
"""PyTensor's pytest options that concern its whole repository (doctests of ``pytensor/``, durations)."""


def installed_tag() -> str:
    """The tag of the installed PyTensor release, ``rel-<version>``."""
    return f"rel-{importlib.metadata.version('pytensor')}"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/llvm-backend`` (``~/.cache/llvm-backend``)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "llvm-backend")


def git(repo: Path | str, *args: str) -> bytes:
    """The output of ``git -C repo args``."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def pytest_ini(pyproject: str) -> str:
    """A ``pytest.ini`` with PyTensor's pytest options from its ``pyproject.toml``, but ``DROPPED_INI_OPTIONS``."""
    options = tomllib.loads(pyproject).get("tool", {}).get("pytest", {}).get("ini_options", {})
    lines = ["[pytest]"]
    for key, value in options.items():
        if key in DROPPED_INI_OPTIONS:
            continue
        if isinstance(value, list):
            lines.append(f"{key} =" + "".join(f"\n    {item}" for item in value))
        elif isinstance(value, bool):
            lines.append(f"{key} = {str(value).lower()}")
        else:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def repository(source: str, tag: str, scratch: Path) -> Path:
    """A local repository holding ``tag``: ``source`` itself if it is a path, else a shallow clone in ``scratch``."""
    if Path(source).exists():
        return Path(source)
    clone = scratch / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", "--bare", "--depth", "1", "--branch", tag, source, str(clone)],
        check=True,
    )
    return clone


def extract_suite(source: str, tag: str, cache_dir: Path) -> Path:
    """The suite at ``tag`` under ``cache_dir/pytensor-tests/<tag>``, extracted from ``source`` once.

    The tree holds ``EXTRACTED`` and a ``pytest.ini`` (written last: it marks a complete extraction),
    which makes the tree pytest's rootdir.
    """
    tree = cache_dir / "pytensor-tests" / tag
    if (tree / "pytest.ini").exists():
        return tree
    tree.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tree.parent) as scratch:
        repo = repository(source, tag, Path(scratch))
        staging = Path(scratch, "tree")
        staging.mkdir()
        archive = git(repo, "archive", tag, *EXTRACTED)
        subprocess.run(["tar", "-x", "-C", str(staging)], input=archive, check=True)
        (staging / "pytest.ini").write_text(pytest_ini(git(repo, "show", f"{tag}:pyproject.toml").decode()))
        shutil.rmtree(tree, ignore_errors=True)
        staging.rename(tree)
    return tree


def suite_environment(tree: Path) -> dict[str, str]:
    """The environment after the suite's root conftest's ``pytest_sessionstart`` (which sets PyTensor
    and numba flags), so a process can start with it: the LLVM run imports PyTensor before session start.
    """
    spec = importlib.util.spec_from_file_location("pytensor_suite_conftest", tree / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    with mock.patch.dict(os.environ):
        if hasattr(conftest, "pytest_sessionstart"):
            conftest.pytest_sessionstart(session=None)
        return dict(os.environ)
