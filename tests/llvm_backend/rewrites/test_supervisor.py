"""The LLVM mode's `IndexedSupervisor`: the stock `Supervisor`'s verdicts, without a pass over every
protected variable at each validation."""

import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from pytensor.compile.aliasing import Supervisor
from pytensor.compile.io import In
from pytensor.compile.mode import get_mode
from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.utils import InconsistencyError
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.rewriting.elemwise import InplaceElemwiseOptimizer
from pytensor.tensor.type import TensorType

import llvm_backend  # noqa: F401
from llvm_backend import rewrite_cache
from llvm_backend.mode import SUPERVISOR_NAME
from llvm_backend.rewrites.supervisor import IndexedSupervisor
from llvm_backend.tools import graphs
from llvm_backend.tools.testing import compare_llvm_numba_and_py, rewritten_graph

# The LLVM mode as it would be without the indexed supervisor.
STOCK_SUPERVISOR = get_mode("LLVM").excluding(SUPERVISOR_NAME)


@pytest.fixture
def no_rewrite_cache(monkeypatch):
    """Graphs rewritten here, not taken from the rewrite cache (whose hits validate once)."""
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", "0")


@pytest.fixture
def stock_checks(graph_calls):
    """How many validations the indexed supervisor left to the stock check."""
    return graph_calls(IndexedSupervisor, "stock_check")


def _add(destroy: int | None):
    """``x + y``, in place on input ``destroy`` unless it is None."""
    return Elemwise(ps.add, inplace_pattern={} if destroy is None else {0: destroy})


def _supervised(supervisor_class):
    """``x + y`` and ``(x + y) * 2`` over inputs ``x`` (protected) and ``y`` (not), supervised by
    ``supervisor_class``."""
    x, y = pt.dvector("x"), pt.dvector("y")
    total = _add(None)(x, y)
    fgraph = FunctionGraph([x, y], [total, total * 2], clone=False)
    fgraph.attach_feature(DestroyHandler())
    fgraph.attach_feature(supervisor_class([x]))
    return fgraph, x, y, total


@pytest.mark.parametrize(
    "destroy, allowed",
    [(1, True), (0, False)],
    ids=["unprotected input", "protected input"],
)
def test_destroying_an_input_same_verdict_as_stock(destroy, allowed):
    verdicts = []
    for supervisor_class in (Supervisor, IndexedSupervisor):
        fgraph, x, y, total = _supervised(supervisor_class)
        try:
            fgraph.replace_validate(total, _add(destroy)(x, y))
            verdicts.append("allowed")
        except InconsistencyError as error:
            verdicts.append(str(error))
        # A refused replacement is undone.
        assert any(n.op.destroy_map for n in fgraph.apply_nodes) == allowed
    stock, indexed = verdicts
    assert indexed == stock
    assert (stock == "allowed") == allowed
    if not allowed:
        assert "Trying to destroy a protected variable: x" in stock


def test_destroying_an_output_same_verdict_as_stock():
    verdicts = []
    for supervisor_class in (Supervisor, IndexedSupervisor):
        fgraph, _, _, total = _supervised(supervisor_class)
        [doubled] = fgraph.outputs[1:]
        in_place = Elemwise(ps.mul, inplace_pattern={0: 0})(total, pt.constant(2.0))
        with pytest.raises(InconsistencyError, match="protected variable") as error:
            fgraph.replace_validate(doubled, in_place)
        verdicts.append(str(error.value))
    assert verdicts[0] == verdicts[1]


def test_the_index_decides_without_the_stock_check(stock_checks):
    fgraph, x, y, total = _supervised(IndexedSupervisor)
    fgraph.replace_validate(total, _add(1)(x, y))
    fgraph.validate()
    assert stock_checks == []
    with pytest.raises(InconsistencyError):
        fgraph.replace_validate(fgraph.outputs[0], _add(0)(x, y))
    assert len(stock_checks) == 1  # a protected variable is destroyed: the stock check names it


def test_fast_cycle_detection_uses_the_stock_check(stock_checks):
    with pytensor.config.change_flags(cycle_detection="fast"):
        fgraph, x, y, total = _supervised(IndexedSupervisor)
        with pytest.raises(InconsistencyError, match="protected variables"):
            fgraph.replace_validate(total, _add(0)(x, y))
    assert stock_checks


def test_the_llvm_mode_supervises_with_the_index(no_rewrite_cache, stock_checks):
    graph = graphs.times_two(64)
    fgraph = rewritten_graph(graph.outputs, graph.inputs)
    supervisor = fgraph._supervisor
    assert type(supervisor) is IndexedSupervisor
    assert supervisor in fgraph._features
    assert set(supervisor.protected) == set(fgraph.inputs)
    # 64 protected inputs and 64 outputs, and no validation walked them.
    assert stock_checks == []
    stock = rewritten_graph(graph.outputs, graph.inputs, mode=STOCK_SUPERVISOR)
    assert type(stock._supervisor) is Supervisor


def test_through_the_rewrite_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", rewrite_cache.RewriteCache(tmp_path / "rewrites"))
    monkeypatch.delenv("LLVM_BACKEND_REWRITE_CACHE", raising=False)
    graph = graphs.regression(n_cols=4, n_obs=20, n_groups=2)  # strided constants: the stored copy is installed
    for outcome in ("stored", "hit"):
        before = rewrite_cache.outcomes[outcome]
        fgraph = rewritten_graph(graph.outputs, graph.inputs)
        assert rewrite_cache.outcomes[outcome] == before + 1
        supervisor = fgraph._supervisor
        assert type(supervisor) is IndexedSupervisor and supervisor in fgraph._features
        stock = rewritten_graph(graph.outputs, graph.inputs, mode=STOCK_SUPERVISOR)
        assert type(stock._supervisor) is Supervisor


def _in_place_decisions(fgraph):
    return [(str(node.op), node.op.destroy_map) for node in fgraph.toposort()]


def _wide_in_place_graph():
    """Inputs, intermediates that can be destroyed, an intermediate that is also an output, a
    mutable input."""
    xs = pt.dvectors(*(f"x{i}" for i in range(40)))
    m = pt.dvector("m")
    outputs = []
    for i, x in enumerate(xs):
        shifted = pt.exp(x) + i
        outputs += [pt.log1p(shifted) * m, shifted] if i % 7 == 0 else [pt.log1p(shifted) * m]
    outputs.append(pt.sort(m))
    return [*xs, In(m, mutable=True)], outputs


@pytest.mark.parametrize(
    "build",
    [
        lambda: graphs.times_two(31),
        lambda: graphs.logp_grad(n_scalars=12),
        lambda: graphs.concatenate(60),
        _wide_in_place_graph,
    ],
    ids=["times_two_31", "logp_grad_12", "concatenate_60", "wide_in_place"],
)
def test_rewritten_graph_is_the_stock_supervisors(no_rewrite_cache, build):
    graph = build()
    inputs, outputs = (graph.inputs, graph.outputs) if isinstance(graph, graphs.Graph) else graph
    indexed = rewritten_graph(outputs, inputs)
    stock = rewritten_graph(outputs, inputs, mode=STOCK_SUPERVISOR)
    assert _in_place_decisions(indexed) == _in_place_decisions(stock)


@pytest.mark.slow
def test_in_place_values_and_inputs_against_py_and_numba(no_rewrite_cache):
    inputs, outputs = _wide_in_place_graph()
    rng = np.random.default_rng(0)
    values = [rng.normal(size=5) for _ in inputs]
    fn, _ = compare_llvm_numba_and_py(inputs, outputs, values)
    assert any(node.op.destroy_map for node in fn.maker.fgraph.apply_nodes)
    given = [np.copy(v) for v in values]
    fn(*given)
    for i, (after, before) in enumerate(zip(given[:-1], values[:-1], strict=True)):
        np.testing.assert_array_equal(after, before, err_msg=f"protected input x{i} was overwritten")


def _computed_0d(fgraph) -> set:
    return {v for v in fgraph.variables if v.owner is not None and isinstance(v.type, TensorType) and v.type.ndim == 0}


def test_the_supervisor_keeps_the_computed_0d_tensors_as_nodes_come_and_go(no_rewrite_cache):
    graph = graphs.logp_grad(n_scalars=12)
    fgraph = rewritten_graph(graph.outputs, graph.inputs)
    supervisor = fgraph._supervisor
    assert supervisor.zero_d == _computed_0d(fgraph) != set()
    assert supervisor.zero_d <= set(supervisor.protected)


@pytest.fixture
def in_place_candidates(monkeypatch):
    """The inputs PyTensor's Elemwise in-place rewrite tried to write outputs into."""
    tried = []
    stock = InplaceElemwiseOptimizer.try_inplace_on_node

    def recorded(self, fgraph, node, candidate_pairs=None, **kwargs):
        tried.extend(inp for _, (_, inp) in candidate_pairs or ())
        return stock(self, fgraph, node, candidate_pairs, **kwargs)

    monkeypatch.setattr(InplaceElemwiseOptimizer, "try_inplace_on_node", recorded)
    return tried


def _holds_a_0d_value(var) -> bool:
    """A 0-d tensor, or a view of one (a 1-element vector of its ExpandDims)."""
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    return var.type.ndim == 0


@pytest.mark.slow
def test_in_place_is_not_tried_on_0d_values_which_scalarization_makes_scalars(no_rewrite_cache, in_place_candidates):
    """The gradient of 60 scalars runs through an Elemwise of 58 outputs over 1-element views of 0-d tensors:
    stock's in-place rewrite tries its outputs on those one by one, a graph validation each, and PyTensor's
    scalarization then makes such nodes scalar code, in place on nothing. The LLVM mode does not try, and ends
    with the same graph."""
    graph = graphs.logp_grad(n_scalars=60)
    stock = rewritten_graph(graph.outputs, graph.inputs, mode=STOCK_SUPERVISOR)
    assert sum(map(_holds_a_0d_value, in_place_candidates)) >= 58
    in_place_candidates.clear()
    fgraph = rewritten_graph(graph.outputs, graph.inputs)
    assert in_place_candidates and not any(map(_holds_a_0d_value, in_place_candidates))
    assert _in_place_decisions(fgraph) == _in_place_decisions(stock)
    compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)


def test_a_computed_0d_tensor_may_still_be_destroyed():
    """``zero_d`` only keeps 0-d tensors out of the in-place rewrites' candidates; a node that destroys one
    is as valid as under the stock Supervisor."""
    x, y = pt.dscalar("x"), pt.dscalar("y")
    total = _add(None)(x, y)
    fgraph = FunctionGraph([x, y], [total * 2], clone=False)
    fgraph.attach_feature(DestroyHandler())
    supervisor = IndexedSupervisor([x, y])
    fgraph.attach_feature(supervisor)
    assert supervisor.zero_d == {total, fgraph.outputs[0]}
    fgraph.replace_validate(fgraph.outputs[0], Elemwise(ps.mul, inplace_pattern={0: 0})(total, pt.constant(2.0)))
    assert fgraph.outputs[0].owner.op.destroy_map == {0: [0]}
    assert total in supervisor.zero_d
