"""`llvm_backend.nutpie.model_functions` against nutpie 0.16's ``_make_functions`` and ``_prepare_dims_and_coords``, on
real PyMC models, and the modes and callables it is given being the only ones it uses."""

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytensor.compile.mode
import pytensor.graph
import pytensor.tensor as pt
import pytest
from nutpie import compile_pymc
from pymc.initial_point import make_initial_point_fn
from pytensor.compile.mode import Mode, predefined_modes
from pytensor.gradient import grad
from pytensor.graph.rewriting.utils import rewrite_graph

from llvm_backend.linker import LLVMLinker
from llvm_backend.nutpie.model_functions import (
    UNCONSTRAINED_PARAMETER,
    ModelFunctions,
    dims_and_coords,
    initial_point_function,
    model_functions,
)
from llvm_backend_bench.pymc_models import eight_schools

MODE = Mode(linker="py", optimizer="fast_run")
FAST_MODE = Mode(linker="py", optimizer="fast_compile")
SEEDS = (0, 1)


def data_and_dims():
    """pm.Data, a Deterministic, coords, a dim without values of a shared length ("scale") and one whose
    length is a graph ("k", from the data's shape), a transformed RV with dims."""
    group = np.array([0, 0, 1, 1, 2, 2])
    with pm.Model(coords={"group": ["a", "b", "c"], "obs_id": np.arange(6)}) as model:
        model.add_coord("scale", length=2)
        x = pm.Data("x", np.linspace(0.0, 1.0, 6), dims="obs_id")
        z = pm.Data("z", np.arange(4.0), dims="k")
        mu = pm.Normal("mu", 0, 1, dims="group")
        sigma = pm.HalfNormal("sigma", 1, dims="scale")
        offset = pm.Normal("offset", z.sum() / 10, 1, dims="k")
        mean = pm.Deterministic("mean", mu[group] + x + offset.sum(), dims="obs_id")
        pm.Normal("y", mean, sigma.sum(), observed=np.linspace(-1.0, 2.0, 6), dims="obs_id")
    return model


def vector_and_simplex():
    """A vector parameter, a Dirichlet (whose value, simplex-transformed, is one shorter than the RV) and two
    Deterministics."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(20, 3))
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=3)
        weights = pm.Dirichlet("w", a=np.ones(3))
        sigma = pm.HalfNormal("sigma", 1)
        mu = pm.Deterministic("mu", pt.dot(X, beta))
        pm.Deterministic("spread", sigma * weights)
        pm.Normal("y", mu, sigma, observed=X @ np.array([1.0, -0.5, 0.2]) + rng.normal(size=20))
    return model


CASES = {
    "eight_schools": (eight_schools, None),
    "data_and_dims": (data_and_dims, None),
    "vector_and_simplex": (vector_and_simplex, ["beta", "w", "spread"]),
}


def nutpies(model, var_names=None, overrides=None):
    """nutpie's ``_make_functions`` as its numba path calls it, on `MODE` in place of "NUMBA", with the initial
    point nutpie's ``compile_pymc_model`` makes by default (every free RV jittered)."""
    point = make_initial_point_fn(
        model=model, overrides=overrides, jitter_rvs=set(model.free_RVs), return_transformed=True
    )
    return compile_pymc._make_functions(
        model, mode=MODE, compute_grad=True, join_expanded=True, pymc_initial_point_fn=point, var_names=var_names
    )


def ours(model, var_names=None, overrides=None, mode=MODE, fast_mode=FAST_MODE, **callables):
    point = initial_point_function(model, mode=fast_mode, overrides=overrides, jitter_rvs=set(model.free_RVs))
    callables = {"rewrite_graph": rewrite_graph, "grad": grad, **callables}
    return model_functions(model, mode=mode, fast_mode=fast_mode, initial_point=point, var_names=var_names, **callables)


@pytest.fixture(scope="module", params=list(CASES))
def built(request):
    make, var_names = CASES[request.param]
    model = make()
    return model, nutpies(model, var_names), ours(model, var_names)


def points(n_dim):
    return np.random.default_rng(7).normal(size=(2, n_dim))


def test_the_unconstrained_parameter_dim_is_nutpies():
    assert UNCONSTRAINED_PARAMETER == compile_pymc._UNCONSTRAINED_PARAMETER


def test_layout_is_nutpies(built):
    _, (n_dim, n_expanded, _, _, _, shape_info, reparameterized), got = built
    assert isinstance(got, ModelFunctions)
    assert (got.n_dim, got.n_expanded, got.reparameterized_names) == (n_dim, n_expanded, reparameterized)
    assert type(got.n_dim) is type(n_dim) and type(got.n_expanded) is type(n_expanded)
    names, slices, shapes = shape_info
    assert got.shape_info[:2] == (names, slices)
    assert len(got.shape_info[2]) == len(shapes)
    for mine, theirs in zip(got.shape_info[2], shapes, strict=True):
        assert type(mine) is type(theirs) and np.array_equal(mine, theirs) and mine.dtype == theirs.dtype


def test_the_var_names_subset_is_nutpies():
    model = vector_and_simplex()
    got = ours(model, ["beta", "w", "spread"])
    assert got.shape_info[0] == ["beta", "w_simplex__", "sigma_log__", "w", "spread"]


@pytest.mark.parametrize("seed", SEEDS)
def test_jittered_initial_points_are_nutpies(built, seed):
    _, theirs, got = built
    expected = theirs[4](seed)
    point = got.initial_point(seed)
    assert point.dtype == expected.dtype == np.float64
    np.testing.assert_array_equal(point, expected)
    assert not np.array_equal(got.initial_point(0), got.initial_point(1))


def test_log_density_gradient_and_expansion_are_nutpies(built):
    _, theirs, got = built
    for x in points(got.n_dim):
        (logp, gradient), (their_logp, their_gradient) = got.logp_fn(x), theirs[2](x)
        np.testing.assert_allclose(logp, their_logp, rtol=1e-12)
        np.testing.assert_allclose(gradient, their_gradient, rtol=1e-12)
        np.testing.assert_allclose(got.expand_fn(x)[0], theirs[3](x)[0], rtol=1e-12)
        assert got.expand_fn(x)[0].shape == (got.n_expanded,)


def test_dims_and_coords_are_nutpies(built):
    model, theirs, got = built
    dims, coords = dims_and_coords(model, got.shape_info, got.reparameterized_names, mode=FAST_MODE)
    their_dims, their_coords = compile_pymc._prepare_dims_and_coords(model, theirs[5], theirs[6])
    assert dims == their_dims
    assert list(coords) == list(their_coords)
    for name, index in coords.items():
        pd.testing.assert_index_equal(index, their_coords[name], exact=True)


def test_a_wrong_shaped_initial_value_raises_nutpies_error():
    model = data_and_dims()  # "offset" has no static shape: its length is the data's
    overrides = {"offset": np.zeros(2)}
    with pytest.raises(ValueError) as theirs:
        nutpies(model, overrides=overrides)[4](0)
    with pytest.raises(ValueError) as got:
        ours(model, overrides=overrides).initial_point(0)
    assert str(got.value) == str(theirs.value) == "Size of initial value for offset is (2,), expected [4]"


def test_the_llvm_mode_computes_nutpies_values():
    from llvm_backend import rewrite_cache
    from llvm_backend.mode import LLVM

    model = eight_schools()
    theirs = nutpies(model)
    got = ours(
        model,
        mode=LLVM,
        rewrite_graph=rewrite_cache.rewrite_graph_through_cache(rewrite_graph),
        grad=rewrite_cache.grad_through_cache(grad),
    )
    assert isinstance(got.logp_fn.maker.linker, LLVMLinker) and isinstance(got.expand_fn.maker.linker, LLVMLinker)
    for x in points(got.n_dim):
        (logp, gradient), (their_logp, their_gradient) = got.logp_fn(x), theirs[2](x)
        np.testing.assert_allclose(logp, their_logp, rtol=1e-10)
        np.testing.assert_allclose(gradient, their_gradient, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got.expand_fn(x)[0], theirs[3](x)[0], rtol=1e-12)


class Recorded(Mode):
    """A mode recording, in its class's ``made``, each mode ``pytensor.function`` compiles with (the copies
    ``including`` makes are of this class)."""

    made: list

    @property
    def function_maker(self):
        type(self).made.append(self)
        return super().function_maker


class Slow(Recorded):
    made = []


class Fast(Recorded):
    made = []


class Global(Recorded):
    made = []


def counted(fn, calls: list):
    def counting(*args, **kwargs):
        calls.append(args)
        return fn(*args, **kwargs)

    return counting


def test_only_the_modes_and_callables_passed_are_used(monkeypatch):
    model = vector_and_simplex()
    global_calls, rewrites, grads = [], [], []
    spies = {
        "rewrite_graph": counted(pytensor.graph.rewrite_graph, global_calls),
        "grad": counted(pytensor.tensor.grad, global_calls),
        "FAST_COMPILE": Global(linker="py", optimizer="fast_compile"),
    }
    monkeypatch.setattr(pytensor.graph, "rewrite_graph", spies["rewrite_graph"])
    monkeypatch.setattr(pytensor.tensor, "grad", spies["grad"])
    monkeypatch.setattr(pytensor.compile.mode, "FAST_COMPILE", spies["FAST_COMPILE"])
    monkeypatch.setitem(predefined_modes, "FAST_COMPILE", spies["FAST_COMPILE"])
    for recorded in (Slow, Fast, Global):
        monkeypatch.setattr(recorded, "made", [])

    got = ours(
        model,
        mode=Slow(linker="py", optimizer="fast_run"),
        fast_mode=Fast(linker="py", optimizer="fast_compile"),
        rewrite_graph=counted(rewrite_graph, rewrites),
        grad=counted(grad, grads),
    )
    got.initial_point(0)

    assert global_calls == [] and Global.made == []
    assert pytensor.graph.rewrite_graph is spies["rewrite_graph"] and pytensor.tensor.grad is spies["grad"]
    assert pytensor.compile.mode.FAST_COMPILE is predefined_modes["FAST_COMPILE"] is spies["FAST_COMPILE"]
    assert len(rewrites) == 1 and len(grads) == 1
    assert [got.logp_fn.maker.mode, got.expand_fn.maker.mode] == Slow.made
    assert len(Fast.made) == 3  # the given initial point's, the default initial point's, the shape function's


def test_the_model_s_graph_is_left_as_it_was():
    """The log density is rewritten on a copy: rewriting it in place (``rewrite_graph``'s default) folds the
    constants of the LKJ transform's graph, which the model's deterministics share, so a warm process, whose
    rewrite comes from the cache and changes nothing, would build and key another expansion graph than the
    cold process before it."""
    with pm.Model() as model:
        pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0, shape=3), compute_corr=True)

    def drawn():
        return pytensor.dprint(model.unobserved_value_vars, file="str", print_type=True)

    before = drawn()
    ours(model)
    assert drawn() == before
