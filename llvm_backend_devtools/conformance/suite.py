"""PyTensor's test suite at a tag, extracted from a PyTensor git repository into a cache directory.

The tests are not in PyTensor's wheel or sdist, so they come from its repository: a local clone or
mirror (bare or not), or a URL cloned shallowly at the tag. Nothing of them enters our repository.
"""

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path
from unittest import mock

__all__ = [
    "DEFAULT_REPO",
    "MissingTag",
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


class MissingTag(LookupError):
    """The repository has no such tag; the message names the closest release tags it has."""


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


def release(tag: str) -> tuple[int, ...] | None:
    """The version numbers of a release tag, ``rel-3.3.0`` -> ``(3, 3, 0)``; None for another name."""
    match = re.fullmatch(r"rel-(\d+(?:\.\d+)*)", tag)
    return tuple(map(int, match.group(1).split("."))) if match else None


def missing_tag(source: str, tag: str, tags: list[str]) -> MissingTag:
    """The error for a ``tag`` that ``source`` lacks, given the tags it has: it suggests the newest release
    tag not after ``tag`` and says what to pass."""
    releases = sorted((v, t) for t in tags if (v := release(t)) is not None)
    message = f"{source} has no tag {tag}"
    if tag == installed_tag():
        message += f" (the installed PyTensor {importlib.metadata.version('pytensor')}'s, the default --tag)"
    if releases:
        wanted = release(tag)
        earlier = [t for v, t in releases if wanted is None or v <= wanted]
        suggestion = earlier[-1] if earlier else releases[-1][1]
        message += f"; its newest release tag is {releases[-1][1]}. Pass e.g. --tag {suggestion}"
    else:
        message += "; it has no release (rel-X.Y.Z) tags. Pass --tag with one it has"
    return MissingTag(message + ", or fetch the tag into the repository.")


def repository(source: str, tag: str, scratch: Path) -> Path:
    """A local repository holding ``tag``: ``source`` itself if it is a path, else a shallow clone in ``scratch``.

    Raises `MissingTag` if ``source`` has no ``tag``.
    """
    if Path(source).exists():
        found = ["git", "-C", source, "rev-parse", "--verify", "--quiet", f"{tag}^{{tree}}"]
        if subprocess.run(found, capture_output=True, check=False).returncode:
            raise missing_tag(source, tag, git(source, "tag", "--list").decode().split())
        return Path(source)
    clone = scratch / "clone"
    clone_command = ["git", "clone", "--quiet", "--bare", "--depth", "1", "--branch", tag, source, str(clone)]
    cloned = subprocess.run(clone_command, check=False)
    if cloned.returncode:
        listing = ["git", "ls-remote", "--tags", "--refs", source]
        remote = subprocess.run(listing, capture_output=True, text=True, check=False)
        tags = [line.rpartition("refs/tags/")[2] for line in remote.stdout.splitlines()]
        if remote.returncode == 0 and tag not in tags:
            raise missing_tag(source, tag, tags)
        cloned.check_returncode()
    return clone


def extract_suite(source: str, tag: str, cache_dir: Path) -> Path:
    """The suite at ``tag`` under ``cache_dir/pytensor-tests/<tag>``, extracted from ``source`` once.

    The tree holds ``EXTRACTED`` and a ``pytest.ini`` (written last: it marks a complete extraction),
    which makes the tree pytest's rootdir. Raises `MissingTag` if ``source`` has no ``tag``.
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
