import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.io import In
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import explicit_graph_inputs

import llvm_backend  # noqa: F401
from llvm_backend import rewrite_cache
from llvm_backend.tools import graphs
from llvm_backend.tools.testing import assert_same_result, compare_llvm_numba_and_py, rewritten_graph


def test_same_result_accepts_equal_values_and_nan():
    assert_same_result(np.array([1.0, np.nan]), np.array([1.0, np.nan]), "nan")


@pytest.mark.parametrize(
    "actual, expected, message",
    [
        (np.array(1.0), np.float64(1.0), "ndarray instead of numpy scalar"),
        (np.array([1.0], dtype="float32"), np.array([1.0]), "dtype float32 instead of float64"),
        (np.zeros((2, 1)), np.zeros((2,)), r"shape \(2, 1\) instead of \(2,\)"),
        (np.array([1.0, 2.0]), np.array([1.0, 2.1]), "Not equal to tolerance"),
        (np.array([1, 2]), np.array([1, 3]), "Arrays are not equal"),
    ],
)
def test_same_result_rejects_differences(actual, expected, message):
    with pytest.raises(AssertionError, match=message):
        assert_same_result(actual, expected, "out")


def test_compare_returns_llvm_results_for_single_and_multiple_outputs():
    x = pt.lvector("x")
    _, single = compare_llvm_numba_and_py([x], x.sum(), [np.arange(5)])
    assert single == 10 and single.dtype == np.int64
    _, (total, doubled) = compare_llvm_numba_and_py([x], [x.sum(), x * 2], [np.arange(3)])
    assert total == 3 and doubled.tolist() == [0, 2, 4]


def _described(fgraph) -> tuple:
    """``fgraph`` node by node in toposort order: each op's type, its string, what it destroys and views and where
    its inputs come from (an input's index, an earlier node's output, a constant's type and value); then where the
    outputs come from and the features attached, by type."""
    names = {var: f"input {k}" for k, var in enumerate(fgraph.inputs)}
    nodes = []
    for k, node in enumerate(fgraph.toposort()):
        sources = [
            names[var] if var in names else (str(var.type), np.asarray(var.data).tolist())
            for var in node.inputs
            if var in names or isinstance(var, Constant)
        ]
        assert len(sources) == len(node.inputs), node
        nodes.append((type(node.op), str(node.op), node.op.destroy_map, node.op.view_map, sources))
        names.update({var: f"node {k} output {j}" for j, var in enumerate(node.outputs)})
    features = sorted(type(feature).__name__ for feature in fgraph._features)
    return nodes, [names[var] for var in fgraph.outputs], features


def _in_place_graph():
    """An input that is also an output (a deep copy) and a mutable input that may be sorted in place."""
    x, y, m = pt.dvector("x"), pt.dscalar("y"), pt.dvector("m")
    return [x, y, In(m, mutable=True)], [x, pt.exp(x) * y + (x * 2).sum(), pt.sort(m) + 1.0]


def _inputs_and_outputs(graph: graphs.Graph) -> tuple[list, list]:
    return graph.inputs, graph.outputs


GRAPHS = {
    "in place and deep copy": _in_place_graph,
    "logp_grad_5": lambda: _inputs_and_outputs(graphs.logp_grad(n_scalars=5)),
    "regression": lambda: _inputs_and_outputs(graphs.regression(n_cols=6, n_obs=20, n_groups=2)),
}


@pytest.mark.parametrize("case", list(GRAPHS))
def test_rewritten_graph_is_the_compiled_functions_graph(case, tmp_path, monkeypatch):
    """Node for node, in order, the graph ``pytensor.function`` compiles: rewritten anew (the cache off), and
    installed from the rewrite cache where a compile stored it, as a compile then installs it too."""
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", rewrite_cache.RewriteCache(tmp_path / "rewrites"))
    inputs, outputs = GRAPHS[case]()
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", "0")
    compiled = pytensor.function(inputs, outputs, mode="LLVM").maker.fgraph
    graph = rewritten_graph(outputs, inputs)
    assert not set(graph.apply_nodes) & set(compiled.apply_nodes)
    nodes, sources, features = _described(graph)
    assert (nodes, sources, features) == _described(compiled)
    if case == "in place and deep copy":
        assert [op for _, op, destroys, *_ in nodes if destroys]
        assert "DeepCopyOp" in [op for _, op, *_ in nodes]
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", "1")
    stored = pytensor.function(inputs, outputs, mode="LLVM").maker.fgraph
    hits = rewrite_cache.outcomes["hit"]
    from_cache = rewritten_graph(outputs, inputs)
    assert rewrite_cache.outcomes["hit"] == hits + 1
    assert _described(from_cache) == _described(pytensor.function(inputs, outputs, mode="LLVM").maker.fgraph)
    # A hit leaves out features only rewriting attaches (ShapeFeature, MergeFeature); the nodes are the same.
    assert _described(from_cache)[:2] == _described(stored)[:2] == (nodes, sources)


def test_rewritten_graph_takes_the_outputs_roots_as_inputs_and_another_mode(monkeypatch):
    # the rewrite cache off: both graphs rewritten anew, whatever the process's cache holds
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", "0")
    x, y = pt.dvector("x"), pt.dscalar("y")
    output = pt.exp(x) * y + pytensor.shared(np.ones(3), name="s") + pt.constant(np.arange(3.0))
    graph = rewritten_graph(output)
    roots = list(explicit_graph_inputs(output))
    assert set(roots) == {x, y}
    assert [var.name for var in graph.inputs] == [*(var.name for var in roots), "s"]
    assert _described(graph) == _described(pytensor.function(roots, output, mode="LLVM").maker.fgraph)
    stock = rewritten_graph(output, [x, y], mode="NUMBA")
    assert _described(stock) == _described(pytensor.function([x, y], output, mode="NUMBA").maker.fgraph)
    assert _described(stock) != _described(rewritten_graph(output, [x, y]))
