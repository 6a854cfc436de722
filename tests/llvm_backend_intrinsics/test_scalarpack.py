import sys

import numba
import numpy as np
import pytest
from numba._dispatcher import compute_fingerprint
from numba.core import errors, types

from llvm_backend.tools.measure import nrt_allocations_per_call
from llvm_backend_intrinsics.argpack import table_item
from llvm_backend_intrinsics.scalarpack import ScalarPack, ScalarPackType, scalar_item, scalar_pack_of


@numba.extending.intrinsic
def _values(typingctx, pack):
    """The pack's values as a tuple."""
    if not isinstance(pack, ScalarPackType):
        return None
    returned = types.UniTuple(pack.dtype, pack.count)

    def codegen(context, builder, signature, args):
        items = [table_item(builder, args[0], k) for k in range(pack.count)]
        return context.make_tuple(builder, returned, items)

    return returned(pack), codegen


@numba.njit
def values_of(pack):
    return _values(pack)


def _pack(dtype, values):
    return ScalarPack.of_values(ScalarPackType.of(dtype, len(values)), values)


def test_a_pack_reads_the_current_values_of_its_cells():
    cells = [[np.asarray(1.5)], [np.asarray(-2.0)], [np.asarray(np.inf)]]
    pack = ScalarPack(ScalarPackType.of("float64", 3), cells)
    assert values_of(pack) == (1.5, -2.0, np.inf)
    cells[1][0] = np.asarray(7.25)
    assert values_of(pack) == (1.5, 7.25, np.inf)
    ints = ScalarPack(ScalarPackType.of("int64", 2), [[np.asarray(-(2**62))], [np.asarray(5)]])
    assert values_of(ints) == (-(2**62), 5)


def test_nan_is_read_as_it_is():
    (value,) = values_of(_pack("float64", [np.asarray(np.nan)]))
    assert np.isnan(value)


@pytest.mark.parametrize(
    "value",
    [
        0.25,
        3,
        np.float64(0.25),
        np.asarray(0.25, dtype=np.float32),
        np.asarray(0.25, dtype=">f8"),
        np.asarray(True),
        np.arange(6.0).reshape(3, 2)[2, 1, ...],
    ],
    ids=["float", "int", "np.float64", "0-d float32", "0-d big-endian", "0-d bool", "0-d view"],
)
def test_other_values_are_converted_as_float_converts_them(value):
    assert values_of(_pack("float64", [np.asarray(1.0), value])) == (1.0, float(value))


@pytest.mark.parametrize(
    "value",
    [7, np.asarray(7, dtype=np.int32), np.asarray(7.9), 7.9, np.int16(-3), np.asarray(True)],
    ids=["int", "0-d int32", "0-d float64", "float", "np.int16", "0-d bool"],
)
def test_int_packs_convert_as_int_converts(value):
    assert values_of(_pack("int64", [value])) == (int(value),)


@pytest.mark.parametrize(
    "value", [None, "x", np.ones(2), np.ones(1), object()], ids=["None", "str", "2 elements", "1 element", "object"]
)
def test_a_value_float_cannot_take_raises_what_float_raises(value):
    with pytest.raises(Exception) as raised:
        float(value)
    with pytest.raises(type(raised.value)):
        values_of(_pack("float64", [np.asarray(1.0), value, np.asarray(2.0)]))


def test_an_int_beyond_int64_is_an_overflow_error():
    with pytest.raises(OverflowError):
        values_of(_pack("int64", [2**63]))


def test_a_pack_of_the_wrong_size_or_a_cell_without_an_item_0_is_a_type_error():
    pack_type = ScalarPackType.of("float64", 3)
    with pytest.raises(TypeError, match=r"a scalar pack of 3 cells was given \[\[1.0\], \[2.0\]\]"):
        values_of(ScalarPack(pack_type, [[1.0], [2.0]]))
    with pytest.raises(TypeError):
        values_of(ScalarPack(pack_type, [[1.0], 2.0, [3.0]]))
    with pytest.raises(IndexError):
        values_of(ScalarPack(pack_type, [[1.0], [], [3.0]]))
    assert values_of(ScalarPack(pack_type, ([1.0], (2.0,), np.asarray([3.0])))) == (1.0, 2.0, 3.0)


class _Shrinking:
    """A number whose conversion empties the pack's cells (and drops itself from its cell)."""

    def __init__(self, cells):
        self.cells = cells

    def __float__(self):
        self.cells[1][0] = None
        self.cells.clear()
        return 2.5


def test_cells_changed_by_a_conversion_are_a_type_error_not_a_stale_read():
    pack = ScalarPack(ScalarPackType.of("float64", 3), [])
    cells = pack.cells
    cells.extend([[np.asarray(1.0)], [_Shrinking(cells)], [np.asarray(3.0)]])
    with pytest.raises(TypeError, match="the scalar pack's cells changed while it was read"):
        values_of(pack)


def test_unboxing_allocates_nothing_and_keeps_reference_counts():
    values = [np.asarray(float(k)) for k in range(20)]
    pack = _pack("float64", values)
    before = [sys.getrefcount(v) for v in values]
    assert nrt_allocations_per_call(lambda: values_of(pack)) == 0
    assert [sys.getrefcount(v) for v in values] == before
    failing = _pack("float64", [*values[:3], None, *values[4:]])
    before = [sys.getrefcount(v) for v in values]
    for _ in range(50):
        with pytest.raises(TypeError):
            values_of(failing)
    assert [sys.getrefcount(v) for v in values] == before


def test_pack_types_hold_one_or_more_float64_or_int64():
    with pytest.raises(TypeError):
        ScalarPackType.of("float32", 2)
    with pytest.raises(TypeError):
        ScalarPackType.of("float64", 0)
    assert ScalarPackType.of("int64", 4).item_type == types.int64


@numba.njit
def _packed_in_compiled_code(a, b, c):
    return values_of(scalar_pack_of("float64", (a, b, c)))


def test_compiled_code_makes_packs_of_its_scalars_cast_to_the_dtype():
    assert _packed_in_compiled_code(1.5, np.float32(0.5), 3) == (1.5, 0.5, 3.0)


@pytest.mark.parametrize(
    "source, message",
    [
        ("scalar_pack_of(dtype, (a, b))", "literal string"),
        ("scalar_pack_of('float32', (a, b))", "non-empty tuple"),
        ("scalar_pack_of('float64', (a, np.ones(2)))", "not a scalar convertible"),
        ("scalar_pack_of('int64', (a, 1j))", "not a scalar convertible"),
    ],
)
def test_what_compiled_code_cannot_pack_is_a_typing_error(source, message):
    namespace = {"scalar_pack_of": scalar_pack_of, "np": np}
    exec(f"def make(a, b, dtype):\n    return {source}\n", namespace)
    with pytest.raises(errors.TypingError, match=message):
        numba.njit(namespace["make"])(1, 2.0, "float64")


def test_numbas_dispatcher_types_a_pack_from_its_fingerprint_cache():
    """numba fingerprints a pack (a buffer of a subclass per pack type) where it cannot fingerprint a plain
    object (NotImplementedError, raised and cleared at every call); packs of one type share a fingerprint."""
    three, other_three = _pack("float64", [1.0, 2.0, 3.0]), _pack("float64", [4.0, 5.0, 6.0])
    four, ints = _pack("float64", [1.0] * 4), _pack("int64", [1, 2, 3])
    assert type(three) is type(other_three) and isinstance(three, ScalarPack)
    fingerprints = [compute_fingerprint(pack) for pack in (three, other_three, four, ints)]
    assert fingerprints[0] == fingerprints[1]
    assert len(set(fingerprints[1:])) == 3
    assert [numba.typeof(pack) for pack in (three, four, ints)] == [
        ScalarPackType.of("float64", 3),
        ScalarPackType.of("float64", 4),
        ScalarPackType.of("int64", 3),
    ]
    with pytest.raises(NotImplementedError):
        compute_fingerprint(object())


@numba.njit
def _first_and_last(pack):
    return scalar_item(pack, 0), scalar_item(pack, 2)


def test_scalar_item_reads_one_value_and_refuses_an_index_past_the_pack():
    assert _first_and_last(_pack("int64", [4, 5, 6])) == (4, 6)
    with pytest.raises(IndexError, match=r"item 2 of ScalarPack\(float64, 2\)"):
        _first_and_last(_pack("float64", [1.0, 2.0]))
