"""The IR of every intrinsic names its values after what they are and the call's variables."""

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types

from llvm_backend.tools.measure import compile_recording_ir, recording_ir_modules
from llvm_backend_intrinsics.argpack import ArrayPack, ArrayPackType, pack_item
from llvm_backend_intrinsics.bounds import IndexCheck, check_indices
from llvm_backend_intrinsics.functions import address_call
from llvm_backend_intrinsics.join import linear_join
from llvm_backend_intrinsics.loops import LoopOutput, LoopSpec, node_loop_intrinsic
from llvm_backend_intrinsics.naming import call_names, named, named_aggregate, naming_call, output_name, unpack_named
from llvm_backend_intrinsics.nutpie import SharedSlot, logp_entry
from llvm_backend_intrinsics.reduction import _emit_fold_lanes, _emit_runs, combine_rule, full_reduce
from llvm_backend_intrinsics.scalarpack import ScalarPack, ScalarPackType, scalar_item, scalar_pack_of
from llvm_backend_intrinsics.select import select
from llvm_backend_intrinsics.tuples import flatten_tuple
from llvm_backend_intrinsics.views import basic_index, dimshuffle_view, unbox_scalar

_I64 = ir.IntType(64)


def _fresh_function(*argument_types):
    module = ir.Module(name="naming")
    function = ir.Function(module, ir.FunctionType(_I64, argument_types), name="f")
    return module, function, ir.IRBuilder(function.append_basic_block("entry"))


def test_runs_of_a_reduction_are_named_and_valid():
    dims = ir.ArrayType(_I64, 2)
    module, function, builder = _fresh_function(dims, dims)
    shape, strides = (unpack_named(builder, arg, 2, name) for arg, name in zip(function.args, ("shape", "stride")))
    counts, run, _ = _emit_runs(builder, shape, strides, 8)
    builder.ret(builder.add(counts[0], run, name="result"))
    text = str(module)
    for line in (
        '%"shape0" = extractvalue [2 x i64] %".1", 0',
        '%"unit_stride" = icmp eq i64 %"stride1", 8',
        '%"run_bytes0" = mul i64 %"shape1", 8',
        '%"merges0" = icmp eq i64 %"stride0", %"run_bytes0"',
        '%"count0" = select  i1 %"merging0", i64 1, i64 %"shape0"',
        '%"run" = select  i1 %"merging0", i64 %"merged_run0", i64 %"shape1"',
    ):
        assert line in text
    llvm.parse_assembly(text).verify()


def test_folded_lanes_are_named_and_valid():
    module = ir.Module(name="naming")
    function = ir.Function(module, ir.FunctionType(ir.DoubleType(), []), name="f")
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    lanes = [builder.alloca(ir.DoubleType(), name="reduce.acc") for _ in range(4)]
    rule = combine_rule("add", types.float64)
    builder.ret(_emit_fold_lanes(builder, lanes, lambda b, acc, value: rule(None, b, acc, value)))
    text = str(module)
    assert '%"lane3" = load double, double* %"reduce.acc.3"' in text
    assert '%"acc.next" = fadd reassoc contract double %"lane0", %"lane1"' in text
    assert '%"acc.next.2" = fadd reassoc contract double %"acc.next", %"acc.next.1"' in text
    assert '%".' not in text
    llvm.parse_assembly(text).verify()


def test_named_renames_only_anonymous_instructions():
    module, function, builder = _fresh_function(_I64)
    [x] = function.args
    anonymous = builder.add(x, _I64(1))
    given = builder.add(x, _I64(2), name="given")
    assert named(anonymous, "sum").name == "sum"
    assert named(given, "other").name == "given"
    assert named(x, "other").name == x.name
    assert named(_I64(3), "three").get_reference() == "3"
    repeated = named(builder.add(x, _I64(4)), "sum")
    assert repeated.name == "sum.1"
    builder.ret(builder.add(anonymous, repeated, name="not an identifier"))
    assert '%"not an identifier" = add i64 %"sum", %"sum.1"' in str(module)
    llvm.parse_assembly(str(module)).verify()


def test_call_names_fall_back_to_positions():
    assert call_names(2, 1).arguments == ("in0", "in1")
    with naming_call(["mu", "sigma"], ["logp"]):
        assert call_names(2, 1) == call_names(2, 1).__class__(("mu", "sigma"), ("logp",))
        assert call_names(3, 1).arguments == ("in0", "in1", "in2")
    assert call_names(2, 1).outputs == ("out0",)


def test_output_name_is_the_calls_one_output_or_the_default():
    assert output_name("view") == "view"
    with naming_call(["x"], ["y"]):
        assert output_name("view") == "y"
    with naming_call(["x"], ["y", "z"]):
        assert output_name("view") == "view"


def _unoptimized_ir(function, *arg_types) -> str:
    """The IR numba emits for ``function`` before LLVM optimizes it (which drops or suffixes names as it
    inlines)."""
    return "\n".join(compile_recording_ir(function, arg_types).unoptimized_modules)


@njit
def _affine(x, s):
    value = x * s + 1.0
    return value, value


def test_a_loop_names_its_inputs_outputs_and_accumulator():
    spec = LoopSpec(
        ((False,), None),
        (
            LoopOutput(np.dtype("float64")),
            LoopOutput(np.dtype("float64"), "add", np.dtype("float64"), 0.0, scalar=True),
        ),
    )
    node = node_loop_intrinsic(spec, _affine)

    @njit
    def run(x, s):
        return node(x, s)

    text = _unoptimized_ir(run, types.float64[::1], types.float64)
    y, total = run(np.arange(3.0), 2.0)
    np.testing.assert_allclose(y, [1.0, 3.0, 5.0])
    assert total == 9.0
    loop = text[text.index('@"llvm_loop"(') :]
    for name in ('%"in0.data"', '%"in0.shape0"', '%"in0.load"', '%"in1.fenced"', '%"out0.data"', '%"out1.acc"'):
        assert name in loop
    assert '%"acc.next" = fadd reassoc contract double %"out1.acc.load", %"out1.value"' in loop


def test_a_join_names_its_tables_and_copies():
    @njit
    def join(x, y):
        return linear_join(0, (x, y), np.float64)

    text = _unoptimized_ir(join, types.float64[::1], types.float64[::1])
    np.testing.assert_array_equal(join(np.ones(2), np.zeros(1)), [1.0, 1.0, 0.0])
    for name in ('%"entry.data"', '%"axis.wrapped"', '%"offset"', '%"total"', '%"out.stride0"', '%"member"'):
        assert name in text
    assert '%"element.cast"' in text or '%"element"' in text


def test_a_reduction_names_its_accumulator():
    @njit
    def total(x):
        return full_reduce(x, "add", 0.0, np.float64, np.float64)

    text = _unoptimized_ir(total, types.float64[::1])
    assert total(np.arange(4.0)) == 6.0
    assert '%"acc.next" = fadd reassoc contract double %"acc", %"element"' in text


def _assert_defines(text: str, *names: str) -> None:
    """Each of ``names`` is the name of a value defined in the IR ``text``."""
    missing = [name for name in names if f'%"{name}" = ' not in text]
    assert missing == []


def test_named_aggregate_names_the_chain_of_insertvalues():
    module, function, builder = _fresh_function(_I64, _I64)
    pair = ir.LiteralStructType([_I64, _I64])
    first = builder.insert_value(pair(ir.Undefined), function.args[0], 0)
    both = named_aggregate(builder.insert_value(first, function.args[1], 1), "pair")
    builder.ret(builder.extract_value(both, 1, name="second"))
    assert both.name == "pair" and first.name == "pair.0"
    assert named_aggregate(function.args[0], "other") is function.args[0]
    llvm.parse_assembly(str(module)).verify()


def test_an_array_pack_names_its_unboxing():
    pack_type = ArrayPackType.of(np.float64, 1, 2)

    @njit
    def first(pack):
        return pack_item(pack, 0)

    text = _unoptimized_ir(first, pack_type)
    arrays = [np.arange(2.0), np.ones(3)]
    np.testing.assert_array_equal(first(ArrayPack(pack_type, np.dtype(np.float64), arrays)), arrays[0])
    _assert_defines(text, "arrays", "got_all", "size", "item", "item.nd", "item.descr", "item.ok", "slot")
    _assert_defines(text, "adapt_failed", "unboxed.next", "released", "item.ptr", "is_error")


def test_a_scalar_pack_names_its_unboxing_and_its_table():
    @njit
    def second(pack):
        return scalar_item(pack, 1)

    @njit
    def packed(a, b):
        return scalar_item(scalar_pack_of("float64", (a, b)), 0)

    pack_type = ScalarPackType.of("float64", 2)
    text = _unoptimized_ir(second, pack_type)
    assert second(ScalarPack.of_values(pack_type, [1.5, 2.5])) == 2.5
    _assert_defines(text, "parts", "cells", "cells.size", "cell", "item", "item.exact_0d", "number", "value.ptr")
    _assert_defines(text, "item.value", "raised.load", "failed.load", "is_error")
    text = _unoptimized_ir(packed, types.int64, types.float64)
    assert packed(3, 0.5) == 3.0
    _assert_defines(text, "value0", "value0.cast", "scalars.item1.ptr")


def test_a_call_through_an_address_names_its_status_and_value():
    """`llvm_backend_intrinsics.abi.call_numba` names a call's values after the callee, `call_as_function` after
    the function it emits."""

    @njit
    def doubled(x):
        return 2.0 * x

    call = address_call(doubled)

    @njit
    def run(x):
        return call((x,))

    text = _unoptimized_ir(run, types.float64)
    assert run(1.5) == 3.0
    _assert_defines(text, "address", "callee", "in0", "doubled.code", "doubled.excinfo", "doubled.is_error")
    _assert_defines(text, "doubled.is_normal", "doubled.value", "in_try", "try_depth", "not_in_try")
    _assert_defines(text, "llvm_call.code", "llvm_call.is_error", "llvm_call.excinfo", "llvm_call.returned")


def test_bounds_checks_name_positions_and_shapes():
    index_check = check_indices((IndexCheck(0, 0, False), IndexCheck(1, 1, True)))

    @njit
    def run(x, i, mask):
        index_check(x, i, mask)
        return 0

    arguments = (types.float64[:, ::1], types.int64[::1], types.boolean[::1])
    text = _unoptimized_ir(run, *arguments)
    assert run(np.zeros((2, 3)), np.array([1, -2]), np.ones(3, dtype=bool)) == 0
    _assert_defines(text, "index0", "x.shape0", "mask.shape0", "mask.shape0.differs", "index.shape0")
    _assert_defines(text, "index.stride0", "index.data", "position", "lowest", "below", "above", "outside")
    _assert_defines(text, "message")


def test_views_name_their_indices_and_views_after_the_call():
    """Outside a graph's call (`naming_call`), a view's argument and output are ``in<k>`` and ``out0``."""
    below = basic_index(((None, 0, None),), box=False)
    boxed = basic_index((0,), box=True)
    squeeze = dimshuffle_view((), (0,), frozenset({0}))

    @njit
    def run(x, stop, i):
        return below(x, stop), boxed(x, i), unbox_scalar(squeeze(x[:1]))

    text = _unoptimized_ir(run, types.float64[::1], types.int64, types.int64)
    head, item, first = run(np.arange(3.0), 2, 1)
    np.testing.assert_array_equal(head, [0.0, 1.0])
    assert item == 1.0 and first == 0.0
    _assert_defines(text, "in1", "in0.struct", "slice0", "out0.data", "out0.shape0", "out0.stride0", "out0")
    _assert_defines(text, "out0.ptr", "out0.item", "in0.shape0.not_one", "in0.data")


def test_a_view_in_a_graphs_call_is_named_after_its_variables():
    squeeze = dimshuffle_view((), (0,), frozenset({0}))

    @njit
    def run(x):
        return squeeze(x)

    with naming_call(["mu"], ["mu_scalar"]):
        text = _unoptimized_ir(run, types.float64[::1])
    assert run(np.ones(1))[()] == 1.0
    _assert_defines(text, "mu.struct", "mu.shape0", "mu.shape0.not_one", "mu.data", "mu_scalar.struct", "mu_scalar")


def test_a_select_names_its_condition_operands_and_result():
    @njit
    def run(c, x, y):
        return select(c, x, y)

    text = _unoptimized_ir(run, types.int64, types.int64, types.float64)
    assert run(0, 1, 2.5) == 2.5 and run(3, 1, 2.5) == 1.0
    _assert_defines(text, "truth", "x.cast", "selected")


def test_a_flattened_tuple_names_groups_items_and_the_tuple():
    @njit
    def run(a, b, c):
        return flatten_tuple(((a, b), (c,)))

    text = _unoptimized_ir(run, types.float64, types.float64, types.float64)
    assert run(1.0, 2.0, 3.0) == (1.0, 2.0, 3.0)
    _assert_defines(text, "g0", "x0", "x1", "g1", "x2", "t.0", "t.1", "t")


@njit
def _logp_and_grad(x, weights):
    return np.asarray((weights * x).sum()), weights * x


def test_a_nutpie_entry_names_its_arrays_call_and_copies():
    weights = np.arange(3.0)
    slot = SharedSlot(0, 8, 1, weights.dtype)
    signature = (types.float64[::1], slot.numba_type)
    _logp_and_grad.compile(signature)
    with recording_ir_modules() as modules:
        logp_entry(_logp_and_grad.overloads[signature], 3, [slot])
    [text] = [str(m) for m in modules if "nutpie_logp" in str(m)]
    _assert_defines(text, "wrong_dim", "x.array", "x.array.shape", "shared0.address", "shared0.shape0")
    _assert_defines(text, "shared0", "graph.code", "graph.is_error", "graph.returned", "logp", "logp.item", "grad")
    _assert_defines(text, "grad.stride0", "element", "element.finite", "finite.next", "logp.item.finite")
