"""Outcomes of a pytest run, read from its JUnit XML report (``--junitxml``)."""

from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

__all__ = ["OUTCOMES", "count", "read_outcomes"]

OUTCOMES = ("passed", "failed", "xfailed", "skipped", "error")
"""Every outcome a test case is given, in table order."""


def outcome(case: ElementTree.Element) -> str:
    """The outcome of one ``<testcase>``: a failure beats an error (of its teardown), which beats a skip."""
    children = {child.tag: child for child in case}
    if "failure" in children:
        return "failed"
    if "error" in children:
        return "error"
    if "skipped" in children:
        return "xfailed" if children["skipped"].get("type") == "pytest.xfail" else "skipped"
    return "passed"


def read_outcomes(path: Path) -> dict[str, str]:
    """Test id (``classname::name``; a collection error has the module path as name) -> outcome."""
    cases = ElementTree.parse(path).getroot().iter("testcase")
    return {f"{case.get('classname')}::{case.get('name')}": outcome(case) for case in cases}


def count(outcomes: dict[str, str]) -> dict[str, int]:
    """How many tests had each outcome, for every outcome of ``OUTCOMES`` (in that order)."""
    counts = Counter(outcomes.values())
    return {name: counts[name] for name in OUTCOMES}
