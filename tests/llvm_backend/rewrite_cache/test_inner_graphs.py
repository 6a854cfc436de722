"""Graphs holding ops with inner graphs through the rewrite cache: an `OpFromGraph` keyed and stored without the
caches it fills as it is used (its gradient's op, a closure pickle cannot name), and inner graphs keyed without
the ``auto_name`` counters of their variables, in every process alike."""

import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.builders import OpFromGraph
from pytensor.graph.fg import FunctionGraph

from llvm_backend import rewrite_cache
from llvm_backend.adapters import pytensor as adapter
from llvm_backend.rewrite_cache.fingerprint import state_identity
from llvm_backend.rewrite_cache.pickling import dumps
from llvm_backend.tools.testing import compare_llvm_numba_and_py


def _logsumexp_op():
    x = pt.dmatrix("x")
    [op] = {node.op for node in FunctionGraph([x], [pt.logsumexp(x, axis=1)]).apply_nodes}
    assert isinstance(op, OpFromGraph)
    return op


def _used(op) -> None:
    """Differentiate, shape and ask the connection pattern of a node of ``op``: what fills its caches."""
    x = pt.dmatrix("x")
    out = op(x)
    pytensor.grad(out.sum(), x)
    op.connection_pattern(out.owner)
    op.infer_shape(out.owner, [(pt.constant(2), pt.constant(3))])


def test_an_op_from_graph_keys_and_pickles_the_same_after_its_gradient_shape_and_connection_pattern():
    op = _logsumexp_op()
    identity, blob = state_identity(op), dumps(op, protocol=4)
    _used(op)
    with pytest.raises(Exception, match="Can't pickle local object"):
        pickle.dumps(op, protocol=4)
    assert state_identity(op) == identity
    assert dumps(op, protocol=4) == blob
    loaded = pickle.loads(blob)
    assert type(loaded) is type(op) and loaded == op
    x = pt.dmatrix("x")
    value = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(
        pytensor.grad(loaded(x).sum(), x).eval({x: value}), np.exp(value) / np.exp(value).sum(1)[:, None]
    )


def test_an_inner_graph_keys_alike_whatever_variables_were_made_before_it():
    first = state_identity(_logsumexp_op())
    for _ in range(5):
        pt.dvector()
    assert state_identity(_logsumexp_op()) == first


def test_an_inner_graph_keys_alike_after_rewrites_annotated_and_asked_its_constants():
    x = pt.dvector("x")
    op = OpFromGraph([x], [x * pt.constant(np.full(3, 0.5))])
    first = state_identity(op)
    [constant] = [v for n in op.fgraph.toposort() for v in n.inputs if isinstance(v, pt.TensorConstant)]
    assert constant.unique_value == 0.5
    constant.tag.is_diagonal = False
    assert state_identity(op) == first
    assert adapter._constant_cache_problem() is None


def test_the_op_from_graph_state_is_checked_against_a_new_op_and_refused_when_it_differs(monkeypatch, cache):
    assert adapter._op_from_graph_problem() is None
    monkeypatch.setitem(adapter.OP_FROM_GRAPH_CACHES, "_a_cache_pytensor_dropped", None)
    adapter._op_from_graph_problem.cache_clear()
    try:
        with pytest.raises(
            RuntimeError, match=r"pytensor 3\.3\.\d+: a new OpFromGraph holds \['_a_cache_pytensor_dropped'\]"
        ):
            adapter.op_from_graph_state(_logsumexp_op())
        x = pt.dmatrix("x")
        before = dict(rewrite_cache.outcomes)
        f = pytensor.function([x], pt.logsumexp(x, axis=1), mode="LLVM")
        assert rewrite_cache.outcomes["uncacheable"] == before.get("uncacheable", 0) + 1
        np.testing.assert_allclose(f(np.zeros((2, 3))), np.log([3.0, 3.0]))
    finally:
        monkeypatch.undo()
        adapter._op_from_graph_problem.cache_clear()


def _logsumexp_gradient():
    x, w = pt.dmatrix("x"), pt.dvector("w")
    cost = (pt.logsumexp(x * w, axis=1) ** 2).sum()
    return [x, w], [cost, *pytensor.grad(cost, [x, w])]


@pytest.mark.slow
def test_a_graph_holding_a_differentiated_op_from_graph_is_stored_then_served_with_the_same_values(cache):
    values = [np.linspace(-1.0, 2.0, 12).reshape(4, 3), np.array([0.5, -1.0, 2.0])]
    outcomes = []
    for _ in range(2):
        before = dict(rewrite_cache.outcomes)
        inputs, outputs = _logsumexp_gradient()
        compare_llvm_numba_and_py(inputs, outputs, values)
        outcomes.append({k: v - before.get(k, 0) for k, v in rewrite_cache.outcomes.items() if v != before.get(k, 0)})
    assert outcomes == [{"stored": 1}, {"hit": 1}]


@pytest.mark.slow
def test_a_graph_holding_an_op_from_graph_keys_alike_in_every_process(cache):
    script = textwrap.dedent(
        """
        import json, sys
        import pytensor, pytensor.tensor as pt
        from pytensor.graph.fg import FunctionGraph
        from llvm_backend.mode import LLVM
        for _ in range(int(sys.argv[1])):
            pt.dmatrix()
        x, w = pt.dmatrix("x"), pt.dvector("w")
        cost = (pt.logsumexp(x * w, axis=1) ** 2).sum()
        outputs = [cost, *pytensor.grad(cost, [x, w])]
        fgraph = FunctionGraph([x, w], outputs, clone=True)
        fgraph._compile_mode = LLVM
        print(json.dumps(LLVM.optimizer._rewriter.key(fgraph)))
        """
    )
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={cache.directory.parent}"}
    keys = {
        json.loads(
            subprocess.run(
                [sys.executable, "-c", script, made], capture_output=True, text=True, check=True, env=env
            ).stdout.splitlines()[-1]
        )
        for made in ("0", "7")
    }
    assert len(keys) == 1
