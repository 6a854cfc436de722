"""full_reduce / full_reduce_with against numpy, their IR, and their NRT allocations."""

import functools

import hypothesis.extra.numpy as hnp
import llvmlite.binding as llvm
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir
from numba.core import errors, types
from numba.core.registry import cpu_target
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend_intrinsics.reduction import (
    _FLOAT_RULES,
    _builtin_rule,
    _emit_full_reduce,
    full_reduce,
    full_reduce_with,
)

DTYPES = ["int8", "int32", "int64", "uint8", "float32", "float64", "bool"]
WIDER = {"int8": "int64", "int32": "int64", "uint8": "uint64", "float32": "float64", "bool": "int64"}
REFERENCE = {
    "add": lambda a, identity: np.sum(a, dtype=a.dtype),
    "mul": lambda a, identity: np.prod(a, dtype=a.dtype),
    "maximum": lambda a, identity: np.max(a, initial=identity),
    "minimum": lambda a, identity: np.min(a, initial=identity),
    "and": lambda a, identity: np.all(a) if a.dtype == bool else np.bitwise_and.reduce(a, axis=None),
    "or": lambda a, identity: np.any(a) if a.dtype == bool else np.bitwise_or.reduce(a, axis=None),
    "xor": lambda a, identity: np.bitwise_xor.reduce(a, axis=None),
}
SETTINGS = settings(max_examples=30, deadline=None)


def identity_of(op, acc):
    """The identity of ``op`` on ``acc``, as PyTensor's CAReduce would pass it."""
    acc = np.dtype(acc)
    if op in ("add", "or", "xor"):
        return False if acc == np.bool_ else 0
    if op == "mul":
        return True if acc == np.bool_ else 1
    if acc == np.bool_:
        return op in ("minimum", "and")
    if acc.kind == "f":
        return {"maximum": -np.inf, "minimum": np.inf}[op]
    info = np.iinfo(acc)
    return {"maximum": info.min, "minimum": info.max, "and": int(info.max) if acc.kind == "u" else -1}[op]


def cases():
    """(op, input dtype, acc dtype): every meaningful op per dtype, some in a wider accumulator."""
    for dtype in DTYPES:
        ops = ["add", "mul", "maximum", "minimum"]
        if dtype in ("int8", "int32", "int64", "uint8", "bool"):
            ops += ["and", "or", "xor"]
        for op in ops:
            yield op, dtype, dtype
        if dtype in WIDER:
            yield "add", dtype, WIDER[dtype]
    yield "maximum", "float32", "float64"
    yield "mul", "int8", "int64"


CASES = list(cases())


@functools.cache
def reducer(op, in_dtype, acc_dtype, out_dtype, ndim=3, layout="A"):
    """A compiled ``full_reduce`` for one array type; acc_dtype passes as a class, out_dtype as a dtype."""
    identity, acc_class, out = identity_of(op, acc_dtype), np.dtype(acc_dtype).type, np.dtype(out_dtype)
    sig = numba.from_dtype(out)(types.Array(numba.from_dtype(np.dtype(in_dtype)), ndim, layout))

    @numba.njit(sig)
    def reduce(x):
        return full_reduce(x, op, identity, acc_class, out)

    return reduce


def reference(x, op, acc_dtype, out_dtype):
    acc = x.astype(acc_dtype)
    return np.asarray(REFERENCE[op](acc, identity_of(op, acc_dtype))).astype(out_dtype)


def assert_matches(got, want, x, acc_dtype):
    """Exact for ints and bools; floats within the reassociation error of a sum (or a relative product)."""
    if np.dtype(acc_dtype).kind != "f":
        assert got == want, (got, want)
        return
    eps = np.finfo(acc_dtype).eps
    scale = np.sum(np.abs(x.astype(np.float64))) if x.size else 0.0
    if np.isfinite(scale) and np.isfinite(want):
        tolerance = 4 * eps * max(x.size, 1) * max(scale, abs(float(want)))
    else:
        tolerance = 0.0
    np.testing.assert_allclose(got, want, rtol=0, atol=tolerance, equal_nan=True)


def elements(dtype, op):
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return hnp.from_dtype(dtype)
    if op == "mul":
        # Products of many floats under/overflow in an order-dependent way; keep them in range.
        return st.floats(0.5, 2.0, width=dtype.itemsize * 8)
    if op == "add":
        return hnp.from_dtype(dtype, allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)
    return hnp.from_dtype(dtype)


@st.composite
def views(draw, dtype, op):
    """A 3-d array, possibly empty, as a strided, reversed and/or transposed view."""
    shapes = hnp.array_shapes(min_dims=3, max_dims=3, min_side=0, max_side=6)
    base = draw(hnp.arrays(dtype, shapes, elements=elements(dtype, op)))
    steps = draw(st.tuples(*[st.sampled_from([1, 2, -1, -2])] * 3))
    view = base[tuple(slice(None, None, step) for step in steps)]
    return view.transpose(draw(st.permutations([0, 1, 2])))


@pytest.mark.slow
@pytest.mark.parametrize("op,in_dtype,acc_dtype", CASES)
@SETTINGS
@given(data=st.data())
def test_values_match_numpy(op, in_dtype, acc_dtype, data):
    x = data.draw(views(in_dtype, op))
    reduce = reducer(op, in_dtype, acc_dtype, acc_dtype)
    assert_matches(reduce(x), reference(x, op, acc_dtype, acc_dtype), x, acc_dtype)


@pytest.mark.parametrize("op,in_dtype,acc_dtype", CASES)
def test_result_is_a_scalar_of_out_dtype(op, in_dtype, acc_dtype):
    out = "float32" if np.dtype(acc_dtype).kind == "f" else acc_dtype
    reduce = reducer(op, in_dtype, acc_dtype, out)
    assert reduce.nopython_signatures[0].return_type == numba.from_dtype(np.dtype(out))


@pytest.mark.parametrize("op,in_dtype,acc_dtype", CASES)
def test_empty_gives_identity(op, in_dtype, acc_dtype):
    x = np.zeros((2, 0, 3), dtype=in_dtype)
    got = reducer(op, in_dtype, acc_dtype, acc_dtype)(x)
    assert got == np.asarray(identity_of(op, acc_dtype)).astype(acc_dtype)


LAYOUT_CASES = [
    ("add", "float64", "float64"),
    ("add", "int8", "int64"),
    ("maximum", "float32", "float32"),
    ("xor", "uint8", "uint8"),
]


def arrays_of(ndim, in_dtype, rng):
    """(layout to compile for, array): C, F, and 'A' as a reversed, strided view (0-d: converted)."""
    x = np.asarray(rng.standard_normal((3, 5, 4, 2)[:ndim]) * 50).astype(in_dtype)
    fortran = np.asfortranarray(x) if ndim else x  # asfortranarray makes a 0-d array 1-d
    strided = x[(slice(None, None, -1),) + (slice(None, None, 2),) * (ndim - 1)] if ndim else x
    return [("C", x), (numba.typeof(fortran).layout, fortran), ("A", strided)]


@pytest.mark.parametrize("ndim", [0, 1, 2, 3])
@pytest.mark.parametrize("op,in_dtype,acc_dtype", LAYOUT_CASES)
def test_every_ndim_and_layout(op, in_dtype, acc_dtype, ndim):
    rng = np.random.default_rng(ndim)
    for layout, x in arrays_of(ndim, in_dtype, rng):
        reduce = reducer(op, in_dtype, acc_dtype, acc_dtype, ndim, layout)
        assert_matches(reduce(x), reference(x, op, acc_dtype, acc_dtype), x, acc_dtype)


def test_a_layout_array_that_is_contiguous_is_one_run():
    x = np.arange(24.0).reshape(2, 3, 4)
    reduce = reducer("add", "float64", "float64", "float64")
    assert reduce(x) == reduce(x[:, :, :]) == 276.0
    assert reduce(x[:, :, :3]) == x[:, :, :3].sum()


@pytest.mark.parametrize("op", ["maximum", "minimum", "add", "mul"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_nan_propagates(op, dtype):
    reduce = reducer(op, dtype, dtype, dtype)
    for position in [(0, 0, 0), (1, 2, 3), (3, 4, 6)]:
        x = np.ones((4, 5, 7), dtype)
        x[position] = np.nan
        view = x[::-1, :, ::2]
        assert np.isnan(reduce(x))
        assert np.isnan(reduce(view)) == np.isnan(view).any()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_infinities(dtype):
    add, maximum, minimum = (reducer(op, dtype, dtype, dtype) for op in ("add", "maximum", "minimum"))
    x = np.ones((3, 4, 5), dtype)
    x[1, 2, 3] = np.inf
    assert add(x) == np.inf and maximum(x) == np.inf and minimum(x) == 1
    x[2, 0, 0] = -np.inf
    assert np.isnan(add(x)) and minimum(x) == -np.inf
    assert maximum(np.full((2, 2, 2), -np.inf, dtype)) == -np.inf


def test_acc_dtype_changes_the_result():
    x = np.full((4, 8, 8), 100, np.int8)
    assert reducer("add", "int8", "int8", "int8")(x) == np.sum(x, dtype=np.int8)
    assert reducer("add", "int8", "int64", "int64")(x) == 25600
    assert reducer("add", "int8", "int64", "int16")(x) == np.int64(25600).astype(np.int16)


@numba.njit
def logaddexp(acc, value):
    return max(acc, value) + np.log1p(np.exp(-abs(acc - value))) if acc != value else acc + np.log(2.0)


@numba.njit
def add_in_float64(acc, value):
    return np.float64(acc) + value


@numba.njit
def reduce_logaddexp(x):
    return full_reduce_with(x, logaddexp, -np.inf, np.float64, np.float64)


@numba.njit
def reduce_add_float32(x):
    return full_reduce_with(x, add_in_float64, 0.0, np.float32, np.float32)


@numba.njit
def reduce_bit_or(x):
    return full_reduce_with(x, lambda a, b: a | b, 0, np.dtype("uint8"), np.int64)


@SETTINGS
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=2, max_side=7), elements=st.floats(-30, 30)))
def test_generic_combine(x):
    view = x[::-1].T
    np.testing.assert_allclose(reduce_logaddexp(view), np.logaddexp.reduce(view.ravel(), initial=-np.inf), rtol=1e-12)
    single = view.astype(np.float32)
    np.testing.assert_allclose(reduce_add_float32(single), single.sum(), rtol=1e-4, atol=1e-3)
    ints = (view * 8).astype(np.uint8)
    assert reduce_bit_or(ints) == np.bitwise_or.reduce(ints.ravel())


@pytest.mark.parametrize(
    "source,message",
    [
        ("full_reduce(x, 'min', 0.0, np.float64, np.float64)", "unknown op 'min'"),
        ("full_reduce(x, 'xor', 0.0, np.float64, np.float64)", "op 'xor' is not defined on acc_dtype float64"),
        ("full_reduce(x, 'maximum', 0.0, np.complex128, np.complex128)", "op 'maximum' is not defined"),
        ("full_reduce(x, 'add', 0.0, 3, np.float64)", "acc_dtype must be a numpy dtype"),
        ("full_reduce(x, op, 0.0, np.float64, np.float64)", "op must be a string literal"),
        ("full_reduce_with(x, np.add, 0.0, np.float64, np.float64)", "combine must be an @njit function"),
    ],
)
def test_typing_errors_name_the_problem(source, message):
    namespace = {"np": np, "full_reduce": full_reduce, "full_reduce_with": full_reduce_with}
    exec(f"def f(x, op):\n    return {source}", namespace)
    with pytest.raises(errors.TypingError, match=message):
        numba.njit(namespace["f"])(np.ones(3), "add")


def test_complex_add_and_mul():
    x = (np.arange(12) + 1j * np.arange(12)[::-1]).reshape(3, 4)[:, ::-1]
    assert reducer("add", "complex128", "complex128", "complex128", 2)(x) == x.sum()
    small = x[:2] / 8
    product = reducer("mul", "complex64", "complex128", "complex128", 2)(small.astype(np.complex64))
    np.testing.assert_allclose(product, np.prod(small.astype(np.complex64).astype(np.complex128)))


# ---------------------------------------------------------------- IR and allocations


@numba.njit
def sum_float64(x):
    return full_reduce(x, "add", 0.0, np.float64, np.float64)


def kernel_ir(dispatcher, x):
    """The optimized LLVM function of ``dispatcher`` for ``x``'s type: the kernel, not its wrapper."""
    dispatcher(x)
    sig = (numba.typeof(x),)
    module = llvm.parse_assembly(dispatcher.inspect_llvm(sig))
    return dispatcher.overloads[sig], module.get_function(dispatcher.overloads[sig].fndesc.mangled_name)


def callees(function):
    return {
        list(instruction.operands)[-1].name
        for block in function.blocks
        for instruction in block.instructions
        if instruction.opcode == "call"
    }


@pytest.mark.parametrize("x", [np.ones(10), np.ones((4, 6))[::2, ::-1]], ids=["C", "A"])
def test_kernel_allocates_nothing_and_returns_a_scalar(x):
    overload, function = kernel_ir(sum_float64, x)
    assert not any(name.startswith("NRT_MemInfo_alloc") for name in callees(function))
    assert "NRT" not in str(function)
    assert overload.fndesc.restype == types.float64
    stores_to_return = [line for line in str(function).splitlines() if "%retptr" in line and "store" in line]
    assert stores_to_return and all(line.strip().startswith("store double") for line in stores_to_return)


def test_kernel_vectorizes_the_contiguous_float_sum():
    _, function = kernel_ir(sum_float64, np.ones(10))
    assert "fadd reassoc contract <" in str(function)


def test_only_the_argument_is_allocated():
    x = np.ones((5, 7))
    sum_float64(x)
    was_enabled = _nrt_python.memsys_stats_enabled()
    _nrt_python.memsys_enable_stats()
    try:
        before = rtsys.get_allocation_stats()
        for _ in range(100):
            sum_float64(x)
        after = rtsys.get_allocation_stats()
    finally:
        if not was_enabled:
            _nrt_python.memsys_disable_stats()
    assert after.mi_alloc - before.mi_alloc == 100  # one MemInfo per call, unboxing x
    assert after.alloc - before.alloc == 100  # that MemInfo's own struct, nothing else
    assert after.mi_free - before.mi_free == 100


# ---------------------------------------------------------------- IR text on a fresh module


def fresh_function(name, return_type, arg_types):
    module = ir.Module(name)
    function = ir.Function(module, ir.FunctionType(return_type, arg_types), name)
    return module, function, ir.IRBuilder(function.append_basic_block("entry"))


def test_float_maximum_rule_is_llvm_maximum():
    module, function, builder = fresh_function("maximum", ir.DoubleType(), [ir.DoubleType()] * 2)
    builder.ret(_FLOAT_RULES["maximum"](builder, *function.args))
    assert str(function) == (
        'define double @"maximum"(double %".1", double %".2")\n'
        "{\n"
        "entry:\n"
        '  %"acc.next" = call double @"llvm.maximum.f64"(double %".1", double %".2")\n'
        '  ret double %"acc.next"\n'
        "}\n"
    )
    llvm.parse_assembly(str(module)).verify()


def test_emit_full_reduce_on_a_fresh_module():
    """A 1-d C float64 sum: the accumulator is one entry-block alloca, the loop one fadd per element."""
    context = cpu_target.target_context
    array_type = types.Array(types.float64, 1, "C")
    module, function, builder = fresh_function(
        "sum", ir.DoubleType(), [context.get_value_type(array_type), ir.DoubleType()]
    )
    add = _builtin_rule(types.literal("add"), types.float64)
    array, identity = function.args

    def combine(b, acc, value):
        return add(context, b, acc, value)

    builder.ret(_emit_full_reduce(context, builder, array_type, array, identity, types.float64, combine))
    entry, loop = str(function).split('  br label %"for.cond"\n', 1)
    assert '  %"reduce.acc" = alloca double\n' in entry
    assert (
        entry.rstrip().endswith('  %"x.data" = load double*, double** %".12"')
        and '  store double %".2", double* %"reduce.acc"\n' in entry
    )
    assert loop == (
        "for.cond:\n"
        '  %"loop.index" = phi  i64 [0, %"entry"], [%".19", %"for.body"]\n'
        '  %".15" = icmp slt i64 %"loop.index", %"x.size"\n'
        '  br i1 %".15", label %"for.body", label %"for.end"\n'
        "for.body:\n"
        '  %"acc" = load double, double* %"reduce.acc"\n'
        '  %"element.ptr" = getelementptr double, double* %"x.data", i64 %"loop.index"\n'
        '  %"element" = load double, double* %"element.ptr"\n'
        '  %"acc.next" = fadd reassoc contract double %"acc", %"element"\n'
        '  store double %"acc.next", double* %"reduce.acc"\n'
        '  %".19" = add nsw i64 %"loop.index", 1\n'
        '  br label %"for.cond"\n'
        "for.end:\n"
        '  %"lane0" = load double, double* %"reduce.acc"\n'
        '  ret double %"lane0"\n'
        "}\n"
    )
    llvm.parse_assembly(str(module)).verify()


def test_strided_runs_stay_scalar_and_verify():
    """The strided run carries llvm.loop vectorize.enable=false: gathers were slower than scalar lanes."""
    _, function = kernel_ir(sum_float64, np.ones((4, 6))[::2, ::-2])
    assert "gather" not in str(function)
    context = cpu_target.target_context
    array_type = types.Array(types.float64, 2, "A")
    module, function, builder = fresh_function(
        "sum", ir.DoubleType(), [context.get_value_type(array_type), ir.DoubleType()]
    )
    add = _builtin_rule(types.literal("add"), types.float64)

    def combine(b, acc, value):
        return add(context, b, acc, value)

    builder.ret(_emit_full_reduce(context, builder, array_type, *function.args, types.float64, combine))
    assert str(module).count('!{ !"llvm.loop.vectorize.enable", i1 0 }') == 1
    assert str(function).count("!llvm.loop") == 2
    llvm.parse_assembly(str(module)).verify()
