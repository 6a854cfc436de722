"""Advanced indexing under the LLVM mode (`llvm_backend.lowerings.advanced_indexing`), reads (``AdvancedSubtensor``)
and updates (``AdvancedIncSubtensor``): the py linker's and stock NUMBA's values for indices in range, and the py
linker's IndexError for an index out of range (where stock NUMBA reads or writes past ``x``, or wraps), before
anything is written."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.compile.io import In
from pytensor.compile.mode import get_mode
from pytensor.tensor.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.lowerings.advanced_indexing import IndexingPlan, index_checks, indexing_plan, indices_start
from llvm_backend.tools.testing import PY_MODE, compare_llvm_numba_and_py
from llvm_backend_intrinsics.bounds import IndexCheck

x = pt.dvector("x")
y = pt.dvector("y")
s = pt.dscalar("s")
m = pt.dmatrix("m")
t = pt.tensor3("t")
i = pt.lvector("i")
j = pt.ivector("j")
k = pt.lscalar("k")
ii = pt.lmatrix("ii")
mask = pt.vector("mask", dtype="bool")

ONES = np.ones(2)
UNFUSED = get_mode("LLVM").excluding("fuse_indexed_into_elemwise")
"""A gather's gradient stays an AdvancedIncSubtensor (fused, it is an indexed loop's output)."""
MASKED = get_mode("LLVM").excluding("bool_idx_to_nonzero")
"""A boolean mask reaches the AdvancedSubtensor or AdvancedIncSubtensor as it is (not as its ``nonzero()``)."""
M = np.arange(6.0).reshape(3, 2)
T = np.arange(18.0).reshape(3, 3, 2)

# name: (inputs, output, values in range, the index input's out-of-range values, its position among the values)
READS = {
    "x[i]": ([x, i], x[i], [np.arange(3.0), np.array([0, -1, 2, -3])], [[0, 5], [3], [1, -4]], 1),
    "x[i] by a matrix i": ([x, ii], x[ii], [np.arange(3.0), np.array([[2, 0], [-1, -3]])], [[[0, 1], [9, 0]]], 1),
    "x[j] of int32 indices": ([x, j], x[j], [np.arange(3.0), np.array([1, -2], "int32")], [[1, 3], [-4, 0]], 1),
    "m[i]": ([m, i], m[i], [M, np.array([-1, 0, 2])], [[0, 3], [-4, 0]], 1),
    "m[i, j] (i out of range)": ([m, i, j], m[i, j], [M, np.array([2, -3]), np.array([1, -2], "int32")], [[0, 3]], 1),
    "m[i, j] (j out of range)": (
        [m, i, j],
        m[i, j],
        [M, np.array([2, -3]), np.array([1, -2], "int32")],
        [np.array([0, 2], "int32"), np.array([-3, 0], "int32")],
        2,
    ),
    "m[k, j]": ([m, k, j], m[k, j], [M, np.int64(-1), np.array([1, 0], "int32")], [np.int64(3), np.int64(-4)], 1),
    "m[:, j]": ([m, j], m[:, j], [M, np.array([1, -1, 0], "int32")], [[0, 2], [-3]], 1),
    "t[i, 1:, j] (i out of range)": (
        [t, i, j],
        t[i, 1:, j],
        [T, np.array([0, -1]), np.array([1, 0], "int32")],
        [[3, 0]],
        1,
    ),
    "t[i, 1:, j] (j out of range)": (
        [t, i, j],
        t[i, 1:, j],
        [T, np.array([0, -1]), np.array([1, 0], "int32")],
        [[0, 2], [-3, 1]],
        2,
    ),
}
UPDATES = {
    "inc x[i]": ([x, i, y], pt.inc_subtensor(x[i], y), [np.zeros(3), np.array([0, -1]), ONES], [[0, 5], [3, 0]], 1),
    "set x[i]": ([x, i, y], pt.set_subtensor(x[i], y), [np.zeros(3), np.array([2, -3]), ONES], [[0, 5], [0, -7]], 1),
    "inc x[i] of a scalar": ([x, i, s], pt.inc_subtensor(x[i], s), [np.zeros(3), np.array([0, 0, -2]), 1.5], [[-4]], 1),
    "inc x[i] by a matrix i": (
        [x, ii, s],
        pt.inc_subtensor(x[ii], s),
        [np.zeros(3), np.eye(2, dtype="int64"), 1.0],
        [[[0, 1], [9, 0]]],
        1,
    ),
    "inc x[i] of int32 indices": (
        [x, j, y],
        pt.inc_subtensor(x[j], y),
        [np.zeros(3), np.array([1, 1], "int32"), ONES],
        [np.array([1, -4], "int32")],
        1,
    ),
    "inc m[i] (2-d)": (
        [m, i, y],
        pt.inc_subtensor(m[i], y),
        [np.zeros((3, 2)), np.array([-1, 0]), ONES],
        [[0, 3], [-4, 0]],
        1,
    ),
    "set m[i] (2-d)": ([m, i, y], pt.set_subtensor(m[i], y), [np.zeros((3, 2)), np.array([-3, 1]), ONES], [[7]], 1),
    "inc m[i, j]": (
        [m, i, j, y],
        pt.inc_subtensor(m[i, j], y),
        [np.zeros((3, 2)), np.array([2, 0]), np.array([1, -2], "int32"), ONES],
        [np.array([0, 2], "int32"), np.array([-3, 0], "int32")],
        2,
    ),
    "set m[k, j]": (
        [m, k, j, y],
        pt.set_subtensor(m[k, j], y),
        [np.zeros((3, 2)), np.int64(-1), np.array([1, 0], "int32"), ONES],
        [np.int64(3), np.int64(-4)],
        1,
    ),
    "inc m[:, j]": (
        [m, j, y],
        pt.inc_subtensor(m[:, j], y),
        [np.zeros((3, 2)), np.array([1, -1], "int32"), ONES],
        [np.array([0, 2], "int32")],
        1,
    ),
    "set t[i, 1:, j]": (
        [t, i, j, s],
        pt.set_subtensor(t[i, 1:, j], s),
        [np.zeros((3, 3, 2)), np.array([0, 2]), np.array([1, 0], "int32"), 4.0],
        [np.array([0, 2], "int32")],
        2,
    ),
    "gradient of a gather (x[i].sum())": (
        [x, i],
        pt.grad(x[i].sum(), x),
        [np.zeros(3), np.array([0, 2, -1])],
        [[0, 5], [-7]],
        1,
    ),
    "gradient of a gather ((x[i] ** 2).sum())": (
        [x, i],
        pt.grad((x[i] ** 2).sum(), x),
        [np.arange(3.0), np.array([0, 2, -1])],
        [[0, 5], [-7]],
        1,
    ),
}


def _llvm_function(inputs, output, op_type=AdvancedIncSubtensor, mode=None):
    """The LLVM function of ``output``, checked to hold an ``op_type`` node lowered by us: under ``mode``, by default
    `UNFUSED` for an update, the LLVM mode for a read (an output by itself, no loop takes it in)."""
    if mode is None:
        mode = UNFUSED if op_type is AdvancedIncSubtensor else "LLVM"
    fn = pytensor.function(inputs, output, mode=mode)
    plan = plan_graph(fn.maker.fgraph)
    nodes = [node for node in fn.maker.fgraph.apply_nodes if type(node.op) is op_type]
    assert nodes and all(plan[node].lowering is LOWERINGS[op_type] for node in nodes)
    return fn


def _py_error(inputs, output, values) -> IndexError:
    with pytest.raises(IndexError) as caught:
        pytensor.function(inputs, output, mode=PY_MODE)(*values)
    return caught.value


CASES = {
    **{name: (AdvancedSubtensor, *case) for name, case in READS.items()},
    **{name: (AdvancedIncSubtensor, *case) for name, case in UPDATES.items()},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_indices_in_range_match_py_and_stock(name):
    op_type, inputs, output, values, _, _ = CASES[name]
    _llvm_function(inputs, output, op_type)
    compare_llvm_numba_and_py(inputs, output, values, llvm_mode=UNFUSED if op_type is AdvancedIncSubtensor else "LLVM")


@pytest.mark.parametrize("name", list(CASES))
def test_an_index_out_of_range_is_pys_index_error(name):
    op_type, inputs, output, values, bad_indices, at = CASES[name]
    fn = _llvm_function(inputs, output, op_type)
    for bad in bad_indices:
        bad_values = [*values[:at], np.asarray(bad, dtype=inputs[at].dtype), *values[at + 1 :]]
        expected = _py_error(inputs, output, bad_values)
        with pytest.raises(IndexError) as caught:
            fn(*bad_values)
        assert str(caught.value) == str(expected)


def test_a_fused_read_raises_index_error():
    """Fused, the read is an indexed loop's input, whose own checks raise (not py's message)."""
    fn = pytensor.function([x, i], pt.exp(x[i]), mode="LLVM")
    assert not any(isinstance(node.op, AdvancedSubtensor) for node in fn.maker.fgraph.apply_nodes)
    np.testing.assert_allclose(fn(np.arange(3.0), np.array([2, -3])), np.exp([2.0, 0.0]))
    for bad in ([0, 5], [-4]):
        with pytest.raises(IndexError, match="out of bounds"):
            fn(np.arange(3.0), np.array(bad))


def test_a_fused_gradient_of_a_gather_raises_index_error():
    """Fused, the gradient's update is an indexed loop's output, whose own checks raise (not our message)."""
    fn = pytensor.function([x, i], pt.grad((x[i] ** 2).sum(), x), mode="LLVM")
    assert not any(isinstance(node.op, AdvancedIncSubtensor) for node in fn.maker.fgraph.apply_nodes)
    for bad in ([0, 5], [-7]):
        with pytest.raises(IndexError, match="out of bounds"):
            fn(np.arange(3.0), np.array(bad))


@pytest.mark.parametrize("set_instead_of_inc", [False, True])
def test_an_inplace_update_writes_nothing_before_the_error(set_instead_of_inc):
    update = pt.set_subtensor if set_instead_of_inc else pt.inc_subtensor
    fn = _llvm_function([In(m, mutable=True), i, y], update(m[i], y))
    [node] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, AdvancedIncSubtensor)]
    assert node.op.inplace
    before = np.arange(6.0).reshape(3, 2)
    buffer = before.copy()
    for bad in ([0, 1, 3], [-4, 0, 1], [2, 0, 9]):
        with pytest.raises(IndexError, match="is out of bounds for axis 0 with size 3"):
            fn(buffer, np.array(bad), np.full(2, 100.0))
        np.testing.assert_array_equal(buffer, before)
    fn(buffer, np.array([2, -3]), np.full(2, 100.0))
    written = np.full((2, 2), 100.0) if set_instead_of_inc else before[[2, 0]] + 100.0
    np.testing.assert_array_equal(buffer, [written[1], before[1], written[0]])


@pytest.mark.parametrize("op_type", [AdvancedSubtensor, AdvancedIncSubtensor])
def test_a_boolean_mask_of_the_wrong_length_is_pys_index_error(op_type):
    output = x[mask] if op_type is AdvancedSubtensor else pt.set_subtensor(x[mask], s)
    inputs = [x, mask, s][: indices_start(output.owner.op) + 1]
    values = [np.arange(3.0), np.array([True, False, True]), 2.0][: len(inputs)]
    compare_llvm_numba_and_py(inputs, output, values, llvm_mode=MASKED)
    fn = _llvm_function(inputs, output, op_type, mode=MASKED)
    for bad_mask in ([True, False], [True, False, False, False]):
        bad = [values[0], np.array(bad_mask), *values[2:]]
        with pytest.raises(IndexError) as caught:
            fn(*bad)
        assert str(caught.value) == str(_py_error(inputs, output, bad))


@pytest.mark.parametrize("op_type", [AdvancedSubtensor, AdvancedIncSubtensor])
def test_index_checks_name_each_index_array_and_its_axis(op_type):
    def node(read):
        output = read if op_type is AdvancedSubtensor else pt.inc_subtensor(read, 1.0)
        assert type(output.owner.op) is op_type
        assert indices_start(output.owner.op) == (1 if op_type is AdvancedSubtensor else 2)
        return output.owner

    after_a_slice = node(t[1:k, i, j])  # the slice's bounds are index inputs 0 and 1
    assert index_checks(after_a_slice) == (IndexCheck(2, 1, False), IndexCheck(3, 2, False))
    after_a_mask = node(t[pt.matrix("t_mask", dtype="bool"), i])  # the mask takes 2 axes
    assert index_checks(after_a_mask) == (IndexCheck(0, 0, True), IndexCheck(1, 2, False))


@pytest.mark.parametrize("op_type", [AdvancedSubtensor, AdvancedIncSubtensor])
def test_indices_known_to_fit_are_not_checked(op_type):
    """A constant index within, or a mask of, x's static shape needs no check: `indexed_access` takes the node
    without one, and a node it does not take keeps stock's function."""
    x3 = pt.tensor("x3", shape=(3,))
    inputs = [x3] if op_type is AdvancedSubtensor else [x3, y]

    def indexed(target, index):
        return target[index] if op_type is AdvancedSubtensor else pt.inc_subtensor(target[index], y)

    fits = indexed(x3, np.array([0, -3, 2]))
    assert index_checks(fits.owner) is None and index_checks(indexed(x3, np.ones(3, bool)).owner) is None
    fn = pytensor.function(inputs, fits, mode="LLVM")
    plan = plan_graph(fn.maker.fgraph)
    [node] = [node for node in fn.maker.fgraph.apply_nodes if type(node.op) is op_type]
    kind = "read" if op_type is AdvancedSubtensor else "inc"
    assert plan[node].lowering is LOWERINGS[op_type] and plan[node].spec == IndexingPlan(kind, ())
    expected = [0.0, 0.0, 2.0] if op_type is AdvancedSubtensor else [2.0, 1.0, 3.0]  # x[0] += 1 twice
    np.testing.assert_array_equal(fn(*[np.arange(3.0), np.ones(3)][: len(inputs)]), expected)
    past = indexed(x3, np.array([0, 3]))
    assert index_checks(past.owner) == (IndexCheck(0, 0, False),)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        pytensor.function(inputs, past, mode="LLVM")(*[np.zeros(3), np.ones(2)][: len(inputs)])
    assert index_checks(indexed(x, np.array([0, 2])).owner) == (IndexCheck(0, 0, False),)  # x's length unknown
    m3 = pt.tensor("m3", shape=(2, 3))
    after_a_slice = indexed(m3, (np.array([0, 1]), slice(1, None)))  # not x's leading axes only
    assert indexing_plan(after_a_slice.owner) is None
    fn = pytensor.function([m3, *inputs[1:]], after_a_slice, mode="LLVM")
    [node] = [node for node in fn.maker.fgraph.apply_nodes if type(node.op) is op_type]
    assert plan_graph(fn.maker.fgraph)[node].lowering is None


def test_reads_and_updates_by_leading_index_arrays_are_intrinsics_of_the_graph_function():
    """The categorical's ``p[arange(n)[:, None], y[:, None]]`` and its gradient's update, as PyMC builds them (the
    update not fused into a loop)."""
    rows, columns = pt.lvector("rows"), pt.lvector("columns")
    read = m[rows[:, None], columns[:, None]]
    outputs = [read, pt.grad(pt.log(read).sum(), m)]
    values = [np.arange(1.0, 13.0).reshape(4, 3), np.arange(4), np.array([2, 0, -1, 1])]
    fn, _ = compare_llvm_numba_and_py([m, rows, columns], outputs, values, llvm_mode=UNFUSED)
    source = graph_source(fn.maker.fgraph)
    ops = (AdvancedSubtensor, AdvancedIncSubtensor)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), ops)]
    assert {type(call.label.op) for call in calls} == set(ops)
    assert all(isinstance(call.function, _Intrinsic) for call in calls)
    plan = plan_graph(fn.maker.fgraph)
    assert sorted(plan[call.label].spec.kind for call in calls) == ["inc", "read"]


def test_indices_that_do_not_broadcast_are_stocks_value_error():
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([m, i, j], m[i, j], mode=mode)
        with pytest.raises(ValueError) as raised:
            fn(np.zeros((3, 3)), np.array([0, 1]), np.array([0, 1, 2], "int32"))
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]
