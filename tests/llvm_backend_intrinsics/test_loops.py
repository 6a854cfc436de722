import re

import llvmlite.binding as llvm
import numpy as np
import pytest
from numba import njit
from numba.core import errors, types
from numba.extending import intrinsic

from llvm_backend.tools.measure import function_text
from llvm_backend_intrinsics.loops import LoopOutput, LoopSpec, loop_intrinsic, node_loop_intrinsic

F8 = np.dtype("float64")
SUM = LoopOutput(F8, "add", F8, 0.0, scalar=True)
MAP = LoopOutput(F8)


def _run(spec, function):
    loop = loop_intrinsic(spec)

    @njit
    def run(*inputs):
        return loop(function, inputs)

    return run


@njit
def affine(x, s, b):
    return x * s + b, x * x


@njit
def sum_of_squares(x, s, b):
    return x * x


def test_map_and_reduce_over_broadcast_and_scalar_inputs():
    spec = LoopSpec(((False, False), None, (True, False)), (MAP, SUM))
    x, b = np.arange(6.0).reshape(2, 3), np.array([[1.0, 2.0, 3.0]])
    y, total = _run(spec, affine)(x, 2.0, b)
    np.testing.assert_array_equal(y, x * 2 + b)
    assert y.flags.c_contiguous
    assert total == (x * x).sum()


@pytest.mark.parametrize("view", [lambda a: a[::-1, ::2], lambda a: a.T, np.asfortranarray])
def test_inputs_are_read_through_their_strides(view):
    spec = LoopSpec(((False, False), None, (False, False)), (MAP, SUM))
    x = view(np.arange(24.0).reshape(4, 6))
    b = view(np.ones((4, 6)))
    y, total = _run(spec, affine)(x, 0.5, b)
    np.testing.assert_array_equal(y, x * 0.5 + b)
    assert total == (x * x).sum()


def test_a_star_args_function_takes_its_values_as_one_tuple():
    @njit
    def product(*values):
        return values[0] * values[1]

    spec = LoopSpec(((False,), None), (MAP,))
    (y,) = _run(spec, product)(np.arange(4.0), 3.0)
    np.testing.assert_array_equal(y, [0.0, 3.0, 6.0, 9.0])


def test_the_node_loop_is_the_loop_as_a_function_of_the_inputs():
    two = LoopSpec(((False, False), None, (True, False)), (MAP, SUM))
    one = LoopSpec(((False, False), None, (True, False)), (SUM,))
    node_two, node_one = node_loop_intrinsic(two, affine), node_loop_intrinsic(one, sum_of_squares)

    @njit
    def run(x, s, b):
        return node_two(x, s, b), node_one(x, s, b)

    x, b = np.arange(6.0).reshape(2, 3), np.array([[1.0, 2.0, 3.0]])
    (y, total), alone = run(x, 2.0, b)
    want_y, want_total = _run(two, affine)(x, 2.0, b)
    np.testing.assert_array_equal(y, want_y)
    assert total == want_total == alone  # one output: the value itself, not a tuple of it


@intrinsic
def _halved(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.fmul(args[0], context.get_constant(types.float64, 0.5))

    return types.float64(types.float64), codegen


def test_the_node_loop_emits_an_intrinsic_scalar_function_in_its_own_code():
    node = node_loop_intrinsic(LoopSpec(((False,),), (MAP,)), _halved)

    @njit
    def run(x):
        return node(x)

    np.testing.assert_array_equal(run(np.arange(4.0)), np.arange(4.0) * 0.5)


def test_disagreeing_shapes_raise_before_anything_is_made():
    spec = LoopSpec(((False,), (False,)), (MAP,))

    @njit
    def add(x, y):
        return x + y

    with pytest.raises(ValueError, match="input 1 has an incompatible shape in axis 0"):
        _run(spec, add)(np.ones(3), np.ones(4))


@pytest.mark.parametrize(
    ("reduce", "identity", "expected"),
    [("maximum", -np.inf, np.nan), ("minimum", np.inf, np.nan), ("add", 0.0, np.nan), ("mul", 1.0, np.nan)],
)
def test_nan_reaches_every_float_reduction(reduce, identity, expected):
    spec = LoopSpec(((False,),), (LoopOutput(F8, reduce, F8, identity, scalar=True),))

    @njit
    def same(x):
        return x

    (value,) = _run(spec, same)(np.array([1.0, np.nan, -3.0]))
    assert np.isnan(value)


def test_empty_loops_return_the_identity_and_empty_arrays():
    spec = LoopSpec(((False, False),), (MAP, LoopOutput(F8, "maximum", F8, -np.inf), SUM))

    @njit
    def three(x):
        return x, x, x

    y, top, total = _run(spec, three)(np.zeros((0, 3)))
    assert y.shape == (0, 3) and top.shape == () and top[()] == -np.inf and total == 0.0


def test_integer_and_bool_accumulators_and_casts():
    i8, i64, b1 = np.dtype("int8"), np.dtype("int64"), np.dtype("bool")
    outputs = (
        LoopOutput(i8),
        LoopOutput(i8, "add", i8, 0, scalar=True),
        LoopOutput(i64, "maximum", i64, np.iinfo(i64).min, scalar=True),
        LoopOutput(b1, "or", b1, False, scalar=True),
    )
    spec = LoopSpec(((False,),), outputs)

    @njit
    def four(x):
        return x * 2, x * 2, x, x > 100

    x = np.array([100, 100, 27, -128], dtype="int8")
    doubled, wrapped, top, any_big = _run(spec, four)(x)
    np.testing.assert_array_equal(doubled, (x * 2).astype("int8"))
    assert wrapped == (x * 2).astype("int8").sum(dtype="int8")
    assert (top, any_big) == (100, False)


def test_wrong_inputs_are_typing_errors():
    spec = LoopSpec(((False,), None), (MAP,))
    run = _run(spec, affine)
    with pytest.raises(errors.TypingError, match="input 1 must be a scalar"):
        run(np.ones(2), np.ones(2))
    with pytest.raises(errors.TypingError, match="returns"):
        _run(LoopSpec(((False,), None, (False,)), (MAP,)), affine)(np.ones(2), 1.0, np.ones(2))


def test_an_output_written_into_an_input_is_that_input():
    spec = LoopSpec(((False,), None), (LoopOutput(F8, into=0), SUM))

    @njit
    def scaled(x, s):
        return x * s, x

    x = np.arange(4.0)
    y, total = _run(spec, scaled)(x, 3.0)
    assert y is x
    np.testing.assert_array_equal(x, [0.0, 3.0, 6.0, 9.0])
    assert total == 6.0
    with pytest.raises(errors.TypingError, match="cannot write a float64 output into input 0"):
        _run(spec, scaled)(np.arange(4), 3.0)


def test_a_read_only_input_is_not_written_into():
    """``np.broadcast_to``'s view is read-only: its rows share memory, so writing the output into it would
    read elements already overwritten. The output is a new array and the input stays as it was."""
    spec = LoopSpec(((False, False),), (LoopOutput(F8, into=0),))

    @njit
    def twice(x):
        return 2.0 * x

    x = np.broadcast_to(np.arange(3.0), (4, 3))
    [y] = _run(spec, twice)(x)
    assert not np.shares_memory(y, x)
    np.testing.assert_array_equal(y, 2.0 * np.broadcast_to(np.arange(3.0), (4, 3)))
    np.testing.assert_array_equal(x[0], [0.0, 1.0, 2.0])


def test_a_reduction_over_some_axes_is_an_array_of_the_others():
    spec = LoopSpec(
        ((False, False, False),),
        (LoopOutput(F8, "add", F8, 0.0, axes=(1,)), LoopOutput(F8, "maximum", F8, -np.inf, axes=(0, 2)), SUM),
    )

    @njit
    def three(x):
        return x, x, x

    x = np.arange(24.0).reshape(2, 3, 4)[:, ::-1]
    middle, outer, total = _run(spec, three)(x)
    np.testing.assert_array_equal(middle, x.sum(axis=1))
    np.testing.assert_array_equal(outer, x.max(axis=(0, 2)))
    assert total == x.sum()
    wrong = LoopSpec(((False, False),), (LoopOutput(np.dtype("int8"), "add", np.dtype("int64"), 0, axes=(0,)),))
    with pytest.raises(errors.TypingError, match="accumulates in its dtype"):
        _run(wrong, njit(lambda x: x))(np.ones((2, 2), dtype="int8"))


def test_a_loop_needs_an_array():
    with pytest.raises(ValueError, match="at least one array input"):
        loop_intrinsic(LoopSpec((None,), (MAP,)))


def test_the_caller_keeps_no_reference_counts_on_the_inputs():
    """The loop is a function of its own, whose raise is marked as numba marks its own: numba's pruning removes
    the incref and decref of each input around it (inline, 40 inputs kept 38 pairs)."""
    n = 40
    spec = LoopSpec(((False,),) * n, (SUM,))

    @njit
    def total(*values):
        return sum(values)

    loop = loop_intrinsic(spec)

    @njit
    def run(*inputs):
        return loop(total, inputs)

    arrays = tuple(np.full(3, float(k)) for k in range(n))
    assert run(*arrays)[0] == 3 * sum(range(n))
    [overload] = run.overloads.values()
    body = function_text(overload.library.get_llvm_str(), overload.fndesc.mangled_name)
    assert "@NRT_incref" not in body and "@NRT_decref" not in body


def _loop_of_products(fastmath: bool):
    @njit(fastmath=fastmath)
    def product(x, y):
        return x * y

    return _run(LoopSpec(((False,), (False,)), (SUM,)), product)


@pytest.mark.parametrize("fastmath", [True, False])
def test_a_sum_of_products_fuses_into_multiply_adds_where_the_multiply_allows(fastmath):
    """The accumulating add may contract with the product it adds (``contract``), which the product allows
    under numba's fastmath (PyTensor's default): where the CPU has FMA, one vfmadd per vector of elements
    instead of a vmulpd and a vaddpd, each holding a register (with 49 such sums in one loop the extra
    registers were spilled). Without fastmath nothing is contracted, as in stock's loops."""
    run = _loop_of_products(fastmath)
    x, y = np.arange(64.0), np.arange(64.0)[::-1].copy()
    assert run(x, y)[0] == (x * y).sum()
    [signature] = run.signatures
    body = function_text(run.overloads[signature].library.get_llvm_str(), run.overloads[signature].fndesc.mangled_name)
    adds = [line for line in body.splitlines() if " fadd " in line]
    assert adds and all("reassoc" in line and "contract" in line for line in adds)
    host_has_fma = bool(llvm.get_host_cpu_features().get("fma", False))
    assert ("vfmadd" in run.inspect_asm(signature)) == (fastmath and host_has_fma)


@pytest.mark.parametrize("n", [0, 1, 5])
def test_an_output_within_a_vector_is_written_at_its_offset_of_a_new_vector(n):
    spec = LoopSpec(((False,), None), (LoopOutput(F8, within=(2, 3)), SUM))

    @njit
    def scaled(x, s):
        return x * s, x

    x = np.arange(float(n))[::-1]
    vector, total = _run(spec, scaled)(x, 3.0)
    assert vector.shape == (n + 5,) and vector.flags.c_contiguous
    np.testing.assert_array_equal(vector[2 : 2 + n], x * 3.0)
    assert total == x.sum()


def test_only_an_array_of_a_1d_loop_is_written_within_a_vector():
    @njit
    def same(x):
        return x

    with pytest.raises(errors.TypingError, match="written within a vector"):
        _run(LoopSpec(((False, False),), (LoopOutput(F8, within=(1, 0)),)), same)(np.ones((2, 2)))
    with pytest.raises(errors.TypingError, match="written within a vector"):
        _run(LoopSpec(((False,),), (LoopOutput(F8, "add", F8, 0.0, within=(1, 0)),)), same)(np.ones(2))


@pytest.mark.parametrize("n", [0, 1, 5])
def test_an_output_into_a_vector_made_within_writes_and_reads_its_window_and_returns_the_vector(n):
    """The input an in-place output is written into is a vector an earlier loop made within a join's output:
    the loop reads and writes elements [before, len - after) as that input, and hands the whole vector on."""
    spec = LoopSpec(((False,), (False,)), (LoopOutput(F8, into=0, within=(2, 3)), SUM))

    @njit
    def add(a, y):
        return a + y, a

    vector = np.full(n + 5, -7.0)
    vector[2 : 2 + n] = np.arange(float(n))
    y = np.linspace(0.0, 1.0, n)
    returned, total = _run(spec, add)(vector, y)
    assert returned.shape == (n + 5,) and np.shares_memory(returned, vector)
    np.testing.assert_array_equal(returned[2 : 2 + n], np.arange(float(n)) + y)
    np.testing.assert_array_equal(np.r_[returned[:2], returned[2 + n :]], np.full(5, -7.0))
    assert total == np.arange(float(n)).sum()


def test_a_loop_made_window_is_added_to_at_its_positions_and_bounds_them():
    made = LoopSpec(((False,),), (LoopOutput(F8, within=(1, 2)),))
    spec = LoopSpec(
        ((False,), (False,)), (LoopOutput(F8, into=3, indexed=(0, "inc"), within=(1, 2)),), ((0, False),), (None, None)
    )

    @njit
    def negated(x):
        return -x

    make, add = _run(made, negated), _run(spec, lambda_product_sum)
    [vector] = make(np.arange(3.0))
    vector[0], vector[-2:] = 9.0, 9.0
    [returned] = add(np.ones(4), np.arange(4.0), np.array([2, 0, -1, 2]), vector)
    assert np.shares_memory(returned, vector)
    np.testing.assert_array_equal(returned, [9.0, 0.0 + 2.0, -1.0, -2.0 + 1.0 + 3.0 + 4.0, 9.0, 9.0])
    before = vector.copy()
    with pytest.raises(IndexError, match="index out of bounds"):
        add(np.ones(1), np.ones(1), np.array([3]), vector)  # within the vector, past its window
    np.testing.assert_array_equal(vector, before)


def test_a_vector_shorter_than_its_window_s_margins_raises_value_error():
    spec = LoopSpec(((False,),), (LoopOutput(F8, into=0, within=(2, 3)),))

    @njit
    def same(x):
        return x

    with pytest.raises(ValueError, match="too short"):
        _run(spec, same)(np.ones(4))


def test_an_input_written_within_must_be_a_writable_contiguous_vector():
    spec = LoopSpec(((False,),), (LoopOutput(F8, into=0, within=(1, 0)),))

    @njit
    def same(x):
        return x

    read_only = np.ones(3)
    read_only.flags.writeable = False
    for vector in (read_only, np.ones(6)[::2]):
        with pytest.raises(errors.TypingError, match="writable C-contiguous vector"):
            _run(spec, same)(vector)


def test_disagreeing_shapes_raise_before_the_vector_is_made():
    spec = LoopSpec(((False,), (False,)), (LoopOutput(F8, within=(1, 1)),))

    @njit
    def add(x, y):
        return x + y

    with pytest.raises(ValueError, match="input 1 has an incompatible shape in axis 0"):
        _run(spec, add)(np.ones(3), np.ones(4))


@njit
def shifted(x, y):
    return x + y, x * y


def test_inputs_read_through_an_index_and_outputs_added_at_its_positions():
    """``x[idx] + y`` and ``target[idx] += x[idx] * y``, with repeated and negative positions, and their sum."""
    spec = LoopSpec(
        ((False,), (False,)),
        (LoopOutput(F8), LoopOutput(F8, into=3, indexed=(0, "inc"))),
        indices=((0, False),),
        reads=(0, None),
    )
    x, y, idx = np.array([10.0, 20.0, 30.0]), np.arange(5.0), np.array([0, 2, 2, -1, 1])
    target = np.ones(3)
    s, written = _run(spec, shifted)(x, y, idx, target)
    np.testing.assert_array_equal(s, x[idx] + y)
    assert written is target
    want = np.ones(3)
    np.add.at(want, idx, x[idx] * y)
    np.testing.assert_array_equal(target, want)


def test_set_at_positions_and_a_read_only_target_copied():
    spec = LoopSpec(((False,), (False,)), (LoopOutput(F8, into=3, indexed=(0, "set")),), ((0, False),), (0, None))

    @njit
    def product(x, y):
        return x * y

    x, y, idx = np.array([1.0, 2.0, 3.0]), np.array([5.0, 7.0]), np.array([2, 0])
    target = np.zeros(3)
    target.flags.writeable = False
    [written] = _run(spec, product)(x, y, idx, target)
    assert not np.shares_memory(written, target) and not target.any()
    np.testing.assert_array_equal(written, [7.0, 0.0, 15.0])


@pytest.mark.parametrize("axis", [0, 1])
def test_a_matrix_read_through_an_index_along_either_axis(axis):
    spec = LoopSpec(((False, False), (False, False)), (SUM, MAP), indices=((axis, False),), reads=(0, None))
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([2, 0, -1])
    view = x[idx] if axis == 0 else x[:, idx]
    y = np.ones(view.shape) * 3.0
    total, s = _run(spec, lambda_product)(x, y, idx)
    np.testing.assert_array_equal(s, view * y)
    assert total == view.sum()


@njit
def lambda_product(x, y):
    return x, x * y


def test_an_index_of_length_one_broadcasts():
    spec = LoopSpec(((True,), (False,)), (MAP,), indices=((0, True),), reads=(0, None))
    [s] = _run(spec, lambda_product_sum)(np.array([4.0, 5.0]), np.arange(3.0), np.array([1]))
    np.testing.assert_array_equal(s, 5.0 + np.arange(3.0))


@njit
def lambda_product_sum(x, y):
    return x + y


@pytest.mark.parametrize(
    "positions", [[0, 3], [0, -4], [0, 100], np.array([1, 3], "uint8"), np.array([0, 2**64 - 1], "uint64")]
)
def test_a_position_out_of_bounds_raises_before_anything_is_written(positions):
    spec = LoopSpec(((False,), (False,)), (LoopOutput(F8, into=3, indexed=(0, "inc")),), ((0, False),), (None, None))
    target = np.zeros(3)
    with pytest.raises(IndexError, match="index out of bounds in axis 0"):
        _run(spec, lambda_product_sum)(np.ones(2), np.ones(2), np.asarray(positions), target)
    assert not target.any()


def test_unsigned_positions():
    spec = LoopSpec(((False,), (False,)), (LoopOutput(F8, into=3, indexed=(0, "inc")),), ((0, False),), (0, None))
    target = np.zeros(3)
    _run(spec, lambda_product_sum)(np.arange(3.0), np.ones(2), np.array([2, 2], "uint8"), target)
    np.testing.assert_array_equal(target, [0.0, 0.0, 6.0])


def test_each_array_bounds_the_positions_it_is_read_at():
    """An index read through into a shorter and a longer array: a negative position counts from the end of
    each, and a position is checked against the shorter."""
    spec = LoopSpec(((False,), (False,)), (MAP,), indices=((0, False),), reads=(0, 0))
    run = _run(spec, lambda_product_sum)
    [s] = run(np.arange(2.0), np.arange(5.0) * 10, np.array([-1, 1]))
    np.testing.assert_array_equal(s, [1.0 + 40.0, 1.0 + 10.0])
    with pytest.raises(IndexError):
        run(np.arange(2.0), np.arange(5.0), np.array([2]))


def test_a_mismatched_index_or_target_raises():
    spec = LoopSpec(((False,), (False,)), (LoopOutput(F8, into=3, indexed=(0, "inc")),), ((0, False),), (0, None))
    run = _run(spec, lambda_product_sum)
    with pytest.raises(ValueError, match="input 2 has an incompatible shape in axis 0"):
        run(np.ones(3), np.ones(4), np.array([0, 1]), np.zeros(3))
    with pytest.raises(errors.TypingError, match="must be a vector of indices"):
        run(np.ones(3), np.ones(2), np.array([0.0, 1.0]), np.zeros(3))
    matrix = LoopSpec(
        ((False, False), (False, False)), (LoopOutput(F8, into=3, indexed=(0, "inc")),), ((0, False),), (0, None)
    )
    with pytest.raises(ValueError, match="target of an indexed Elemwise output"):
        _run(matrix, lambda_product_sum)(np.ones((3, 2)), np.ones((2, 2)), np.array([0, 1]), np.zeros((3, 5)))


@njit
def scaled(x, s):
    return x * s, x * s


def _scaled_into_positions(s_broadcastable: tuple):
    """``y = x * s`` and ``target[idx] += x * s``, ``s`` an array of the loop's ndim, broadcast as given."""
    spec = LoopSpec(
        ((False,) * len(s_broadcastable), s_broadcastable),
        (LoopOutput(F8), LoopOutput(F8, into=3, indexed=(0, "inc"))),
        indices=((0, False),),
        reads=(None, None),
    )
    return _run(spec, scaled)


def _loads_of(run, name: str) -> int:
    [overload] = run.overloads.values()
    body = function_text(overload.library.get_llvm_str(), overload.fndesc.mangled_name)
    return len(re.findall(rf"%{name}\.load[.\w]* = load ", body))


@pytest.mark.parametrize("n", [0, 1, 9])
def test_an_input_broadcast_along_every_axis_is_read_once_before_the_loop(n):
    """Read in the loop, ``s[0]`` was read at every element: LLVM cannot tell the write at the positions leaves
    it alone. Read once, the loop unrolled four times reads it once; ``s`` of the loop's length is read at
    each. The values are numpy's, for an empty loop too."""
    x, s, idx = np.arange(float(n)), np.array([2.0]), np.arange(n) % 3
    target = np.ones(3)
    run = _scaled_into_positions((True,))
    y, written = run(x, s, idx, target)
    np.testing.assert_array_equal(y, x * 2.0)
    want = np.ones(3)
    np.add.at(want, idx, x * 2.0)
    np.testing.assert_array_equal(written, want)
    assert _loads_of(run, "in1") == 1
    along = _scaled_into_positions((False,))
    along(x, np.full(n, 2.0), idx, np.ones(3))
    assert _loads_of(along, "in1") > 1


def test_the_positions_are_checked_in_a_loop_llvm_vectorizes():
    """Each position's verdict is or-ed into one flag tested after the loop, so the check of an index as long as
    the data is a vector loop (on hosts with AVX2 and wider), not a compare and a branch per position; a position
    out of bounds anywhere still raises before anything is written."""
    n = 1001
    x, idx = np.arange(float(n)), np.arange(n) % 3
    run = _scaled_into_positions((True,))
    run(x, np.array([2.0]), idx, np.ones(3))
    [overload] = run.overloads.values()
    if llvm.get_host_cpu_features().get("avx2", False):
        assert re.search(r"= or <\d+ x i1> ", overload.library.get_llvm_str())
    for at in (0, n // 2, n - 1):
        outside, target = idx.copy(), np.ones(3)
        outside[at] = 3
        with pytest.raises(IndexError, match="index out of bounds"):
            run(x, np.array([2.0]), outside, target)
        np.testing.assert_array_equal(target, np.ones(3))
