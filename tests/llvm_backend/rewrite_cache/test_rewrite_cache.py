"""The LLVM mode's cache of rewritten graphs (`llvm_backend.rewrite_cache`)."""

import json
import logging
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.io import In
from pytensor.compile.mode import Mode, get_mode, optdb
from pytensor.graph.basic import Constant, equal_computations
from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.op import Op
from pytensor.graph.rewriting.basic import MergeFeature, SequentialGraphRewriter
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.graph.traversal import graph_inputs
from pytensor.scalar import Composite
from pytensor.tensor.rewriting.shape import ShapeFeature

from llvm_backend import rewrite_cache
from llvm_backend.linker import LLVMLinker
from llvm_backend.mode import LLVM, SUPERVISOR_NAME
from llvm_backend.rewrite_cache import CachedRewriter, RewriteCache, Uncacheable, rewriter_fingerprint
from llvm_backend.rewrites.registry import REWRITE_TAG
from llvm_backend.tools import graphs
from llvm_backend.tools.testing import compare_llvm_numba_and_py


def _outcomes_of(compile_once) -> dict:
    before = dict(rewrite_cache.outcomes)
    result = compile_once()
    return result, {k: v - before.get(k, 0) for k, v in rewrite_cache.outcomes.items() if v != before.get(k, 0)}


def _query_rewriter(mode):
    """What ``mode``'s query resolves to, inside the wrapper ``Mode.optimizer`` stamps the mode with."""
    return mode.optimizer._rewriter


def _key(inputs, outputs, mode=LLVM):
    fgraph = FunctionGraph(inputs, outputs, clone=True)
    fgraph._compile_mode = mode
    return _query_rewriter(mode).key(fgraph)


def _small_regression():
    return graphs.regression(n_cols=4, n_obs=20, n_groups=2)


@pytest.mark.slow
def test_second_compile_is_a_hit_with_the_same_rewritten_graph_and_values(cache):
    g = _small_regression()
    (first, first_values), stored = _outcomes_of(lambda: compare_llvm_numba_and_py(g.inputs, g.outputs, g.values))
    (second, second_values), hit = _outcomes_of(lambda: compare_llvm_numba_and_py(g.inputs, g.outputs, g.values))
    assert stored == {"stored": 1} and hit == {"hit": 1}
    assert len(cache.entries()) == 1
    assert equal_computations(first.maker.fgraph.outputs, second.maker.fgraph.outputs)
    assert all(np.array_equal(a, b) for a, b in zip(first_values, second_values, strict=True))
    # the graph runs on the function's own inputs, with a DestroyHandler (what follows rewriting asks it
    # which inputs are destroyed, and orders in-place nodes by it) in both
    assert {v for v in graph_inputs(second.maker.fgraph.outputs) if not isinstance(v, Constant)} <= set(
        second.maker.fgraph.inputs
    )

    # PyTensor 3.3's rewriters leave their own MergeFeature and ShapeFeature attached; nothing after
    # rewriting reads them, and a hit, which does not rewrite, has none.
    def kept(fn):
        return [type(f) for f in fn.maker.fgraph._features if not isinstance(f, MergeFeature | ShapeFeature)]

    assert kept(first) == kept(second)
    assert any(isinstance(f, DestroyHandler) for f in second.maker.fgraph._features)


@pytest.mark.slow
@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda x, y: [x, x * y, x * y], id="an-input-and-a-repeated-output"),
        pytest.param(lambda x, y: [pt.constant(3.0), (x + y).sum()], id="a-constant-output"),
        pytest.param(
            lambda x, y: [pt.exp(x) * y, pt.concatenate([x, x, pt.log1p(pt.abs(x))]), x.argmax()],
            id="fused-join-argmax",
        ),
        pytest.param(
            lambda x, y: [pt.exp(x).sum(), pt.exp(x) * 2 + y, pt.exp(x).max()],
            id="an-in-place-node-after-the-readers-of-what-it-destroys",
        ),
    ],
)
def test_hits_compute_what_py_and_numba_compute(cache, build):
    x, y = pt.dvector("x"), pt.dscalar("y")
    outputs = build(x, y)
    values = [np.linspace(-1.0, 2.0, 5), 0.5]
    _, stored = _outcomes_of(lambda: compare_llvm_numba_and_py([x, y], outputs, values))
    _, hit = _outcomes_of(lambda: compare_llvm_numba_and_py([x, y], outputs, values))
    assert (stored, hit) == ({"stored": 1}, {"hit": 1})


def test_a_hit_keeps_updates_and_in_place_rewrites_on_mutable_inputs(cache):
    x = pt.dvector("x")
    state = pytensor.shared(np.zeros(3), name="state")

    def compile_and_run():
        f = pytensor.function([In(x, mutable=True)], (x * 2).sum(), updates={state: state + x}, mode="LLVM")
        value = np.arange(3.0)
        return f(value), f(np.arange(3.0)), state.get_value(), value

    first, stored = _outcomes_of(compile_and_run)
    state.set_value(np.zeros(3))
    second, hit = _outcomes_of(compile_and_run)
    assert (stored, hit) == ({"stored": 1}, {"hit": 1})
    assert all(np.array_equal(a, b) for a, b in zip(first[:3], second[:3], strict=True))
    assert first[0] == 6.0 and np.array_equal(second[2], [0.0, 2.0, 4.0])
    # what the input held after the call: the same in both (an in-place rewrite may have reused it)
    assert np.array_equal(first[3], second[3])


def test_what_changes_the_key(cache):
    x, y = pt.dvector("x"), pt.dvector("y")
    base = _key([x, y], [pt.exp(x) + y])
    assert base == _key([x, y], [pt.exp(x) + y])
    assert base != _key([x, y], [pt.exp(x) * y])
    assert base != _key([x, y], [pt.exp(y) + x])
    z = pt.fvector("y")
    assert base != _key([x, z], [pt.exp(x) + z])
    assert base != _key([x, y], [pt.exp(x) + y, x])
    assert base != _key([x, y], [pt.exp(x) + y], mode=LLVM.excluding("local_exp_log"))
    c = pt.constant(np.arange(3.0))
    assert _key([x], [x + c]) != _key([x], [x + pt.constant(np.arange(3.0) + 1)])
    assert _key([x], [x + c]) == _key([x], [x + pt.constant(np.arange(3.0))])
    with pytensor.config.change_flags(optdb__max_use_ratio=4.0):
        assert base != _key([x, y], [pt.exp(x) + y])


def test_which_inputs_are_protected_is_keyed(cache):
    x = pt.dvector("x")
    protected = pytensor.function([x], pt.exp(x) + 1, mode="LLVM")
    _, outcome = _outcomes_of(lambda: pytensor.function([In(x, mutable=True)], pt.exp(x) + 1, mode="LLVM"))
    assert outcome == {"stored": 1}
    assert len(cache.entries()) == 2
    value = np.zeros(2)
    protected(value)
    assert np.array_equal(value, np.zeros(2))


@pytest.mark.slow
def test_the_key_is_the_same_in_every_process(cache):
    # Fresh processes (each its own string hashing), one of them after compiling other graphs first; in
    # subprocesses, as this one may have imported packages that register rewrites (PyMC), which the key
    # rightly covers.
    script = textwrap.dedent(
        """
        import json, sys
        import pytensor, pytensor.tensor as pt
        from pytensor.graph.fg import FunctionGraph
        from llvm_backend.tools import graphs
        from llvm_backend.mode import LLVM
        if sys.argv[1] == "after-compiling":
            x = pt.dvector("x")
            pytensor.function([x], [pt.exp(x).sum(), pt.concatenate([x, x])], mode="LLVM")
            g = graphs.regression(n_cols=4, n_obs=20, n_groups=2)
            pytensor.function(g.inputs, g.outputs, mode="LLVM")
        g = graphs.regression(n_cols=4, n_obs=20, n_groups=2)
        fgraph = FunctionGraph(g.inputs, g.outputs, clone=True)
        fgraph._compile_mode = LLVM
        print(json.dumps(LLVM.optimizer._rewriter.key(fgraph)))
        """
    )
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={cache.directory.parent}"}
    keys = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, state],
                capture_output=True,
                text=True,
                check=True,
                env=env | {"PYTHONHASHSEED": seed},
            ).stdout.splitlines()[-1]
        )
        for seed, state in (("1", "fresh"), ("2", "fresh"), ("3", "after-compiling"))
    ]
    assert len(set(keys)) == 1


def test_fingerprint_does_not_change_as_rewriters_are_used(cache):
    before = rewriter_fingerprint(_query_rewriter(LLVM).rewriter)
    x = pt.dvector("x")
    pytensor.function([x], [pt.exp(x).sum(), pt.concatenate([x, x]).max()], mode="LLVM")
    assert rewriter_fingerprint(_query_rewriter(LLVM).rewriter) == before


class _HoldsALambda(Op):
    __props__ = ()

    def __init__(self):
        self.fn = lambda v: v + 1

    def make_node(self, x):
        return pytensor.graph.basic.Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = self.fn(inputs[0])


def test_an_op_that_cannot_be_pickled_is_rewritten_as_usual(cache):
    x = pt.dvector("x")
    with pytest.raises(Uncacheable, match="cannot be pickled"):
        _key([x], [_HoldsALambda()(pt.exp(x))])
    f, outcome = _outcomes_of(lambda: pytensor.function([x], _HoldsALambda()(pt.exp(x)), mode="LLVM"))
    assert outcome == {"uncacheable": 1}
    assert cache.entries() == []
    np.testing.assert_allclose(f(np.zeros(2)), [2.0, 2.0])


def _unpicklable_tag():
    """What PyMC's interval transform holds: a local function."""

    def transform_params(*args):
        return args

    return transform_params


def test_inputs_whose_tags_cannot_be_pickled_are_stored_and_served_with_their_callers_inputs(cache):
    outcomes = []
    for _ in range(2):
        x = pt.dvector("x")
        x.tag.transform = _unpicklable_tag()
        f, outcome = _outcomes_of(lambda: compare_llvm_numba_and_py([x], [pt.exp(x).sum() * 2], [np.zeros(3)])[0])
        outcomes.append(outcome)
        assert f.maker.fgraph.inputs[0].tag.transform is x.tag.transform
    assert outcomes == [{"stored": 1}, {"hit": 1}]
    through_cache = rewrite_cache.grad_through_cache(pytensor.grad)
    for outcome in ({"stored": 1}, {"hit": 1}):
        x = pt.dvector("x")
        x.tag.transform = _unpicklable_tag()
        cost = pt.exp(x).sum()
        [grad], got = _outcomes_of(lambda: through_cache(cost, [x]))
        assert got == outcome
        compare_llvm_numba_and_py([x], [cost, grad], [np.linspace(0.0, 1.0, 3)])


def test_an_unreadable_entry_is_removed_and_the_graph_rewritten(cache, caplog):
    x = pt.dvector("x")
    pytensor.function([x], pt.exp(x).sum(), mode="LLVM")
    (entry,) = cache.entries()
    entry.write_bytes(b"not a pickle")
    with caplog.at_level(logging.WARNING, logger="llvm_backend.rewrite_cache"):
        f, outcome = _outcomes_of(lambda: pytensor.function([x], pt.exp(x).sum(), mode="LLVM"))
    assert "unreadable rewrite cache entry" in caplog.text
    assert outcome == {"stored": 1}
    assert f(np.zeros(3)) == 3.0


def test_an_entry_that_does_not_fit_the_graph_is_not_used(cache, caplog):
    x = pt.dvector("x")
    pytensor.function([x], pt.exp(x).sum(), mode="LLVM")
    (entry,) = cache.entries()
    other = pt.fmatrix("other")
    entry.write_bytes(pickle.dumps((entry.stem, ([other], [other.sum()], True))))
    with caplog.at_level(logging.WARNING, logger="llvm_backend.rewrite_cache"):
        f, outcome = _outcomes_of(lambda: pytensor.function([x], pt.exp(x).sum(), mode="LLVM"))
    assert "not used" in caplog.text
    assert outcome == {"stored": 1}
    assert f(np.zeros(3)) == 3.0
    with entry.open("rb") as stored:
        _, (inputs, _, _) = pickle.load(stored)
    assert inputs[0].type == x.type


@pytest.mark.parametrize("bound", ["entries", "bytes"])
def test_least_recently_used_entries_go_first(tmp_path, monkeypatch, bound):
    small = RewriteCache(tmp_path, max_entries=2) if bound == "entries" else RewriteCache(tmp_path)
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", small)
    x = pt.dvector("x")
    pytensor.function([x], pt.exp(x), mode="LLVM")
    (oldest,) = small.entries()
    pytensor.function([x], pt.log(x), mode="LLVM")
    os.utime(oldest, (1, 1))
    pytensor.function([x], pt.exp(x), mode="LLVM")  # a hit: now the most recently used
    if bound == "bytes":
        small.max_bytes = int(1.25 * sum(p.stat().st_size for p in small.entries()))  # two such graphs, not three
    pytensor.function([x], pt.sin(x), mode="LLVM")
    remaining = small.entries()
    assert len(remaining) == 2 and oldest in remaining


def test_a_graph_over_the_byte_bound_is_not_stored(tmp_path, monkeypatch):
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", RewriteCache(tmp_path, max_bytes=100))
    x = pt.dvector("x")
    f, outcome = _outcomes_of(lambda: pytensor.function([x], pt.exp(x).sum(), mode="LLVM"))
    assert outcome == {"not stored": 1} and rewrite_cache.store.DEFAULT.entries() == []
    assert f(np.zeros(2)) == 2.0


def test_disabled_by_the_environment(cache, monkeypatch):
    assert isinstance(_query_rewriter(LLVM), CachedRewriter)
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", "0")
    assert not isinstance(_query_rewriter(LLVM), CachedRewriter)
    x = pt.dvector("x")
    pytensor.function([x], pt.exp(x), mode="LLVM")
    assert cache.entries() == []


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda: LLVM.including("fast_run"), id="including"),
        pytest.param(lambda: LLVM.excluding("local_exp_log"), id="excluding"),
        pytest.param(lambda: LLVM.clone(), id="clone"),
        pytest.param(lambda: Mode(linker="llvm"), id="Mode(linker='llvm')"),
        # what PyMC's compile builds from the mode it is given
        pytest.param(
            lambda: Mode(linker=LLVM.linker, optimizer=LLVM.provided_optimizer.including("random_make_inplace")),
            id="PyMC's rebuilt Mode",
        ),
    ],
)
def test_every_mode_with_our_linker_caches(cache, build):
    mode = build()
    assert isinstance(mode.linker, LLVMLinker)
    assert isinstance(_query_rewriter(mode), CachedRewriter)
    x = pt.dvector("x")
    outcomes = [_outcomes_of(lambda: pytensor.function([x], pt.exp(x) * 2, mode=build()))[1] for _ in range(2)]
    assert outcomes == [{"stored": 1}, {"hit": 1}]


@pytest.mark.parametrize("name", ["NUMBA", "FAST_RUN", "CVM", "FAST_COMPILE", "JAX"])
def test_stock_modes_get_pytensors_own_rewriters(name):
    assert type(_query_rewriter(get_mode(name))) is SequentialGraphRewriter


@pytest.mark.parametrize(
    ("query", "ours"),
    [
        (RewriteDatabaseQuery(include=["fast_run", REWRITE_TAG]), True),
        (RewriteDatabaseQuery(include=[REWRITE_TAG]), True),
        # the tag alone decides: a query of stock's tags whose rewriters hold ours is not ours
        (RewriteDatabaseQuery(include=["fast_run", SUPERVISOR_NAME]), False),
        (RewriteDatabaseQuery(include=["fast_run", "numba"]), False),
        (RewriteDatabaseQuery(include=["fast_run", REWRITE_TAG], exclude=[REWRITE_TAG]), False),
    ],
)
def test_a_query_is_ours_exactly_when_it_includes_our_tag(query, ours):
    assert rewrite_cache.is_ours(query) is ours
    assert isinstance(optdb.query(query), CachedRewriter) is ours


def test_a_query_including_the_cache_tag_is_served_by_the_cache_with_the_rewrites_it_names():
    query = RewriteDatabaseQuery(include=["fast_compile", rewrite_cache.CACHE_TAG])
    assert rewrite_cache.is_ours(query)
    assert not rewrite_cache.is_ours(query.excluding(rewrite_cache.CACHE_TAG))
    cached = optdb.query(query)
    assert isinstance(cached, CachedRewriter)
    stock = optdb.query(RewriteDatabaseQuery(include=["fast_compile"]))
    assert [r.name for r in cached.rewriter.data] == [r.name for r in stock.data]


def test_rewrite_graph_through_the_cache_gives_pytensor_s_graph_and_leaves_a_function_graph_to_pytensor(cache):
    x, y = pt.dvector("x"), pt.dscalar("y")

    def logp():
        return (pt.log(pt.exp(x)) * y - pt.log(pt.sigmoid(x))).sum() + 0 * y

    want = rewrite_graph(logp(), include=("canonicalize", "stabilize"))
    through_cache = rewrite_cache.rewrite_graph_through_cache(rewrite_graph)
    got = [_outcomes_of(lambda: through_cache(logp(), include=("canonicalize", "stabilize"))) for _ in range(2)]
    assert [outcome for _, outcome in got] == [{"stored": 1}, {"hit": 1}]
    for graph, _ in got:
        assert equal_computations([graph], [want])
    values = {x: np.linspace(-3.0, 3.0, 7), y: 0.25}
    np.testing.assert_allclose(got[1][0].eval(values), logp().eval(values), rtol=1e-12)
    fgraph = FunctionGraph([x, y], [logp()], clone=False)
    (result, outcome) = _outcomes_of(lambda: through_cache(fgraph, include=("canonicalize",)))
    assert result is fgraph and outcome == {}


def _cost():
    x, sigma = pt.dvector("x"), pt.dscalar("sigma")
    data = pytensor.shared(np.linspace(-1.0, 1.0, 5), name="data")
    return [x, sigma], (-0.5 * ((data - x) / pt.exp(sigma)) ** 2 - sigma).sum() + pt.log1p(pt.exp(x)).sum()


def test_a_gradient_through_the_cache_is_pytensor_s_built_on_the_caller_s_cost(cache):
    through_cache = rewrite_cache.grad_through_cache(pytensor.grad)
    results = []
    for _ in range(2):
        (wrt, cost) = _cost()
        grads, outcome = _outcomes_of(lambda: through_cache(cost, wrt))
        results.append((wrt, cost, grads, outcome))
    assert [outcome for *_, outcome in results] == [{"stored": 1}, {"hit": 1}]
    wrt, cost, grads, _ = results[1]
    want = pytensor.grad(cost, wrt)
    assert equal_computations(grads, want)
    # built on the caller's own cost graph: the gradient's nodes read the cost's nodes, not copies of them
    cost_nodes = set(rewrite_cache.structure.toposort(wrt, [cost]))
    read = {var.owner for node in rewrite_cache.structure.toposort(wrt, grads) for var in node.inputs if var.owner}
    assert read & cost_nodes
    data = next(var for var in graph_inputs([cost]) if var.name == "data")
    assert _key([*wrt, data], [cost, *grads]) == _key([*wrt, data], [cost, *want])
    values = [np.array([0.3, -0.2, 0.1, 0.0, 0.4]), 0.2]
    compare_llvm_numba_and_py(wrt, [cost, *grads], values)


def test_a_gradient_through_the_cache_keeps_pytensor_s_result_type_and_serves_only_the_plain_call(cache):
    through_cache = rewrite_cache.grad_through_cache(pytensor.grad)
    (x, sigma), cost = _cost()
    stored, outcome = _outcomes_of(lambda: through_cache(cost, (x, sigma)))
    assert isinstance(stored, tuple) and outcome == {"stored": 1}
    hit, outcome = _outcomes_of(lambda: through_cache(cost, (x, sigma)))
    assert isinstance(hit, tuple) and outcome == {"hit": 1}
    term = cost.owner.inputs[0]
    for args, kwargs in (((x,), {}), (([x],), {"disconnected_inputs": "ignore"}), (([term],), {})):
        grads, outcome = _outcomes_of(lambda: through_cache(cost, *args, **kwargs))
        assert outcome == {}
        want = pytensor.grad(cost, *args, **kwargs)
        assert equal_computations(*(list(g) if isinstance(g, list) else [g] for g in (grads, want)))
    assert len(cache.entries()) == 1


def test_a_stored_gradient_that_does_not_fit_the_cost_is_removed_and_the_gradient_built(cache, caplog):
    through_cache = rewrite_cache.grad_through_cache(pytensor.grad)
    wrt, cost = _cost()
    through_cache(cost, wrt)
    (path,) = cache.entries()
    key, (stored_inputs, outputs, destroy) = pickle.loads(path.read_bytes())
    path.write_bytes(pickle.dumps((key, (stored_inputs[:1], outputs, destroy))))
    wrt, cost = _cost()
    with caplog.at_level(logging.WARNING):
        grads, outcome = _outcomes_of(lambda: through_cache(cost, wrt))
    assert outcome == {"stored": 1}
    assert "not used" in caplog.text
    assert equal_computations(grads, pytensor.grad(cost, wrt))


def _random_walk(mode, seed):
    """Two calls of a FAST_COMPILE function whose random variable PyMC's rewrite makes in place, and whose
    generator the function updates."""
    x = pt.dvector("x")
    rng = pytensor.shared(np.random.default_rng(seed))
    next_rng, noise = pt.random.normal(0, 1, size=3, rng=rng, return_next_rng=True)
    fn = pytensor.function([x], [x + noise, pt.exp(noise).sum()], updates={rng: next_rng}, mode=mode)
    return fn, [value for _ in range(2) for value in fn(np.arange(3.0))]


def test_a_mode_on_the_cached_py_linker_rewrites_through_the_cache_and_computes_what_the_py_linker_does(cache):
    def mode(linker):
        return Mode(linker=linker, optimizer="fast_compile").including("random_make_inplace")

    (_, first), stored = _outcomes_of(lambda: _random_walk(mode(rewrite_cache.CachedPerformLinker()), 4))
    (hit_fn, second), hit = _outcomes_of(lambda: _random_walk(mode(rewrite_cache.CachedPerformLinker()), 4))
    assert (stored, hit) == ({"stored": 1}, {"hit": 1})
    (_, want), none = _outcomes_of(lambda: _random_walk(mode("py"), 4))
    assert none == {}
    for got in (first, second):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    assert not np.array_equal(want[0], want[2])
    assert any(node.op.destroy_map for node in hit_fn.maker.fgraph.apply_nodes)
    assert hasattr(hit_fn.maker.fgraph, "destroy_handler")
    assert type(hit_fn.maker.linker) is rewrite_cache.CachedPerformLinker


def test_a_query_of_tag_strings_is_ours_when_it_includes_our_tag():
    assert isinstance(optdb.query("+fast_run", f"+{REWRITE_TAG}"), CachedRewriter)
    assert not isinstance(optdb.query("+fast_run", f"+{REWRITE_TAG}", f"-{REWRITE_TAG}"), CachedRewriter)
    assert type(optdb.query("+fast_run")) is SequentialGraphRewriter


def test_cli_reports_and_clears(cache, capsys):
    from llvm_backend.tools.cli import main

    x = pt.dvector("x")
    pytensor.function([x], pt.exp(x), mode="LLVM")
    assert main(["cache"]) == 0
    assert "1 rewritten graphs" in capsys.readouterr().out
    assert main(["cache", "clear"]) == 0
    assert "removed 1 rewritten graphs" in capsys.readouterr().out
    assert cache.entries() == []


def _distinct_modes():
    """LLVM and modes whose rewrites or linker differ from it, each from the next."""
    return {
        "LLVM": LLVM,
        "excluding fusion": LLVM.excluding("fusion"),
        "excluding local_exp_log": LLVM.excluding("local_exp_log"),
        "including local_remove_all_assert": LLVM.including("local_remove_all_assert"),
        "clone with another query": LLVM.clone(optimizer=LLVM.provided_optimizer.excluding("canonicalize")),
        "py linker": Mode(linker="py", optimizer=LLVM.provided_optimizer),
    }


def test_the_key_differs_for_every_pair_of_distinct_queries(cache):
    x, y = pt.dvector("x"), pt.dvector("y")
    keys = {name: _key([x, y], [pt.exp(x) + y], mode=mode) for name, mode in _distinct_modes().items()}
    assert len(set(keys.values())) == len(keys), keys
    assert _key([x, y], [pt.exp(x) + y], mode=LLVM.clone()) == keys["LLVM"]


def test_the_key_is_stable_for_one_graph_compiled_twice_in_one_process(cache):
    # Compiling hashes ops' frozendicts, which then hold their hash: the key must not see it.
    g = graphs.logp_grad()
    outcomes = [_outcomes_of(lambda: pytensor.function(g.inputs, g.outputs, mode="LLVM"))[1] for _ in range(3)]
    assert outcomes == [{"stored": 1}, {"hit": 1}, {"hit": 1}]


def test_a_graph_of_ops_loaded_from_the_cache_keys_as_the_graph_pytensor_made(cache):
    # pt.exp's op has its name string as a key of its __dict__ too (pickle's memo writes it once); the same op
    # unpickled does not: a graph built on a stored graph (nutpie builds the gradient on its rewritten log
    # density) must key as one built on the graph PyTensor made.
    x, y = pt.dvector("x"), pt.dscalar("y")
    outputs = [pt.exp(x * y).sum(), pt.switch(x > 0, pt.log1p(x), y)]
    loaded = pickle.loads(pickle.dumps((x, y, outputs)))
    assert _key([x, y], outputs) == _key(list(loaded[:2]), loaded[2])


def test_a_graph_stored_for_one_query_is_not_installed_for_another(cache):
    x = pt.dvector("x")
    out = pt.exp(x) * 2 + pt.log1p(x)
    fused = pytensor.function([x], out, mode="LLVM")
    unfused, outcome = _outcomes_of(lambda: pytensor.function([x], out, mode=LLVM.excluding("fusion")))
    assert outcome == {"stored": 1}
    composites = [
        fn
        for fn in (fused, unfused)
        if any(isinstance(getattr(n.op, "scalar_op", None), Composite) for n in fn.maker.fgraph.apply_nodes)
    ]
    assert composites == [fused]
    value = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(unfused(value), fused(value))
