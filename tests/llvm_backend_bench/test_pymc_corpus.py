"""The ``pymc_corpus`` family's summary: ratios to stock and to the references, and the models above stock."""

import math

import pytest

from llvm_backend.tools.measurements import FUNCTION_CALL, Measurement
from llvm_backend_bench.cases import REFERENCE
from llvm_backend_bench.pymc_corpus import format_summary, summarize


def _row(graph, mode, us, allocs=None):
    timed = FUNCTION_CALL if mode.endswith("Function") else "numba function"
    return Measurement(graph, mode, None, us, allocs, allocs, None, timed=timed)


def _model(graph, llvm, numba, llvm_allocs=3, numba_allocs=3, reference=None):
    rows = [
        _row(graph, "LLVM jit_fn", llvm, llvm_allocs),
        _row(graph, "NUMBA jit_fn", numba, numba_allocs),
        _row(graph, "LLVM Function", llvm + 1.0),
        _row(graph, "NUMBA Function", numba + 2.0),
        _row(graph, "JAX Function", 20.0),
    ]
    return rows if reference is None else [_row(graph, REFERENCE, reference, 2), *rows]


def test_the_summary_gives_each_models_ratios_and_the_geometric_mean():
    results = [*_model("a", 2.0, 4.0, reference=1.0), *_model("b", 3.0, 2.0, llvm_allocs=5)]
    summary = summarize(results)
    a, b = summary["models"]["a"], summary["models"]["b"]
    assert a["jit_fn_vs_numba"] == 0.5 and a["jit_fn_vs_reference"] == 2.0 and a["function_vs_numba"] == 0.5
    assert a["function_vs_jax"] == 3.0 / 20.0 and "jit_fn_vs_reference" not in b
    assert summary["jit_fn_vs_numba_geomean"] == pytest.approx(math.sqrt(0.5 * 1.5))
    assert summary["above_numba"] == ["b"] and summary["more_allocations"] == ["b"]
    text = format_summary(summary)
    assert "| a | 0.50 | 0.50 | 3 (3) | 2.00 | 0.15 |" in text
    assert "above stock: b; more allocations than stock: b" in text


def test_a_model_at_stock_is_not_above_it():
    summary = summarize(_model("a", 2.0, 2.0))
    assert summary["above_numba"] == [] and summary["more_allocations"] == []
    assert "above stock: none" in format_summary(summary)


def test_an_ablated_rewrite_is_summarized_as_its_times_over_llvms():
    results = [*_model("a", 2.0, 4.0), _row("a", "LLVM-r jit_fn", 3.0, 3), *_model("b", 4.0, 4.0)]
    results.append(_row("b", "LLVM-r jit_fn", 2.0, 3))
    ablation = summarize(results)["ablations"]["r"]
    assert ablation["models"] == {"a": 1.5, "b": 0.5}
    assert ablation["geomean"] == pytest.approx(math.sqrt(0.75))
    assert "LLVM without r / LLVM (jit_fn): geometric mean 0.866; a 1.50, b 0.50" in format_summary(summarize(results))
