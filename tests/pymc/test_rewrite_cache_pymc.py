"""A PyMC model whose user code changed between two processes sharing one cache gets its new log density."""

import os
import subprocess
import sys
import textwrap

import pytest

MODEL = """
import numpy as np, pymc as pm, pytensor.tensor as pt
from pytensor.compile.ops import as_op
import llvm_backend

@as_op(itypes=[pt.dvector], otypes=[pt.dscalar])
def penalty(x):
    return np.asarray(-FACTOR * np.sum(x**2))

FACTOR = {factor}
with pm.Model() as model:
    mu = pm.Normal("mu", 0, 1)
    pm.Potential("penalty", penalty(pt.as_tensor(np.arange(5.0))))
    pm.Normal("obs", mu, 1, observed=np.arange(5.0))
logp = model.compile_logp(mode="LLVM")({{"mu": 0.3}})
stock = model.compile_logp(mode="NUMBA")({{"mu": 0.3}})
print(repr(float(logp)), repr(float(stock)), dict(llvm_backend.rewrite_cache.outcomes))
"""


@pytest.mark.slow
def test_a_potential_s_edited_as_op_gives_the_edited_model_s_logp(tmp_path):
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'compiledir'}"}
    env.pop("LLVM_BACKEND_REWRITE_CACHE", None)
    script = tmp_path / "model.py"
    printed = []
    for factor in (0.5, 0.5, 1.5):
        script.write_text(textwrap.dedent(MODEL.format(factor=factor)))
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        printed.append(done.stdout.splitlines()[-1].split(" ", 2))
    (first, first_stock, stored), (again, _, hit), (edited, edited_stock, stored_again) = printed
    assert first == first_stock and edited == edited_stock and first != edited
    assert again == first
    assert "'hit'" in hit and "'stored'" in stored and "'stored'" in stored_again
