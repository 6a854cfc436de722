"""Reproducers: a generated graph written as a runnable Python module.

The module rebuilds the graph and its inputs from the generator's source (`GraphSpec.module`: PyTensor
statements and numpy expressions, no pickles) and, run as a script, checks it with the oracle and exits 1 on a
mismatch or crash.
"""

import hashlib
from pathlib import Path

from llvm_backend_devtools.fuzz.generator import IMPORTS, GraphSpec
from llvm_backend_devtools.fuzz.oracle import Outcome

__all__ = ["NOT_CHECKED", "reproducer_source", "write_crash", "write_reproducer"]

NOT_CHECKED = "(not checked yet: written before the compile; left behind, it is the graph the process died on)"

_MAIN = """

if __name__ == "__main__":
    import llvm_backend  # noqa: F401  (registers the LLVM mode)
    from llvm_backend_devtools.fuzz.oracle import check

    inputs, outputs = build()
    outcome = check(inputs, outputs, values, stock={stock})
    print(outcome.report())
    raise SystemExit(1 if outcome.failures else 0)
"""


def reproducer_source(spec: GraphSpec, outcome: Outcome | None = None) -> str:
    """The module: a docstring with what the oracle found, the imports, ``build()``, ``values()`` and a main."""
    found = outcome.report() if outcome is not None else NOT_CHECKED
    docstring = (
        '"""A graph from `llvm-backend fuzz`.\n\nThe oracle found:\n\n' + found.replace('"""', "'''") + '\n"""\n\n'
    )
    return docstring + IMPORTS + "\n\n" + spec.module + _MAIN.format(stock=not spec.wide)


def write_reproducer(directory: Path, kind: str, spec: GraphSpec, outcome: Outcome) -> Path:
    """Write the reproducer to ``directory/<kind>-<hash of the graph>.py`` and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(spec.module.encode()).hexdigest()[:12]
    path = directory / f"{kind}-{digest}.py"
    path.write_text(reproducer_source(spec, outcome))
    return path


def write_crash(directory: Path, pending: str, message: str, kind: str = "crash") -> Path:
    """Write ``pending`` (a reproducer written before its graph was checked) as ``<kind>-<hash>.py`` in
    ``directory``, what the oracle found replaced by ``message`` (how the process died), and return its path."""
    directory.mkdir(parents=True, exist_ok=True)
    source = pending.replace(NOT_CHECKED, message.replace('"""', "'''"), 1)
    path = directory / f"{kind}-{hashlib.sha256(pending.encode()).hexdigest()[:12]}.py"
    path.write_text(source)
    return path
