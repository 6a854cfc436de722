"""The product of two matrices and the solution of a triangular system through BLAS, emitted where they are
called: PyTensor's ``Dot`` and ``SolveTriangular``.

Stock numba compiles each ``Dot`` node as an ``@njit`` function whose ``_gemm`` chooses BLAS's operands, transpose
flags and copies in nopython code, typed and lowered in every fresh process: most of the first call of a PyMC
model whose only large op is a ``pt.dot``. Here that choice is a few compares in the graph's module, and the product
is made by the BLAS routines stock's calls in the end: scipy's ``cython_blas`` ``?gemm``, or ``?gemv`` when one side
is a single row or column. A triangular system is solved by ``?trsm``, as stock's ``_solve_triangular`` solves
it, without the function stock compiles for each such node. The routines' addresses are given to LLVM under names
of ours when this module is imported (`BLAS_SYMBOLS`), so a graph function loaded from numba's disk cache in a new
process links against the BLAS of that process.

What it keeps true:

- each operand is read in place when BLAS can read it (a unit stride along one axis, a positive leading dimension
  along the other) and copied into a C-contiguous temporary otherwise (a reversed, broadcast or doubly strided
  view), which is released before the product returns;
- the result is a new C-contiguous array, as stock's ``np.empty``; an empty contraction fills it with zeros;
- a triangular solve is stock's: a copy of the right side solved in place, stock's ``LinAlgError``s, all-NaN for
  a zero pivot;
- mismatched sizes raise stock's ``ValueError``; a size beyond BLAS's 32-bit integers raises a ``ValueError``
  instead of being truncated, and an operand whose strides give BLAS a leading dimension beyond them is copied.

Layering: the symbols (`BLAS_SYMBOLS`, checked against scipy's signatures) -> typing (`_check_types`) -> the
``@intrinsic`` `matmul` and the factory `triangular_solver` -> the emitters ``_emit_*``.

    matmul(a, b)  # a @ b for matrices of one dtype, float32 or float64
    triangular_solver(lower, unit_diagonal)(a, b)  # x with a @ x == b, a triangular
"""

import ctypes
import re
from functools import cache, partial

import llvmlite.binding as llvm
import numpy as np
import scipy.linalg.cython_blas
from llvmlite import ir
from numba.core import cgutils, errors, types
from numba.core.imputils import impl_ret_new_ref
from numba.extending import intrinsic
from numba.np.arrayobj import _empty_nd_impl

from llvm_backend_intrinsics.naming import call_names, named
from llvm_backend_intrinsics.views import emit_array, emit_copy_into

__all__ = [
    "BLAS_SYMBOLS",
    "CONFORM_ERROR",
    "MISMATCH_ERROR",
    "SIZE_ERROR",
    "SQUARE_ERROR",
    "matmul",
    "triangular_solver",
]

MISMATCH_ERROR = "gemm: operands have mismatched contraction dimensions"
"""Stock's ``ValueError`` when the columns of the left matrix are not the rows of the right one."""
CONFORM_ERROR = "Dimensions of A and B do not conform"
"""Stock's ``LinAlgError`` when a triangular system's rows are not the right side's."""
SQUARE_ERROR = "Last 2 dimensions of A must be square"
"""Stock's ``LinAlgError`` when a triangular system is not square."""
SIZE_ERROR = "matmul: a size or stride does not fit BLAS's 32-bit integers"
"""The ``ValueError`` of an operand BLAS cannot be given (stock's truncates the integers)."""

_INTP = cgutils.intp_t
_INT32 = ir.IntType(32)
_CHAR = ir.IntType(8)
_INT32_MAX = 2**31 - 1
_NO_TRANSPOSE, _TRANSPOSE = ord("N"), ord("T")

_SIGNATURES = {
    "gemm": "void (char *, char *, int *, int *, int *, {t} *, {t} *, int *, {t} *, int *, {t} *, {t} *, int *)",
    "gemv": "void (char *, int *, int *, {t} *, {t} *, int *, {t} *, int *, {t} *, {t} *, int *)",
    "trsm": "void (char *, char *, char *, char *, int *, int *, {t} *, {t} *, int *, {t} *, int *)",
}
"""The C signatures of scipy's ``cython_blas`` routines the emitted code calls, ``{t}`` the element type."""
_PREFIXES = {types.float64: "d", types.float32: "s"}
_CYTHON_TYPEDEF = re.compile(r"__pyx_t_\w*?cython_blas_([ds])\b")


def _capsule(name: str) -> tuple[int, str]:
    """The address and the C signature (Cython's typedefs of ``double`` and ``float`` written ``d`` and ``s``) of
    scipy's ``cython_blas.<name>``, read through the capsule scipy exports it in (``__pyx_capi__``)."""
    capsule = scipy.linalg.cython_blas.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    signature = get_name(capsule)
    return get_pointer(capsule, signature), _CYTHON_TYPEDEF.sub(r"\1", signature.decode())


def _register_symbols() -> dict:
    """``{scipy's routine name: our symbol}`` for each routine called, each address added to LLVM's symbols.
    Raises ImportError if scipy's routine does not have the signature the emitted calls are built for."""
    symbols = {}
    for routine, template in _SIGNATURES.items():
        for t in _PREFIXES.values():
            name = f"{t}{routine}"
            address, signature = _capsule(name)
            expected = template.format(t=t)
            if signature != expected:
                raise ImportError(
                    f"scipy.linalg.cython_blas.{name} has the signature {signature!r}, not {expected!r}, which "
                    "llvm_backend_intrinsics.blas calls"
                )
            symbols[name] = f"llvm_backend_blas_{name}"
            llvm.add_symbol(symbols[name], address)
    return symbols


BLAS_SYMBOLS = _register_symbols()
"""``{scipy routine: the symbol the emitted code calls it by}``, registered with LLVM at import."""


# ---------------------------------------------------------------- typing


def _check_types(a, b):
    """The product's element type; a TypingError unless ``a`` and ``b`` are matrices of one dtype, float32 or
    float64."""
    for k, ty in enumerate((a, b)):
        if not (isinstance(ty, types.Array) and ty.ndim == 2 and ty.dtype in _PREFIXES):
            raise errors.TypingError(f"matmul: argument {k} must be a float32 or float64 matrix, got {ty}")
    if a.dtype != b.dtype:
        raise errors.TypingError(f"matmul: the matrices must have one dtype, got {a.dtype} and {b.dtype}")
    return a.dtype


# ---------------------------------------------------------------- emitters


def _routine(builder, dtype, routine: str) -> ir.Function:
    """The declaration of BLAS's ``routine`` (``gemm``, ``gemv``, ``trsm``) for ``dtype`` in the module being
    built, its parameters read from the signature in `_SIGNATURES` checked at import."""
    element = ir.DoubleType() if dtype == types.float64 else ir.FloatType()
    kinds = {"char": _CHAR, "int": _INT32, "{t}": element}
    parameters = [kinds[kind.strip()[:-2]].as_pointer() for kind in _SIGNATURES[routine][6:-1].split(",")]
    function_type = ir.FunctionType(ir.VoidType(), parameters)
    return cgutils.get_or_insert_function(builder.module, function_type, BLAS_SYMBOLS[_PREFIXES[dtype] + routine])


def _at_least_one(builder, size):
    return builder.select(builder.icmp_signed("<", size, size.type(1)), size.type(1), size)


def _emit_leading(builder, along, across, stride, item: int):
    """Whether BLAS reads a matrix whose unit-stride axis has ``along`` elements and whose other axis has
    ``across`` elements of stride ``stride`` bytes (a leading dimension that fits an int32), and that leading
    dimension (in elements)."""
    single = builder.icmp_signed("<=", across, across.type(1))
    fits = builder.and_(
        builder.icmp_signed("==", builder.srem(stride, stride.type(item)), stride.type(0)),
        builder.icmp_signed(">=", stride, builder.mul(_at_least_one(builder, along), along.type(item))),
    )
    leading = builder.select(single, _at_least_one(builder, along), builder.sdiv(stride, stride.type(item)))
    small = builder.icmp_signed("<=", leading, leading.type(_INT32_MAX))
    return builder.and_(builder.or_(single, fits), small), leading


def _emit_copy(context, builder, ty, array, shapes, strides, name: str):
    """A new C-contiguous copy of matrix ``array``."""
    copy_type = types.Array(ty.dtype, 2, "C")
    copy = _empty_nd_impl(context, builder, copy_type, shapes)
    named(copy._getpointer(), f"{name}.struct")
    emit_copy_into(context, builder, array.data, ty.layout, shapes, strides, copy)
    return copy_type, copy


class _Operand:
    """Matrix ``array`` (taken apart by `emit_array`) as BLAS reads it: ``data`` (its first element),
    ``row_major`` (an ``i1``: its rows have unit stride, so BLAS sees its transpose) and ``leading`` (BLAS's
    leading dimension, an ``intp``); a copy made for BLAS is released by `release`."""

    def __init__(self, context, builder, ty, array, shapes, strides, name: str):
        item = context.get_abi_sizeof(context.get_data_type(ty.dtype))
        rows, cols = shapes
        data_type = array.data.type
        self._data = named(cgutils.alloca_once(builder, data_type), f"{name}.blas.data.slot")
        self._row_major = named(cgutils.alloca_once(builder, ir.IntType(1)), f"{name}.blas.row_major.slot")
        self._leading = named(cgutils.alloca_once(builder, _INTP), f"{name}.blas.leading.slot")
        copy_type = types.Array(ty.dtype, 2, "C")
        self._copy_type = copy_type
        struct = context.get_value_type(copy_type)
        self._copy = named(cgutils.alloca_once_value(builder, cgutils.get_null_value(struct)), f"{name}.copy.slot")

        column_ok, column_leading = _emit_leading(builder, rows, cols, strides[1], item)
        column_ok = builder.and_(
            column_ok,
            builder.or_(
                builder.icmp_signed("<=", rows, rows.type(1)), builder.icmp_signed("==", strides[0], _INTP(item))
            ),
            name=f"{name}.column_major",
        )
        row_ok, row_leading = _emit_leading(builder, cols, rows, strides[0], item)
        row_ok = builder.and_(
            row_ok,
            builder.or_(
                builder.icmp_signed("<=", cols, cols.type(1)), builder.icmp_signed("==", strides[1], _INTP(item))
            ),
            name=f"{name}.row_major",
        )
        with builder.if_else(column_ok) as (column, other):
            with column:
                self._set(builder, array.data, False, column_leading)
            with other:
                with builder.if_else(row_ok) as (row, neither):
                    with row:
                        self._set(builder, array.data, True, row_leading)
                    with neither:
                        _, copy = _emit_copy(context, builder, ty, array, shapes, strides, f"{name}.copy")
                        builder.store(copy._getvalue(), self._copy)
                        self._set(builder, copy.data, True, _at_least_one(builder, cols))
        self.data = named(builder.load(self._data), f"{name}.blas.data")
        self.row_major = named(builder.load(self._row_major), f"{name}.blas.row_major")
        self.leading = named(builder.load(self._leading), f"{name}.blas.leading")

    def _set(self, builder, data, row_major: bool, leading) -> None:
        builder.store(data, self._data)
        builder.store(ir.IntType(1)(row_major), self._row_major)
        builder.store(leading, self._leading)

    def release(self, context, builder) -> None:
        """Release the copy made for BLAS, if one was (numba's decref of a null meminfo does nothing)."""
        context.nrt.decref(builder, self._copy_type, builder.load(self._copy))


def _emit_fits(context, builder, sizes) -> None:
    """The ``ValueError`` `SIZE_ERROR` if one of ``sizes`` exceeds an int32 (a leading dimension cannot: an
    operand whose strides give a larger one is copied)."""
    too_big = cgutils.false_bit
    for size in sizes:
        too_big = builder.or_(too_big, builder.icmp_signed(">", size, size.type(_INT32_MAX)))
    with cgutils.if_unlikely(builder, too_big):
        context.call_conv.return_user_exc(builder, ValueError, (SIZE_ERROR,))


def _emit_gemv(builder, dtype, slot, matrix: _Operand, normal_when_row_major: bool, rows, cols, x, incx, y, name):
    """``y = op(matrix) @ x`` by ``?gemv``. ``rows`` and ``cols`` are the matrix's sizes as stored column-major
    when it is not row-major; BLAS is told ``'N'`` when ``row_major == normal_when_row_major``."""
    normal = builder.icmp_unsigned("==", matrix.row_major, ir.IntType(1)(normal_when_row_major))
    transpose = builder.select(normal, _CHAR(_NO_TRANSPOSE), _CHAR(_TRANSPOSE))
    m = builder.select(matrix.row_major, cols, rows)
    n = builder.select(matrix.row_major, rows, cols)
    arguments = [
        slot(transpose, _CHAR, f"{name}.trans"),
        slot(m, _INT32, f"{name}.m"),
        slot(n, _INT32, f"{name}.n"),
        slot.one,
        matrix.data,
        slot(matrix.leading, _INT32, f"{name}.lda"),
        x,
        slot(incx, _INT32, f"{name}.incx"),
        slot.zero,
        y,
        slot(_INTP(1), _INT32, f"{name}.incy"),
    ]
    builder.call(_routine(builder, dtype, "gemv"), arguments)


class _Slots:
    """Stack slots holding the values BLAS takes by pointer, in the function's entry block."""

    def __init__(self, context, builder, dtype, name: str):
        self._builder = builder
        element = context.get_value_type(dtype)
        self.one = self._slot(ir.Constant(element, 1.0), element, f"{name}.alpha")
        self.zero = self._slot(ir.Constant(element, 0.0), element, f"{name}.beta")

    def _slot(self, value, ty, name: str):
        slot = named(cgutils.alloca_once(self._builder, ty), name)
        self._builder.store(value, slot)
        return slot

    def __call__(self, value, ty, name: str):
        """A slot holding ``value`` as ``ty`` (an integer truncated to it: sizes were checked to fit)."""
        if isinstance(value.type, ir.IntType) and value.type.width > ty.width:
            value = self._builder.trunc(value, ty)
        return self._slot(value, ty, name)


def _emit_product(context, builder, dtype, a: _Operand, b: _Operand, sizes, out_data, name: str) -> None:
    """``out = a @ b`` into the C-contiguous ``out_data`` of ``M x N`` elements: ``?gemv`` when ``N`` or ``M`` is
    1, else ``?gemm`` computing ``out^T = b^T a^T`` (``out`` row-major is ``out^T`` column-major)."""
    m, k, n = sizes
    slot = _Slots(context, builder, dtype, name)
    one = _INTP(1)
    item = context.get_abi_sizeof(context.get_data_type(dtype))
    # Some BLAS builds read y in ?gemv even when beta is zero.
    cgutils.memset(builder, out_data, builder.mul(builder.mul(m, n), _INTP(item)), 0)
    with builder.if_else(builder.icmp_signed("==", n, one)) as (column, other):
        with column:
            # a (M x K) times b's one column: b's k-th element is at k * leading if b is row-major.
            incx = builder.select(b.row_major, b.leading, one)
            _emit_gemv(builder, dtype, slot, a, False, m, k, b.data, incx, out_data, f"{name}.gemv")
        with other:
            with builder.if_else(builder.icmp_signed("==", m, one)) as (row, general):
                with row:
                    # b^T (N x K) times a's one row: a's k-th element is at k * leading if a is column-major.
                    incx = builder.select(a.row_major, one, a.leading)
                    _emit_gemv(builder, dtype, slot, b, True, k, n, a.data, incx, out_data, f"{name}.gemv")
                with general:
                    transpose_b = builder.select(b.row_major, _CHAR(_NO_TRANSPOSE), _CHAR(_TRANSPOSE))
                    transpose_a = builder.select(a.row_major, _CHAR(_NO_TRANSPOSE), _CHAR(_TRANSPOSE))
                    arguments = [
                        slot(transpose_b, _CHAR, f"{name}.transa"),
                        slot(transpose_a, _CHAR, f"{name}.transb"),
                        slot(n, _INT32, f"{name}.m"),
                        slot(m, _INT32, f"{name}.n"),
                        slot(k, _INT32, f"{name}.k"),
                        slot.one,
                        b.data,
                        slot(b.leading, _INT32, f"{name}.lda"),
                        a.data,
                        slot(a.leading, _INT32, f"{name}.ldb"),
                        slot.zero,
                        out_data,
                        slot(n, _INT32, f"{name}.ldc"),
                    ]
                    builder.call(_routine(builder, dtype, "gemm"), arguments)


# ---------------------------------------------------------------- intrinsics


@intrinsic
def matmul(typingctx, a, b):
    """``a @ b`` for matrices ``a`` (M x K) and ``b`` (K x N) of one dtype, float32 or float64: a new C-contiguous
    M x N array, made by BLAS (`llvm_backend_intrinsics.blas`)."""
    dtype = _check_types(a, b)
    out_type = types.Array(dtype, 2, "C")

    def codegen(context, builder, signature, args):
        names = call_names(2, 1)
        (a_name, b_name), out = names.arguments, names.outputs[0]
        a_array, a_shapes, a_strides = emit_array(context, builder, a, args[0], a_name)
        b_array, b_shapes, b_strides = emit_array(context, builder, b, args[1], b_name)
        (m, k), (b_rows, n) = a_shapes, b_shapes
        with cgutils.if_unlikely(builder, builder.icmp_signed("!=", b_rows, k, name=f"{out}.mismatched")):
            context.call_conv.return_user_exc(builder, ValueError, (MISMATCH_ERROR,))
        result = _empty_nd_impl(context, builder, out_type, [m, n])
        data = named(result.data, f"{out}.data")
        empty = builder.or_(
            builder.icmp_signed("==", m, m.type(0)), builder.icmp_signed("==", n, n.type(0)), name=f"{out}.empty"
        )
        with builder.if_then(builder.not_(empty)):
            with builder.if_else(builder.icmp_signed("==", k, k.type(0))) as (no_terms, terms):
                with no_terms:
                    item = context.get_abi_sizeof(context.get_data_type(dtype))
                    cgutils.memset(builder, data, builder.mul(builder.mul(m, n), _INTP(item)), 0)
                with terms:
                    _emit_fits(context, builder, (m, k, n))
                    left = _Operand(context, builder, a, a_array, a_shapes, a_strides, a_name)
                    right = _Operand(context, builder, b, b_array, b_shapes, b_strides, b_name)
                    _emit_product(context, builder, dtype, left, right, (m, k, n), data, out)
                    left.release(context, builder)
                    right.release(context, builder)
        return impl_ret_new_ref(context, builder, out_type, named(result._getvalue(), out))

    return out_type(a, b), codegen


# ---------------------------------------------------------------- triangular solves


def _check_solve_types(a, b):
    """The solution's element type; a TypingError unless ``a`` is a float32 or float64 matrix and ``b`` a vector
    or matrix of its dtype."""
    if not (isinstance(a, types.Array) and a.ndim == 2 and a.dtype in _PREFIXES):
        raise errors.TypingError(f"solve_triangular: the system must be a float32 or float64 matrix, got {a}")
    if not (isinstance(b, types.Array) and b.ndim in (1, 2) and b.dtype == a.dtype):
        raise errors.TypingError(f"solve_triangular: the right side must be a vector or matrix of {a.dtype}, got {b}")
    return a.dtype


def _emit_zero_on_diagonal(context, builder, ty, array, shapes, strides):
    """An ``i1``: whether square matrix ``array`` has a zero on its diagonal."""
    found = cgutils.alloca_once_value(builder, cgutils.false_bit)
    with cgutils.for_range(builder, shapes[0]) as loop:
        at = cgutils.get_item_pointer2(context, builder, array.data, shapes, strides, ty.layout, [loop.index] * 2)
        value = builder.load(at)
        with builder.if_then(builder.fcmp_ordered("==", value, value.type(0.0))):
            builder.store(cgutils.true_bit, found)
    return builder.load(found)


def _emit_trsm(context, builder, dtype, a: _Operand, triangle: tuple[bool, bool], sizes, out_data, name) -> None:
    """``out = a^-1 out`` by ``?trsm``, ``a`` triangular of ``n x n`` (``triangle``: lower, unit diagonal) and
    ``out`` C-contiguous of ``n x k``: ``out`` row-major is ``X^T`` column-major, solved from the right as
    ``X^T op(M) = B^T``, ``M`` being ``a`` as BLAS reads it (its transpose when ``a`` is row-major)."""
    lower, unit_diagonal = triangle
    n, k = sizes
    slot = _Slots(context, builder, dtype, name)
    as_stored, transposed = _CHAR(ord("L" if lower else "U")), _CHAR(ord("U" if lower else "L"))
    arguments = [
        slot(_CHAR(ord("R")), _CHAR, f"{name}.side"),
        slot(builder.select(a.row_major, transposed, as_stored), _CHAR, f"{name}.uplo"),
        slot(builder.select(a.row_major, _CHAR(_NO_TRANSPOSE), _CHAR(_TRANSPOSE)), _CHAR, f"{name}.transa"),
        slot(_CHAR(ord("U" if unit_diagonal else "N")), _CHAR, f"{name}.diag"),
        slot(k, _INT32, f"{name}.m"),
        slot(n, _INT32, f"{name}.n"),
        slot.one,
        a.data,
        slot(a.leading, _INT32, f"{name}.lda"),
        out_data,
        slot(k, _INT32, f"{name}.ldb"),
    ]
    builder.call(_routine(builder, dtype, "trsm"), arguments)


def _emit_solve(context, builder, signature, args, *, triangle: tuple[bool, bool]):
    """The body of `triangular_solver`'s intrinsic: stock's checks, then a copy of ``b`` solved in place."""
    (a, b), out_type = signature.args, signature.return_type
    names = call_names(2, 1)
    (a_name, b_name), out = names.arguments, names.outputs[0]
    a_array, a_shapes, a_strides = emit_array(context, builder, a, args[0], a_name)
    b_array, b_shapes, b_strides = emit_array(context, builder, b, args[1], b_name)
    n = a_shapes[0]
    for mismatched, message in ((b_shapes[0], CONFORM_ERROR), (a_shapes[1], SQUARE_ERROR)):
        with cgutils.if_unlikely(builder, builder.icmp_signed("!=", n, mismatched)):
            context.call_conv.return_user_exc(builder, np.linalg.LinAlgError, (message,))
    k = b_shapes[1] if b.ndim == 2 else _INTP(1)
    result = _empty_nd_impl(context, builder, out_type, b_shapes)
    data = named(result.data, f"{out}.data")
    count = builder.mul(n, k)
    with builder.if_then(builder.icmp_signed(">", count, count.type(0), name=f"{out}.nonempty")):
        singular = cgutils.false_bit
        if not triangle[1]:
            singular = _emit_zero_on_diagonal(context, builder, a, a_array, a_shapes, a_strides)
        with builder.if_else(singular) as (zero_pivot, regular):
            with zero_pivot:
                nan = context.get_constant(out_type.dtype, float("nan"))
                with cgutils.for_range(builder, count) as loop:
                    builder.store(nan, builder.gep(data, [loop.index]))
            with regular:
                _emit_fits(context, builder, (n, k))
                emit_copy_into(context, builder, b_array.data, b.layout, b_shapes, b_strides, result)
                system = _Operand(context, builder, a, a_array, a_shapes, a_strides, a_name)
                _emit_trsm(context, builder, out_type.dtype, system, triangle, (n, k), data, f"{out}.trsm")
                system.release(context, builder)
    return impl_ret_new_ref(context, builder, out_type, named(result._getvalue(), out))


@cache
def triangular_solver(lower: bool, unit_diagonal: bool):
    """The intrinsic ``solve_triangular(a, b)``: ``x`` with ``a @ x == b`` for ``a`` square and triangular (its
    ``lower`` or upper triangle read, its diagonal taken as ones if ``unit_diagonal``), ``b`` a vector or matrix
    of its dtype (float32 or float64), as a new C-contiguous array of ``b``'s shape made by BLAS's ``?trsm``.

    Stock's results and errors: a ``LinAlgError`` for shapes that do not conform or a system that is not square
    (checked in that order), all-NaN for a zero on a diagonal that is not taken as ones, an empty result for an
    empty ``b``. ``a`` and ``b`` are never written."""

    @intrinsic
    def solve_triangular(typingctx, a, b):
        out_type = types.Array(_check_solve_types(a, b), b.ndim, "C")
        return out_type(a, b), partial(_emit_solve, triangle=(lower, unit_diagonal))

    return solve_triangular
