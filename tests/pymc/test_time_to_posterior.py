"""The ``pymc/time_to_posterior`` family measuring for real: nutpie on eight schools in fresh processes, and the
attributions of ``llvm_backend_bench.time_to_posterior`` on what they wrap (PyMC, nutpie, numba), put back
afterwards."""

import inspect

import numba
import numpy as np
import pytest

from llvm_backend.tools.coldcompile import cold_call
from llvm_backend_bench.phases import OTHER, PhaseTimer, resolve
from llvm_backend_bench.time_to_posterior import (
    CODEGEN,
    ENTRY_POINTS,
    LLVM,
    NUTPIE_SETUP,
    PHASES,
    SAMPLING,
    WRAPPED,
    attributed,
)

TOLERANCE_S = 0.05
"""What the clock around the measured call adds to the phases' span: the functions wrapped and put back."""


@pytest.mark.slow
def test_nutpie_on_llvm_is_split_into_every_phase_cold_and_warm():
    measured = cold_call("llvm_backend_bench.time_to_posterior:nutpie_job", "eight_schools", "LLVM", warm=True)
    for prefix in ("", "warm_"):
        phases, seconds = measured[f"{prefix}phases"], measured[f"{prefix}seconds"]
        assert set(phases) <= set(PHASES) and min(phases.values()) >= 0
        # LLVM compiles code in both processes (the warm one links what numba's cache holds): each phase has time
        assert {phase for phase, s in phases.items() if s > 0} >= set(PHASES) - {OTHER}
        assert sum(phases.values()) == pytest.approx(seconds, abs=TOLERANCE_S)
        ready = sum(phases.values()) - phases[SAMPLING]
        assert ready == pytest.approx(measured[f"{prefix}compile_s"], abs=TOLERANCE_S)
        assert phases[SAMPLING] == pytest.approx(measured[f"{prefix}sample_s"], abs=TOLERANCE_S)
    assert 0 < measured["us_per_gradient"] < measured["sample_s"] * 1e6 / measured["gradients"] * 10
    assert sum(measured["warm_phases"].values()) < sum(measured["phases"].values())


def _stored(owner: str, name: str) -> object:
    return inspect.getattr_static(resolve(owner), name)


def test_stock_nutpies_cfunc_is_entry_points_and_the_graph_it_calls_codegen_and_all_is_put_back():
    """What stock nutpie does in its compile, small: a ``numba.cfunc`` calling a numba function, compiled inside
    the measurement; the wrapped functions are nutpie's, PyMC's, PyTensor's and numba's own again after it."""
    originals = [_stored(owner, name) for owner, name, _ in WRAPPED]

    @numba.njit
    def graph(x):
        return np.exp(x) * 2.0

    timer = PhaseTimer()
    with attributed(timer, "NUMBA"), timer.phase(NUTPIE_SETUP):
        assert [_stored(owner, name) for owner, name, _ in WRAPPED] != originals
        entry = numba.cfunc("float64(float64)")(lambda x: graph(x) + 1.0)
    assert entry.ctypes(0.0) == 3.0
    seconds = timer.seconds()
    assert seconds[ENTRY_POINTS] > 0 and seconds[CODEGEN] > 0 and seconds[LLVM] > 0
    assert [_stored(owner, name) for owner, name, _ in WRAPPED] == originals
