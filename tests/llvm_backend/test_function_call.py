"""Calls of an LLVM-mode `Function`: the lean path to ``jit_fn`` (`llvm_backend.function.LeanCall`) returns what
PyTensor's ``Function.__call__`` returns under the ``py`` linker and stock NUMBA, raises what stock NUMBA raises,
and leaves the input cells and shared variables as stock's call does."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.executor import Function
from pytensor.compile.io import In, Out
from pytensor.compile.mode import Mode

from llvm_backend.function import LLVMFunction
from llvm_backend.tools.testing import assert_same_result

MODES = {"py": Mode(linker="py"), "NUMBA": "NUMBA"}


@pytest.fixture
def super_calls(monkeypatch):
    """The calls of LLVM-mode functions that ran PyTensor's ``Function.__call__`` (the lean path's fallback)."""
    calls = []
    stock = Function.__call__

    def counted(self, *args, **kwargs):
        if isinstance(self, LLVMFunction):
            calls.append(args)
        return stock(self, *args, **kwargs)

    monkeypatch.setattr(Function, "__call__", counted)
    return calls


def _compile_all(make):
    """``make(mode)`` under LLVM, stock NUMBA and the py linker: each builds its own graph (and shared variables)."""
    return make("LLVM"), {name: make(mode) for name, mode in MODES.items()}


def _assert_same(got, expected, label):
    if isinstance(expected, list):
        assert isinstance(got, list), label
        assert len(got) == len(expected), label
        for k, (g, e) in enumerate(zip(got, expected, strict=True)):
            assert_same_result(g, e, f"{label}[{k}]")
    elif expected is None:
        assert got is None, label
    else:
        assert_same_result(got, expected, label)


def _graphs():
    def scalars(mode):
        x, y = pt.dscalar("x"), pt.dscalar("y")
        return pytensor.function([x, y], x * y + 1, mode=mode), [np.array(2.0), np.array(3.0)]

    def vector_matrix(mode):
        v, m = pt.dvector("v", shape=(3,)), pt.dmatrix("m")
        return pytensor.function([v, m], [m @ v, v.sum()], mode=mode), [np.arange(3.0), np.ones((2, 3))]

    def int_and_bool(mode):
        i, b = pt.lvector("i"), pt.bvector("b")
        return pytensor.function([i, b], [pt.switch(b, i, -i), i * 2], mode=mode), [
            np.arange(4),
            np.array([1, 0, 1, 0], "int8"),
        ]

    def boolean(mode):
        c = pt.vector("c", dtype="bool")
        return pytensor.function([c], [~c, c.sum()], mode=mode), [np.array([True, False, True])]

    def shared_read(mode):
        x = pt.dvector("x")
        s = pytensor.shared(np.array([1.0, 2.0]), name="s")
        return pytensor.function([x], x * s, mode=mode), [np.array([3.0, 4.0])]

    def aliased_outputs(mode):
        x = pt.dvector("x")
        y = x * 2
        return pytensor.function([x], [y, y, x], mode=mode), [np.array([1.0, 2.0])]

    def constant_output(mode):
        x = pt.dvector("x")
        return pytensor.function([x], [x + 1, pt.constant(np.array([7.0, 8.0]))], mode=mode), [np.zeros(2)]

    def no_input(mode):
        return pytensor.function([], pt.constant(2.0) * 3, mode=mode), []

    return {
        f.__name__: f
        for f in (
            scalars,
            vector_matrix,
            int_and_bool,
            boolean,
            shared_read,
            aliased_outputs,
            constant_output,
            no_input,
        )
    }


GRAPHS = _graphs()


@pytest.mark.parametrize("name", list(GRAPHS))
def test_values_match_py_and_numba_and_take_the_lean_path(name, super_calls):
    (fn, args), others = _compile_all(GRAPHS[name])
    assert isinstance(fn, LLVMFunction)
    expected = {mode: other(*others_args) for mode, (other, others_args) in others.items()}
    del super_calls[:]
    got = fn(*args)
    assert super_calls == []
    for mode, want in expected.items():
        _assert_same(got, want, f"{name} vs {mode}")


@pytest.mark.parametrize("name", list(GRAPHS))
def test_outputs_are_fresh_and_unaliased_as_stock_numba(name):
    (fn, args), others = _compile_all(GRAPHS[name])
    numba_fn, numba_args = others["NUMBA"]
    first, numba_first = fn(*args), numba_fn(*numba_args)
    if not isinstance(first, list):
        first, numba_first = [first], [numba_first]
    kept = [np.copy(v) for v in first]
    second = fn(*args)
    second = second if isinstance(second, list) else [second]
    for k, (a, b) in enumerate(zip(first, second, strict=True)):
        assert a is not b, k
        np.testing.assert_array_equal(a, kept[k])
    assert len({id(v) for v in first}) == len({id(v) for v in numba_first})
    assert [any(v is a for a in args) for v in first] == [any(v is a for a in numba_args) for v in numba_first]


def test_input_cells_are_left_as_stock_leaves_them():
    (fn, args), others = _compile_all(GRAPHS["shared_read"])
    numba_fn, numba_args = others["NUMBA"]
    fn(*args)
    numba_fn(*numba_args)
    assert [c.storage[0] is None for c in fn.input_storage] == [c.storage[0] is None for c in numba_fn.input_storage]
    assert [c.required for c in fn.input_storage] == [True, False]
    np.testing.assert_array_equal(fn.input_storage[1].data, [1.0, 2.0])
    assert [v.name for v in fn.get_shared()] == ["s"]


def _counter(mode):
    x = pt.dscalar("x")
    s = pytensor.shared(np.array(0.0), name="s")
    return pytensor.function([x], [s * 1, s + x], updates={s: s + x}, mode=mode), s


def test_updates_are_applied_as_stock():
    fn, s = _counter("LLVM")
    numba_fn, numba_s = _counter("NUMBA")
    for value in [1.0, 2.5, np.array(4.0)]:
        _assert_same(fn(value), numba_fn(value), f"call with {value!r}")
        assert s.get_value() == numba_s.get_value()
    s.set_value(np.array(10.0))
    assert fn(1.0)[1] == 11.0
    assert s.get_value() == 11.0


def test_updates_without_outputs_and_single_output_unpacked():
    def make(mode):
        s = pytensor.shared(np.array([1.0]), name="s")
        return pytensor.function([], [], updates={s: s * 2}, mode=mode), pytensor.function([], s.sum(), mode=mode), s

    fn, total, s = make("LLVM")
    numba_fn, numba_total, _ = make("NUMBA")
    for _ in range(3):
        assert fn() == numba_fn()
    np.testing.assert_array_equal(s.get_value(), [8.0])
    _assert_same(total(), np.array(8.0), "sum of the shared variable")
    assert type(numba_total()) is type(total())


def _default_input(mode):
    x, y = pt.dscalar("x"), pt.dscalar("y")
    default = pytensor.shared(np.array(2.0), name="y_default")
    return pytensor.function([x, In(y, value=default.container, implicit=False)], x * y, mode=mode), default


def test_default_inputs_read_their_container_and_keep_a_given_value(super_calls):
    fn, default = _default_input("LLVM")
    numba_fn, numba_default = _default_input("NUMBA")
    del super_calls[:]
    for args in [(np.array(3.0),), (np.array(3.0), np.array(5.0)), (np.array(1.0),), (4.0, 0.5)]:
        _assert_same(fn(*args), numba_fn(*args), f"call with {args!r}")
        assert default.get_value() == numba_default.get_value()
    assert super_calls == []


def test_output_subset_and_keyword_arguments_are_pytensors(super_calls):
    x = pt.dscalar("x")
    fn = pytensor.function([x], [x + 1, x * 2], mode="LLVM")
    numba_fn = pytensor.function([x], [x + 1, x * 2], mode="NUMBA")
    del super_calls[:]
    _assert_same(fn(x=np.array(2.0)), numba_fn(x=np.array(2.0)), "keyword")
    assert len(super_calls) == 1
    with pytest.raises(TypeError) as numba_error:
        numba_fn(np.array(2.0), output_subset=[0])
    with pytest.raises(TypeError) as error:
        fn(np.array(2.0), output_subset=[0])
    assert str(error.value) == str(numba_error.value)


def test_unpack_single_and_return_none():
    x = pt.dvector("x")
    fn = pytensor.function([x], [x * 2], mode="LLVM")
    assert isinstance(fn(np.ones(2)), list)
    fn.unpack_single = True
    np.testing.assert_array_equal(fn(np.ones(2)), [2.0, 2.0])
    fn.unpack_single = False
    fn.return_none = True
    assert fn(np.ones(2)) is None


def test_python_values_are_converted_as_stock(super_calls):
    def make(mode):
        v, s, i = pt.dvector("v", shape=(3,)), pt.dscalar("s"), pt.lscalar("i")
        return pytensor.function([v, s, i], [v * s + i, v.sum()], mode=mode)

    fn, numba_fn = make("LLVM"), make("NUMBA")
    del super_calls[:]
    for args in [
        ([1.0, 2.0, 3.0], 2.0, 1),
        ((1, 2, 3), 2, np.int32(3)),
        (np.arange(3, dtype="float32"), np.float64(0.5), np.array(2, dtype="int8")),
        (np.arange(6.0)[::2], np.array(1.5), True),
    ]:
        _assert_same(fn(*args), numba_fn(*args), f"call with {args!r}")
    assert super_calls == []


def test_allow_downcast_as_stock():
    def make(mode):
        v = pt.fvector("v")
        return pytensor.function([v], v * 2, mode=mode, allow_input_downcast=True)

    fn, numba_fn = make("LLVM"), make("NUMBA")
    _assert_same(fn(np.array([1.5, 2.0])), numba_fn(np.array([1.5, 2.0])), "float64 array downcast")
    _assert_same(fn([0.1, 0.2]), numba_fn([0.1, 0.2]), "list downcast")


def _bad_calls():
    v, m = pt.dvector("v", shape=(3,)), pt.lmatrix("m")
    return (
        [v, m],
        [v.sum() + m.sum()],
        {
            "wrong dtype": (np.ones(3, "complex128"), np.ones((2, 2), "int64")),
            "unsafe cast": (np.ones(3), np.ones((2, 2))),
            "lossy python float": (np.ones(3), [[1.5, 2.0]]),
            "wrong ndim": (np.ones((3, 1)), np.ones((2, 2), "int64")),
            "wrong static shape": (np.ones(4), np.ones((2, 2), "int64")),
            "too few": (np.ones(3),),
            "too many": (np.ones(3), np.ones((2, 2), "int64"), np.ones(3)),
            "variable": (v, np.ones((2, 2), "int64")),
        },
    )


@pytest.mark.parametrize("case", list(_bad_calls()[2]))
def test_bad_input_raises_as_stock_numba(case):
    inputs, outputs, cases = _bad_calls()
    fn = pytensor.function(inputs, outputs, mode="LLVM")
    numba_fn = pytensor.function(inputs, outputs, mode="NUMBA")
    args = cases[case]
    with pytest.raises(Exception) as numba_error:
        numba_fn(*args)
    with pytest.raises(type(numba_error.value)) as error:
        fn(*args)
    assert str(error.value) == str(numba_error.value)
    assert getattr(error.value, "__notes__", None) == getattr(numba_error.value, "__notes__", None)
    assert [c.storage[0] is None for c in fn.input_storage] == [c.storage[0] is None for c in numba_fn.input_storage]


def test_runtime_error_carries_the_thunks_notes():
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = pytensor.function([x, y], x + y, mode="LLVM")
    with pytest.raises(Exception) as lean_error:
        fn(np.ones(2), np.ones(3))
    cells = [c.storage[0] for c in fn.input_storage]
    for c in fn.input_storage:
        c.storage[0] = None
    with pytest.raises(type(lean_error.value)) as stock_error:
        Function.__call__(fn, np.ones(2), np.ones(3))
    assert str(lean_error.value) == str(stock_error.value)
    assert lean_error.value.__notes__ == stock_error.value.__notes__
    assert [c.shape for c in cells] == [c.storage[0].shape for c in fn.input_storage] == [(2,), (3,)]


def test_trust_input_skips_the_checks(super_calls):
    x = pt.dvector("x")
    fn = pytensor.function([x], x * 2, mode="LLVM")
    fn.trust_input = True
    del super_calls[:]
    np.testing.assert_array_equal(fn(np.arange(3.0)), [0.0, 2.0, 4.0])
    assert super_calls == []


def test_profiled_and_non_collecting_functions_are_pytensors(super_calls):
    x = pt.dvector("x")
    profiled = pytensor.function([x], x * 2, mode="LLVM", profile=True)
    kept = pytensor.function([x], x * 2, mode="LLVM")
    kept.vm.allow_gc = False
    del super_calls[:]
    np.testing.assert_array_equal(profiled(np.ones(2)), [2.0, 2.0])
    assert profiled.profile.fct_callcount == 1
    np.testing.assert_array_equal(kept(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(kept.input_storage[0].data, [1.0, 1.0])
    assert len(super_calls) == 2


def test_borrowed_outputs_and_inputs_alias_as_stock():
    x = pt.dvector("x")
    fn = pytensor.function([In(x, borrow=True)], Out(x, borrow=True), mode="LLVM")
    numba_fn = pytensor.function([In(x, borrow=True)], Out(x, borrow=True), mode="NUMBA")
    a = np.ones(2)
    assert (fn(a) is a) == (numba_fn(a) is a)
    np.testing.assert_array_equal(fn(a), a)
