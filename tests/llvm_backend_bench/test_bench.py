import json

import numba
import numpy as np
import pytensor
import pytest
from matplotlib.colors import to_rgba
from pytensor import config

import llvm_backend  # noqa: F401
from llvm_backend.tools.cli import main
from llvm_backend.tools.graphs import join_arrays, logp_grad, reduction, scalar_index
from llvm_backend.tools.measurements import FUNCTION_CALL, NUMBA_CALL, Measurement, compile_runner
from llvm_backend.tools.testing import PY_MODE, compare_llvm_numba_and_py
from llvm_backend_bench.cases import CASES, FLOOR, MODES, QUICK_CASES, REFERENCE, select_cases
from llvm_backend_bench.intrinsics import (
    MICRO_CASES,
    Micro,
    format_micro_table,
    measure_micro,
    peer_arguments,
    select_micro,
)
from llvm_backend_bench.plots import (
    COMPILE_PLOT,
    MODE_COLOURS,
    PER_CALL_PLOT,
    compile_time_figure,
    compile_time_plot,
    mode_colour,
    per_call_figure,
    per_call_plot,
)
from llvm_backend_bench.run import BenchRun, format_bench_table

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
# One case per reference shape; the larger joins differ only in their number of inputs. A case needing an extra (the
# pymc_limit family) has its reference checked in tests/pymc, against stock NUMBA: the py linker cannot run PyMC's
# graphs of more than 32 terms.
REFERENCE_CASES = [
    name
    for name, case in CASES.items()
    if case.reference is not None and case.requires is None and (case.n is None or case.n <= 30)
]


@pytest.mark.slow
@pytest.mark.parametrize("name", REFERENCE_CASES)
def test_njit_reference_computes_what_the_graph_does(name):
    import pytensor

    case = CASES[name]
    graph = case.build()
    expected = pytensor.function(graph.inputs, graph.outputs, mode=PY_MODE)(*graph.values)
    got = case.reference(*case.reference_args(graph))
    got = tuple(got) if isinstance(got, tuple | list) else (got,)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-9)


@pytest.mark.slow
@pytest.mark.parametrize(
    "graph",
    [join_arrays([(3, 4), (3, 2), (3, 5)], 1), reduction("prod", 50), scalar_index(), logp_grad(n_data=50)],
    ids=lambda g: g.name,
)
def test_bench_graphs_agree_across_modes(graph):
    compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)


def test_cases_cover_the_issue():
    def sizes(family):
        return sorted(case.n for case in CASES.values() if case.family == family)

    assert sizes("join over N") == [8, 30, 60, 120, 240]
    assert sizes("N outputs over N") == sizes("sum of N sums over N") == [30, 60, 120, 240]
    families = {case.family for case in CASES.values()}
    assert families == {
        "join over N",
        "join geometry",
        "N outputs over N",
        "sum of N sums over N",
        "full reduction",
        "pymc",
        "scalar index",
        "logp+grad",
        "model",
    }
    assert "model/regression_65p" in CASES
    geometries = {"join/vectors_60", "join/2d_axis1", "join/2d_axis0", "join/3d_axis2"}
    assert geometries | {"logp_grad/3s_v8", "logp_grad/60s_v8", "logp_grad/3s_v8_d10000", "index/x3"} <= set(CASES)


def test_cases_are_selected_by_pattern():
    assert [c.name for c in select_cases(quick=True)] == list(QUICK_CASES)
    assert [c.name for c in select_cases(pattern="^reduction/")] == [
        "reduction/sum",
        "reduction/max",
        "reduction/prod",
        "reduction/fused_sum",
        "reduction/multi_sum",
    ]
    assert select_cases(quick=True, pattern="3d") == []


def fake_results():
    rows = []
    for n, scale in ((8, 1.0), (30, 4.0)):
        for mode, factor in (("NUMBA", 1.0), ("LLVM", 0.5), ("CVM", 2.0)):
            timed = FUNCTION_CALL if mode == "CVM" else NUMBA_CALL
            numba = mode != "CVM"
            rows.append(
                Measurement(
                    f"join/vectors_{n}",
                    mode,
                    scale * factor,
                    2.0 * factor,
                    9.0 if numba else None,
                    1.0 if numba else None,
                    50 if numba else None,
                    2000 if numba else None,
                    timed,
                )
            )
    cases = {f"join/vectors_{n}": {"family": "join over N", "description": "", "n": n} for n in (8, 30)}
    return rows, cases


def test_table_puts_each_ratio_next_to_its_value_and_stars_function_timings():
    rows, cases = fake_results()
    table = format_bench_table(BenchRun(True, rows, cases)).splitlines()
    assert table[0] == "| case | mode | cold compile s | us/call | allocs/call | kernel IR instr | unopt IR instr |"
    assert table[2] == "| join/vectors_8 | NUMBA | 1.00 | 2.00 | 9.0 | 50 | 2000 |"
    llvm_cells = "0.50 (0.50x) | 1.00 (0.50x) | 9.0 (1.00x) | 50 (1.00x) | 2000 (1.00x)"
    assert table[3] == f"| join/vectors_8 | LLVM | {llvm_cells} |"
    assert table[4] == "| join/vectors_8 | CVM* | 2.00 (2.00x) | 4.00 (2.00x) | - | - | - |"
    assert "* timed through the PyTensor Function" in table[-1]


def test_plots_are_pngs_and_the_compile_plot_needs_cold_compiles(tmp_path):
    rows, cases = fake_results()
    assert compile_time_plot(rows, cases, tmp_path / COMPILE_PLOT).read_bytes().startswith(PNG_MAGIC)
    assert per_call_plot(rows, tmp_path / PER_CALL_PLOT).read_bytes().startswith(PNG_MAGIC)
    no_n = {name: {**case, "n": None} for name, case in cases.items()}
    assert compile_time_plot(rows, no_n, tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def drawn_colours(figure) -> dict[str, tuple]:
    """Mode -> the RGBA colour its lines and bars are drawn in, over every panel of ``figure`` (one per mode)."""
    drawn = {}
    for axes in figure.axes:
        for line in axes.get_lines():
            drawn.setdefault(line.get_label(), set()).add(to_rgba(line.get_color()))
        for bars in axes.containers:
            drawn.setdefault(bars.get_label(), set()).update(to_rgba(bar.get_facecolor()) for bar in bars)
    assert all(len(colours) == 1 for colours in drawn.values()), drawn
    return {mode: colours.pop() for mode, colours in drawn.items()}


def test_each_mode_has_one_colour_in_every_figure():
    assert set(MODE_COLOURS) == {*MODES, REFERENCE, FLOOR}
    assert len(set(MODE_COLOURS.values())) == len(MODE_COLOURS)
    rows, cases = fake_results()
    others = [
        Measurement(r.graph, mode, r.cold_compile_s, r.us_per_call, None, None, None)
        for r in rows
        if r.mode == "NUMBA"
        for mode in (REFERENCE, FLOOR, "JAX")
    ]
    all_modes = rows + others
    some_modes = [r for r in rows + others if r.mode in ("CVM", FLOOR, "JAX")]
    figures = [
        compile_time_figure(all_modes, cases),
        compile_time_figure(some_modes, cases),
        per_call_figure(all_modes),
        per_call_figure(some_modes),
    ]
    expected = {mode: to_rgba(mode_colour(mode)) for mode in ("NUMBA", "LLVM", "CVM", REFERENCE, FLOOR, "JAX")}
    assert [drawn_colours(figure) for figure in figures] == [
        expected,
        {mode: expected[mode] for mode in ("CVM", FLOOR, "JAX")},
    ] * 2
    assert to_rgba(mode_colour("JAX")) not in {to_rgba(colour) for colour in MODE_COLOURS.values()}


@pytest.mark.slow
def test_quick_bench_writes_table_json_and_plots(tmp_path, capsys):
    assert main(["bench", "--quick", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert f"[1/{len(QUICK_CASES)}] {QUICK_CASES[0]}: compiling" in captured.err
    table_rows = [line for line in captured.out.splitlines() if line.startswith("| ") and "---" not in line][1:]
    labels = [*MODES, REFERENCE, FLOOR]
    assert [row.split("|")[1:3] for row in table_rows] == [
        [f" {case} ", f" {mode}{'*' if mode == 'CVM' else ''} "] for case in QUICK_CASES for mode in labels
    ]
    payload = json.loads((tmp_path / "bench.json").read_text())
    assert payload["quick"] is True
    assert set(payload["cases"]) == set(QUICK_CASES)
    assert sorted(payload["plots"]) == sorted([COMPILE_PLOT, PER_CALL_PLOT])
    for plot in payload["plots"]:
        assert (tmp_path / plot).read_bytes().startswith(PNG_MAGIC)
    for row in payload["results"]:
        case = CASES[row["graph"]]
        assert (row["cold_compile_s"] is not None) == (row["mode"] in case.quick_cold_modes)
        assert row["us_per_call"] > 0
        numba_code = row["mode"] != "CVM"
        assert row["timed"] == (NUMBA_CALL if numba_code else FUNCTION_CALL)
        assert (row["allocs_per_call"] is not None) == numba_code
        assert (row["kernel_ir_instructions"] is not None) == numba_code
        cold_numba_compile = numba_code and row["mode"] in case.quick_cold_modes
        assert (row["unoptimized_ir_instructions"] is not None) == cold_numba_compile


@pytest.mark.slow
def test_a_run_of_some_modes_measures_only_those():
    from llvm_backend_bench.run import run_bench

    run = run_bench([CASES["index/x3"]], quick=True, progress=lambda _: None, modes=("LLVM", "CVM"))
    assert sorted({r.mode for r in run.results}) == ["CVM", "LLVM"]
    run = run_bench([CASES["index/x3"]], quick=True, progress=lambda _: None, modes=("LLVM", REFERENCE))
    assert sorted({r.mode for r in run.results}) == sorted(["LLVM", REFERENCE])
    table = format_bench_table(run)
    assert "| index/x3 | LLVM |" in table and "NUMBA |" not in table


def test_bench_refuses_an_unknown_mode(capsys):
    assert main(["bench", "--filter", "index", "--mode", "NUMBAA"]) == 2
    assert "unknown mode NUMBAA" in capsys.readouterr().err


@pytest.mark.parametrize("name", list(MICRO_CASES))
def test_each_intrinsic_microbenchmark_computes_what_its_peer_does(name):
    micro = MICRO_CASES[name]
    arguments = micro.arguments()
    # the peer's Python source is numpy: run as Python, it gives the values without numba's compile
    np.testing.assert_allclose(micro.ours(*arguments), micro.peer.py_func(*peer_arguments(arguments)), rtol=1e-9)


def test_a_microbenchmark_of_ones_own_is_measured_and_tabulated():
    @numba.njit
    def mine(x):
        return x.sum() * 2.0

    @numba.njit
    def theirs(x):
        return np.sum(x) + np.sum(x)

    micro = Micro("mine/double_sum", "sum twice", mine, theirs, lambda: (np.ones(100),))
    results = measure_micro([micro], rounds=2, progress=lambda _: None)
    assert [(r.side, r.function) for r in results] == [("ours", "mine"), ("peer", "theirs")]
    for r in results:
        assert r.compile_s > 0 and r.us_per_call > 0 and r.ir_instructions > 0
        assert r.allocs_per_call == 1  # the input array, unboxed
    [_, _, ours, peer] = format_micro_table(results).splitlines()
    ratio = results[0].us_per_call / results[1].us_per_call
    assert ours.startswith("| mine/double_sum | ours | mine |") and f"({ratio:.2f}x)" in ours
    assert "x)" not in peer
    assert [m.name for m in select_micro("^intrinsics/full_reduce/sum")] == [
        "intrinsics/full_reduce/sum_1000",
        "intrinsics/full_reduce/sum_1000000",
    ]


@pytest.mark.parametrize("mode", ["NUMBA", "LLVM", "CVM"])
def test_a_case_that_compiles_its_own_way_is_timed_on_what_it_compiles(mode):
    """A PyMC case is timed on the function PyMC's compile makes (with PyMC's rewrites), not on a plain
    ``pytensor.function`` of the same graph: the runner calls the case's compile, with the numba cache off."""
    graph = logp_grad()
    calls = []

    def first_output_only(graph, mode):
        calls.append((mode, config.numba__cache))
        return pytensor.function(graph.inputs, graph.outputs[:1], mode=mode)

    runner = compile_runner(graph, mode, first_output_only)
    assert calls == [(mode, False)]
    [logp] = runner.call()
    expected = pytensor.function(graph.inputs, graph.outputs[0], mode=PY_MODE)(*graph.values)
    np.testing.assert_allclose(logp, expected, rtol=1e-12)
