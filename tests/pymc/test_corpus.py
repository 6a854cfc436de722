"""The PyMC corpus (`llvm_backend_bench.corpus`) and its bench family (`llvm_backend_bench.pymc_corpus`): every model
is correct under LLVM against the py linker and stock NUMBA, and every reference computes what PyMC does."""

import json

import numpy as np
import pytest
from pytensor.compile.mode import Mode
from pytensor.compile.sharedvalue import SharedVariable

import llvm_backend  # noqa: F401
from llvm_backend.tools.measurements import FUNCTION_CALL, NUMBA_CALL
from llvm_backend_bench.cases import REFERENCE
from llvm_backend_bench.corpus import CHECK_TOLERANCE, MODELS, CorpusModel, check_reference, corpus_graph
from llvm_backend_bench.pymc_corpus import main, measure_model
from llvm_backend_bench.pymc_models import pymc_compile

PY_MODE = Mode(linker="py", optimizer="fast_run")
POINTS = 4
WITH_REFERENCE = [name for name, model in MODELS.items() if model.reference is not None]


def _uses_data(model: CorpusModel) -> bool:
    return any(isinstance(v, SharedVariable) for v in model.build().data_vars)


def test_the_corpus_has_16_models_6_references_and_families_in_several_forms():
    families = {}
    for model in MODELS.values():
        families.setdefault(model.family, []).append(model)
    assert len(MODELS) >= 16 and len(WITH_REFERENCE) >= 6
    assert sum(len(forms) > 1 for forms in families.values()) >= 4
    with_data = [name for name, model in MODELS.items() if _uses_data(model)]
    assert 6 <= len(with_data) < len(MODELS)
    assert all(name in with_data for name in WITH_REFERENCE if "_data" in name)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_the_llvm_modes_logp_and_gradient_are_the_py_linkers_and_stocks(name):
    graph = corpus_graph(MODELS[name])
    llvm, stock, python = (pymc_compile(graph, mode) for mode in ("LLVM", "NUMBA", PY_MODE))
    rng = np.random.default_rng(4)
    x0 = graph.values[0]
    for x in [x0, *(x0 + rng.normal(0, 0.3, size=x0.size) for _ in range(POINTS - 1))]:
        (logp, grad), (stock_logp, stock_grad), (py_logp, py_grad) = llvm(x), stock(x), python(x)
        assert np.isfinite(py_logp) and np.all(np.isfinite(py_grad))
        # a gradient item summed from large terms of both signs (a random walk's, whose neighbours' terms cancel)
        # carries their rounding: absolute error to 1e-10 of the gradient's largest item
        atol = 1e-10 * np.abs(py_grad).max()
        np.testing.assert_allclose(logp, py_logp, rtol=1e-8)
        np.testing.assert_allclose(grad, py_grad, rtol=1e-7, atol=atol)
        np.testing.assert_allclose(logp, stock_logp, rtol=1e-8)
        np.testing.assert_allclose(grad, stock_grad, rtol=1e-7, atol=atol)


@pytest.mark.slow
@pytest.mark.parametrize("name", WITH_REFERENCE)
def test_the_reference_returns_pymcs_logp_and_gradient(name):
    model = MODELS[name]
    graph = corpus_graph(model)
    check_reference(model, graph, seed=7)
    logp, grad = model.reference(graph.values[0], *model.data())
    assert isinstance(logp, float) and grad.shape == graph.values[0].shape


def test_a_wrong_reference_fails_the_check_loudly():
    model = MODELS[WITH_REFERENCE[0]]

    def skewed(x, *data):
        logp, grad = model.reference(x, *data)
        return logp * (1 + 1e-9), grad

    wrong = CorpusModel(model.name, model.family, model.form, model.build, skewed, model.data)
    with pytest.raises(AssertionError, match=f"the @njit reference of {model.name} disagrees"):
        check_reference(wrong, corpus_graph(wrong), points=0)
    assert CHECK_TOLERANCE < 1e-9


def test_a_reference_needs_its_data():
    with pytest.raises(ValueError, match="a reference needs its data"):
        CorpusModel("m", "f", "form", lambda: None, reference=lambda x: (0.0, x))


@pytest.mark.slow
def test_a_model_with_data_is_measured_beside_its_reference_under_every_mode():
    name = next(n for n in WITH_REFERENCE if _uses_data(MODELS[n]))
    measured = measure_model(name, rounds=1, progress=lambda _: None)
    modes = [m.mode for m in measured]
    assert modes[0] == REFERENCE and {"LLVM jit_fn", "NUMBA jit_fn", "LLVM Function", "NUMBA Function"} <= set(modes)
    for m in measured:
        assert m.graph == f"pymc_corpus/{name}" and m.us_per_call > 0
        assert m.timed == (FUNCTION_CALL if m.mode.endswith("Function") else NUMBA_CALL)
        assert (m.allocs_per_call is not None) == (m.timed == NUMBA_CALL)


@pytest.mark.slow
def test_the_command_measures_each_model_in_a_process_and_writes_the_summary(tmp_path, capsys):
    out = tmp_path / "corpus.json"
    assert main(["--model", "linear_constant", "--rounds", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| pymc_corpus/linear_constant | LLVM jit_fn |" in printed and "geometric mean" in printed
    payload = json.loads(out.read_text())
    assert set(payload) == {"versions", "footnote", "cases", "summary", "results"}
    assert list(payload["cases"]) == ["pymc_corpus/linear_constant"]
    assert list(payload["summary"]["models"]) == ["pymc_corpus/linear_constant"]
    assert {row["graph"] for row in payload["results"]} == {"pymc_corpus/linear_constant"}


@pytest.mark.slow
def test_the_compile_family_measures_each_mode_cold_and_warm_in_fresh_processes(tmp_path):
    from llvm_backend_bench.corpus_compile import main as compile_main

    assert compile_main(["--model", "linear_data", "--json", str(tmp_path / "compile.json")]) == 0
    payload = json.loads((tmp_path / "compile.json").read_text())
    rows = {row["mode"]: row for row in payload["compiles"]}
    assert {"LLVM", "NUMBA"} <= set(rows)
    for row in rows.values():
        assert row["model"] == "linear_data" and 0 < row["warm_s"] and 0 < row["cold_s"]
    assert (
        payload["summary"]["models"]["linear_data"]["cold_vs_numba"] == rows["LLVM"]["cold_s"] / rows["NUMBA"]["cold_s"]
    )


def test_the_rewriting_family_times_each_pass_of_each_mode_in_a_fresh_process(tmp_path):
    from llvm_backend_bench.rewriting import main as rewriting_main

    out = tmp_path / "rewriting.json"
    assert rewriting_main(["--model", "eight_schools_centered", "--width", "2", "--json", str(out)]) == 0
    payload = json.loads(out.read_text())
    rows = {(row["graph"], row["mode"]): row for row in payload["rewriting"]}
    assert set(rows) == {(g, m) for g in ("eight_schools_centered", "wide_scales_2") for m in ("LLVM", "NUMBA")}
    for (_, mode), row in rows.items():
        assert row["nodes"] > 100 and row["other_s"] > 0
        assert {"canonicalize", "elemwise_fusion", "fuse_indexed_into_elemwise", "merge3"} <= set(row["passes"])
        assert ("llvm_backend_rewrites" in row["passes"]) == (mode == "LLVM")
        assert row["rewriting_s"] == pytest.approx(sum(row["passes"].values()))
    assert payload["growth"] == []  # one width: nothing to grow from
