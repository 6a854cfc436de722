"""Views and 0-d boxes (`llvm_backend_intrinsics.views`) against numpy and against numba's own indexing, which
stock's Subtensor functions run (compiled with ``boundscheck=True``)."""

import functools

import llvmlite.binding as llvm
import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core import errors

from llvm_backend_intrinsics.views import SQUEEZE_ERROR, basic_index, box_scalar, dimshuffle_view, unbox_scalar

STRUCTURES = [
    (0,),
    ((0, None, None),),
    ((None, 0, None),),
    ((0, 1, None),),
    ((0, 1, 2),),
    ((None, None, 0),),
    (0, 1),
    ((0, None, None), 1),
    (0, (None, 1, 2)),
    ((None, None, None), 0),
    (0, 1, 2),
    ((0, None, 1), (None, 2, None), 3),
]
"""Index structures as `basic_index` takes them: an int is the position of an integer argument, a triple the
positions of a slice's start, stop and step (None where absent)."""


def _count(structure) -> int:
    return 1 + max(p for entry in structure for p in ((entry,) if isinstance(entry, int) else entry) if p is not None)


def _python_index(structure, arguments) -> tuple:
    return tuple(
        arguments[entry] if isinstance(entry, int) else slice(*(None if p is None else arguments[p] for p in entry))
        for entry in structure
    )


@functools.cache
def ours(structure, box: bool):
    index = basic_index(structure, box)
    names = [f"a{k}" for k in range(_count(structure))]
    namespace = {"index": index}
    exec(f"def indexed(x, {', '.join(names)}):\n    return index(x, {', '.join(names)})\n", namespace)
    return numba.njit(cache=False)(namespace["indexed"])


@functools.cache
def numbas(structure):
    """numba's ``x[indices]``, as stock's Subtensor function computes it."""
    names = [f"a{k}" for k in range(_count(structure))]
    entries = [
        names[entry]
        if isinstance(entry, int)
        else f"slice({', '.join('None' if p is None else names[p] for p in entry)})"
        for entry in structure
    ]
    namespace = {}
    exec(f"def indexed(x, {', '.join(names)}):\n    return x[({', '.join(entries)},)]\n", namespace)
    return numba.njit(cache=False, boundscheck=True)(namespace["indexed"])


def _outcome(function, *arguments):
    try:
        return function(*arguments)
    except (IndexError, ValueError) as error:
        return type(error)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_basic_index_computes_numpys_value_and_numbas_type(data):
    structure = data.draw(st.sampled_from([s for s in STRUCTURES if len(s) <= 3]))
    ndim = data.draw(st.integers(len(structure), 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    x = np.arange(np.prod(shape), dtype="float64").reshape(shape)
    if data.draw(st.booleans()):
        x = x.T.copy().T  # Fortran order: another layout typed
    arguments = [data.draw(st.integers(-6, 6)) for _ in range(_count(structure))]
    python_index = _python_index(structure, arguments)
    try:
        want = x[python_index]
    except (IndexError, ValueError) as error:
        want = type(error)
    got = _outcome(ours(structure, False), x, *arguments)
    reference = _outcome(numbas(structure), x, *arguments)
    if isinstance(want, type):
        assert got is want is reference, (structure, shape, arguments)
        return
    np.testing.assert_array_equal(got, want)
    assert numba.typeof(got) == numba.typeof(reference)
    if isinstance(got, np.ndarray) and got.size:
        assert np.shares_memory(got, x)


def test_an_element_is_boxed_in_a_new_0d_array_on_request():
    x = np.arange(12.0).reshape(3, 4)
    boxed = ours((0, 1), True)(x, np.int64(-1), np.uint8(2))
    assert isinstance(boxed, np.ndarray) and boxed.shape == () and boxed == 10.0
    assert not np.shares_memory(boxed, x)
    assert ours((0, 1), False)(x, 1, 2) == 6.0


def test_integer_indices_may_be_0d_integer_arrays_of_any_signedness():
    x = np.arange(10.0)
    assert ours((0,), False)(x, np.array(3, dtype="uint8")) == 3.0
    assert ours((0,), False)(x, np.array(-2, dtype="int16")) == 8.0
    np.testing.assert_array_equal(ours(((0, 1, None),), False)(x, np.array(2), np.int32(5)), [2.0, 3.0, 4.0])
    with pytest.raises(IndexError, match="index is out of bounds"):
        ours((0,), False)(x, np.array(10))


def test_a_zero_step_is_a_value_error_as_in_numba():
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        ours(((None, None, 0),), False)(np.arange(3.0), 0)


def test_a_float_index_is_a_typing_error():
    with pytest.raises(errors.TypingError, match="index 0 must be an integer"):
        ours((0,), False)(np.arange(3.0), 1.0)


@functools.cache
def shuffled(new_order, drop, unit_axes=frozenset()):
    shuffle = dimshuffle_view(new_order, drop, unit_axes)
    return numba.njit(cache=False)(lambda x: shuffle(x))


@pytest.mark.parametrize(
    ("shape", "new_order", "drop", "layout"),
    [
        ((3, 4), (1, 0), (), "F"),
        ((3, 4), (0, -1, 1), (), "C"),
        ((3, 1, 4), (2, 0), (1,), "F"),
        ((2, 3, 4), (1, 0, 2), (), "A"),
        ((1,), (), (0,), "C"),
        ((), (-1, -1), (), "C"),
    ],
)
def test_dimshuffle_is_a_view_of_numpys_transpose_and_reshape(shape, new_order, drop, layout):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    got = shuffled(new_order, drop)(x)
    kept = [axis for axis in new_order if axis != -1]
    want = np.transpose(x, [*kept, *drop]).reshape([x.shape[a] if a != -1 else 1 for a in new_order])
    np.testing.assert_array_equal(got, want)
    assert numba.typeof(got).layout == layout
    assert got.shape == () or np.shares_memory(got, x)


def test_dimshuffle_types_the_layout_it_keeps():
    assert numba.typeof(shuffled((1, 0), ())(np.ones((2, 3)))) == numba.types.Array(numba.float64, 2, "F")
    assert numba.typeof(shuffled((0, -1, 1), ())(np.ones((2, 3)))) == numba.types.Array(numba.float64, 3, "C")
    assert numba.typeof(shuffled((1, 0, 2), ())(np.ones((2, 3, 4)))) == numba.types.Array(numba.float64, 3, "A")
    # axes of length 1 have no stride that matters: moving one keeps C
    view = shuffled((1, 0), (), frozenset({0}))(np.ones((1, 3)))
    assert numba.typeof(view) == numba.types.Array(numba.float64, 2, "C")


def test_dropping_an_axis_longer_than_one_is_stocks_value_error():
    with pytest.raises(ValueError, match=SQUEEZE_ERROR):
        shuffled((), (0,))(np.ones(2))
    with pytest.raises(ValueError, match=SQUEEZE_ERROR):
        shuffled((1,), (0,))(np.ones((2, 3)))


@numba.njit(cache=False)
def boxed(value):
    return box_scalar(value)


@numba.njit(cache=False)
def unboxed(x):
    return unbox_scalar(x)


@pytest.mark.parametrize("value", [2.5, np.float32(1.5), np.int8(-3), np.uint64(2**63), True, 1 + 2j])
def test_box_and_unbox_a_scalar_as_np_array_and_item(value):
    array = boxed(value)
    want = np.array(value)
    assert array.shape == () and array.dtype == want.dtype and array == want
    assert unboxed(array) == value
    assert type(unboxed(array)) is type(numba.njit(cache=False)(lambda x: x[()])(array))


def test_unbox_takes_0d_arrays_only():
    with pytest.raises(errors.TypingError, match="must be a 0-d array"):
        unboxed(np.ones(2))


def test_a_view_takes_a_reference_and_allocates_nothing():
    compiled = ours(((0, None, None),), False)
    compiled(np.arange(4.0), 1)
    ir = compiled.inspect_llvm(compiled.signatures[0])
    module = llvm.parse_assembly(ir)
    module.verify()
    [kernel] = [
        f
        for f in module.functions
        if "indexed" in f.name and "cpython" not in f.name and not f.name.startswith("cfunc.")
    ]
    body = str(kernel)
    assert "NRT_MemInfo_alloc" not in body
    assert "NRT_incref" in body  # the view returned holds a reference of its own to the borrowed argument
