"""``bench/results/``: one folder per case family, whose files hold that family's rows only, and a README whose
links all resolve."""

import json
import re
from pathlib import Path

RESULTS = Path(__file__).parents[2] / "bench" / "results"
ROW_KEYS = {"results": "graph", "nutpie": "case", "intrinsics": "case"}


def test_each_family_folder_holds_its_own_rows():
    files = sorted(RESULTS.glob("*/*.json"))
    assert {p.parent.name for p in files} >= {"join", "wide", "reduction", "logp_grad", "model", "pymc", "intrinsics"}
    for path in files:
        payload = json.loads(path.read_text())
        names = [*payload["cases"]] + [row[key] for field, key in ROW_KEYS.items() for row in payload.get(field, [])]
        names += [row["case"] for row in payload.get("time_to_posterior", {}).get("rows", [])]
        assert names, path
        assert {name.split("/")[0] for name in names} == {path.parent.name}, path


def test_every_link_of_the_results_readme_resolves():
    readme = RESULTS / "README.md"
    text = readme.read_text()
    anchors = {
        re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-") for title in re.findall(r"^#+ (.*)$", text, re.M)
    }
    broken = []
    for link in re.findall(r"\]\(([^)]+)\)", text):
        path, _, anchor = link.partition("#")
        if (path and not (readme.parent / path).exists()) or (not path and anchor not in anchors):
            broken.append(link)
    assert broken == []
