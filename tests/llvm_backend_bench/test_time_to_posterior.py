"""The ``pymc/time_to_posterior`` family's run, JSON, table and plot (``llvm_backend_bench.time_to_posterior``), on rows
made here: measuring in fresh processes is the PyMC tests' (``tests/pymc/test_time_to_posterior.py``)."""

import json

import pytest
from matplotlib.colors import to_rgba

from llvm_backend.tools.cli import main
from llvm_backend_bench import time_to_posterior
from llvm_backend_bench.corpus import MODELS as CORPUS
from llvm_backend_bench.plots import PHASE_COLOURS, PHASE_PANELS_PER_ROW, PHASE_PLOT, mode_colour, phase_figure
from llvm_backend_bench.pymc_models import MODELS
from llvm_backend_bench.time_to_posterior import (
    BASELINES,
    CORPUS_FAMILY,
    FAMILY,
    JAX_SKIPPED,
    NUTPIE_BACKENDS,
    PHASES,
    SAMPLING,
    Posterior,
    as_json,
    format_phase_table,
    measure_posterior,
    model_builders,
    nutpie_rows,
    select_posterior,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PROCESSES = ("cold", "warm")


def made_phases(model: int, backend: int, process: str) -> dict[str, float]:
    """Seconds per phase that differ by model, backend and process, so that a value read from the wrong row shows."""
    scale = 4.0 if process == "cold" else 1.0
    return {phase: scale * model * backend * (i + 1) / 8 for i, phase in enumerate(PHASES)}


def made_rows(backends=NUTPIE_BACKENDS, models=tuple(MODELS)) -> list[Posterior]:
    return [
        Posterior(f"{FAMILY}/{model}", backend, process, made_phases(m, b, process), 3.0 * b, 1.0 * b, 10.0 * b)
        for m, model in enumerate(models, start=1)
        for b, backend in enumerate(backends, start=1)
        for process in PROCESSES
    ]


def test_the_family_is_one_case_per_model_of_the_pymc_bench_and_of_the_corpus():
    ours = [f"{FAMILY}/{model}" for model in MODELS]
    corpus = [f"{CORPUS_FAMILY}/{model}" for model in CORPUS]
    assert len(corpus) >= 16
    assert select_posterior() == ours + corpus
    assert select_posterior("^pymc/time_to_posterior") == ours
    assert select_posterior("^pymc_corpus/time_to_posterior") == corpus
    eight_schools = [f"{FAMILY}/eight_schools", *(case for case in corpus if "eight_schools" in case)]
    assert select_posterior("eight_schools") == eight_schools
    assert select_posterior("^pymc/eight") == []


def test_a_case_builds_its_model_from_the_pymc_bench_or_the_corpus():
    builders = model_builders()
    assert set(builders) == set(MODELS) | set(CORPUS)
    assert builders["eight_schools"] is MODELS["eight_schools"]
    assert builders["radon_centered_data"] == CORPUS["radon_centered_data"].build


def test_a_model_named_in_both_the_pymc_bench_and_the_corpus_is_refused(monkeypatch):
    monkeypatch.setitem(MODELS, "radon_centered_data", MODELS["eight_schools"])
    with pytest.raises(ValueError, match="radon_centered_data"):
        model_builders()


def test_the_json_has_every_model_backend_and_process_with_every_phase_and_its_ratios():
    section = as_json(made_rows())
    assert section["phases"] == PHASES
    by_key = {(r["case"], r["backend"], r["process"]): r for r in section["rows"]}
    assert list(by_key) == [(f"{FAMILY}/{m}", b, p) for m in MODELS for b in NUTPIE_BACKENDS for p in PROCESSES]
    for (case, backend, process), row in by_key.items():
        assert set(row["phases"]) == set(PHASES)
        assert row["total_s"] == pytest.approx(sum(row["phases"].values()))
        assert row["ready_s"] == pytest.approx(row["total_s"] - row["phases"][SAMPLING])
        for base in BASELINES:
            base_row, ratios = by_key[case, base, process], row["ratios"][base]
            assert ratios["total_s"] == pytest.approx(row["total_s"] / base_row["total_s"])
            assert ratios["ready_s"] == pytest.approx(row["ready_s"] / base_row["ready_s"])
            assert ratios["phases"] == pytest.approx({p: row["phases"][p] / base_row["phases"][p] for p in PHASES})
    assert by_key[f"{FAMILY}/eight_schools", "LLVM", "cold"]["ratios"]["NUMBA"]["total_s"] == pytest.approx(2.0)


def test_the_table_has_a_row_per_model_backend_and_process_with_its_phases_and_ratios():
    rows = made_rows()
    header, rule, *lines = format_phase_table(rows).splitlines()
    titles = [cell.strip() for cell in header.strip("|").split("|")]
    assert titles == ["case", "backend", "process", *(f"{t} s" for t in PHASES.values()), *titles[-2:]]
    assert titles[-2:] == ["ready s (x NUMBA, x JAX)", "total s (x NUMBA, x JAX)"]
    assert rule.count("---") == len(titles)
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    assert [c[:3] for c in cells] == [[r.case, r.backend, r.process] for r in rows]
    for row, line in zip(rows, cells, strict=True):
        assert line[3:-2] == [f"{row.phases[p]:.2f}" for p in PHASES]
        numba = next(r for r in rows if (r.case, r.process, r.backend) == (row.case, row.process, "NUMBA"))
        jax = next(r for r in rows if (r.case, r.process, r.backend) == (row.case, row.process, "JAX"))
        assert line[-1] == f"{row.total_s:.2f} ({row.total_s / numba.total_s:.2f}x, {row.total_s / jax.total_s:.2f}x)"


def test_without_jax_the_ratios_to_jax_are_missing():
    rows = made_rows(backends=("NUMBA", "LLVM"))
    assert {r["ratios"]["JAX"]["total_s"] for r in as_json(rows)["rows"]} == {None}
    first = format_phase_table(rows).splitlines()[2]
    assert first.endswith(f"| {rows[0].total_s:.2f} (1.00x, -) |")


def test_nutpie_rows_take_the_cold_process_and_the_warm_compile():
    rows = made_rows()
    summary = nutpie_rows(rows)
    assert [(r["case"], r["backend"]) for r in summary] == [
        (f"{FAMILY}/{m}", b) for m in MODELS for b in NUTPIE_BACKENDS
    ]
    for line in summary:
        cold, warm = (
            next(r for r in rows if (r.case, r.backend, r.process) == (line["case"], line["backend"], p))
            for p in PROCESSES
        )
        assert line == {
            "case": cold.case,
            "backend": cold.backend,
            "seconds": cold.total_s,
            "compile_s": cold.compile_s,
            "warm_compile_s": warm.compile_s,
            "sample_s": cold.sample_s,
            "us_per_gradient": cold.us_per_gradient,
        }


def test_the_phase_plot_keeps_each_phase_and_each_backend_in_its_colour():
    rows = made_rows()
    figure = phase_figure(rows)
    assert len(figure.axes) == len(MODELS) * len(PROCESSES)
    titles = {title: phase for phase, title in PHASES.items()}
    for axes in figure.axes:
        backends = [label.get_text() for label in axes.get_xticklabels()]
        assert backends == list(NUTPIE_BACKENDS)
        assert [to_rgba(t.get_color()) for t in axes.get_xticklabels()] == [to_rgba(mode_colour(b)) for b in backends]
        assert [bars.get_label() for bars in axes.containers] == list(PHASES.values())
        for bars in axes.containers:
            assert {bar.get_facecolor() for bar in bars} == {to_rgba(PHASE_COLOURS[titles[bars.get_label()]])}
            assert [bar.get_edgecolor() for bar in bars] == [to_rgba(mode_colour(b)) for b in backends]
    assert len(set(PHASE_COLOURS.values())) == len(PHASES)
    assert phase_figure([]) is None


def test_the_phase_plot_wraps_many_models_into_rows_cold_above_warm():
    models = [f"m{k}" for k in range(PHASE_PANELS_PER_ROW + 2)]
    figure = phase_figure(made_rows(models=models))
    geometry = {ax.get_title(): ax.get_subplotspec().get_geometry() for ax in figure.axes}
    assert len(geometry) == 2 * len(models)
    for (process, row), k in [(("cold", 0), 0), (("cold", 1), PHASE_PANELS_PER_ROW), (("warm", 2), 1)]:
        n_rows, n_columns, at, _ = geometry[f"{models[k]}, {process}"]
        assert (n_rows, n_columns) == (4, PHASE_PANELS_PER_ROW)
        assert divmod(at, n_columns) == (row, k % PHASE_PANELS_PER_ROW)


def fake_cold_call(calls: list):
    """A stand-in for ``cold_call`` that records its calls and answers as `nutpie_job` does, cold and warm."""

    def cold_call(target, name, backend, warm=False):
        calls.append((target, name, backend, warm))
        b = NUTPIE_BACKENDS.index(backend) + 1
        measured = {"phases": made_phases(1, b, "cold"), "compile_s": 3.0, "sample_s": 1.0, "us_per_gradient": 9.0}
        return (
            measured
            | {"warm_phases": made_phases(1, b, "warm")}
            | {f"warm_{key}": value for key, value in measured.items() if key != "phases"}
        )

    return cold_call


def test_every_backend_is_measured_cold_then_warm_in_fresh_processes(monkeypatch):
    calls = []
    monkeypatch.setattr(time_to_posterior, "cold_call", fake_cold_call(calls))
    monkeypatch.setattr(time_to_posterior, "_installed", lambda module: True)
    rows = measure_posterior([f"{FAMILY}/eight_schools"], progress=lambda _: None)
    job = "llvm_backend_bench.time_to_posterior:nutpie_job"
    assert calls == [(job, "eight_schools", backend, True) for backend in NUTPIE_BACKENDS]
    assert [(r.backend, r.process) for r in rows] == [(b, p) for b in NUTPIE_BACKENDS for p in PROCESSES]
    assert rows[1].phases == made_phases(1, 1, "warm") and rows[0].phases == made_phases(1, 1, "cold")


def test_without_jax_its_backend_is_skipped_with_a_message(monkeypatch):
    calls, messages = [], []
    monkeypatch.setattr(time_to_posterior, "cold_call", fake_cold_call(calls))
    monkeypatch.setattr(time_to_posterior, "_installed", lambda module: module != "jax")
    rows = measure_posterior([f"{FAMILY}/eight_schools"], progress=messages.append)
    assert [backend for _, _, backend, _ in calls] == ["NUMBA", "LLVM"]
    assert {r.backend for r in rows} == {"NUMBA", "LLVM"}
    assert f"{FAMILY}/eight_schools: {JAX_SKIPPED}" in messages
    assert "bench extra" in JAX_SKIPPED


def test_without_pymc_a_case_is_skipped_with_a_message(monkeypatch):
    calls, messages = [], []
    monkeypatch.setattr(time_to_posterior, "cold_call", fake_cold_call(calls))
    monkeypatch.setattr(time_to_posterior, "_installed", lambda module: module != "pymc")
    assert measure_posterior([f"{FAMILY}/eight_schools"], progress=messages.append) == []
    assert calls == []
    assert messages == [f"{FAMILY}/eight_schools: skipped (pymc not installed; install the project's pymc extra)"]


def test_the_bench_command_runs_the_family_and_writes_its_table_section_and_plot(monkeypatch, tmp_path, capsys):
    calls = []
    monkeypatch.setattr(time_to_posterior, "cold_call", fake_cold_call(calls))
    monkeypatch.setattr(time_to_posterior, "_installed", lambda module: True)
    assert main(["bench", "--filter", "^pymc/time_to_posterior/eight", "--out", str(tmp_path)]) == 0
    assert [backend for _, _, backend, _ in calls] == list(NUTPIE_BACKENDS)
    out = capsys.readouterr().out
    keys = [(b, p) for b in NUTPIE_BACKENDS for p in PROCESSES]
    assert [line.split("|")[2:4] for line in out.splitlines() if line.startswith(f"| {FAMILY}/")][: len(keys)] == [
        [f" {b} ", f" {p} "] for b, p in keys
    ]
    payload = json.loads((tmp_path / "bench.json").read_text())
    assert [(r["backend"], r["process"]) for r in payload["time_to_posterior"]["rows"]] == keys
    assert [r["backend"] for r in payload["nutpie"]] == list(NUTPIE_BACKENDS)
    assert payload["results"] == [] and payload["plots"] == [PHASE_PLOT]
    assert (tmp_path / PHASE_PLOT).read_bytes().startswith(PNG_MAGIC)
