"""The bench's ``pymc`` family (needs the ``pymc`` extra)."""

from dataclasses import replace

import pytest

import llvm_backend  # noqa: F401
from llvm_backend.tools.testing import assert_same_result
from llvm_backend_bench.cases import CASES, FLOOR, MODES
from llvm_backend_bench.pymc_models import MODELS, logp_dlogp_graph, pymc_compile
from llvm_backend_bench.run import run_bench


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_the_graph_is_what_logp_dlogp_function_computes(name):
    graph = logp_dlogp_graph(name)
    model = MODELS[name]()
    logp_dlogp = model.logp_dlogp_function(mode="NUMBA", ravel_inputs=True)
    logp_dlogp.set_extra_values({})
    want = logp_dlogp(graph.values[0])
    got = pymc_compile(graph, "LLVM")(*graph.values)
    for a, b in zip(got, want, strict=True):
        assert_same_result(a, b, name, rtol=1e-10)


@pytest.mark.slow
def test_a_pymc_case_measures_every_mode_and_no_reference():
    run = run_bench([CASES["pymc/eight_schools"]], quick=True, progress=lambda _: None)
    assert [r.mode for r in run.results] == [*MODES, FLOOR]
    assert run.nutpie == []  # --quick does not run nutpie


def test_a_case_whose_extra_is_missing_is_skipped_with_a_message():
    messages = []
    case = replace(CASES["pymc/eight_schools"], requires="a_module_nobody_installed")
    run = run_bench([case], quick=True, progress=messages.append)
    assert run.results == [] and "skipped (a_module_nobody_installed is not installed" in messages[0]
