"""nutpie and pm.sample with the LLVM mode: real PyMC and nutpie, no mocks."""

import ctypes
import gc
import os
import subprocess
import sys

import numpy as np
import nutpie
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor import config
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.inner_function import HasInnerFunction
from pytensor.compile.mode import get_mode, predefined_modes
from pytensor.graph.fg import FunctionGraph
from pytensor.scan.op import Scan

import llvm_backend
import llvm_backend.nutpie
from llvm_backend import rewrite_cache
from llvm_backend.collector import OLDEST_THRESHOLD, YOUNG_THRESHOLD
from llvm_backend.linker import LLVMLinker
from llvm_backend.tools.testing import PY_MODE, assert_same_result
from llvm_backend_bench.pymc_models import eight_schools
from llvm_backend_intrinsics.nutpie import NutpieEntry


def separate_scalars(n=41):
    with pm.Model() as model:
        offsets = [pm.Normal(f"o{i}", 0, 1) for i in range(n)]
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("obs", pm.math.sum(offsets), sigma, observed=np.linspace(-1, 1, 5))
    return model


def large_data_constant():
    data = np.random.default_rng(0).normal(1.0, 2.0, size=200_000)  # 1.6 MB, over numba's embedding limit
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 10)
        sigma = pm.HalfNormal("sigma", 5)
        pm.Normal("obs", mu, sigma, observed=data)
    return model


def strided_constant():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = 2.0 * X[:, 0] - X[:, 2] + rng.normal(size=60)
    with pm.Model() as model:
        beta = [pm.Normal(f"beta{i}", 0, 1) for i in range(3)]
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("obs", sum(b * X[:, i] for i, b in enumerate(beta)), sigma, observed=y)
    return model


def data_containers(n: int):
    """A model reading ``n`` vector containers and a 0-d one (``scale``): with ``n`` over 30 the graph takes them
    as one pack, and nutpie's entry points call its typed entry; with few, they call the graph function."""
    rng = np.random.default_rng(2)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        containers = [pm.Data(f"d{i}", rng.normal(size=4)) for i in range(n)]
        scale = pm.Data("scale", 1.5)
        pm.Normal("obs", mu + sum(c for c in containers), scale, observed=np.zeros(4))
    return model


def many_data_containers():
    return data_containers(31)


def few_data_containers():
    return data_containers(3)


MODELS = {
    "eight schools": eight_schools,
    "41 scalars": separate_scalars,
    "over 1 MB constant": large_data_constant,
    "strided constant": strided_constant,
    "31 pm.Data": many_data_containers,
    "3 pm.Data and a 0-d one": few_data_containers,
}


def _logp_and_grad(compiled, point):
    """What nutpie's cfunc computes: ``jit_fn(x, *shared values)``."""
    fn = compiled.logp_func
    shared = [var.get_value() for var in fn.get_shared()]
    return fn.vm.jit_fn(point, *shared)


DOUBLES = ctypes.POINTER(ctypes.c_double)
LOGP = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, DOUBLES, DOUBLES, DOUBLES, ctypes.c_void_p)
EXPAND = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint64, DOUBLES, DOUBLES, ctypes.c_void_p)


def _pointer(array):
    return array.ctypes.data_as(DOUBLES)


def c_logp(compiled, point, dim=None):
    """What nutpie gets from the model's logp entry point at ``point``: (return code, log density, gradient)."""
    point = np.ascontiguousarray(point, dtype="float64")
    grad, logp = np.full(compiled.n_dim, np.nan), np.full((), np.nan)
    entry = LOGP(compiled.compiled_logp_func.address)
    dim = compiled.n_dim if dim is None else dim
    code = entry(dim, _pointer(point), _pointer(grad), _pointer(logp), compiled.user_data.ctypes.data)
    return code, float(logp), grad


def c_expand(compiled, point, n_expanded=None):
    """What nutpie gets from the model's expand entry point at ``point``: (return code, expanded values)."""
    point = np.ascontiguousarray(point, dtype="float64")
    out = np.full(compiled.n_expanded, np.nan)
    entry = EXPAND(compiled.compiled_expand_func.address)
    n_expanded = compiled.n_expanded if n_expanded is None else n_expanded
    code = entry(compiled.n_dim, n_expanded, _pointer(point), _pointer(out), compiled.user_data.ctypes.data)
    return code, out


@pytest.mark.slow
@pytest.mark.parametrize("name", list(MODELS))
def test_nutpie_compiles_and_samples_under_llvm(name):
    model = MODELS[name]()
    stock_numba = get_mode("NUMBA")
    compiled = llvm_backend.nutpie.compile_pymc_model(model)
    assert isinstance(compiled.logp_func.maker.linker, LLVMLinker)
    assert get_mode("NUMBA") is stock_numba
    reference = nutpie.compile_pymc_model(model, backend="numba")
    assert not isinstance(reference.logp_func.maker.linker, LLVMLinker)
    assert compiled._shapes == reference._shapes
    for seed in (0, 5):
        np.testing.assert_array_equal(compiled.initial_point_func(seed), reference.initial_point_func(seed))
    rng = np.random.default_rng(3)
    for _ in range(3):
        point = rng.normal(scale=0.5, size=compiled.n_dim)
        got, want = _logp_and_grad(compiled, point), _logp_and_grad(reference, point)
        assert len(got) == len(want)
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same_result(a, b, f"{name}: output {k} at {point}", rtol=1e-9)
        (code, logp, grad), (stock_code, stock_logp, stock_grad) = c_logp(compiled, point), c_logp(reference, point)
        assert code == stock_code == 0
        np.testing.assert_allclose(logp, stock_logp, rtol=1e-9)
        np.testing.assert_allclose(grad, stock_grad, rtol=1e-9, atol=1e-12)
        (code, values), (stock_code, stock_values) = c_expand(compiled, point), c_expand(reference, point)
        assert code == stock_code == 0
        np.testing.assert_allclose(values, stock_values, rtol=1e-12)
    trace = nutpie.sample(compiled, draws=30, tune=30, chains=1, progress_bar=False, seed=1)
    assert trace.posterior.sizes["draw"] == 30
    assert all(np.isfinite(trace.posterior[var]).all() for var in trace.posterior.data_vars)


def test_numba_is_llvm_is_restored_after_an_error():
    stock_numba = predefined_modes["NUMBA"]
    with pytest.raises(ZeroDivisionError):
        with llvm_backend.nutpie.numba_is_llvm():
            assert get_mode("NUMBA") is llvm_backend.LLVM
            1 / 0
    assert predefined_modes["NUMBA"] is stock_numba


def test_pm_sample_with_nutpie_under_numba_is_llvm():
    model = eight_schools()
    with llvm_backend.nutpie.numba_is_llvm():
        idata = pm.sample(
            draws=20, tune=20, chains=1, nuts_sampler="nutpie", model=model, random_seed=1, progressbar=False
        )
    assert idata.posterior.sizes["draw"] == 20


def test_pm_sample_with_the_llvm_mode_goes_through_the_rewrite_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", rewrite_cache.RewriteCache(tmp_path / "rewrites"))
    monkeypatch.delenv("LLVM_BACKEND_REWRITE_CACHE", raising=False)
    before = sum(rewrite_cache.outcomes[k] for k in ("stored", "hit"))
    model = eight_schools()
    idata = pm.sample(
        draws=10,
        tune=10,
        chains=1,
        cores=1,
        model=model,
        random_seed=1,
        progressbar=False,
        nuts_sampler="pymc",
        compile_kwargs={"mode": "LLVM"},
    )
    assert idata.posterior.sizes["draw"] == 10
    assert sum(rewrite_cache.outcomes[k] for k in ("stored", "hit")) > before
    assert rewrite_cache.store.DEFAULT.entries()


@pytest.mark.slow
@pytest.mark.parametrize("make_model", [eight_schools, separate_scalars])
def test_a_second_compile_pymc_model_takes_every_rewritten_graph_from_the_cache(tmp_path, monkeypatch, make_model):
    """PyMC's initial-point functions and nutpie's shape function (FAST_COMPILE, on the py linker while
    `compile_pymc_model` runs), nutpie's rewrite of the log density before the gradient, the gradient, and the log
    density and expansion: with the rewritten graphs loaded, the same initial points, shapes and log density as stock
    nutpie's."""
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", rewrite_cache.RewriteCache(tmp_path / "rewrites"))
    monkeypatch.delenv("LLVM_BACKEND_REWRITE_CACHE", raising=False)
    model = make_model()
    outcomes = []
    for _ in range(2):
        before = dict(rewrite_cache.outcomes)
        compiled = llvm_backend.nutpie.compile_pymc_model(model)
        outcomes.append({k: v - before.get(k, 0) for k, v in rewrite_cache.outcomes.items() if v != before.get(k, 0)})
    assert outcomes == [{"stored": 7}, {"hit": 7}]
    reference = nutpie.compile_pymc_model(model, backend="numba")
    assert compiled._shapes == reference._shapes
    for seed in (0, 5):
        np.testing.assert_array_equal(compiled.initial_point_func(seed), reference.initial_point_func(seed))
    point = np.random.default_rng(4).normal(scale=0.5, size=compiled.n_dim)
    (code, logp, grad), (stock_code, stock_logp, stock_grad) = c_logp(compiled, point), c_logp(reference, point)
    assert code == stock_code == 0
    np.testing.assert_allclose(logp, stock_logp, rtol=1e-9)
    np.testing.assert_allclose(grad, stock_grad, rtol=1e-9, atol=1e-12)


@pytest.fixture
def nutpie_compiles(monkeypatch):
    """The models nutpie compiles, as PyMC's ``pm.sample`` calls it (``nutpie.compile_pymc_model``)."""
    compiled = []
    original = nutpie.compile_pymc_model

    def spy(*args, **kwargs):
        compiled.append(original(*args, **kwargs))
        return compiled[-1]

    monkeypatch.setattr(nutpie, "compile_pymc_model", spy)
    return compiled


@pytest.mark.parametrize(
    "how", [{"compile_kwargs": {"mode": "LLVM"}}, {"backend": "llvm"}, {"compile_kwargs": {"mode": llvm_backend.LLVM}}]
)
def test_pm_sample_asked_for_llvm_samples_with_nutpie_on_our_kernels(nutpie_compiles, how):
    stock_numba = predefined_modes["NUMBA"]
    idata = pm.sample(model=eight_schools(), draws=20, tune=20, chains=1, random_seed=1, progressbar=False, **how)
    (compiled,) = nutpie_compiles
    assert isinstance(compiled.logp_func.maker.linker, LLVMLinker)
    assert isinstance(compiled.compiled_logp_func, NutpieEntry)
    assert isinstance(compiled.compiled_expand_func, NutpieEntry)
    assert predefined_modes["NUMBA"] is stock_numba
    assert not llvm_backend.nutpie.SAMPLING_ON_LLVM.get()
    assert idata.posterior.sizes["draw"] == 20
    assert np.isfinite(idata.posterior["mu"]).all()


def test_pm_sample_asked_for_no_mode_samples_with_nutpie_on_stock_kernels(nutpie_compiles):
    pm.sample(model=eight_schools(), draws=10, tune=10, chains=1, random_seed=1, progressbar=False)
    (compiled,) = nutpie_compiles
    assert not isinstance(compiled.logp_func.maker.linker, LLVMLinker)
    assert not isinstance(compiled.compiled_logp_func, NutpieEntry)


@pytest.mark.slow
def test_pm_sample_asked_for_llvm_with_numba_cfunc_options_samples_on_stock_kernels_with_a_warning(nutpie_compiles):
    with pytest.warns(RuntimeWarning, match=r"numba.cfunc options \['error_model'\].*stock NUMBA kernels"):
        pm.sample(
            model=eight_schools(),
            draws=10,
            tune=10,
            chains=1,
            random_seed=1,
            progressbar=False,
            compile_kwargs={"mode": "LLVM", "error_model": "numpy"},
        )
    (compiled,) = nutpie_compiles
    assert not isinstance(compiled.logp_func.maker.linker, LLVMLinker)
    assert not isinstance(compiled.compiled_logp_func, NutpieEntry)


def test_pymc_sampling_is_wrapped_by_the_import_and_unwrapped_by_revert_all():
    from pymc.sampling import mcmc

    from llvm_backend import process

    wrapped = mcmc._sample_external_nuts
    assert wrapped.__wrapped__.__module__ == "pymc.sampling.mcmc"
    try:
        process.revert_all()
        assert mcmc._sample_external_nuts is wrapped.__wrapped__
    finally:
        llvm_backend.register()
    assert mcmc._sample_external_nuts.__wrapped__ is wrapped.__wrapped__


def test_another_pymc_s_or_nutpie_s_functions_are_left_as_they_are():
    from llvm_backend.nutpie.nutpie_adapter import NUTPIE_COMPILE_ON_LLVM
    from llvm_backend.nutpie.pymc_adapter import PYMC_NUTPIE_ON_LLVM

    def _sample_external_nuts(sampler, **kwargs):
        return sampler

    def compile_pymc_model(model, *, backend="numba"):
        return model

    pymc_problem = PYMC_NUTPIE_ON_LLVM.module_seam.problem(_sample_external_nuts)
    assert (
        pymc_problem == f"pymc {pm.__version__}: its _sample_external_nuts has no parameter compile_kwargs, nuts_kwargs"
    )
    nutpie_problem = NUTPIE_COMPILE_ON_LLVM.module_seam.problem(compile_pymc_model)
    assert nutpie_problem.startswith(f"nutpie {nutpie.__version__}: its compile_pymc_model has no parameter")
    assert PYMC_NUTPIE_ON_LLVM.module_seam.problem(mcmc_original()) is None
    assert NUTPIE_COMPILE_ON_LLVM.module_seam.problem(nutpie.compile_pymc_model.__wrapped__) is None


def mcmc_original():
    from pymc.sampling import mcmc

    return mcmc._sample_external_nuts.__wrapped__


def test_pymc_imported_after_llvm_backend_is_wrapped_too():
    code = (
        "import sys, llvm_backend; assert 'pymc' not in sys.modules; import pymc; "
        "from pymc.sampling import mcmc; print(mcmc._sample_external_nuts.__wrapped__.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["pymc.sampling.mcmc"]


DATA_MODELS = [many_data_containers, few_data_containers]


@pytest.mark.slow
@pytest.mark.parametrize("make_model", DATA_MODELS)
def test_the_entry_points_return_nutpie_s_codes_as_nutpie_s_own_do(make_model):
    model = make_model()
    ours, stock = llvm_backend.nutpie.compile_pymc_model(model), nutpie.compile_pymc_model(model, backend="numba")
    point = np.full(ours.n_dim, 0.3)
    for compiled in (ours, stock):
        assert c_logp(compiled, point, dim=ours.n_dim + 1)[0] == -1
        assert c_expand(compiled, point, n_expanded=ours.n_expanded + 1)[0] == -1
        assert c_logp(compiled, np.full(ours.n_dim, np.nan))[0] == 3
    assert c_logp(ours, np.full(ours.n_dim, 1e200))[0] == c_logp(stock, np.full(ours.n_dim, 1e200))[0] != 0
    shorter = {"d0": np.ones(5)}  # broadcast against 4 observations: the graph raises
    assert c_logp(ours.with_data(**shorter), point)[0] == c_logp(stock.with_data(**shorter), point)[0] == 1
    assert c_expand(ours.with_data(**shorter), point)[0] == 0


@pytest.mark.slow
@pytest.mark.parametrize("make_model", DATA_MODELS)
def test_the_entry_points_read_new_data_through_with_data(make_model):
    model = make_model()
    ours, stock = llvm_backend.nutpie.compile_pymc_model(model), nutpie.compile_pymc_model(model, backend="numba")
    new = {**{f"d{i}": np.full(4, 0.1 * i) for i in range(3)}, "scale": np.array(0.7)}
    ours, stock = ours.with_data(**new), stock.with_data(**new)
    point = np.array([0.7])
    (code, logp, grad), (stock_code, stock_logp, stock_grad) = c_logp(ours, point), c_logp(stock, point)
    assert code == stock_code == 0
    np.testing.assert_allclose([logp, *grad], [stock_logp, *stock_grad], rtol=1e-12)
    assert logp != c_logp(llvm_backend.nutpie.compile_pymc_model(model), point)[1]


@pytest.mark.parametrize(
    ("make_model", "logp_calls", "expand_calls"),
    [
        (eight_schools, "graph_fn", "graph_fn"),
        (few_data_containers, "graph_fn", "graph_fn"),
        (many_data_containers, "_typed_entry", "graph_fn"),  # logp takes the 32 containers as one pack
        (large_data_constant, "_typed_entry", "graph_fn"),  # logp takes its observations as a parameter
    ],
)
def test_the_entry_points_call_the_graph_function_unless_it_takes_packs_or_constants(
    make_model, logp_calls, expand_calls
):
    compiled = llvm_backend.nutpie.compile_pymc_model(make_model())
    for fn, entry, calls in (
        (compiled.logp_func, compiled.compiled_logp_func, logp_calls),
        (compiled.expand_func, compiled.compiled_expand_func, expand_calls),
    ):
        callees = {name: list(getattr(fn.vm, name).overloads.values()) for name in ("graph_fn", "_typed_entry")}
        assert entry.callee in callees[calls]
        if calls == "graph_fn":
            assert callees["_typed_entry"] == []


WARM_PROCESS = """
import llvm_backend.nutpie
from llvm_backend_bench.pymc_models import eight_schools

compiled = llvm_backend.nutpie.compile_pymc_model(eight_schools())
for fn in (compiled.logp_func, compiled.expand_func):
    stats = fn.vm.graph_fn.stats
    print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()), len(fn.vm._typed_entry.overloads))
"""


@pytest.mark.slow
def test_a_warm_process_loads_the_graph_functions_nutpie_calls_and_compiles_none(tmp_path):
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path}", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}

    def run():
        done = subprocess.run(
            [sys.executable, "-c", WARM_PROCESS], capture_output=True, text=True, timeout=600, env=env, check=False
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return [tuple(map(int, line.split())) for line in done.stdout.splitlines()]

    assert run() == [(0, 1, 0), (0, 1, 0)]  # cold: each graph function compiled, for nutpie's types
    assert run() == [(1, 0, 0), (1, 0, 0)]  # warm: each loaded from numba's cache, no typed entry compiled


COLD_PROCESS = """
import sys
from pathlib import Path

import nutpie
import numpy as np
from pytensor import config
from pytensor.compile.mode import get_mode

import llvm_backend.nutpie
from llvm_backend_bench.pymc_models import eight_schools

fast_compile = get_mode("FAST_COMPILE")
compiled = llvm_backend.nutpie.compile_pymc_model(eight_schools())
trace = nutpie.sample(compiled, draws=20, tune=20, chains=1, progress_bar=False, seed=1)
assert np.isfinite(trace.posterior["mu"].values).all()
assert get_mode("FAST_COMPILE") is fast_compile
print("pytensor.link.c.cvm" in sys.modules, sorted(p.name for p in Path(config.compiledir).glob("lazylinker_ext/*")))
"""


@pytest.mark.slow
def test_a_cold_process_compiles_and_samples_without_building_pytensor_s_c_lazylinker(tmp_path):
    env = {**os.environ, "PYTENSOR_FLAGS": f"base_compiledir={tmp_path}", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    done = subprocess.run(
        [sys.executable, "-c", COLD_PROCESS], capture_output=True, text=True, timeout=600, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "[]"]


def _scan_over_an_op_from_graph():
    """A Scan whose step calls an OpFromGraph, on C-able ops, and its input."""
    x = pt.dvector("x")
    square = OpFromGraph([(v := pt.dscalar())], [pt.exp(v) * v])
    out = pytensor.scan(lambda v, acc: acc + square(v), [x], [pt.zeros((), "float64")], return_updates=False)
    return x, out


def _inner_thunks(fgraph) -> list:
    """The thunks of the inner functions of ``fgraph``'s ops, their inner functions' included."""
    thunks = []
    for node in fgraph.apply_nodes:
        if isinstance(node.op, HasInnerFunction):
            inner = node.op.fn
            thunks += [*inner.vm.thunks, *_inner_thunks(inner.maker.fgraph)]
    return thunks


def test_the_fast_mode_links_inner_functions_on_python_thunks_on_copies_of_their_ops():
    from llvm_backend.nutpie.compile_model import _fast_mode

    x, out = _scan_over_an_op_from_graph()
    value = np.linspace(-1.0, 1.0, 7)
    fn = pytensor.function([x], out, mode=_fast_mode())
    thunks = _inner_thunks(fn.maker.fgraph)
    assert len(thunks) >= 3
    assert not [thunk for thunk in thunks if hasattr(thunk, "cthunk")]
    [user_scan] = [node.op for node in FunctionGraph([x], [out], clone=False).apply_nodes if isinstance(node.op, Scan)]
    assert "_fn" not in vars(user_scan)  # the user's op, which other graphs share, is left unlinked
    for mode in (PY_MODE, "NUMBA"):
        assert_same_result(fn(value), pytensor.function([x], out, mode=mode)(value), str(mode))


def test_an_inner_function_linked_already_is_kept_and_a_pytensor_linking_otherwise_is_refused(monkeypatch):
    from llvm_backend.adapters import pytensor as adapter
    from llvm_backend.nutpie.compile_model import _fast_mode

    x, out = _scan_over_an_op_from_graph()
    [scan] = [node.op for node in FunctionGraph([x], [out], clone=False).apply_nodes if isinstance(node.op, Scan)]
    pytensor.function([x], out, mode=PY_MODE)  # links the user's Scan, on C thunks
    assert adapter.with_inner_function(scan, get_mode("FAST_COMPILE")) is scan
    monkeypatch.setattr(adapter, "_inner_function_problem", lambda: "the problem")
    x, out = _scan_over_an_op_from_graph()
    with pytest.raises(RuntimeError, match="cannot be linked ahead of PyTensor: the problem"):
        pytensor.function([x], out, mode=_fast_mode())


def _process_wide():
    import pytensor.graph

    return (
        predefined_modes["FAST_COMPILE"],
        predefined_modes["NUMBA"],
        pytensor.compile.mode.FAST_COMPILE,
        pytensor.graph.rewrite_graph,
        pytensor.tensor.grad,
        config.traceback__limit,
    )


def test_compile_pymc_model_changes_nothing_other_threads_see(monkeypatch):
    from llvm_backend.nutpie import model_functions

    before, seen, build = _process_wide(), [], model_functions.model_functions

    def spied(*args, **kwargs):
        seen.append((_process_wide(), type(kwargs["fast_mode"].linker).__name__))
        return build(*args, **kwargs)

    monkeypatch.setattr(model_functions, "model_functions", spied)
    llvm_backend.nutpie.compile_pymc_model(eight_schools())
    assert seen == [(before, "_PythonLinker")]
    assert _process_wide() == before


def test_a_nutpie_without_the_internals_used_is_named_in_the_error(monkeypatch):
    from nutpie import compile_pymc

    monkeypatch.delattr(compile_pymc, "make_user_data")
    with pytest.raises(RuntimeError, match=rf"nutpie {nutpie.__version__}.*make_user_data is missing"):
        llvm_backend.nutpie.compile_pymc_model(eight_schools())


def test_compile_pymc_model_builds_pymc_s_graphs_with_the_collector_paced(monkeypatch):
    from llvm_backend.nutpie import model_functions

    seen, build = [], model_functions.model_functions

    def spied(*args, **kwargs):
        seen.append(gc.get_threshold())
        return build(*args, **kwargs)

    monkeypatch.setattr(model_functions, "model_functions", spied)
    before = gc.get_threshold()
    compiled = llvm_backend.nutpie.compile_pymc_model(eight_schools())
    assert seen == [(max(before[0], YOUNG_THRESHOLD), before[1], max(before[2], OLDEST_THRESHOLD))]
    assert gc.get_threshold() == before
    trace = nutpie.sample(compiled, draws=20, tune=20, chains=1, progress_bar=False, seed=1)
    assert np.isfinite(trace.posterior["mu"].values).all()
