import json
from dataclasses import replace

import numpy as np
import pytest

from llvm_backend.tools.cli import main
from llvm_backend.tools.coldcompile import cold_call, cold_compile_seconds
from llvm_backend.tools.graphs import GRAPHS, concatenate
from llvm_backend.tools.measurements import (
    FUNCTION_CALL,
    NUMBA_CALL,
    Measurement,
    compile_runner,
    format_inline_table,
    format_table,
    measure_runners,
)
from llvm_backend.tools.testing import compare_llvm_numba_and_py
from llvm_backend_bench.run import COLUMNS as BENCH_COLUMNS


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRAPHS))
def test_builtin_graphs_agree_across_modes(name):
    graph = GRAPHS[name]()
    compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)


@pytest.mark.slow
def test_report_command_prints_and_saves_real_measurements(tmp_path, capsys):
    out = tmp_path / "report.json"
    assert main(["report", "--graph", "full_reduction", "--json", str(out)]) == 0
    printed = capsys.readouterr()
    assert "measuring full_reduction" in printed.err
    lines = printed.out.strip().splitlines()
    assert lines[0].startswith("| graph | mode | cold compile s | us/call")
    assert [line.split("|")[2].strip() for line in lines[2:]] == ["NUMBA", "LLVM", "LLVM/NUMBA"]
    rows = json.loads(out.read_text())
    assert [r["mode"] for r in rows] == ["NUMBA", "LLVM"]
    for row in rows:
        assert row["cold_compile_s"] > 0 and row["us_per_call"] > 0
        assert row["kernel_ir_instructions"] > 0
        # x is unboxed (one MemInfo); the scalar output is boxed in a 0-d array by both today.
        assert row["allocs_per_call"] - row["net_allocs_per_call"] == 1


def test_cold_compile_reports_failures():
    with pytest.raises(RuntimeError, match="cold compile of no_such_graph under LLVM failed"):
        cold_compile_seconds("no_such_graph", "LLVM")


def test_table_ratios_are_against_numba():
    rows = [
        Measurement("g", "NUMBA", 2.0, 4.0, 10.0, 8.0, 100),
        Measurement("g", "LLVM", 1.0, 1.0, 4.0, 2.0, 50),
    ]
    ratio_row = format_table(rows).splitlines()[-1]
    assert ratio_row == "| g | LLVM/NUMBA | 0.50x | 0.25x | 0.40x | 0.25x | 0.50x |"


def test_table_shows_missing_values_as_dashes():
    rows = [
        Measurement("g", "NUMBA", None, 4.0, 10.0, 8.0, 100),
        Measurement("g", "CVM", None, 8.0, None, None, None, timed=FUNCTION_CALL),
    ]
    assert format_table(rows).splitlines()[-1] == "| g | CVM/NUMBA | - | 2.00x | - | - | - |"


def test_cold_call_reports_failures():
    with pytest.raises(RuntimeError, match=r"cold compile of llvm_backend\.tools\.graphs:no_such_function"):
        cold_call("llvm_backend.tools.graphs:no_such_function")


def test_runners_of_numba_and_other_modes():
    graph = GRAPHS["full_reduction"]()
    numba_runner = compile_runner(graph, "NUMBA")
    assert numba_runner.timed == NUMBA_CALL and numba_runner.unboxed_arrays == 1
    assert numba_runner.kernel.name in numba_runner.kernel.optimized_ir
    cvm_runner = compile_runner(graph, "CVM")
    assert cvm_runner.timed == FUNCTION_CALL and cvm_runner.kernel is None
    np.testing.assert_allclose(cvm_runner.call(), numba_runner.call())
    cold = {"NUMBA": {"seconds": 1.5, "unoptimized_ir_instructions": 1234}}
    cvm, numba = measure_runners("full_reduction", [cvm_runner, numba_runner], cold, rounds=1, n_calls=5)
    assert cvm.allocs_per_call is None and cvm.kernel_ir_instructions is None and cvm.cold_compile_s is None
    assert numba.allocs_per_call - numba.net_allocs_per_call == 1
    assert numba.cold_compile_s == 1.5 and numba.unoptimized_ir_instructions == 1234
    assert numba.kernel_ir_instructions > 0


def test_llvm_runner_calls_as_the_thunk_does_building_packs():
    graph = concatenate(40, 4)
    runner = compile_runner(graph, "LLVM")
    [out] = runner.call()
    np.testing.assert_array_equal(out, np.concatenate(graph.values))
    assert runner.unboxed_arrays == 40
    assert "ArrayPack" in str(runner.kernel.signature)


def test_a_warm_cold_call_reuses_the_caches_of_the_first():
    measured = cold_call("llvm_backend_bench.cases:cold_compile_job", "index/x3", "LLVM", warm=True)
    assert measured["seconds"] > 0 and measured["warm_seconds"] > 0
    # The second process loads the graph from the on-disk cache: numba emits (almost) no IR there.
    assert measured["warm_unoptimized_ir_instructions"] < measured["unoptimized_ir_instructions"] / 10


def test_a_column_no_result_has_is_left_out():
    rows = [Measurement("g", "NUMBA", 1.0, 2.0, 3.0, 2.0, 10), Measurement("g", "LLVM", 0.5, 1.0, 2.0, 1.0, 5)]
    header = format_inline_table(rows, BENCH_COLUMNS).splitlines()[0]
    assert "warm compile s" not in header and "cold compile s" in header
    rows[1] = replace(rows[1], warm_compile_s=0.2)
    assert "warm compile s" in format_inline_table(rows, BENCH_COLUMNS).splitlines()[0]
