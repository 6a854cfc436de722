"""A real PyMC model's log-density and gradient under the LLVM mode (runs where the `pymc` extra is)."""

import numpy as np
import pymc as pm
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.function import LLVMFunction
from llvm_backend.linker import LLVMLinker
from llvm_backend.rewrites.supervisor import IndexedSupervisor
from llvm_backend.tools.testing import assert_same_result


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=40)
    with pm.Model() as model:
        intercept = pm.Normal("intercept", 0, 10)
        sigma = pm.HalfNormal("sigma", 1)
        nu = pm.Exponential("nu", 0.1)
        beta = pm.Normal("beta", 0, 1, shape=3)
        pm.StudentT("y", nu=nu, mu=intercept + X @ beta, sigma=sigma, observed=y)
    return model


@pytest.mark.slow
@pytest.mark.parametrize("ravel_inputs", [True, False])
def test_logp_dlogp_function_matches_numba(model, ravel_inputs):
    point = model.initial_point(0)
    point = {name: value + 0.1 for name, value in point.items()}
    results = {}
    for mode in ("NUMBA", "LLVM"):
        logp_dlogp = model.logp_dlogp_function(mode=mode, ravel_inputs=ravel_inputs)
        logp_dlogp.set_extra_values({})
        if ravel_inputs:
            args = np.concatenate([np.ravel(point[v.name]) for v in logp_dlogp._grad_vars])
        else:
            args = [point[v.name] for v in logp_dlogp._grad_vars]
        results[mode] = logp_dlogp(args)
        if mode == "LLVM":
            maker = logp_dlogp._pytensor_function.maker
            assert isinstance(maker.linker, LLVMLinker)
            # PyMC builds a plain Mode from ours: the linker's required rewrites bring the indexed supervisor.
            assert type(maker.fgraph._supervisor) is IndexedSupervisor
            # ... and its functions are ours, safe to call from several threads
            assert isinstance(logp_dlogp._pytensor_function, LLVMFunction)
    (logp, grad), (want_logp, want_grad) = results["LLVM"], results["NUMBA"]
    assert_same_result(logp, want_logp, "logp")
    assert_same_result(grad, want_grad, "dlogp")
    assert np.isfinite(logp) and grad.shape == (6,)
