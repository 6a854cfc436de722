"""Our loop lowering of Elemwise, ScalarizedElemwise and FusedElemwise (`llvm_backend.lowerings.loops`) against
stock NUMBA and the py linker: dtypes, layouts, broadcasting, 0-d to 4-d, empty arrays, NaN, overflow, errors."""

import re

import llvmlite.binding as llvm
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise

import llvm_backend  # noqa: F401
from llvm_backend.codegen import NATIVE_SCALARS
from llvm_backend.dispatch import lowering_for
from llvm_backend.lowerings.loops import loop_spec, lowers_loop
from llvm_backend.tools.graphs import logp_grad
from llvm_backend.tools.inspect_ir import stage_text
from llvm_backend.tools.measure import allocations_per_call
from llvm_backend.tools.testing import PY_MODE, compare_llvm_numba_and_py

RNG = np.random.default_rng(7)


def _ours(fn, op_type=(Elemwise, FusedElemwise)):
    """The nodes of ``fn`` of ``op_type`` that our loop lowers."""
    nodes = [n for n in fn.maker.fgraph.apply_nodes if isinstance(n.op, op_type)]
    return [n for n in nodes if lowering_for(n.op) is not None and lowers_loop(n)]


def _values(shape, dtype):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-5 if np.dtype(dtype).kind == "i" else 0, 6, size=shape).astype(dtype)
    return RNG.normal(size=shape).astype(dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "int32", "uint8", "bool"])
@pytest.mark.parametrize("ndim", [0, 1, 2, 3, 4])
def test_map_and_sum_across_dtypes_and_dimensions(dtype, ndim):
    x = pt.tensor("x", dtype=dtype, shape=(None,) * ndim)
    y = pt.tensor("y", dtype=dtype, shape=(None,) * ndim)
    shape = (3, 2, 4, 2)[:ndim]
    outputs = [x * y + x, (x * y).sum(), pt.maximum(x, y)]
    fn, _ = compare_llvm_numba_and_py([x, y], outputs, [_values(shape, dtype), _values(shape, dtype)])
    if ndim == 0 and dtype in NATIVE_SCALARS:
        # native scalar inputs: PyTensor's scalarization makes it scalar math, no loop
        assert not _ours(fn) and fn.vm.graph_source.scalar_sources == {0: dtype, 1: dtype}
    else:
        assert _ours(fn)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,
        lambda a: np.asfortranarray(a),
        lambda a: a[::2, ::-1],
        lambda a: a.T,
        lambda a: a[1:, :3],
    ],
    ids=["C", "F", "strided_negative", "transposed", "sliced"],
)
def test_layouts(view):
    x, y = pt.dmatrix("x"), pt.dmatrix("y")
    a = view(RNG.normal(size=(6, 5)))
    b = view(RNG.normal(size=(6, 5)))
    outputs = [pt.exp(x) - y, (x * y).sum(), pt.max(x - y)]
    fn, _ = compare_llvm_numba_and_py([x, y], outputs, [a, b])
    assert _ours(fn)


def test_broadcasting_and_scalar_inputs():
    x = pt.dmatrix("x")
    row = pt.tensor("row", dtype="float64", shape=(1, None))
    col = pt.tensor("col", dtype="float64", shape=(None, 1))
    s = pt.dscalar("s")
    outputs = [x * row + col * s, (x * row).sum() + s, pt.exp(col * s).sum()]
    values = [RNG.normal(size=(4, 3)), RNG.normal(size=(1, 3)), RNG.normal(size=(4, 1)), 0.5]
    fn, _ = compare_llvm_numba_and_py([x, row, col, s], outputs, values)
    assert _ours(fn)


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4)])
def test_empty_arrays(shape):
    x = pt.tensor("x", dtype="float64", shape=(None,) * len(shape))
    outputs = [x * 2, (x * 3).sum(), (x + 1).prod()]
    fn, _ = compare_llvm_numba_and_py([x], outputs, [np.zeros(shape)])
    assert _ours(fn)


def test_nan_propagates_through_max_and_min():
    x = pt.dvector("x")
    values = np.array([1.0, np.nan, 3.0, -2.0])
    fn, (top, bottom) = compare_llvm_numba_and_py([x], [pt.max(x * 2), pt.min(x + 1)], [values])
    assert _ours(fn)
    assert np.isnan(top) and np.isnan(bottom)


def test_integer_overflow_wraps_as_stock():
    x = pt.tensor("x", dtype="int8", shape=(None,))
    values = np.array([100, 100, 27, -128], dtype="int8")
    compare_llvm_numba_and_py([x], [x + x, (x * 2).sum(dtype="int8"), pt.max(x * 3)], [values])


def test_mismatched_shapes_raise_value_error_as_stock():
    x, y = pt.dvector("x"), pt.dvector("y")
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([x, y], [pt.exp(x) + y, (x * y).sum()], mode=mode)
        with pytest.raises(ValueError):
            fn(np.ones(3), np.ones(4))


def test_an_in_place_elemwise_leaves_a_read_only_input_alone():
    """PyTensor's ``test_elemwise_inplace_out_type``: ``2 * x`` in place on a mutable input, given
    ``np.broadcast_to``'s read-only view, whose rows share memory. The LLVM mode makes a new array (the py
    linker's values, the input unchanged); stock writes through the shared row, which is harmless on zeros
    (where the two agree) and not otherwise."""
    x = pt.matrix("x")
    functions = {
        mode: pytensor.function([pytensor.In(x, mutable=True)], (2 * x).ravel(), mode=mode)
        for mode in (PY_MODE, "NUMBA", "LLVM")
    }
    [node] = [n for n in functions["LLVM"].maker.fgraph.apply_nodes if isinstance(n.op, Elemwise)]
    assert node.op.destroy_map and lowers_loop(node)
    zeros = {mode: fn(np.broadcast_to(np.zeros(3), (6, 3))) for mode, fn in functions.items()}
    np.testing.assert_array_equal(zeros["LLVM"], zeros["NUMBA"])
    np.testing.assert_array_equal(zeros["LLVM"], zeros[PY_MODE])
    view = np.broadcast_to(np.arange(3.0), (6, 3))
    np.testing.assert_array_equal(functions["LLVM"](view), functions[PY_MODE](np.arange(3.0)[None].repeat(6, 0)))
    np.testing.assert_array_equal(view[0], [0.0, 1.0, 2.0])


def test_a_static_broadcast_input_is_read_at_its_one_element():
    x, y = pt.dvector("x"), pt.tensor("y", dtype="float64", shape=(1,))
    fn, result = compare_llvm_numba_and_py([x, y], x * y, [np.arange(3.0), np.array([2.0])])
    assert _ours(fn)
    np.testing.assert_array_equal(result, [0.0, 2.0, 4.0])


def test_a_multi_output_composite_with_reductions_is_one_loop():
    graph = logp_grad(n_scalars=4)
    fn, _ = compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)
    [fused] = _ours(fn, FusedElemwise)
    spec = loop_spec(fused)
    assert sum(o.reduce == "add" for o in spec.outputs) >= 4
    assert any(b is None for b in spec.broadcastable)


def test_a_full_reduction_in_the_loop_allocates_nothing():
    x = pt.dvector("x")
    values = [np.linspace(0.0, 1.0, 50)]
    counts = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([x], [(pt.exp(x) * 2).sum()], mode=mode)
        counts[mode] = allocations_per_call(fn, values)
    assert _ours(fn)
    # the one unboxed input and the returned 0-d array
    assert counts["LLVM"].total == 2 <= counts["NUMBA"].total


def test_sums_over_the_same_inputs_are_one_loop():
    x, y = pt.dvector("x"), pt.dvector("y")
    outputs = [(x * y).sum(), (x * x).sum(), (y * y).sum(), pt.exp(x - y).sum()]
    fn, _ = compare_llvm_numba_and_py([x, y], outputs, [RNG.normal(size=9), RNG.normal(size=9)])
    [fused] = _ours(fn, FusedElemwise)
    assert [o.reduce for o in loop_spec(fused).outputs] == ["add"] * 4


@pytest.mark.parametrize("shape", [(4, 3, 2), (4, 0, 2)])
def test_reductions_over_some_axes_accumulate_in_their_outputs(shape):
    x, v = pt.tensor3("x"), pt.dvector("v")
    outputs = [
        pt.exp(x * v).sum(axis=0),
        (x * 2).max(axis=(0, 2)),
        (x > 0).any(axis=1),
        pt.exp(x).sum(),
        (x - v).prod(axis=2),
    ]
    values = [RNG.normal(size=shape), RNG.normal(size=shape[-1])]
    fn, _ = compare_llvm_numba_and_py([x, v], outputs, values)
    [fused] = _ours(fn, FusedElemwise)
    axes = sorted(output.axes for output in loop_spec(fused).outputs if output.axes is not None)
    assert axes == [(0,), (0, 2), (1,), (2,)]


def test_nan_reaches_a_maximum_over_one_axis():
    x = pt.dmatrix("x")
    values = np.array([[1.0, np.nan], [3.0, -2.0]])
    fn, result = compare_llvm_numba_and_py([x], (x * 2).max(axis=0), [values])
    assert _ours(fn)
    assert result[0] == 6.0 and np.isnan(result[1])


@pytest.mark.parametrize(("axis", "ours"), [(0, False), (None, True)])
def test_a_partial_reduction_accumulating_in_another_dtype_keeps_stock(axis, ours):
    x = pt.fmatrix("x")
    # float32 sums accumulate in float64: over one axis, stock's loop; over all, ours
    fn, _ = compare_llvm_numba_and_py([x], pt.exp(x).sum(axis=axis), [np.ones((3, 2), "float32")])
    [fused] = [n for n in fn.maker.fgraph.apply_nodes if isinstance(n.op, FusedElemwise)]
    assert (loop_spec(fused) is not None) == ours


def _indexed(fn):
    return [n for n in _ours(fn, FusedElemwise) if n.op.indexed_inputs]


GROUPS = np.array([0, 2, 2, 1, 0, 2, 1, 1, 0, 2])


def test_a_gather_and_a_segment_sum_are_our_loop():
    """A hierarchical model's likelihood: ``mu[group]`` read in the loop, its gradient added at ``group``."""
    mu, y = pt.dvector("mu"), pt.dvector("y")
    logp = (-0.5 * (y - mu[GROUPS]) ** 2).sum()
    outputs = [logp, pytensor.grad(logp, mu)]
    fn, _ = compare_llvm_numba_and_py([mu, y], outputs, [RNG.normal(size=3), RNG.normal(size=GROUPS.size)])
    [node] = _indexed(fn)
    spec = loop_spec(node)
    assert spec.indices == ((0, False),) and spec.reads.count(0) == 1
    assert [o.indexed for o in spec.outputs if o.indexed] == [(0, "inc")]


def test_gradients_of_two_gathers_by_one_index_are_added_in_one_loop_each_into_its_own_target():
    """A varying-intercept, varying-slope likelihood: ``a[group]`` and ``b[group]`` read in the loop, and both
    gradients added at ``group``, one index writing two outputs, each into a target of its own."""
    a, b, x, y = pt.dvector("a"), pt.dvector("b"), pt.dvector("x"), pt.dvector("y")
    logp = (-0.5 * (y - a[GROUPS] - b[GROUPS] * x) ** 2).sum()
    outputs = [logp, *pytensor.grad(logp, [a, b])]
    values = [RNG.normal(size=3), RNG.normal(size=3), RNG.normal(size=GROUPS.size), RNG.normal(size=GROUPS.size)]
    fn, _ = compare_llvm_numba_and_py([a, b, x, y], outputs, values)
    [node] = _indexed(fn)
    [written] = [entry for entry in node.op.indexed_outputs if entry is not None]
    assert len(written[0]) == 2
    into = [o.into for o in loop_spec(node).outputs if o.indexed]
    assert len(into) == 2 and len(set(into)) == 2


@pytest.mark.slow
def test_an_index_input_with_negative_and_repeated_positions():
    x, y, idx = pt.dvector("x"), pt.dvector("y"), pt.lvector("idx")
    outputs = [pt.exp(x[idx]) * y, pt.zeros(4)[idx].inc(y * x[idx]), pt.zeros(4)[idx].set(y)]
    values = [RNG.normal(size=4), RNG.normal(size=6), np.array([0, -1, 3, 3, -4, 1])]
    fn, _ = compare_llvm_numba_and_py([x, y, idx], outputs, values)
    assert _indexed(fn)


@pytest.mark.parametrize("axis", [0, 1])
def test_a_matrix_indexed_along_either_axis(axis):
    x, y = pt.dmatrix("x"), pt.dmatrix("y")
    idx = np.array([1, 0, 1, 2])
    view = x[idx] if axis == 0 else x[:, idx]
    target = pt.zeros((3, 3))
    written = target[idx].inc(view * y) if axis == 0 else target[:, idx].inc(view * y)
    shape = (4, 3) if axis == 0 else (3, 4)
    fn, _ = compare_llvm_numba_and_py(
        [x, y], [pt.sum(view * y), written], [RNG.normal(size=(3, 3)), RNG.normal(size=shape)]
    )
    assert _indexed(fn)


def test_an_index_out_of_bounds_is_an_index_error_as_py_gives():
    x, y, idx = pt.dvector("x"), pt.dvector("y"), pt.lvector("idx")
    outputs = [pt.exp(x[idx]) + y, pt.zeros(3)[idx].inc(y)]
    fn = pytensor.function([x, y, idx], outputs, mode="LLVM")
    read = pytensor.function([x, y, idx], outputs[0], mode="LLVM")
    assert _indexed(fn) and _indexed(read)
    py = pytensor.function([x, y, idx], outputs, mode=PY_MODE)
    for position in (3, -4):
        arguments = (np.ones(3), np.ones(2), np.array([0, position]))
        with pytest.raises(IndexError):
            py(*arguments)
        with pytest.raises(IndexError, match="index out of bounds"):
            read(*arguments)  # the indexed loop's own check
        with pytest.raises(IndexError, match="out of bounds"):  # the loop's, or the AdvancedIncSubtensor's
            fn(*arguments)


def test_an_index_of_another_length_than_the_loop_is_a_value_error():
    x, y, idx = pt.dvector("x"), pt.dvector("y"), pt.lvector("idx")
    fn = pytensor.function([x, y, idx], pt.exp(x[idx]) + y, mode="LLVM")
    assert _indexed(fn)
    with pytest.raises(ValueError):
        fn(np.ones(3), np.ones(4), np.array([0, 1]))


def test_an_unsigned_index():
    x, y = pt.dvector("x"), pt.dvector("y")
    idx = pt.vector("idx", dtype="uint16")
    outputs = [pt.exp(x[idx]) + y, pt.zeros(3)[idx].inc(y)]
    fn, _ = compare_llvm_numba_and_py([x, y, idx], outputs, [np.arange(3.0), np.ones(2), np.array([2, 0], "uint16")])
    assert _indexed(fn)
    with pytest.raises(IndexError):
        fn(np.arange(3.0), np.ones(2), np.array([2, 3], "uint16"))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_loop_calling_c_math_functions_agrees_with_stock_and_py_and_vectorizes_through_their_variants(dtype):
    """``log1p`` (numpy's, in the loop's own code) and ``gammaln`` (stock's ``math.lgamma``, a library linked
    in) are calls to the C library, which kept the whole loop scalar; through their vector variants
    (``llvm_backend_intrinsics.vector_math``) the loop vectorizes where the host's vectors pay (AVX2 and wider),
    with the values of stock and of the py linker."""
    x, s = pt.vector("x", dtype=dtype), pt.scalar("s", dtype=dtype)
    per_item = [pt.log1p(x) / s + pt.sqrt(x) / (s + x), pt.gammaln(x + 1) / s - x / (s + x)]
    others = (pt.expm1(x) + pt.tanh(x) + pt.arctan(x) + pt.arcsinh(x) + pt.erfc(x)) / (s + x)
    outputs = [*per_item, others, others.sum()]
    values = [RNG.uniform(0.1, 3.0, 1001).astype(dtype), np.asarray(1.7, dtype=dtype)]
    fn, _ = compare_llvm_numba_and_py([x, s], outputs, values)
    assert _ours(fn)
    scalar, kind = ("", "double") if dtype == "float64" else ("f", "float")
    optimized = stage_text(fn, "llvm-opt")
    host_has_avx2 = bool(llvm.get_host_cpu_features().get("avx2", False))
    for function in ("log1p", "lgamma"):
        called = re.search(rf"call [^\n]*<\d+ x {kind}> @\"?llvm_backend\.vector\.{function}{scalar}\.\d+", optimized)
        assert called or not host_has_avx2, function
