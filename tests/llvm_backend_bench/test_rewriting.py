"""The ``pymc_corpus/rewriting`` family's growth exponents and table (``llvm_backend_bench.rewriting``), on rows made
here: measuring in fresh processes is the PyMC tests' (``tests/pymc/test_corpus.py``)."""

import pytest

from llvm_backend_bench.rewriting import Rewriting, format_rewriting, growth


def _row(graph, mode, nodes, **passes):
    return Rewriting(graph, mode, nodes, passes, other_s=0.5)


ROWS = [
    _row("wide_scales_16", "LLVM", 1000, canonicalize=1.0, merge3=0.5),
    _row("wide_scales_32", "LLVM", 2000, canonicalize=2.0, merge3=2.0),
    _row("wide_scales_16", "NUMBA", 1000, canonicalize=2.0, merge3=0.01),
    _row("wide_scales_32", "NUMBA", 2000, canonicalize=4.0, merge3=0.02),
    _row("eight_schools", "LLVM", 200, canonicalize=0.1),
]


def test_growth_is_the_exponent_of_rewriting_seconds_against_nodes_per_mode():
    llvm, numba = growth(ROWS)
    assert llvm["mode"] == "LLVM" and (llvm["from"], llvm["to"]) == ("wide_scales_16", "wide_scales_32")
    assert llvm["exponent"] == pytest.approx(1.415, abs=1e-3)  # 1.5 s to 4 s over twice the nodes
    assert (llvm["worst_pass"], llvm["worst_exponent"]) == ("merge3", pytest.approx(2.0))
    # A pass under 5% of the rewriting is not named, however it grew.
    assert numba["exponent"] == pytest.approx(1.0) and numba["worst_pass"] == "canonicalize"


def test_the_table_has_a_row_per_graph_with_the_slowest_passes_then_the_growth():
    lines = format_rewriting(ROWS).splitlines()
    passes = "canonicalize 1.00, merge3 0.50 | canonicalize 2.00, merge3 0.01"
    assert lines[2] == f"| wide_scales_16 | 1000 | 1.50 (0.75x) | 2.01 | {passes} |"
    assert lines[4] == "| eight_schools | 200 | 0.10 |  | canonicalize 0.10 |  |"
    assert "| LLVM | wide_scales_16 | wide_scales_32 | 1.42 | merge3 (2.00) |" in lines
