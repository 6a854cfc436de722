"""Advanced indexed updates under the LLVM mode (`llvm_backend.lowerings.increments`): the py linker's and stock
NUMBA's values for indices in range, and the py linker's IndexError, before anything is written, for an index out
of range (where stock NUMBA writes past ``x`` or wraps)."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.io import In
from pytensor.compile.mode import get_mode
from pytensor.tensor.subtensor import AdvancedIncSubtensor

import llvm_backend  # noqa: F401
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.lowerings.increments import index_checks
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
"""A boolean mask reaches the AdvancedIncSubtensor as it is (not as its ``nonzero()``)."""

# name: (inputs, output, values in range, the index input's out-of-range values, its position among the values)
CASES = {
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


def _llvm_function(inputs, output, mode="LLVM"):
    """The LLVM function of ``output``, checked to hold an AdvancedIncSubtensor lowered by us."""
    fn = pytensor.function(inputs, output, mode=UNFUSED if mode == "LLVM" else mode)
    plan = plan_graph(fn.maker.fgraph)
    updates = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, AdvancedIncSubtensor)]
    assert updates and all(plan[node].lowering is LOWERINGS[AdvancedIncSubtensor] for node in updates)
    return fn


def _py_error(inputs, output, values) -> IndexError:
    with pytest.raises(IndexError) as caught:
        pytensor.function(inputs, output, mode=PY_MODE)(*values)
    return caught.value


@pytest.mark.parametrize("name", list(CASES))
def test_indices_in_range_match_py_and_stock(name):
    inputs, output, values, _, _ = CASES[name]
    compare_llvm_numba_and_py(inputs, output, values, llvm_mode=UNFUSED)
    _llvm_function(inputs, output)


@pytest.mark.parametrize("name", list(CASES))
def test_an_index_out_of_range_is_pys_index_error(name):
    inputs, output, values, bad_indices, at = CASES[name]
    fn = _llvm_function(inputs, output)
    for bad in bad_indices:
        bad_values = [*values[:at], np.asarray(bad, dtype=inputs[at].dtype), *values[at + 1 :]]
        expected = _py_error(inputs, output, bad_values)
        with pytest.raises(IndexError) as caught:
            fn(*bad_values)
        assert str(caught.value) == str(expected)


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


def test_a_boolean_mask_of_the_wrong_length_is_pys_index_error():
    output = pt.set_subtensor(x[mask], s)
    good = [np.zeros(3), np.array([True, False, True]), 2.0]
    compare_llvm_numba_and_py([x, mask, s], output, good, llvm_mode=MASKED)
    fn = _llvm_function([x, mask, s], output, mode=MASKED)
    for bad_mask in ([True, False], [True, False, False, False]):
        bad = [np.zeros(3), np.array(bad_mask), 2.0]
        with pytest.raises(IndexError) as caught:
            fn(*bad)
        assert str(caught.value) == str(_py_error([x, mask, s], output, bad))


def test_index_checks_name_each_index_array_and_its_axis():
    after_a_slice = pt.set_subtensor(t[1:k, i, j], 0.0).owner  # the slice's bounds are index inputs 0 and 1
    assert index_checks(after_a_slice) == (IndexCheck(2, 1, False), IndexCheck(3, 2, False))
    after_a_mask = pt.inc_subtensor(t[pt.matrix("t_mask", dtype="bool"), i], 1.0).owner  # the mask takes 2 axes
    assert index_checks(after_a_mask) == (IndexCheck(0, 0, True), IndexCheck(1, 2, False))


def test_indices_known_to_fit_keep_stocks_function():
    """A constant index within, or a mask of, x's static shape needs no check: the node keeps stock's function."""
    x3 = pt.tensor("x3", shape=(3,))
    fits = pt.inc_subtensor(x3[np.array([0, -3, 2])], y)
    assert index_checks(fits.owner) is None and index_checks(pt.set_subtensor(x3[np.ones(3, bool)], s).owner) is None
    fn = pytensor.function([x3, y], fits, mode="LLVM")
    plan = plan_graph(fn.maker.fgraph)
    [node] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, AdvancedIncSubtensor)]
    assert plan[node].lowering is None
    np.testing.assert_array_equal(fn(np.zeros(3), np.ones(3)), [2.0, 0.0, 1.0])
    past = pt.inc_subtensor(x3[np.array([0, 3])], y)
    assert index_checks(past.owner) == (IndexCheck(0, 0, False),)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        pytensor.function([x3, y], past, mode="LLVM")(np.zeros(3), np.ones(2))
    unknown_length = pt.inc_subtensor(x[np.array([0, 2])], y)
    assert index_checks(unknown_length.owner) == (IndexCheck(0, 0, False),)
