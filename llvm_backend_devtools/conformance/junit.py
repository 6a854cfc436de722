"""Outcomes of a pytest run, read from its JUnit XML report (``--junitxml``)."""

import re
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


ADDRESS = re.compile(r" at 0x[0-9a-f]+")
"""An object's address in a parameter id (``<function <lambda> at 0x7f...>``), which differs between runs."""


def test_id(case: ElementTree.Element) -> str:
    """``classname::name`` with object addresses masked, so two runs of one suite name a test alike."""
    return ADDRESS.sub(" at 0x…", f"{case.get('classname')}::{case.get('name')}")


def read_outcomes(path: Path) -> dict[str, str]:
    """Test id (`test_id`; a collection error has the module path as name) -> outcome. Ids that masking
    made equal are told apart by their order, `` #2`` on the second and so on."""
    outcomes, seen = {}, Counter()
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = test_id(case)
        seen[name] += 1
        outcomes[name if seen[name] == 1 else f"{name} #{seen[name]}"] = outcome(case)
    return outcomes


def count(outcomes: dict[str, str]) -> dict[str, int]:
    """How many tests had each outcome, for every outcome of ``OUTCOMES`` (in that order)."""
    counts = Counter(outcomes.values())
    return {name: counts[name] for name in OUTCOMES}
