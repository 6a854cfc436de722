"""The ``pymc_corpus/compile`` family's summary and table (``llvm_backend_bench.corpus_compile``), on rows made
here: measuring in fresh processes is the PyMC tests' (``tests/pymc/test_corpus.py``)."""

import math

import pytest

from llvm_backend_bench.corpus_compile import Compile, format_compiles, summarize


def _rows(model, llvm, numba, jax=None):
    rows = [Compile(model, "LLVM", *llvm), Compile(model, "NUMBA", *numba)]
    return rows if jax is None else [*rows, Compile(model, "JAX", *jax)]


def test_the_summary_gives_llvms_ratios_to_each_peer_cold_and_warm():
    rows = [*_rows("a", (2.0, 0.5), (4.0, 1.0), (1.0, 0.25)), *_rows("b", (3.0, 1.0), (1.5, 1.0))]
    summary = summarize(rows)
    assert summary["models"]["a"] == pytest.approx(
        {"cold_vs_numba": 0.5, "warm_vs_numba": 0.5, "cold_vs_jax": 2.0, "warm_vs_jax": 2.0}
    )
    assert summary["models"]["b"] == pytest.approx({"cold_vs_numba": 2.0, "warm_vs_numba": 1.0})
    assert summary["cold_vs_numba_geomean"] == pytest.approx(1.0)
    assert summary["warm_vs_numba_geomean"] == pytest.approx(math.sqrt(0.5))
    assert summary["cold_vs_jax_geomean"] == pytest.approx(2.0)
    assert summary["cold_above_numba"] == ["b"] and summary["cold_above_jax"] == ["a"]


def test_the_table_has_a_row_per_model_and_leaves_a_missing_peer_empty():
    rows = [*_rows("a", (2.0, 0.5), (4.0, 1.0), (1.0, 0.25)), *_rows("b", (3.0, 1.0), (1.5, 1.0))]
    table = format_compiles(rows, summarize(rows))
    lines = table.splitlines()
    assert lines[2] == "| a | 2.00 (0.50 / 2.00) | 0.50 (0.50 / 2.00) | 4.00 | 1.00 | 1.00 | 0.25 |"
    assert lines[3] == "| b | 3.00 (2.00) | 1.00 (1.00) | 1.50 | 1.00 |  |  |"
    assert "cold_vs_numba 1.000" in table and "warm_vs_jax 2.000" in table
