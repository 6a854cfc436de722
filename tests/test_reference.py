"""docs/reference.md: each table is what its command prints from the registry, so the page cannot go stale."""

from pathlib import Path

import pytest

import llvm_backend  # noqa: F401  (registers the lowerings and makes the changes the tables list)
from llvm_backend.dispatch import LOWERINGS
from llvm_backend.process import CHANGES
from llvm_backend.rewrites.registry import RECORDS
from llvm_backend.tools.cli import changes_table, lowerings_table, rewrites_table

REFERENCE = Path(__file__).parents[1] / "docs" / "reference.md"


def _table(heading: str) -> str:
    """The Markdown table under ``heading`` in docs/reference.md."""
    section = REFERENCE.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return "\n".join(line for line in section.splitlines() if line.startswith("|"))


@pytest.mark.parametrize(
    ("heading", "table"),
    [("Lowerings", lowerings_table), ("Rewrites", rewrites_table), ("Process-wide changes", changes_table)],
)
def test_each_table_is_its_commands_output(heading, table):
    assert _table(heading) == table()


def test_the_tables_have_a_row_per_registry_entry():
    assert len(_table("Lowerings").splitlines()) == 2 + len(LOWERINGS)
    assert len(_table("Rewrites").splitlines()) == 2 + len(RECORDS)
    rows = _table("Process-wide changes").splitlines()[2:]
    assert [row.split(" | ")[0].removeprefix("| ").strip("`") for row in rows] == [
        *(change.name for change in CHANGES),
        "numba_is_llvm",
    ]


def test_a_changed_docstring_shows_in_the_table(monkeypatch):
    monkeypatch.setattr(CHANGES[0], "__doc__", "Something else. More.")
    assert "| Something else. |" in changes_table()
    assert changes_table() != _table("Process-wide changes")
