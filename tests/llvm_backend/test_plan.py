"""The lowering plan: each node's lowering decided once per graph, graph passes' hints handed to the lowerings in
their `LoweringContext`, and per-lowering cache versions."""

from collections import Counter
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.basic import Join
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.rewriting.scalarize import ScalarizedElemwise, ScalarizedJoin

from llvm_backend import codegen, dispatch
from llvm_backend.codegen import graph_cache_key, graph_source
from llvm_backend.dispatch import GRAPH_PASSES, LOWERINGS, Lowering, LoweringContext, plan_graph
from llvm_backend.lowerings.composite import lowering_composites
from llvm_backend.lowerings.join import fill_joins
from llvm_backend.lowerings.loops import loop_spec
from llvm_backend_intrinsics.loops import LoopSpec


def _joined_gradient():
    """scalars around the map of a vector, joined: a loop filling a join"""
    x, a = pt.dvector("x"), pt.dscalar("a")
    out = pt.concatenate([pt.atleast_1d(a * 2), x * a + 1, pt.atleast_1d((x * x).sum())])
    return [x, a], out


def _fgraph(inputs, outputs):
    return pytensor.function(inputs, outputs, mode="LLVM").maker.fgraph


def _graph(fgraph):
    with lowering_composites():
        return graph_source(fgraph, ofg_memo={})


def _key(fgraph) -> str:
    return graph_cache_key(_graph(fgraph), "salt")


def test_each_node_is_decided_once_and_loop_spec_runs_once_per_loop(monkeypatch):
    fgraph = _fgraph(*_joined_gradient())
    decided, specs = Counter(), Counter()
    decide = Lowering.decide

    def counted_decide(self, node):
        decided[node] += 1
        return decide(self, node)

    def counted_spec(node):
        specs[node] += 1
        return loop_spec(node)

    monkeypatch.setattr(Lowering, "decide", counted_decide)
    for op_type in (Elemwise, ScalarizedElemwise, FusedElemwise):
        monkeypatch.setitem(LOWERINGS, op_type, replace(LOWERINGS[op_type], spec=counted_spec))
    passes = []
    monkeypatch.setattr(
        dispatch, "GRAPH_PASSES", [lambda fgraph, plan: passes.append(plan) or fill_joins(fgraph, plan)]
    )
    graph = _graph(fgraph)
    loops = [n for n in fgraph.apply_nodes if isinstance(n.op, Elemwise | ScalarizedElemwise | FusedElemwise)]
    assert loops and all(specs[n] == 1 for n in loops) and set(specs) == set(loops)
    lowered = [n for n in fgraph.apply_nodes if dispatch.lowering_for(n.op) is not None]
    assert lowered and all(decided[n] == 1 for n in lowered) and set(decided) == set(lowered)
    assert len(passes) == 1
    [join] = [c for c in graph.plan.calls if isinstance(getattr(c.label, "op", None), ScalarizedJoin)]
    assert join.function.__name__ == "join_around"


def test_the_filled_join_pass_annotates_the_plan_of_the_loop_and_the_join():
    assert fill_joins in GRAPH_PASSES
    fgraph = _fgraph(*_joined_gradient())
    plan = plan_graph(fgraph)
    [join] = [n for n in fgraph.apply_nodes if isinstance(n.op, ScalarizedJoin)]
    producer = join.inputs[1].owner
    assert plan[join].hints == {"filled": (1, 1, 1)}
    assert plan[producer].hints["within"][1:] == (1, 1)
    assert isinstance(plan[producer].spec, LoopSpec)
    with pytest.raises(TypeError):
        plan[join].hints["filled"] = None


def test_a_lowering_gets_a_frozen_context_with_its_plan_entry_and_hints(monkeypatch):
    seen = []
    lower_join = LOWERINGS[Join].funcify

    def recording(context):
        seen.append(context)
        return lower_join(context)

    monkeypatch.setitem(LOWERINGS, Join, replace(LOWERINGS[Join], funcify=recording))
    monkeypatch.setattr(
        dispatch, "GRAPH_PASSES", [lambda fgraph, plan: {n: {"seen": True} for n in plan.entries if n.op == Join(0)}]
    )
    x, y = pt.dmatrix("x"), pt.dmatrix("y")
    fn = pytensor.function([x, y], pt.join(0, x, y), mode="LLVM")
    np.testing.assert_array_equal(fn(np.ones((1, 2)), np.zeros((2, 2))), np.r_[np.ones((1, 2)), np.zeros((2, 2))])
    [context] = seen
    assert isinstance(context, LoweringContext) and context.hints == {"seen": True}
    assert context.entry.lowering.funcify is recording and context.op == Join(0)
    with pytest.raises(FrozenInstanceError):
        context.node = None


def test_a_lowering_version_changes_the_keys_of_the_graphs_using_it_only(monkeypatch):
    x = pt.dvector("x")
    with_join = _fgraph([x], pt.join(0, x, pt.exp(x)))
    without = _fgraph([x], pt.exp(x) * 2)
    before = _key(with_join), _key(without)
    for op_type in (Join, ScalarizedJoin):
        monkeypatch.setitem(LOWERINGS, op_type, replace(LOWERINGS[op_type], version=LOWERINGS[op_type].version + 1))
    after = _key(with_join), _key(without)
    assert after[0] != before[0] and after[1] == before[1]


def test_the_graph_key_holds_the_graph_writers_source(monkeypatch):
    x = pt.dvector("x")
    fgraph = _fgraph([x], pt.exp(x) * 2)
    before = _key(fgraph)
    monkeypatch.setattr(codegen, "source_hash", lambda module: f"changed {module}")
    assert _key(fgraph) != before


def test_a_lowerings_salt_holds_the_source_of_every_module_of_the_project():
    """The shapes intrinsic emits through ``messages``; the salt of its lowering is the hash of the whole project's
    source, which changes with any of its files."""
    from pytensor.tensor.shape import SpecifyShape

    from llvm_backend.sources import OWN_PACKAGES, package_source_hash, project_source_hash

    assert dispatch.source_hash("llvm_backend_intrinsics.shapes") == project_source_hash()
    assert dispatch.source_hash("llvm_backend.lowerings.shapes") == project_source_hash()
    assert project_source_hash() in LOWERINGS[SpecifyShape].salt
    assert project_source_hash() == package_source_hash(OWN_PACKAGES)


def test_the_project_source_hash_changes_with_any_module(tmp_path, monkeypatch):
    from llvm_backend.sources import package_source_hash

    package = tmp_path / "a_project"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "helper.py").write_text("MESSAGE = 'one'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = package_source_hash(("a_project",))
    (package / "helper.py").write_text("MESSAGE = 'two'\n")
    assert package_source_hash(("a_project",)) != before
