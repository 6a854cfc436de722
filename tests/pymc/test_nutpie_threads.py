"""nutpie's concurrent chains on the LLVM mode's kernels: real PyMC and nutpie, no mocks.

``nutpie.sample(chains=4, cores=2)`` runs two chains at a time, each on a thread of nutpie's own (Rust, no GIL)
calling our ``vm.jit_fn`` from its ``numba.cfunc``. The log density and gradient nutpie records at every draw
must equal those PyMC's own ``compile_logp``/``compile_dlogp`` compute single-threaded, in the main thread, with
PyTensor's Python implementations (``FAST_COMPILE``) at the same unconstrained points. And the entry points
called from 4 threads at once on distinct points, from Python and from a GIL-free numba loop, must return
exactly what one thread gets: shared mutable state (a buffer reused across calls, an output aliasing one)
would show as a mismatch.

nutpie's graph takes one vector; a graph of 6+ 0-d float64 inputs takes them as a scalar pack
(`llvm_backend.codegen.SCALAR_PACK_MIN`), which ``logp_dlogp_function(ravel_inputs=False)`` of a model of
9 scalar parameters compiles: the threads cover that entry point too.
"""

import functools
import sys
import threading

import numba
import numpy as np
import pymc as pm
import pytest

import llvm_backend.nutpie
from llvm_backend.linker import LLVMLinker
from llvm_backend_bench.pymc_models import eight_schools

# The pymc extra brings nutpie (tests/conftest.py skips this folder without PyMC); llvm_backend.nutpie imports
# it only when it compiles.
nutpie = pytest.importorskip("nutpie")

THREADS = 4
CALLS = 500
ROUNDS = 200


def nine_scalars():
    """8 Normal parameters and a HalfNormal one (its value log-transformed): 9 0-d value variables."""
    with pm.Model() as model:
        xs = [pm.Normal(f"x{i}", 0.5 * i - 1.0, 1.0 + 0.25 * i) for i in range(8)]
        sigma = pm.HalfNormal("sigma", 2.0)
        pm.Normal(
            "obs", sum(c * x for c, x in zip(np.linspace(-1, 1, 8), xs, strict=True)), sigma, observed=[1.0, 2.5, -0.5]
        )
    return model


MODELS = {"eight schools": eight_schools, "9 scalars": nine_scalars}


class Model:
    """A PyMC model, nutpie's compile of it under the LLVM mode, and PyMC's own single-threaded log density and
    gradient of its value variables (``FAST_COMPILE``: PyTensor's Python implementations)."""

    def __init__(self, name):
        self.name = name
        self.model = MODELS[name]()
        self.compiled = llvm_backend.nutpie.compile_pymc_model(self.model)
        assert isinstance(self.compiled.logp_func.maker.linker, LLVMLinker)
        self.logp = self.model.compile_logp(mode="FAST_COMPILE")
        self.dlogp = self.model.compile_dlogp(mode="FAST_COMPILE")
        # nutpie's unconstrained vector: the free variables' values in model.free_RVs order, each raveled; the
        # gradient compile_dlogp joins is in model.value_vars order, the same.
        initial = self.model.initial_point(0)
        self.layout = [
            (self.model.rvs_to_values[rv].name, np.shape(initial[self.model.rvs_to_values[rv].name]))
            for rv in self.model.free_RVs
        ]
        assert [name for name, _ in self.layout] == [v.name for v in self.model.value_vars]
        assert sum(int(np.prod(shape)) for _, shape in self.layout) == self.compiled.n_dim

    def point(self, flat) -> dict:
        point, start = {}, 0
        for name, shape in self.layout:
            size = int(np.prod(shape))
            point[name] = flat[start : start + size].reshape(shape)
            start += size
        return point

    def labels(self) -> list[str]:
        """nutpie's names of the unconstrained vector's entries (``theta_0``, ...)."""
        labels = []
        for name, shape in self.layout:
            labels += [name] if shape == () else [f"{name}_{k}" for k in range(int(np.prod(shape)))]
        return labels

    def reference(self, flat):
        point = self.point(flat)
        return float(self.logp(point)), np.asarray(self.dlogp(point))


@functools.cache
def model_of(name) -> Model:
    return Model(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_concurrent_chains_record_the_single_threaded_logp(name):
    model = model_of(name)
    trace = nutpie.sample(
        model.compiled,
        chains=4,
        cores=2,
        draws=100,
        tune=100,
        seed=11,
        progress_bar=False,
        store_unconstrained=True,
        store_gradient=True,
    )
    n_checked = 0
    for group in ("warmup_sample_stats", "sample_stats"):
        stats = trace[group]
        assert list(stats["unconstrained_draw"].coords["unconstrained_parameter"].values) == model.labels()
        assert stats.sizes["chain"] == 4 and stats.sizes["draw"] == 100
        draws = stats["unconstrained_draw"].values
        logps, grads = stats["logp"].values, stats["gradient"].values
        for chain in range(4):
            for draw in range(100):
                want_logp, want_grad = model.reference(draws[chain, draw])
                where = f"{model.name}: {group} chain {chain} draw {draw} at {draws[chain, draw]}"
                np.testing.assert_allclose(logps[chain, draw], want_logp, rtol=1e-10, atol=0, err_msg=where)
                np.testing.assert_allclose(grads[chain, draw], want_grad, rtol=1e-9, atol=1e-12, err_msg=where)
                n_checked += 1
    assert n_checked == 800
    # The chains are four different runs that moved: the comparison above covered many distinct points.
    kept = trace["sample_stats"]["unconstrained_draw"].values
    assert len({tuple(p) for p in kept.reshape(-1, model.compiled.n_dim)}) > 200
    assert len({tuple(kept[chain, -1]) for chain in range(4)}) == 4


class Entry:
    """A compiled logp+gradient's ``vm.jit_fn``, called at a flat point from Python, or ``rounds`` times at each
    of ``points`` from a numba loop that releases the GIL (`loop`), as nutpie's threads call it."""

    def __init__(self, fn, scalar_inputs):
        self.jit_fn = fn.vm.jit_fn
        self.shared = tuple(var.get_value() for var in fn.get_shared())
        self.scalar_inputs = scalar_inputs
        args = ", ".join(f"np.asarray(p[{k}])" for k in range(scalar_inputs)) if scalar_inputs else "p"
        args += "".join(f", shared[{k}]" for k in range(len(self.shared)))
        source = (
            "def loop(points, want_logps, want_grads, rounds, shared):\n"
            "    mismatches, first = 0, -1\n"
            "    for _ in range(rounds):\n"
            "        for i in range(points.shape[0]):\n"
            "            p = points[i]\n"
            f"            logp, grad = jit_fn({args})\n"
            "            same = logp[()] == want_logps[i] and grad.shape[0] == want_grads.shape[1]\n"
            "            for k in range(want_grads.shape[1]):\n"
            "                same = same and grad[k] == want_grads[i, k]\n"
            "            if not same:\n"
            "                mismatches += 1\n"
            "                first = i if first < 0 else first\n"
            "    return mismatches, first\n"
        )
        namespace = {"np": np, "jit_fn": self.jit_fn}
        exec(compile(source, "<test_nutpie_threads loop>", "exec"), namespace)
        self._loop = numba.njit(nogil=True)(namespace["loop"])

    def __call__(self, flat):
        if self.scalar_inputs:
            return self.jit_fn(*(np.asarray(v) for v in flat), *self.shared)
        return self.jit_fn(flat, *self.shared)

    def loop(self, points, want_logps, want_grads, rounds) -> tuple[int, int]:
        """The number of calls whose logp or gradient differs from ``want_logps[i]``, ``want_grads[i]`` (exactly),
        and the first such ``i`` (-1 if none)."""
        return self._loop(points, want_logps, want_grads, rounds, self.shared)


def entry_of(model, kind) -> Entry:
    if kind == "nutpie's logp_func":
        return Entry(model.compiled.logp_func, scalar_inputs=0)
    logp_dlogp = model.model.logp_dlogp_function(mode="LLVM", ravel_inputs=False)
    logp_dlogp.set_extra_values({})
    fn = logp_dlogp._pytensor_function
    assert [v.name for v in logp_dlogp._grad_vars] == [name for name, _ in model.layout]
    packs = fn.vm.graph_source.packs
    assert [(str(p.numba_type), p.positions) for p in packs] == [("ScalarPack(float64, 9)", tuple(range(9)))]
    return Entry(fn, scalar_inputs=len(model.layout))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "kind"),
    [("eight schools", "nutpie's logp_func"), ("9 scalars", "nutpie's logp_func"), ("9 scalars", "scalar pack")],
)
def test_threads_get_what_one_thread_gets(name, kind):
    model = model_of(name)
    entry = entry_of(model, kind)
    rng = np.random.default_rng(7)
    points = rng.normal(scale=0.7, size=(THREADS, CALLS, model.compiled.n_dim))
    # The reference: one thread (this one), each result copied as it comes.
    want = [[tuple(np.array(out, copy=True) for out in entry(p)) for p in rows] for rows in points]
    for rows, results in zip(points, want, strict=True):
        for p, (logp, grad) in list(zip(rows, results, strict=True))[::25]:
            want_logp, want_grad = model.reference(p)
            np.testing.assert_allclose(logp, want_logp, rtol=1e-10, atol=0)
            np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-12)
    assert len({float(logp) for results in want for logp, _ in results}) == THREADS * CALLS

    want_logps = np.array([[float(logp) for logp, _ in results] for results in want])
    want_grads = np.array([[grad for _, grad in results] for results in want])
    assert entry.loop(points[0], want_logps[0], want_grads[0], 1) == (0, -1)  # numba compiles the loop here

    got_python: list = [None] * THREADS
    got_nogil: list = [None] * THREADS
    errors: list = []
    barrier = threading.Barrier(THREADS, timeout=60)

    def work(t):
        try:
            barrier.wait()
            got_python[t] = [entry(p) for p in points[t]]  # kept as returned: an aliased output would change later
            barrier.wait()
            # ROUNDS x CALLS calls, 10 to 50 ms, far longer than a thread takes to start: run at once
            got_nogil[t] = entry.loop(points[t], want_logps[t], want_grads[t], ROUNDS)
        except BaseException as error:
            errors.append((t, error))
            barrier.abort()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the Python calls of the 4 threads interleave
    try:
        threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)

    assert not errors, errors
    for t in range(THREADS):
        for i, (want_logp, want_grad) in enumerate(want[t]):
            logp, grad = got_python[t][i]
            where = f"{model.name}, {kind}: thread {t}'s call {i} from Python at {points[t, i]}"
            assert np.array_equal(logp, want_logp) and np.array_equal(grad, want_grad), where
        mismatches, first = got_nogil[t]
        assert mismatches == 0, (
            f"{model.name}, {kind}: {mismatches} of thread {t}'s {ROUNDS * CALLS} GIL-free calls differ from one "
            f"thread's, the first at {points[t, first]}"
        )
