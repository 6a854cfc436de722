import functools
import re
from types import SimpleNamespace

import hypothesis.extra.numpy as hnp
import llvmlite.binding as llvm
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.codegen import CPUCodeLibrary
from numba.core.compiler import Flags
from numba.core.errors import TypingError
from numba.core.lowering import Environment
from numba.core.registry import cpu_target
from numba.core.targetconfig import ConfigStack

from llvm_backend_intrinsics.join import _alloca_table, _emit_join, _store_entry, filled_join, linear_join


@functools.cache
def joiner(dtype):
    """One njit wrapper per output dtype; numba caches one compile per argument-type combination."""

    @numba.njit(cache=False)
    def join(axis, *arrays):
        return linear_join(axis, arrays, dtype)

    return join


def expected(axis, arrays, dtype):
    return np.concatenate([np.atleast_1d(a) for a in arrays], axis=axis).astype(dtype)


def check(axis, arrays, dtype=np.float64):
    out = joiner(dtype)(axis, *arrays)
    want = expected(axis, arrays, dtype)
    assert out.dtype == want.dtype
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, want)


def ragged(ndim, axis, lengths, dtype=np.float64):
    """Inputs of a fixed (2, 3, 4)[:ndim] shape except ``lengths`` along ``axis``."""
    base = [2, 3, 4][:ndim]
    arrays = []
    for k, length in enumerate(lengths):
        shape = list(base)
        shape[axis] = length
        arrays.append((np.arange(np.prod(shape)) + 100 * k).reshape(shape).astype(dtype))
    return arrays


@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_every_axis_positive_and_negative(ndim):
    for axis in range(-ndim, ndim):
        check(axis, ragged(ndim, axis, [1, 3, 2]))


@pytest.mark.parametrize(
    "layout",
    [
        np.asfortranarray,
        lambda a: a[..., ::2],
        lambda a: a[::-1],
        lambda a: a[..., ::-1],
        lambda a: a.T.copy().T,
        lambda a: np.repeat(a, 2, axis=0)[::2],
    ],
    ids=["F", "step", "reversed-outer", "reversed-inner", "transposed", "strided-outer"],
)
@pytest.mark.parametrize("ndim", [2, 3])
def test_any_layout(layout, ndim):
    for axis in (0, -1):
        base = ragged(ndim, axis, [2, 3, 1])
        # One strided input between contiguous ones: each input is walked through its own strides.
        arrays = [base[0], layout(np.concatenate([base[1], base[1]], axis=-1)), base[2]]
        if arrays[1].shape != base[1].shape:
            arrays[1] = layout(base[1])
        check(axis, arrays)


def test_zero_length_inputs():
    check(0, [np.zeros(0), np.arange(3.0), np.zeros(0)])
    check(0, [np.zeros(0), np.zeros(0)])
    check(1, [np.zeros((2, 0)), np.ones((2, 3)), np.zeros((2, 0))])
    check(1, [np.zeros((0, 2)), np.zeros((0, 3))])
    check(-1, [np.zeros((2, 0, 3)), np.zeros((2, 0, 1))])


@pytest.mark.parametrize(
    "dtypes, out_dtype",
    [
        ((np.int32, np.float64), np.float64),
        ((np.bool_, np.int64), np.int64),
        ((np.float32, np.float64), np.float64),
        ((np.float64, np.int32, np.float64, np.bool_), np.float64),
        ((np.float64, np.float64), np.float32),
    ],
)
def test_mixed_dtypes(dtypes, out_dtype):
    for axis in (0, 1):
        arrays = [a.astype(dt) % 3 for a, dt in zip(ragged(2, axis, range(1, 1 + len(dtypes))), dtypes)]
        check(axis, arrays, out_dtype)


def test_dtype_given_as_np_dtype_object():
    check(0, [np.arange(3, dtype=np.int32), np.arange(2.0)], np.dtype("float32"))
    check(-1, [np.ones((2, 2), bool), np.zeros((2, 1), bool)], np.dtype("bool"))


def test_scalar_entries_join_as_length_1_vectors():
    check(0, [np.float64(1.5), np.arange(3.0), 7, True, np.float32(2.5)])
    check(-1, [np.int64(4)])
    check(0, [np.arange(2, dtype=np.int32), np.int64(9)], np.int64)


@pytest.mark.parametrize("n_inputs", [1, 35, 100])
def test_input_counts(n_inputs):
    vectors = [np.arange(k % 4, dtype=np.float64) + k for k in range(n_inputs)]
    check(0, vectors)
    check(-1, vectors)
    matrices = [np.full((2, 1 + k % 3), k, np.float64) for k in range(n_inputs)]
    check(1, matrices)


_dtypes = st.sampled_from([np.float64, np.int32, np.bool_])


@st.composite
def join_cases(draw):
    ndim = draw(st.integers(1, 3))
    axis = draw(st.integers(-ndim, ndim - 1))
    n_inputs = draw(st.integers(1, 3))
    base = draw(hnp.array_shapes(min_dims=ndim, max_dims=ndim, min_side=0, max_side=4))
    arrays = []
    for _ in range(n_inputs):
        shape = list(base)
        shape[axis] = draw(st.integers(0, 4))
        # Draw a bigger array and slice it, so inputs come in C, F and strided layouts.
        layout = draw(st.sampled_from(["C", "F", "reversed", "step"]))
        big = [2 * s if layout == "step" else s for s in shape]
        values = draw(hnp.arrays(draw(_dtypes), big, elements={"min_value": 0, "max_value": 1}))
        views = {
            "C": values,
            "F": np.asfortranarray(values),
            "reversed": values[::-1],
            "step": values[tuple(slice(None, None, 2) for _ in shape)],
        }
        arrays.append(views[layout])
    return axis, arrays, draw(st.sampled_from([np.float64, np.int64]))


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(join_cases())
def test_matches_numpy_concatenate(case):
    check(*case)


def test_mismatched_size_names_input_dimension_and_axis():
    arrays = [np.zeros((2, 3)), np.zeros((2, 1)), np.zeros((3, 2))]
    message = "Join: input 2 has size 3 along dimension 0, but input 0 has size 2 (join axis 1)"
    with pytest.raises(ValueError, match=re.escape(message)) as info:
        joiner(np.float64)(-1, *arrays)
    assert type(info.value) is ValueError and info.value.args == (message,)
    message = "Join: input 1 has size 4 along dimension 2, but input 0 has size 2 (join axis 0)"
    with pytest.raises(ValueError, match=re.escape(message)):
        joiner(np.float64)(0, np.zeros((1, 2, 2)), np.zeros((1, 2, 4)))


@pytest.mark.parametrize(
    "axis, shapes, bad",
    [
        (1, [(2, 3, 4), (5, 1, 6)], "size 5 along dimension 0, but input 0 has size 2 (join axis 1)"),
        (
            -2,
            [(2, 3, 4), (2, 1, 4), (2, 5, 6)],
            "input 2 has size 6 along dimension 2, but input 0 has size 4 (join axis 1)",
        ),
        (0, [(1, 2, 3), (4, 5, 6)], "size 5 along dimension 1, but input 0 has size 2 (join axis 0)"),
    ],
    ids=["dims 0 and 2 off axis 1", "dim 2 of the third input", "dims 1 and 2 off axis 0"],
)
def test_a_mismatch_names_the_lowest_bad_dimension_off_the_axis(axis, shapes, bad):
    with pytest.raises(ValueError, match=re.escape(bad)) as info:
        joiner(np.float64)(axis, *(np.zeros(shape) for shape in shapes))
    assert type(info.value) is ValueError


@numba.njit(cache=False)
def concatenate_pair(axis, a, b):
    return np.concatenate((a, b), axis)


@pytest.mark.parametrize("axis", [2, -3, 100])
def test_bad_axis_raises_what_numba_concatenate_raises(axis):
    arrays = (np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(Exception) as numba_error:
        concatenate_pair(axis, *arrays)
    with pytest.raises(numba_error.type, match=f"axis {axis} is out of bounds"):
        joiner(np.float64)(axis, *arrays)


def test_mismatched_ndim_is_a_typing_error():
    with pytest.raises(TypingError, match="input 1 has 2 dimensions, but input 0 has 1"):
        joiner(np.float64)(0, np.zeros(2), np.zeros((2, 2)))
    with pytest.raises(TypingError, match="scalars or 0-d arrays; those join only as 1-d"):
        joiner(np.float64)(0, np.zeros((2, 2)), 1.0)
    with pytest.raises(TypingError, match="scalars or 0-d arrays; those join only as 1-d"):
        joiner(np.float64)(0, np.zeros((2, 2)), np.zeros(()))


def test_zero_d_arrays_join_as_length_one_entries():
    got = joiner(np.float64)(0, np.array(1.5), np.arange(3.0)[::-1], np.array(7, dtype=np.int32), 4.0)
    np.testing.assert_array_equal(got, [1.5, 2.0, 1.0, 0.0, 7.0, 4.0])
    np.testing.assert_array_equal(joiner(np.int64)(0, np.array(3), np.array(-1)), [3, -1])


# ---------------------------------------------------------------- IR


_ARRAY_1D = types.Array(types.float64, 1, "C")
_STRUCT_1D = "{i8*, i8*, i64, i64, double*, [1 x i64], [1 x i64]}"


def test_store_entry_emits_ten_instructions_per_array():
    context = cpu_target.target_context
    module = ir.Module("store_entry")
    fnty = ir.FunctionType(ir.VoidType(), [context.get_value_type(_ARRAY_1D)])
    fn = ir.Function(module, fnty, "store_entry")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    table = _alloca_table(builder, 1, 1)
    _store_entry(context, builder, table, 0, _ARRAY_1D, fn.args[0])
    builder.ret_void()
    per_input = str(fn).split('store i64 0, i64* %"join.offsets"\n')[1]
    assert per_input == (
        f'  %"entry.data" = extractvalue {_STRUCT_1D} %".1", 4\n'
        f'  %"entry.shape" = extractvalue {_STRUCT_1D} %".1", 5\n'
        f'  %"entry.strides" = extractvalue {_STRUCT_1D} %".1", 6\n'
        '  %"entry.bytes" = bitcast double* %"entry.data" to i8*\n'
        '  %"entry.data.slot" = getelementptr i8*, i8** %"join.data", i64 0\n'
        '  store i8* %"entry.bytes", i8** %"entry.data.slot"\n'
        '  %"entry.shape.slot" = getelementptr [1 x i64], [1 x i64]* %"join.shapes", i64 0\n'
        '  store [1 x i64] %"entry.shape", [1 x i64]* %"entry.shape.slot"\n'
        '  %"entry.strides.slot" = getelementptr [1 x i64], [1 x i64]* %"join.strides", i64 0\n'
        '  store [1 x i64] %"entry.strides", [1 x i64]* %"entry.strides.slot"\n'
        "  ret void\n"
        "}\n"
    )
    llvm.parse_assembly(str(module)).verify()


def emit_join_module(in_types):
    """A fresh module with one numba-convention function whose body is ``_emit_join``."""
    # What numba's lowering sets up: NRT for the output, an environment name for the exceptions.
    context = cpu_target.target_context.subtarget(
        enable_nrt=True, fndesc=SimpleNamespace(env_name="emit_join.env"), environment=Environment({})
    )
    context.refresh()  # load the lowering registries, as a compile would
    arg_types = [types.intp, types.Tuple(in_types)]
    out_type = types.Array(types.float64, 1, "C")
    module = ir.Module("emit_join")
    fn = ir.Function(module, context.call_conv.get_function_type(out_type, arg_types), "join")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    axis, arrays = context.get_arg_packer(arg_types).from_arguments(builder, context.call_conv.get_arguments(fn))
    values = cgutils.unpack_tuple(builder, arrays, len(in_types))

    def fill_table(table):
        for k, (entry_type, value) in enumerate(zip(in_types, values)):
            _store_entry(context, builder, table, k, entry_type, value)

    # The allocator helper is compiled on demand, with the flags and into the library of the
    # compile in progress.
    flags = Flags()
    flags.nrt = True
    library = context.codegen().create_library("emit_join")
    with ConfigStack().enter(flags), context.push_code_library(library):
        out = _emit_join(context, builder, axis, in_types, fill_table, out_type)
    context.call_conv.return_value(builder, out)
    return module


def test_emit_join_ir_is_one_table_and_shared_loops():
    int_vector = types.Array(types.int32, 1, "A")
    module = emit_join_module([_ARRAY_1D, int_vector, _ARRAY_1D])
    llvm.parse_assembly(str(module)).verify()
    text = str(module.get_global("join"))
    entry = text.split("\n\n")[0]
    for table in (
        '%"join.data" = alloca i8*, i64 3',
        '%"join.shapes" = alloca [1 x i64], i64 3',
        '%"join.strides" = alloca [1 x i64], i64 3',
        '%"join.offsets" = alloca i64, i64 3',
    ):
        assert table in entry
    # Two dtype groups: a member table of the float64 inputs and one of the int32 input.
    assert "store [2 x i64] [i64 0, i64 2]" in text
    assert "store [1 x i64] [i64 1]" in text
    assert "sitofp i32" in text
    # One validation loop + per dtype group (member loop, contiguous run, strided run).
    assert len(re.findall(r"^for\.cond[.\d]*:$", text, re.MULTILINE)) == 1 + 2 * 3
    # Each input stores its shape once, at its constant table index.
    assert re.findall(r'join\.shapes", (i64 \d+)$', text, re.MULTILINE) == ["i64 0", "i64 1", "i64 2"]


class _UnoptimizedIR:
    """Collects the unoptimized IR numba hands to its code libraries."""

    def __enter__(self):
        self.modules = []
        self._original = CPUCodeLibrary.add_ir_module

        def add_ir_module(library, module):
            self.modules.append(str(module))
            return self._original(library, module)

        CPUCodeLibrary.add_ir_module = add_ir_module
        return self

    def __exit__(self, *exc):
        CPUCodeLibrary.add_ir_module = self._original


def kernel_functions(ir_text, name):
    """The njit function ``name`` itself, not its CPython or cfunc wrappers."""
    module = llvm.parse_assembly(ir_text)
    return [
        fn
        for fn in module.functions
        if not fn.is_declaration and name in fn.name and "cpython" not in fn.name and not fn.name.startswith("cfunc.")
    ]


def instruction_count(fn):
    return sum(len(list(block.instructions)) for block in fn.blocks)


def loop_headers(fn):
    """Targets of the back edges found by a depth-first walk of the control-flow graph."""
    blocks = {block.name: block for block in fn.blocks}
    assert "" not in blocks, "unnamed blocks: cannot follow edges"

    def successors(name):
        terminator = list(blocks[name].instructions)[-1]
        return [op.name for op in terminator.operands if op.value_kind == llvm.ValueKind.basic_block]

    entry = next(iter(blocks))
    headers, visited, on_path = set(), {entry}, {entry}
    stack = [(entry, iter(successors(entry)))]
    while stack:
        name, pending = stack[-1]
        target = next(pending, None)
        if target is None:
            on_path.discard(name)
            stack.pop()
        elif target in on_path:
            headers.add(target)
        elif target not in visited:
            visited.add(target)
            on_path.add(target)
            stack.append((target, iter(successors(target))))
    return headers


def compile_wide_join(n_inputs):
    @numba.njit(cache=False)
    def wide_join_kernel(*arrays):
        return linear_join(0, arrays, np.float64)

    vectors = [np.arange(3.0)] * n_inputs
    with _UnoptimizedIR() as unoptimized:
        np.testing.assert_array_equal(wide_join_kernel(*vectors), np.concatenate(vectors))
    [signature] = wide_join_kernel.signatures
    [kernel] = [fn for text in unoptimized.modules for fn in kernel_functions(text, "wide_join_kernel")]
    [optimized] = kernel_functions(wide_join_kernel.inspect_llvm(signature), "wide_join_kernel")
    return instruction_count(kernel), loop_headers(optimized)


def test_ir_and_loops_grow_linearly_with_input_count():
    size_32, loops_32 = compile_wide_join(32)
    size_64, loops_64 = compile_wide_join(64)
    assert size_64 / size_32 < 2.2
    # The validation loop and one copy loop nest, which LLVM vectorizes and unrolls into a few
    # more (vector body, epilogue, remainder): a bound independent of the input count.
    assert 2 <= len(loops_32) <= 12
    assert 2 <= len(loops_64) <= 12


def compile_element_join(entries):
    """A kernel joining ``entries`` (scalars and 0-d arrays) into float64: its result, its unoptimized and its
    optimized function."""

    @numba.njit(cache=False)
    def element_join_kernel(*entries):
        return linear_join(0, entries, np.float64)

    with _UnoptimizedIR() as unoptimized:
        got = element_join_kernel(*entries)
    [signature] = element_join_kernel.signatures
    [kernel] = [fn for text in unoptimized.modules for fn in kernel_functions(text, "element_join_kernel")]
    [optimized] = kernel_functions(element_join_kernel.inspect_llvm(signature), "element_join_kernel")
    return got, kernel, optimized


def test_a_join_of_elements_stores_each_one_without_tables_or_loops():
    view = np.arange(4.0)[::-1][1:2].reshape(())
    entries = [np.float64(1.5), 7, True, np.float32(2.5), np.array(3, dtype=np.int8), view, np.array(False)]
    got, kernel, optimized = compile_element_join(entries)
    np.testing.assert_array_equal(got, [1.5, 7.0, 1.0, 2.5, 3.0, 2.0, 0.0])
    assert got.dtype == np.float64 and got.flags.c_contiguous
    assert "join.data" not in str(kernel)
    assert loop_headers(optimized) == set()


def test_a_join_of_elements_grows_linearly_with_their_count():
    _, kernel_32, _ = compile_element_join([float(k) for k in range(32)])
    got, kernel_64, _ = compile_element_join([float(k) for k in range(64)])
    np.testing.assert_array_equal(got, np.arange(64.0))
    assert instruction_count(kernel_64) / instruction_count(kernel_32) < 2.2


@pytest.mark.parametrize("axis", [1, -2])
def test_a_join_of_elements_checks_its_axis(axis):
    with pytest.raises(np.exceptions.AxisError, match=f"axis {axis} is out of bounds"):
        joiner(np.float64)(axis, 1.0, np.array(2.0))
    np.testing.assert_array_equal(joiner(np.float64)(-1, 1.0, np.array(2.0)), [1.0, 2.0])


@st.composite
def vector_join_cases(draw):
    """A 1-d join of scalars, 0-d arrays and vectors (C, reversed or strided, possibly empty), mixed."""
    entries = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["scalar", "0-d", "vector"]))
        dtype = draw(_dtypes)
        if kind == "scalar":
            entries.append(dtype(draw(st.integers(0, 9))))
        elif kind == "0-d":
            entries.append(np.array(draw(st.integers(0, 9)), dtype=dtype))
        else:
            values = draw(hnp.arrays(dtype, 2 * draw(st.integers(0, 4)), elements={"min_value": 0, "max_value": 9}))
            entries.append(draw(st.sampled_from([values, values[::-1], values[::2]])))
    return draw(st.sampled_from([0, -1])), entries, draw(st.sampled_from([np.float64, np.int64]))


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(vector_join_cases())
def test_a_join_of_scalars_and_vectors_matches_numpy_concatenate(case):
    check(*case)


def _scalars_and_vectors(n_scalars):
    return [*(float(k) for k in range(n_scalars)), np.arange(3.0)[::-1], 7, np.arange(2, dtype=np.int32), True]


def test_a_join_of_scalars_and_vectors_tables_only_its_vectors():
    got, kernel_40, optimized_40 = compile_element_join(_scalars_and_vectors(40))
    np.testing.assert_array_equal(got, [*range(40), 2.0, 1.0, 0.0, 7.0, 0.0, 1.0, 1.0])
    assert re.search(r"%join\.data = alloca ptr, i64 2,", str(kernel_40)), "a table of the two vectors only"
    _, kernel_80, optimized_80 = compile_element_join(_scalars_and_vectors(80))
    # The copy loops are the vectors' (one nest per dtype), however many scalars there are.
    assert len(loop_headers(optimized_80)) == len(loop_headers(optimized_40)) > 0
    assert instruction_count(kernel_80) / instruction_count(kernel_40) < 2.2


def _filled(entries, filled, before, after, dtype=np.float64):
    """Run ``filled_join`` on ``entries`` after putting entry ``filled`` into a vector made as a loop makes it."""
    join = filled_join(filled, before, after, np.dtype(dtype))
    n = len(entries[filled])
    output = np.full(before + n + after, -1, dtype)
    output[before : before + n] = entries[filled]
    entries = [*entries[:filled], output, *entries[filled + 1 :]]

    @numba.njit
    def run(*entries):
        return join(*entries)

    return run(*entries), output


@pytest.mark.parametrize("filled", [0, 1, 3])
def test_a_filled_join_writes_the_other_entries_around_the_filled_one(filled):
    entries = [np.float32(1.5), np.arange(6.0)[::-2], np.array(7), np.arange(4, dtype=np.int32)[:2]]
    entries.insert(filled, np.array([10.0, 11.0, 12.0]))
    lengths = [np.size(e) for e in entries]
    out, output = _filled(entries, filled, sum(lengths[:filled]), sum(lengths[filled + 1 :]))
    assert out is output
    np.testing.assert_array_equal(out, np.concatenate([np.atleast_1d(e).astype(np.float64) for e in entries]))


def test_a_filled_join_of_an_empty_entry():
    out, _ = _filled([np.int64(3), np.empty(0), np.float64(4.5)], 1, 1, 1)
    np.testing.assert_array_equal(out, [3.0, 4.5])


@pytest.mark.parametrize(("before", "after"), [(2, 1), (0, 1), (1, 2), (1, 0)])
def test_entries_that_do_not_fit_around_the_filled_one_raise_before_any_write(before, after):
    entries = [np.float64(1.0), np.arange(3.0), np.float64(2.0)]
    join = filled_join(1, before, after, np.dtype(np.float64))
    output = np.arange(before + 3 + after, dtype=np.float64)

    @numba.njit
    def run(a, b, c):
        return join(a, b, c)

    with pytest.raises(ValueError, match="entries around input 1"):
        run(entries[0], output, entries[2])
    np.testing.assert_array_equal(output, np.arange(before + 3 + after, dtype=np.float64))


def test_the_filled_entry_must_be_the_output():
    join = filled_join(0, 0, 1, np.dtype(np.float64))

    @numba.njit
    def run(a, b):
        return join(a, b)

    with pytest.raises(TypingError, match="entry 0 must be the output"):
        run(np.arange(3, dtype=np.int64), 1.0)
