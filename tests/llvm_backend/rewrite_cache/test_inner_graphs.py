"""Graphs holding ops with inner graphs through the rewrite cache: an `OpFromGraph` keyed and stored without the
caches it fills as it is used (its gradient's op, a closure pickle cannot name), and inner graphs keyed by their
structure, each node once, without the ``auto_name`` counters of their variables, in every process alike."""

import io
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
from pytensor.scan.op import Scan

from llvm_backend import rewrite_cache
from llvm_backend.adapters import pytensor as adapter
from llvm_backend.rewrite_cache import fingerprint
from llvm_backend.rewrite_cache.fingerprint import state_identity
from llvm_backend.rewrite_cache.pickling import dumps
from llvm_backend.tools.testing import PY_MODE, compare_llvm_numba_and_py


def _outcomes(compile_once):
    before = dict(rewrite_cache.outcomes)
    result = compile_once()
    return result, {k: v - before.get(k, 0) for k, v in rewrite_cache.outcomes.items() if v != before.get(k, 0)}


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


def _doubling(depth: int, constant: float = 2.0, top=pt.add) -> OpFromGraph:
    """An `OpFromGraph` whose inner graph doubles ``x * constant`` ``depth`` times, then ``top``s ``x``: 2**depth
    paths from its output to its multiplication."""
    x = pt.dscalar("x")
    y = x * constant
    for _ in range(depth):
        y = y + y
    return OpFromGraph([x], [top(y, x)])


def _keyed_bytes(op) -> int:
    """How many bytes the key's pickler writes for ``op``'s state, as `state_identity` runs it."""
    buffer = io.BytesIO()
    pickler = fingerprint._StatePickler(buffer, protocol=4)
    pickler.fast = True
    pickler.dump(op)
    return len(buffer.getvalue())


def test_an_inner_graph_is_keyed_writing_each_node_once_however_many_paths_lead_to_it():
    assert _keyed_bytes(_doubling(12)) == _keyed_bytes(_doubling(2)) < 2_000


def test_inner_graphs_key_alike_exactly_when_they_compute_alike():
    assert state_identity(_doubling(6)) == state_identity(_doubling(6))
    keys = {
        state_identity(op)
        for op in (
            _doubling(6),
            _doubling(7),
            _doubling(6, constant=3.0),
            _doubling(6, top=pt.mul),
            _doubling(6, top=pt.sub),
        )
    }
    assert len(keys) == 5
    x, y = pt.dscalar("x"), pt.dscalar("y")
    assert state_identity(OpFromGraph([x, y], [x - y])) != state_identity(OpFromGraph([x, y], [y - x]))
    assert state_identity(OpFromGraph([x, y], [x - y])) != state_identity(OpFromGraph([y, x], [x - y]))


def _scan_op(step) -> Scan:
    x = pt.dvector("x")
    out = pytensor.scan(step, sequences=[x], outputs_info=[pt.constant(np.float64(0.0))], return_updates=False)
    [op] = {node.op for node in FunctionGraph([x], [out]).apply_nodes if isinstance(node.op, Scan)}
    return op


def test_a_scan_keys_and_pickles_the_same_after_it_ran():
    op = _scan_op(lambda v, acc: acc + v)
    identity, blob = state_identity(op), dumps(op, protocol=4)
    x = pt.dvector("x")
    pytensor.function([x], op(x.shape[0], x, pt.zeros((1,), "float64"))[-1], mode=PY_MODE)(np.ones(3))
    assert "_fn" in vars(op)
    assert state_identity(op) == identity
    assert dumps(op, protocol=4) == blob
    assert adapter._scan_problem() is None


def test_the_scan_state_is_checked_against_a_new_scan_and_refused_when_it_differs(monkeypatch, cache):
    monkeypatch.setattr(adapter, "SCAN_ADDED", (*adapter.SCAN_ADDED, "info"))
    adapter._scan_problem.cache_clear()
    try:
        with pytest.raises(RuntimeError, match=r"pytensor 3\.3\.\d+: a new Scan holds \['info'\]"):
            adapter.scan_state(_scan_op(lambda v, acc: acc + v))
        x = pt.dvector("x")
        total = pytensor.scan(
            lambda v, acc: acc + v, sequences=[x], outputs_info=[pt.constant(np.float64(0.0))], return_updates=False
        )[-1]
        f, outcome = _outcomes(lambda: pytensor.function([x], total, mode="LLVM"))
        # the graph holding the Scan; the Scan's own inner graph, which holds none, is stored
        assert outcome == {"uncacheable": 1, "stored": 1}
        np.testing.assert_allclose(f(np.arange(4.0)), 6.0)
    finally:
        monkeypatch.undo()
        adapter._scan_problem.cache_clear()


def test_the_inner_graphs_of_scans_and_of_nested_ops_key_by_what_they_compute():
    assert state_identity(_scan_op(lambda v, acc: acc + v)) == state_identity(_scan_op(lambda v, acc: acc + v))
    assert state_identity(_scan_op(lambda v, acc: acc + v)) != state_identity(_scan_op(lambda v, acc: acc * v))
    z = pt.dscalar("z")
    outer = [OpFromGraph([z], [_doubling(3, constant=c)(z) * 2]) for c in (2.0, 2.0, 5.0)]
    assert state_identity(outer[0]) == state_identity(outer[1]) != state_identity(outer[2])


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
        f, outcome = _outcomes(lambda: pytensor.function([x], pt.logsumexp(x, axis=1), mode="LLVM"))
        assert outcome["uncacheable"] == 1
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
        inputs, outputs = _logsumexp_gradient()
        outcomes.append(_outcomes(lambda: compare_llvm_numba_and_py(inputs, outputs, values))[1])
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


def _doubling_graph(constant: float):
    x, w = pt.dvector("x"), pt.dvector("w")
    total = pytensor.scan(
        lambda v, acc: acc + _doubling(5, constant)(v),
        sequences=[x * w],
        outputs_info=[pt.constant(np.float64(0.0))],
        return_updates=False,
    )[-1]
    return [x, w], [total, *pytensor.grad(total, [x, w])]


@pytest.mark.slow
def test_graphs_of_scans_over_op_from_graphs_are_served_only_to_graphs_computing_alike(cache):
    """Each graph is compiled under the py linker first, which runs its Scan and leaves its compiled inner
    function on the op: the LLVM compile that follows keys and stores the graph all the same."""
    values = [np.linspace(-1.0, 2.0, 5), np.linspace(0.5, 1.5, 5)]
    outcomes = []
    for constant in (2.0, 2.0, 3.0):
        inputs, outputs = _doubling_graph(constant)
        (_, results), outcome = _outcomes(lambda: compare_llvm_numba_and_py(inputs, outputs, values))
        np.testing.assert_allclose(results[0], (32 * constant + 1) * (values[0] * values[1]).sum())
        outcomes.append(outcome)
    assert [set(outcome) for outcome in outcomes] == [{"stored"}, {"hit"}, {"stored"}]
