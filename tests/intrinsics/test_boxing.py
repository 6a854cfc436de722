import llvmlite.binding as llvm
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core.runtime import _nrt_python, rtsys

from llvmlite import ir
from numba.core import types
from numba.core.registry import cpu_target

from intrinsics.boxing import _emit_stack_array, cast_to, stack_array

DTYPES = ["bool", "int8", "int32", "int64", "uint8", "float32", "float64"]


@numba.njit
def _describe(array):
    return array.shape, array.strides, array.sum(), array.ravel()[0]


def _viewer(ndim):
    @numba.njit
    def view(value):
        return _describe(stack_array(value, ndim))

    return view


VIEWERS = {ndim: _viewer(ndim) for ndim in range(4)}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ndim", range(4))
def test_stack_array_is_a_size_one_view_of_the_value(dtype, ndim):
    value = np.array(3, dtype=dtype)[()]
    shape, strides, total, first = VIEWERS[ndim](value)
    expected = np.full((1,) * ndim, value, dtype=dtype)
    assert shape == expected.shape and strides == expected.strides
    assert first == value and total == expected.sum()


def test_stack_array_makes_no_heap_allocation():
    view = VIEWERS[2]
    view(1.5)
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(50):
        view(1.5)
    after = rtsys.get_allocation_stats()
    assert (after.alloc - before.alloc, after.mi_alloc - before.mi_alloc) == (0, 0)


def test_stack_slot_is_in_the_entry_block_and_the_ir_verifies():
    module = ir.Module("stack_array")
    function = ir.Function(module, ir.FunctionType(ir.VoidType(), [ir.DoubleType()]), "f")
    builder = ir.IRBuilder(function.append_basic_block("entry"))
    body = function.append_basic_block("body")
    builder.branch(body)
    builder.position_at_end(body)
    _emit_stack_array(cpu_target.target_context, builder, types.Array(types.float64, 2, "C"), function.args[0])
    builder.ret_void()
    entry, rest = str(module).split("body:", 1)
    assert "alloca double" in entry and "alloca" not in rest
    assert "store double" in rest
    assert "{i8*, i8*, i64, i64, double*, [2 x i64], [2 x i64]}" in rest
    llvm.parse_assembly(str(module)).verify()


@numba.njit
def _cast_all(value):
    return (
        cast_to(value, np.int8),
        cast_to(value, np.dtype("uint8")),
        cast_to(value, np.int32),
        cast_to(value, np.float32),
        cast_to(value, np.dtype("float64")),
        cast_to(value, np.bool_),
    )


@settings(max_examples=200, deadline=None)
@given(value=st.integers(-(2**40), 2**40))
def test_cast_to_wraps_and_converts_like_numpy(value):
    got = _cast_all(value)
    source = np.array(value, dtype="int64")
    expected = [source.astype(dtype)[()] for dtype in ("int8", "uint8", "int32", "float32", "float64", "bool")]
    assert list(got) == expected
    assert [type(g) for g in got] == [int, int, int, float, float, bool]
