"""`ValidateOnce`: the passes after PyTensor's in-place rewrites, their graph's cycle check made once per pass, with
the graph the stock pass leaves."""

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import get_mode, optdb
from pytensor.graph.basic import equal_computations
from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.features import ReplaceValidate
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.basic import GraphRewriter, SequentialGraphRewriter
from pytensor.graph.utils import InconsistencyError
from pytensor.tensor.elemwise import Elemwise

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.validate_once import VALIDATED_ONCE, ValidateOnce
from llvm_backend.tools.testing import compare_llvm_numba_and_py

N_SCALARS = 12


@pytest.fixture
def cycle_checks(graph_calls):
    """How many times a `DestroyHandler` validated a graph (a cycle check each, once it holds an in-place
    node), counted at the class: a deferred check does not reach it."""
    return graph_calls(DestroyHandler, "on_validate")


class OneAtATime(GraphRewriter):
    """Replaces each ``exp`` of ``x`` or ``x[i]`` by one of ``x + 0``, a validation per replacement; a refused
    replacement is skipped, as scalarization's are. Each ``x[i] * 2`` is replaced too when ``bad`` is
    ``"ordering"`` by a node that also adds the in-place sum's input to its output (a reader of the destroyed
    input after its destroyer: a cycle of orderings); when it is ``"data"``, its ``x[i]`` is replaced by
    ``x[i] + (x[i] * 2) * 0`` (the product then reads its own output: a data cycle)."""

    def __init__(self, bad: str | None = None):
        self.bad = bad

    def add_requirements(self, fgraph):
        fgraph.attach_feature(ReplaceValidate())

    def apply(self, fgraph):
        sink = fgraph.outputs[-1]
        for node in fgraph.toposort():
            if node not in fgraph.apply_nodes or not isinstance(node.op, Elemwise):
                continue
            scalar_op, (out,) = node.op.scalar_op, node.outputs
            if isinstance(scalar_op, ps.Exp):
                new = pt.exp(node.inputs[0] + 0)
            elif self.bad == "ordering" and isinstance(scalar_op, ps.Mul):
                destroyed = sink.owner.inputs[0]
                new = node.inputs[0] * node.inputs[1] + (destroyed + sink).sum() * 0
            elif self.bad == "data" and isinstance(scalar_op, ps.Mul):
                out, new = node.inputs[0], node.inputs[0] + out * 0
            else:
                continue
            try:
                fgraph.replace_all_validate([(out, new)], reason="one at a time")
            except InconsistencyError:
                continue


def _graph():
    """Scalars ``exp(x[i])`` and ``x[i] * 2`` of a vector ``x``, and ``v + 1`` written into ``v = exp(x)``."""
    x = pt.dvector("x")
    v = pt.exp(x)
    scalars = [pt.exp(x[i]) for i in range(N_SCALARS)] + [x[i] * 2 for i in range(N_SCALARS)]
    in_place = Elemwise(ps.add, inplace_pattern={0: 0})(v, pt.constant(np.ones(1)))
    fgraph = FunctionGraph([x], [*scalars, v.sum(), in_place], clone=True)
    fgraph.attach_feature(DestroyHandler())
    return fgraph


def _rewritten(rewriter) -> FunctionGraph:
    fgraph = _graph()
    rewriter.add_requirements(fgraph)
    rewriter.apply(fgraph)
    fgraph.validate()
    return fgraph


@pytest.mark.parametrize("bad", [None, "ordering", "data"])
def test_validate_once_leaves_the_stock_graph(bad, cycle_checks):
    stock = _rewritten(OneAtATime(bad))
    stock_checks = len(cycle_checks)
    cycle_checks.clear()
    once = _rewritten(ValidateOnce(OneAtATime(bad)))
    assert type(once.destroy_handler) is DestroyHandler
    assert equal_computations(once.outputs, stock.outputs, once.inputs, stock.inputs)
    # The in-place sum still reads what it reads at stock, and nothing else reads its output.
    assert sum(bool(node.op.destroy_map) for node in once.apply_nodes) == 1
    if bad:
        # Deferred, the pass made a replacement stock refuses; its changes were undone and it ran as stock: one
        # validation more than stock's when the orderings' cycle was found by validating, none when the data
        # cycle was found before validating.
        assert len(cycle_checks) == stock_checks + (bad == "ordering")
    else:
        assert stock_checks == N_SCALARS + 2  # a replacement per exp, and _rewritten's validation
        assert len(cycle_checks) == 2  # the pass's validation, and _rewritten's


def test_validate_once_runs_stock_without_a_stock_destroy_handler(cycle_checks):
    fgraph = _graph()
    fgraph.destroy_handler.algo = "fast"
    rewriter = ValidateOnce(OneAtATime())
    rewriter.add_requirements(fgraph)
    rewriter.apply(fgraph)
    assert type(fgraph.destroy_handler) is DestroyHandler
    assert len(cycle_checks) == N_SCALARS + 1  # a validation per exp replaced


def _validated_once(mode) -> set:
    """The paths of the passes ``mode``'s query runs in a `ValidateOnce`."""

    def paths(sequence, within=""):
        for rewriter in sequence:
            if isinstance(rewriter, ValidateOnce):
                yield f"{within}{rewriter.name}"
            elif isinstance(rewriter, SequentialGraphRewriter):
                yield from paths(rewriter, f"{within}{rewriter.name}/")

    return set(paths(optdb.query(mode.provided_optimizer)))


def test_the_llvm_query_validates_its_late_passes_once(monkeypatch):
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", "0")
    assert _validated_once(get_mode("LLVM")) == VALIDATED_ONCE
    assert _validated_once(get_mode("LLVM").excluding("merge3")) == {"fuse_indexed_into_elemwise/scalarize"}
    assert _validated_once(get_mode("NUMBA")) == set()


def test_a_model_of_many_scalars_checks_cycles_once_per_pass(monkeypatch, cycle_checks):
    """Scalarization and the last merge of a graph holding an in-place node (the gradient's scatter-add into a
    fresh vector), whose 0-d work is a node per scalar: one cycle check each, and stock's values."""
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", "0")
    during = []
    apply = ValidateOnce.apply

    def counted(self, fgraph):
        before = len(cycle_checks)
        result = apply(self, fgraph)
        during.append((self.name, len(cycle_checks) - before))
        return result

    monkeypatch.setattr(ValidateOnce, "apply", counted)
    x, idx = pt.dvector("x"), pt.lvector("idx")
    scales = [pt.exp(x[i]) + x[i] ** 2 for i in range(N_SCALARS)]
    gathered = pt.stack(scales)[idx]
    cost = (gathered**2).sum() + pt.log(pt.stack(scales)).sum()
    outputs = [cost, *pytensor.grad(cost, [x])]
    values = [np.linspace(0.1, 1.2, N_SCALARS), np.arange(40) % N_SCALARS]
    fn, _ = compare_llvm_numba_and_py([x, idx], outputs, values)
    assert any(node.op.destroy_map for node in fn.maker.fgraph.apply_nodes)
    assert {name for name, _ in during} == {path.rsplit("/")[-1] for path in VALIDATED_ONCE}
    assert all(checks == 1 for _, checks in during), during
