import sys

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llvm_backend_intrinsics.argpack import ArrayPack, ArrayPackType, pack_item

DTYPES = ["bool", "int8", "int32", "int64", "uint16", "float32", "float64", "complex128"]


def pack_of(arrays, dtype=None, ndim=None):
    dtype = np.dtype(dtype or arrays[0].dtype)
    ndim = arrays[0].ndim if ndim is None else ndim
    return ArrayPack(ArrayPackType.of(dtype, ndim, len(arrays)), dtype, list(arrays))


@numba.njit
def _first_and_last(pack):
    return pack_item(pack, 0).copy(), pack_item(pack, 2).copy()


@numba.njit
def _sum_of_three(pack):
    return pack_item(pack, 0).sum() + pack_item(pack, 1).sum() + pack_item(pack, 2).sum()


def _layouts(base):
    """The same values as C, Fortran, strided and negative-stride arrays."""
    return [
        np.ascontiguousarray(base),
        np.asfortranarray(base),
        np.repeat(base, 2, axis=-1)[..., ::2],
        np.flip(base, axis=-1).copy()[..., ::-1],
    ]


@pytest.mark.parametrize("dtype", DTYPES)
def test_items_keep_values_for_every_layout(dtype):
    base = (np.arange(12) % 5).astype(dtype).reshape(3, 4)
    c, f, strided, reversed_ = _layouts(base)
    first, last = _first_and_last(pack_of([c, f, strided]))
    np.testing.assert_array_equal(first, base)
    np.testing.assert_array_equal(last, base)
    assert _sum_of_three(pack_of([f, strided, reversed_])) == 3 * base.sum()


@numba.njit
def _zero_d_sum(pack):
    return pack_item(pack, 0)[()] + pack_item(pack, 1)[()] + pack_item(pack, 2)[()]


def test_zero_d_items():
    arrays = [np.array(1.5), np.array(2.0), np.array(-0.25)]
    assert _zero_d_sum(pack_of(arrays)) == 3.25


@settings(max_examples=40, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shapes=st.lists(st.tuples(st.integers(0, 4), st.integers(1, 4)), min_size=3, max_size=3),
    layouts=st.lists(st.integers(0, 3), min_size=3, max_size=3),
)
def test_property_items_round_trip(dtype, shapes, layouts):
    arrays = [
        _layouts((np.arange(r * c) % 7).astype(dtype).reshape(r, c))[layout]
        for (r, c), layout in zip(shapes, layouts, strict=True)
    ]
    first, last = _first_and_last(pack_of(arrays))
    np.testing.assert_array_equal(first, arrays[0])
    np.testing.assert_array_equal(last, arrays[2])


@pytest.mark.parametrize(
    "bad",
    [
        np.zeros((2, 2)),
        np.zeros(4, np.float32),
        np.zeros(4, np.int64),
        np.zeros(4).astype(np.dtype("float64").newbyteorder("S")),
        [1.0, 2.0],
        None,
    ],
    ids=["ndim", "float32", "int64", "byteswapped", "list", "none"],
)
def test_a_wrong_item_is_a_type_error_naming_it(bad):
    arrays = [np.zeros(4), np.ones(4), np.ones(4)]
    arrays[1] = bad
    with pytest.raises(TypeError, match=r"array pack item 1 is not a 1-d array of dtype float64"):
        _first_and_last(ArrayPack(ArrayPackType.of("float64", 1, 3), np.dtype("float64"), arrays))


def test_a_wrong_count_is_a_type_error():
    with pytest.raises(TypeError, match="an array pack of 3 arrays was given 2"):
        _first_and_last(ArrayPack(ArrayPackType.of("float64", 1, 3), np.dtype("float64"), [np.zeros(2)] * 2))


def test_equal_dtypes_and_subclasses_are_accepted():
    class Sub(np.ndarray):
        pass

    same = np.dtype("float64").newbyteorder("=")
    arrays = [np.arange(3.0), np.arange(3.0).astype(same), np.arange(3.0).view(Sub)]
    assert _sum_of_three(pack_of(arrays, "float64")) == 9.0


def test_references_are_released_on_success_and_on_error():
    arrays = [np.arange(4.0) for _ in range(3)]
    before = [sys.getrefcount(a) for a in arrays]
    good = pack_of(arrays)
    bad = ArrayPack(good._numba_type_, good.dtype, [arrays[0], arrays[1], np.zeros(4, np.int8)])
    for _ in range(200):
        _first_and_last(good)
        with pytest.raises(TypeError):
            _first_and_last(bad)
    del good, bad
    assert [sys.getrefcount(a) for a in arrays] == before
