"""`llvm_backend_intrinsics.abi`: its probes hold here, each offset is where ctypes' layout of the C struct and the
types'
``__basicsize__`` put the field, and numba's calling convention is the one the helpers emit."""

import ctypes
import dis
from types import SimpleNamespace

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir
from numba.core import types
from numba.core.callconv import excinfo_t
from numba.core.datamodel import default_manager
from numba.core.lowering import Environment
from numba.core.registry import cpu_target

from llvm_backend_intrinsics import abi

EXCINFO = "{i8*, i32, i8*, i8*, i32}*"
"""The LLVM type of numba's exception info pointer, as IR text."""


class PyObject(ctypes.Structure):
    _fields_ = [("ob_refcnt", ctypes.c_ssize_t), ("ob_type", ctypes.c_void_p)]


class PyVarObject(ctypes.Structure):
    _fields_ = [*PyObject._fields_, ("ob_size", ctypes.c_ssize_t)]


class PyListObject(ctypes.Structure):
    _fields_ = [*PyVarObject._fields_, ("ob_item", ctypes.POINTER(ctypes.c_void_p)), ("allocated", ctypes.c_ssize_t)]


class PyArrayObjectFields(ctypes.Structure):
    """numpy's public ``PyArrayObject_fields`` (``ndarraytypes.h``)."""

    _fields_ = [
        *PyObject._fields_,
        ("data", ctypes.c_void_p),
        ("nd", ctypes.c_int),
        ("dimensions", ctypes.POINTER(ctypes.c_ssize_t)),
        ("strides", ctypes.POINTER(ctypes.c_ssize_t)),
        ("base", ctypes.c_void_p),
        ("descr", ctypes.c_void_p),
        ("flags", ctypes.c_int),
        ("weakreflist", ctypes.c_void_p),
    ]


def test_the_probes_hold_on_this_interpreter():
    assert abi.ARRAYS_READ
    assert abi.LISTS_READ


def test_object_and_list_offsets_are_the_c_structs():
    assert ctypes.sizeof(ctypes.c_void_p) == 8
    assert PyObject.ob_type.offset == abi.OB_TYPE_OFFSET
    assert PyVarObject.ob_size.offset == abi.OB_SIZE_OFFSET
    assert PyListObject.ob_item.offset == abi.LIST_ITEMS_OFFSET
    assert ctypes.sizeof(PyObject) == object.__basicsize__
    assert ctypes.sizeof(PyVarObject) == tuple.__basicsize__
    assert ctypes.sizeof(PyListObject) == list.__basicsize__


def test_the_object_and_list_structs_read_live_objects():
    first, second = object(), object()
    lst = [first, second, 3]
    view = PyListObject.from_address(id(lst))
    assert view.ob_type == id(list)
    assert view.ob_size == len(lst)
    assert view.ob_item[0] == id(first)
    assert view.ob_item[1] == id(second)
    assert PyVarObject.from_address(id((1, 2, 3, 4))).ob_size == 4


def test_array_offsets_are_numpys_struct():
    assert PyArrayObjectFields.data.offset == abi.ARRAY_DATA_OFFSET
    assert PyArrayObjectFields.nd.offset == abi.ARRAY_ND_OFFSET
    assert PyArrayObjectFields.descr.offset == abi.ARRAY_DESCR_OFFSET
    assert np.ndarray.__basicsize__ >= ctypes.sizeof(PyArrayObjectFields)


@pytest.mark.parametrize(
    "array",
    [
        np.empty((2, 3, 4), dtype=np.int16)[:, ::2],
        np.asarray(1.5),
        np.asfortranarray(np.ones((3, 2), dtype=">f8")),
        np.arange(5)[::-1],
    ],
    ids=["strided", "0-d", "fortran-big-endian", "reversed"],
)
def test_numpys_struct_reads_live_arrays(array):
    view = PyArrayObjectFields.from_address(id(array))
    assert view.ob_type == id(np.ndarray)
    assert view.data == array.__array_interface__["data"][0]
    assert view.nd == array.ndim
    assert view.dimensions[: array.ndim] == list(array.shape)
    assert view.strides[: array.ndim] == list(array.strides)
    assert view.descr == id(array.dtype)
    assert view.base == (None if array.base is None else id(array.base))


def test_py_eq_is_cpythons_equality():
    assert dis.cmp_op[abi.PY_EQ] == "=="
    compare = ctypes.pythonapi.PyObject_RichCompareBool
    compare.argtypes = [ctypes.py_object, ctypes.py_object, ctypes.c_int]
    assert compare(1, 1.0, abi.PY_EQ) == 1
    assert compare(1, 2, abi.PY_EQ) == 0


@pytest.mark.parametrize(
    "array_type",
    [
        types.Array(types.float64, 1, "C"),
        types.Array(types.int8, 3, "A"),
        types.Array(types.complex128, 0, "C"),
        types.Array(types.float32, 2, "F", readonly=True),
    ],
)
def test_meminfo_is_the_field_of_numbas_array_struct(array_type):
    assert default_manager.lookup(array_type).get_field_position("meminfo") == abi.ARRAY_MEMINFO_FIELD


def test_function_type_is_status_return_slot_excinfo_then_flattened_arguments():
    context = cpu_target.target_context
    vector = types.Array(types.float64, 1, "C")
    fnty = abi.function_type(context, types.float64, (vector, types.int64))
    flat = context.get_arg_packer((vector, types.int64)).argument_types
    assert fnty == context.call_conv.get_function_type(types.float64, (vector, types.int64))
    assert fnty.return_type == ir.IntType(32)
    assert list(fnty.args) == [
        abi.return_slot_type(context, types.float64).as_pointer(),
        ir.PointerType(ir.PointerType(excinfo_t)),
        *flat,
    ]
    assert abi.return_slot_type(context, types.float64) == ir.DoubleType()


def _emit_call(marked: bool) -> str:
    """A fresh module: ``caller`` calls ``callee(double) -> double`` (both of numba's convention) with
    `abi.call_numba`, and returns its value."""
    context = cpu_target.target_context.subtarget(
        fndesc=SimpleNamespace(env_name="abi.env"), environment=Environment({})
    )
    fndesc = SimpleNamespace(restype=types.float64, argtypes=(types.float64,))
    module = ir.Module("abi")
    fnty = abi.function_type(context, fndesc.restype, fndesc.argtypes)
    callee = ir.Function(module, fnty, "callee")
    caller = ir.Function(module, fnty, "caller")
    builder = ir.IRBuilder(caller.append_basic_block("entry"))
    [argument] = context.get_arg_packer(fndesc.argtypes).from_arguments(
        builder, context.call_conv.get_arguments(caller)
    )
    returned, excinfo = abi.return_slot(context, builder, fndesc.restype), abi.excinfo_slot(builder)
    _, value = abi.call_numba(context, builder, callee, fndesc, [argument], returned, excinfo, marked=marked)
    context.call_conv.return_value(builder, value)
    llvm.parse_assembly(str(module)).verify()
    return str(module)


@pytest.mark.parametrize("marked", [True, False])
def test_a_call_returns_its_callees_status_code_on_an_error(marked):
    lines = [line.strip() for line in _emit_call(marked).splitlines()]
    [call] = [line for line in lines if "call i32" in line]
    code = call.split(" = ")[0]
    assert call == f'{code} = call i32 @"callee"(double* %"returned", {EXCINFO}* %"excinfo", double %".3")'
    [propagated] = [line for line in lines if line.startswith(f"store {EXCINFO} %") and f'{EXCINFO}* %".2"' in line]
    assert propagated.endswith(f", !{abi.RAISE_MARK} !1") == marked
    assert sum(abi.RAISE_MARK in line for line in lines) == marked
    assert f"ret i32 {code}" in lines


def test_numba_marks_its_own_raise_with_raise_mark():
    context = cpu_target.target_context.subtarget(
        fndesc=SimpleNamespace(env_name="abi.env"), environment=Environment({})
    )
    module = ir.Module("abi")
    fn = ir.Function(module, abi.function_type(context, types.none, ()), "raises")
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    context.call_conv.return_user_exc(builder, ValueError, ("x",))
    assert f"!{abi.RAISE_MARK}" in str(module)
