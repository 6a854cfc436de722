import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core.extending import _Intrinsic
from pytensor.tensor.basic import Join, MakeVector
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.rewriting.scalarize import ScalarizedJoin

import llvm_backend
from llvm_backend.codegen import SCALAR_PACK_MIN, graph_source
from llvm_backend.dispatch import MAX_ITEMS
from llvm_backend.lowerings.join import NUMBA_MAX_TUPLE, entries_fit_a_call, filled_joins
from llvm_backend.tools.measure import allocations_per_call
from llvm_backend.tools.testing import PY_MODE, compare_llvm_numba_and_py
from llvm_backend_intrinsics.join import linear_join


def test_join_is_lowered_by_linear_join():
    assert llvm_backend.LOWERINGS[Join].intrinsic is linear_join


@pytest.mark.slow
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_join_3d_every_axis_with_mixed_layouts(axis):
    a, b, c = pt.dtensor3("a"), pt.dtensor3("b"), pt.dtensor3("c")
    base = np.arange(2 * 3 * 4, dtype="float64").reshape(2, 3, 4)
    values = [base, np.asfortranarray(base + 100), (base[::-1, :, ::-1] * 2).copy()[::-1]]
    compare_llvm_numba_and_py([a, b, c], pt.join(axis, a, b, c), values)


def test_join_with_upcast():
    x, y, z = pt.ivector("x"), pt.dvector("y"), pt.bvector("z")
    values = [np.arange(3, dtype="int32"), np.linspace(0, 1, 2), np.array([1, -1], dtype="int8")]
    _, out = compare_llvm_numba_and_py([x, y, z], pt.join(0, x, y, z), values)
    assert out.dtype == np.float64 and out.shape == (7,)
    np.testing.assert_array_equal(out, np.concatenate(values))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "float64", "float32"])
@pytest.mark.parametrize(("ndim", "axis"), [(1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2)])
def test_join_keeps_its_first_entry(dtype, ndim, axis):
    # PyTensor 3.3's Join holds its axis as a property: the node's inputs are the entries only, and the
    # first one (here of several elements) must not be read as the axis.
    sizes = [3, 2, 4]
    values = []
    for k, size in enumerate(sizes):
        shape = [2] * ndim
        shape[axis] = size
        values.append((np.arange(np.prod(shape)).reshape(shape) + 10 * k).astype(dtype))
    inputs = [pt.tensor(f"x{k}", dtype=dtype, shape=(None,) * ndim) for k in range(len(sizes))]
    _, out = compare_llvm_numba_and_py(inputs, pt.join(axis, *inputs), values)
    np.testing.assert_array_equal(out, np.concatenate(values, axis=axis))


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_scalarized_join_keeps_every_entry(dtype):
    # PyTensor's scalarization turns this into a ScalarizedJoin of a vector, a scalar and a vector.
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    out = pt.concatenate([x, pt.atleast_1d(x.sum()), y]) * 2
    values = [np.array([0, 5, 6], dtype=dtype), np.array([7, 8, 9], dtype=dtype)]
    fn, result = compare_llvm_numba_and_py([x, y], out, values)
    assert ScalarizedJoin in {type(node.op) for node in fn.maker.fgraph.apply_nodes}
    np.testing.assert_array_equal(result, np.array([0, 5, 6, 11, 7, 8, 9], dtype=dtype) * 2)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_packed_join_keeps_its_first_entry(dtype):
    inputs = [pt.vector(f"x{k}", dtype=dtype) for k in range(MAX_ITEMS + 2)]
    values = [np.arange(k, k + 3).astype(dtype) for k in range(len(inputs))]
    fn, out = compare_llvm_numba_and_py(inputs, pt.join(0, *inputs), values)
    joins = [call for call in fn.vm.graph_source.plan.calls if isinstance(call.label.op, Join)]
    assert [call.pack_from for call in joins] == [0]
    np.testing.assert_array_equal(out, np.concatenate(values))


def test_join_of_strided_and_empty_inputs():
    x, y, z = pt.dmatrix("x"), pt.dmatrix("y"), pt.dmatrix("z")
    big = np.arange(48.0).reshape(6, 8)
    values = [big[::2, ::-3], np.empty((0, 3)), big[1::2, 1::3]]
    compare_llvm_numba_and_py([x, y, z], pt.join(0, x, y, z), values)


def raised_type(mode, inputs, outputs, values):
    fn = pytensor.function(inputs, outputs, mode=mode)
    with pytest.raises(Exception) as info:
        fn(*values)
    return type(info.value)


@pytest.mark.parametrize("mode", [PY_MODE, "NUMBA", "LLVM"], ids=["py", "NUMBA", "LLVM"])
def test_mismatched_shapes_raise_value_error_like_stock(mode):
    x, y = pt.dmatrix("x"), pt.dmatrix("y")
    assert raised_type(mode, [x, y], pt.join(0, x, y), [np.ones((2, 3)), np.ones((2, 4))]) is ValueError


@pytest.mark.slow
@pytest.mark.parametrize("mode", [PY_MODE, "NUMBA", "LLVM"], ids=["py", "NUMBA", "LLVM"])
def test_a_fused_sum_joined_with_its_mismatched_input_raises_plain_value_error(mode):
    # Found by `llvm-backend fuzz --seed 11 --minutes 30`: LLVM raised a ValueError subclass of its own.
    x = pt.tensor("x", dtype="float32", shape=(None, None))
    outputs = [pt.lt(x, 0), pt.join(0, pt.sum(x, keepdims=True), x)]
    assert raised_type(mode, [x], outputs, [np.ones((2, 2), dtype="float32")]) is ValueError


def test_mismatch_message_names_input_and_axis():
    x, y, z = pt.dmatrix("x"), pt.dmatrix("y"), pt.dmatrix("z")
    fn = pytensor.function([x, y, z], pt.join(1, x, y, z), mode="LLVM")
    with pytest.raises(ValueError, match=r"input 2 has size 5 along dimension 0.*join axis 1"):
        fn(np.ones((2, 3)), np.ones((2, 1)), np.ones((5, 3)))


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(rows=st.lists(st.integers(0, 4), min_size=1, max_size=4), cols=st.integers(1, 3), data=st.data())
def test_join_matches_py_and_numba_on_random_ragged_inputs(rows, cols, data):
    flip = data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows)))
    values = [np.arange(r * cols, dtype="float64").reshape(r, cols) for r in rows]
    values = [v[::-1] if f else np.asfortranarray(v) for v, f in zip(values, flip, strict=True)]
    inputs = [pt.dmatrix(f"x{i}") for i in range(len(values))]
    compare_llvm_numba_and_py(inputs, pt.join(0, *inputs), values)


def _stacks_of_scalars(n, dtype):
    scalars = [pt.scalar(f"s{i}", dtype=dtype) for i in range(n)]
    values = [np.asarray(i - 3, dtype=dtype) for i in range(n)]
    fn, result = compare_llvm_numba_and_py(scalars, [pt.stack(scalars), pt.stack([s * 2 for s in scalars])], values)
    np.testing.assert_array_equal(result[0], np.arange(n, dtype=dtype) - 3)
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 30, 31, 100])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_make_vector_of_many_scalars(n, dtype):
    fn = _stacks_of_scalars(n, dtype)
    # Wide, the graph's inputs come as one pack, which the MakeVector of all of them takes as its argument.
    make_vectors = [call for call in fn.vm.graph_source.plan.calls if isinstance(call.label.op, MakeVector)]
    assert [call.pack_from for call in make_vectors] == ([0] if n > MAX_ITEMS else [None] * len(make_vectors))
    assert all(isinstance(call.function, _Intrinsic) for call in make_vectors)


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 31, 100])
def test_a_stack_of_native_scalar_inputs_is_a_scalarized_join_of_them(n):
    fn = _stacks_of_scalars(n, "float64")
    graph = fn.vm.graph_source
    assert len(graph.scalar_sources) == n
    # from SCALAR_PACK_MIN on, the scalars come as one scalar pack, whose items the join reads
    assert [pack.scalar for pack in graph.packs] == ([True] if n >= SCALAR_PACK_MIN else [])
    slots = tuple(item.slot for item in graph.plan.items) if graph.packs else tuple(range(n))
    joins = [call for call in graph.plan.calls if isinstance(getattr(call.label, "op", None), ScalarizedJoin)]
    assert any(call.arguments == slots for call in joins)


@pytest.mark.slow
def test_more_entries_than_numba_takes_in_one_argument_go_to_stocks_function():
    # Found by `llvm-backend fuzz --seed 31 --minutes 30`: a ScalarizedJoin of 1,417 scalars failed to type
    # (numba refuses an argument tuple of more than 1,000 values of one type), where the py linker and stock
    # NUMBA compute it.
    x = pt.lvector("x")
    out = pt.concatenate([pt.atleast_1d(x.sum() + k) for k in range(1, NUMBA_MAX_TUPLE + 2)])
    fn = pytensor.function([x], out, mode="LLVM")
    [join] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, ScalarizedJoin)]
    assert len(join.inputs) > NUMBA_MAX_TUPLE and not entries_fit_a_call(join)
    np.testing.assert_array_equal(fn(np.arange(3)), pytensor.function([x], out, mode=PY_MODE)(np.arange(3)))


@pytest.mark.parametrize(
    ("entries", "fits"),
    [
        ([pt.lscalar(f"s{k}") for k in range(NUMBA_MAX_TUPLE)], True),
        ([pt.lscalar(f"s{k}") for k in range(NUMBA_MAX_TUPLE + 1)], True),
        ([pt.dvector(f"v{k}") for k in range(NUMBA_MAX_TUPLE + 1)], True),
        ([pt.dvector(f"v{k}") for k in range(NUMBA_MAX_TUPLE)] + [pt.lvector("w")], False),
    ],
    ids=["1000 scalars", "1001 0-d tensors, one pack", "1001 vectors, one pack", "1001 of two dtypes"],
)
def test_entries_fit_a_call_of_numba_as_one_tuple_or_one_pack(entries, fits):
    node = pt.stack(entries).owner if entries[0].ndim == 0 else pt.concatenate(entries).owner
    assert entries_fit_a_call(node) is fits


def test_a_scalarized_join_of_scalars_of_mixed_dtypes_upcasts_each():
    """Every entry a scalar: linear_join stores each one, cast to the output's dtype (no tables, no loop)."""
    a, b, c = pt.vector("a", dtype="int8"), pt.vector("b", dtype="float32"), pt.vector("c", dtype="int64")
    entries = [a.sum(dtype="int8"), pt.any(b > 0), b.max(), c.sum(), a.min()]
    out = pt.concatenate([pt.atleast_1d(e) for e in entries])
    values = [np.array([100, 27, 5], dtype="int8"), np.array([-1.5, 2.25], dtype="float32"), np.array([2**40, 3])]
    fn, result = compare_llvm_numba_and_py([a, b, c], out, values)
    [join] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, ScalarizedJoin)]
    assert all(entry.type.ndim == 0 for entry in join.inputs)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, [np.int8(-124), 1.0, 2.25, 2**40 + 3, 5.0])


def _plan_call(fn, op_type):
    [call] = [c for c in fn.vm.graph_source.plan.calls if isinstance(getattr(c.label, "op", None), op_type)]
    return call


def _hints(fn):
    fgraph = fn.maker.fgraph
    return filled_joins(fgraph, fgraph.toposort())


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_a_joined_loop_output_is_written_within_the_join_output(dtype):
    # logp_dlogp_function's joined gradient: scalars around the map of a vector parameter
    x, a = pt.vector("x", dtype=dtype), pt.scalar("a", dtype=dtype)
    out = pt.concatenate([pt.atleast_1d(a * 2), x * a + 1, pt.atleast_1d((x * x).sum())])
    values = [np.arange(5, dtype=dtype)[::-1], np.asarray(3, dtype=dtype)]
    fn, result = compare_llvm_numba_and_py([x, a], out, values)
    join = _plan_call(fn, ScalarizedJoin)
    assert _hints(fn)[join.label] == {"filled": (1, 1, 1)}
    assert join.function.__name__ == "join_around"
    assert _hints(fn)[join.label.inputs[1].owner]["within"][1:] == (1, 1)
    # the one array made is the output: the map is not a vector of its own
    assert allocations_per_call(fn, values).net == 1
    assert allocations_per_call(pytensor.function([x, a], out, mode="NUMBA"), values).net == 2
    np.testing.assert_array_equal(result[1:6], values[0] * values[1] + 1)


def test_a_join_of_vectors_of_static_length_around_a_loop_output():
    x, y = pt.dvector("x"), pt.tensor("y", dtype="float64", shape=(3,))
    out = pt.concatenate([y, pt.exp(x), y[::-1]])
    values = [np.linspace(-1, 1, 4), np.array([1.0, 2.0, 3.0])]
    fn, _ = compare_llvm_numba_and_py([x, y], out, values)
    assert _hints(fn)[_plan_call(fn, Join).label] == {"filled": (1, 3, 3)}
    assert allocations_per_call(fn, values).net == 1


@pytest.mark.parametrize("position", ["last", "first"])
def test_the_map_of_a_loop_fused_with_reductions_is_written_within_the_join_of_its_sums(position):
    # eight schools' gradient: the FusedElemwise's map joined with scalars made of its own full reductions
    x, a = pt.dvector("x"), pt.dscalar("a")
    mapped, sums = pt.exp(x * a), [pt.atleast_1d((x * x).sum() * a), pt.atleast_1d(pt.log1p(x * x).sum())]
    out = pt.concatenate([*sums, mapped] if position == "last" else [mapped, *sums])
    values = [np.linspace(-1, 1, 5), np.asarray(0.7)]
    fn, result = compare_llvm_numba_and_py([x, a], out, values)
    join = _plan_call(fn, ScalarizedJoin)
    k = 2 if position == "last" else 0
    window = (2, 0) if position == "last" else (0, 2)
    assert isinstance(join.label.inputs[k].owner.op, FusedElemwise)
    assert _hints(fn)[join.label] == {"filled": (k, *window)}
    assert join.function.__name__ == "join_around"
    assert allocations_per_call(fn, values).net == 1
    np.testing.assert_allclose(result[k : k + 5], np.exp(values[0] * values[1]))


@pytest.mark.parametrize("group", [[0, 2, 1, 2, 0, 3], [3, 3, -1, 0, -4, 1]], ids=["repeated", "negative"])
def test_an_indexed_gradient_added_into_a_loop_s_vector_is_written_within_the_join_output(group):
    # the hierarchical model's gradient: the likelihood loop adds into offset[group] in place of the prior's
    # gradient (-offset), a new vector of another loop; both write within the joined gradient
    offset, scale, y = pt.dvector("offset"), pt.dscalar("scale"), pt.dvector("y")
    logp = -0.5 * (offset**2).sum() - 0.5 * ((y - scale * offset[pt.constant(np.array(group))]) ** 2).sum()
    d_offset, d_scale = pt.grad(logp, [offset, scale])
    out = pt.concatenate([pt.atleast_1d(d_scale), d_offset, pt.atleast_1d(scale * 2)])
    values = [np.linspace(-1, 1, 4), np.asarray(0.7), np.linspace(0, 2, 6)]
    fn, result = compare_llvm_numba_and_py([offset, scale, y], out, values)
    join = _plan_call(fn, ScalarizedJoin)
    hints = _hints(fn)
    assert hints[join.label] == {"filled": (1, 1, 1)}
    indexed = join.label.inputs[1].owner
    assert isinstance(indexed.op, FusedElemwise) and indexed.op.destroy_map
    [target] = [indexed.inputs[j] for [j] in indexed.op.destroy_map.values()]
    assert hints[indexed]["within"][1:] == hints[target.owner]["within"][1:] == (1, 1)
    assert join.function.__name__ == "join_around"
    # the prior's gradient and the indexed sum into it are the output: one array made
    assert allocations_per_call(fn, values).net == 1
    assert allocations_per_call(pytensor.function([offset, scale, y], out, mode="NUMBA"), values).net == 2
    residual = values[2] - values[1] * values[0][group]
    expected = -values[0]
    np.add.at(expected, group, residual * values[1])
    np.testing.assert_allclose(result[1:5], expected)


def test_an_indexed_gradient_out_of_bounds_raises_index_error_like_py():
    # stock's indexed loop reads and writes out of bounds here: only py is a reference
    offset, y = pt.dvector("offset"), pt.dvector("y")
    logp = -0.5 * (offset**2).sum() - 0.5 * ((y - offset[pt.constant(np.array([0, 4, 1]))]) ** 2).sum()
    out = pt.concatenate([pt.atleast_1d(logp), pt.grad(logp, offset)])
    values = [np.linspace(-1, 1, 4), np.linspace(0, 2, 3)]
    fn = pytensor.function([offset, y], out, mode="LLVM")
    assert _hints(fn)[_plan_call(fn, ScalarizedJoin).label] == {"filled": (1, 1, 0)}
    assert raised_type(PY_MODE, [offset, y], out, values) is IndexError
    assert raised_type("LLVM", [offset, y], out, values) is IndexError


def test_the_map_of_a_loop_fused_with_reductions_read_by_another_node_is_its_own_array():
    x, a = pt.dvector("x"), pt.dscalar("a")
    mapped = pt.exp(x * a)
    out = pt.concatenate([pt.atleast_1d((x * x).sum()), mapped, pt.atleast_1d(pt.log1p(x * x).sum())])
    values = [np.linspace(-1, 1, 5), np.asarray(0.7)]
    fn, _ = compare_llvm_numba_and_py([x, a], [out, mapped[::2]], values)
    assert isinstance(_plan_call(fn, ScalarizedJoin).label.inputs[1].owner.op, FusedElemwise)
    assert _hints(fn) == {}
    # the map's vector and the join's output (the strided slice is a view of the map)
    assert allocations_per_call(fn, values).net == 2


def _unfillable(case):
    x, y, a = pt.dvector("x"), pt.dvector("y"), pt.dscalar("a")
    mapped, head = pt.exp(x), pt.atleast_1d(a)
    return {
        "graph output": ([x, a], [pt.concatenate([head, mapped]), mapped]),
        "joined twice": ([x, a], [pt.concatenate([head, mapped, mapped])]),
        "entry of unknown length": ([x, y], [pt.concatenate([y, mapped])]),
        "other dtype": ([x, a], [pt.concatenate([head, pt.exp(pt.cast(x, "float32"))])]),
        # exp is computed in place, in the cumulative sum's array
        "in place": ([x, a], [pt.concatenate([head, pt.exp(pt.cumsum(x))])]),
        "2-d join": ([x, a], [pt.concatenate([pt.atleast_2d(a), pt.atleast_2d(mapped)], axis=1)]),
    }[case]


@pytest.mark.slow
@pytest.mark.parametrize(
    "case", ["graph output", "joined twice", "entry of unknown length", "other dtype", "in place", "2-d join"]
)
def test_a_loop_output_is_its_own_array_where_the_join_cannot_take_it(case):
    inputs, outputs = _unfillable(case)
    values = [np.linspace(-1, 1, 4), np.arange(2.0) if inputs[1].name == "y" else np.asarray(0.5)]
    fn, _ = compare_llvm_numba_and_py(inputs, outputs, values)
    assert _hints(fn) == {}
    assert not any(getattr(call.function, "__name__", "") == "join_around" for call in fn.vm.graph_source.plan.calls)


@pytest.mark.parametrize("mode", [PY_MODE, "NUMBA", "LLVM"], ids=["py", "NUMBA", "LLVM"])
def test_a_mismatched_loop_joined_within_the_output_raises_value_error_like_stock(mode):
    x, y, a = pt.dvector("x"), pt.dvector("y"), pt.dscalar("a")
    out = pt.concatenate([pt.atleast_1d(a), x + y])
    assert raised_type(mode, [x, y, a], out, [np.ones(3), np.ones(4), np.asarray(1.0)]) is ValueError


@pytest.mark.parametrize("dtype", ["int64", "float64"])
def test_a_wide_stack_of_one_reduced_value_matches_py_and_stock(dtype):
    # the fuzzer's seed-52 graph: 31 entries (a pack) of the 0-d array a full sum hands out, typed layout A,
    # which numba's cast would not store in a pack of 0-d (layout C) arrays
    x = pt.tensor("x", dtype=dtype, shape=(1,))
    total = pt.sum(x)
    _, (out,) = compare_llvm_numba_and_py([x], [pt.stack([total] * (MAX_ITEMS + 1))], [np.array([3], dtype=dtype)])
    assert out.tolist() == [3] * (MAX_ITEMS + 1)


def test_a_join_is_an_intrinsic_of_the_graph_function():
    """Each node's join is emitted in the graph function: no function of its own for numba to compile per node."""
    a, b, v = pt.dmatrix("a"), pt.dmatrix("b"), pt.dvector("v")
    outputs = [pt.join(1, a, b), pt.join(0, v, pt.as_tensor([1.0, 2.0]) * v[0])]
    values = [np.ones((2, 3)), np.zeros((2, 1)), np.arange(3.0)]
    fn, _ = compare_llvm_numba_and_py([a, b, v], outputs, values)
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), Join)]
    assert len(calls) == 2
    assert all(isinstance(call.function, _Intrinsic) for call in calls)


def test_a_narrow_make_vector_is_an_intrinsic_of_the_graph_function():
    """As stochastic volatility's data model makes one: a constant and the squeeze of a vector of length 1, the
    entries of a shape (scalarization leaves a MakeVector whose entries need no cast)."""
    k, f = pt.tensor("k", shape=(1,), dtype="int64"), pt.tensor("f", shape=(1,), dtype="float32")
    out = [
        MakeVector("int64")(pt.constant(1, dtype="int64"), k.dimshuffle(())),
        MakeVector("float32")(f.dimshuffle(()), pt.constant(2.5, "float32"), f.dimshuffle(())),
    ]
    fn, result = compare_llvm_numba_and_py([k, f], out, [np.array([3]), np.array([-3.0], dtype="float32")])
    np.testing.assert_array_equal(result[0], [1, 3])
    np.testing.assert_array_equal(result[1], np.array([-3.0, 2.5, -3.0], dtype="float32"))
    calls = [call for call in fn.vm.graph_source.plan.calls if isinstance(call.label.op, MakeVector)]
    assert len(calls) == 2 and all(isinstance(call.function, _Intrinsic) for call in calls)
