"""Calls of an LLVM-mode `Function`: its lean call (`llvm_backend.function.lean_call_source`) returns what PyTensor's
``Function.__call__`` returns under the ``py`` linker and stock NUMBA, raises what stock NUMBA raises, leaves the
input cells and shared variables as stock's call does, and hands every call it does not take to PyTensor's."""

import copy
import copyreg
import pickle
import sys
import threading

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.debug.profiling import ProfileStats
from pytensor.compile.executor import Function
from pytensor.compile.io import In, Out

from llvm_backend.codegen import SCALAR_PACK_MIN
from llvm_backend.dispatch import MAX_ITEMS
from llvm_backend.function import (
    LLVMFunction,
    _direct_call_lines,
    _locked_call_lines,
    calls_the_graph_directly,
    lean_call_source,
)
from llvm_backend.tools.testing import PY_MODE, assert_same_result

MODES = {"py": PY_MODE, "NUMBA": "NUMBA"}


@pytest.fixture
def pytensor_calls(monkeypatch):
    """The calls of LLVM-mode functions that PyTensor's ``Function.__call__`` made (the lean call's fallback)."""
    calls = []
    stock = Function.__call__

    def counted(self, *args, **kwargs):
        if isinstance(self, LLVMFunction):
            calls.append(args)
        return stock(self, *args, **kwargs)

    monkeypatch.setattr(Function, "__call__", counted)
    return calls


def _compile_all(make):
    """``make(mode)`` under LLVM, and under stock NUMBA and the py linker: each builds its own graph (and shared
    variables)."""
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
        v, m = pt.dvector("v", shape=(3,)), pt.dmatrix("m", shape=(None, 3))
        return pytensor.function([v, m], [m @ v, v.sum()], mode=mode), [np.arange(3.0), np.ones((2, 3))]

    def int_and_bool(mode):
        i, b = pt.lvector("i"), pt.bvector("b")
        values = [np.arange(4), np.array([1, 0, 1, 0], "int8")]
        return pytensor.function([i, b], [pt.switch(b, i, -i), i * 2], mode=mode), values

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

    def scalar_pack(mode):
        xs = [pt.dscalar(f"x{k}") for k in range(SCALAR_PACK_MIN)]
        return pytensor.function(xs, sum(x * k for k, x in enumerate(xs)), mode=mode), [
            np.array(0.5 * k) for k in range(SCALAR_PACK_MIN)
        ]

    def array_pack(mode):
        vs = [pt.dvector(f"v{k}") for k in range(MAX_ITEMS + 2)]
        outputs = [pt.concatenate(vs).sum(), vs[3] * 2]
        return pytensor.function(vs, outputs, mode=mode), [np.arange(2.0) + k for k in range(len(vs))]

    def listed_outputs(mode):
        x = pt.dvector("x")
        return pytensor.function([x], [x * k - k for k in range(MAX_ITEMS + 5)], mode=mode), [np.arange(3.0)]

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
            scalar_pack,
            array_pack,
            listed_outputs,
        )
    }


GRAPHS = _graphs()
PACKED = {"scalar_pack": "packs", "array_pack": "packs", "listed_outputs": "output_lists"}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRAPHS))
def test_values_match_py_and_numba_and_take_the_lean_call(name, pytensor_calls):
    (fn, args), others = _compile_all(GRAPHS[name])
    assert isinstance(fn, LLVMFunction)
    if name in PACKED:
        assert getattr(fn.vm.graph_source, PACKED[name])
    expected = {mode: other(*others_args) for mode, (other, others_args) in others.items() if len(args) <= 32}
    expected["NUMBA"] = others["NUMBA"][0](*others["NUMBA"][1])
    del pytensor_calls[:]
    for trust_input in (False, True):
        fn.trust_input = trust_input
        got = fn(*args)
        for mode, want in expected.items():
            _assert_same(got, want, f"{name} vs {mode}, trust_input={trust_input}")
    assert pytensor_calls == []


def test_a_lean_call_compiles_no_jit_fn():
    # jit_fn's entry calls the graph function by address: compiled in every process, never cached.
    x = pt.dvector("x")
    fn = pytensor.function([x], [pt.exp(x).sum(), x * 2], mode="LLVM")
    fn(np.ones(3))
    fn.trust_input = True
    fn(np.ones(3))
    assert fn.vm.jit_fn.overloads == {}
    assert fn.vm._typed_entry.overloads == {}


@pytest.mark.slow
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


def _cells(fn):
    return [c.storage[0] is None for c in fn.input_storage], [c.storage[0] is None for c in fn.output_storage]


@pytest.mark.parametrize("name", ["shared_read", "constant_output", "scalar_pack"])
def test_cells_are_left_as_stock_leaves_them(name):
    (fn, args), others = _compile_all(GRAPHS[name])
    numba_fn, numba_args = others["NUMBA"]
    fn(*args)
    numba_fn(*numba_args)
    assert _cells(fn) == _cells(numba_fn)


def _counter(mode):
    x = pt.dscalar("x")
    s = pytensor.shared(np.array(0.0), name="s")
    return pytensor.function([x], [s * 1, s + x], updates={s: s + x}, mode=mode), s


def test_updates_are_applied_as_stock(pytensor_calls):
    fn, s = _counter("LLVM")
    numba_fn, numba_s = _counter("NUMBA")
    for value in [1.0, 2.5, np.array(4.0)]:
        _assert_same(fn(value), numba_fn(value), f"call with {value!r}")
        assert s.get_value() == numba_s.get_value()
    s.set_value(np.array(10.0))
    assert fn(1.0)[1] == 11.0
    assert s.get_value() == 11.0
    assert pytensor_calls == []


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


def test_default_inputs_read_their_container_and_keep_a_given_value(pytensor_calls):
    fn, default = _default_input("LLVM")
    numba_fn, numba_default = _default_input("NUMBA")
    calls = [(np.array(3.0),), (np.array(3.0), np.array(5.0)), (np.array(1.0),), (4.0, 0.5)]
    for args in calls:
        _assert_same(fn(*args), numba_fn(*args), f"call with {args!r}")
        assert default.get_value() == numba_default.get_value()
    # a call leaving an input to its default is PyTensor's, one giving every input the lean call's
    assert [len(args) for args in pytensor_calls] == [1, 1]


def test_keyword_arguments_and_unknown_keywords_are_pytensors(pytensor_calls):
    x = pt.dscalar("x")
    fn = pytensor.function([x], [x + 1, x * 2], mode="LLVM")
    numba_fn = pytensor.function([x], [x + 1, x * 2], mode="NUMBA")
    _assert_same(fn(x=np.array(2.0)), numba_fn(x=np.array(2.0)), "keyword")
    assert len(pytensor_calls) == 1
    for kwargs in ({"output_subset": [0]}, {"y": 1.0}):
        with pytest.raises(TypeError) as numba_error:
            numba_fn(np.array(2.0), **kwargs)
        with pytest.raises(TypeError) as error:
            fn(np.array(2.0), **kwargs)
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


def test_the_lean_call_is_written_again_only_when_an_attribute_it_is_written_for_changes():
    x = pt.dvector("x")
    fn = pytensor.function([x], x * 2, mode="LLVM")
    written = fn.lean_call
    fn.trust_input, fn.unpack_single, fn.return_none, fn.profile = False, True, False, None
    assert fn.lean_call is written
    fn.trust_input = True
    assert fn.lean_call is not written
    assert fn.trust_input is True
    assert type(fn).__call__ is fn.lean_call.__func__


def test_each_function_is_of_a_class_of_its_own_whose_call_is_its_lean_call():
    x = pt.dvector("x")
    first, second = (pytensor.function([x], x * k, mode="LLVM") for k in (2, 3))
    for fn in (first, second):
        assert type(fn).__bases__ == (LLVMFunction,) and type(fn).__name__ == "LLVMFunction"
        assert type(fn).__call__ is fn.lean_call.__func__
        assert fn.lean_call.__func__.__name__ == "first_call"
    assert type(first) is not type(second)
    np.testing.assert_array_equal(first(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(second(np.ones(2)), [3.0, 3.0])
    for fn in (first, second):
        assert fn.lean_call.__func__.__name__ == "lean_call"
        assert type(fn).__call__ is fn.lean_call.__func__
    assert LLVMFunction not in copyreg.dispatch_table
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(first))(np.ones(2)), [2.0, 2.0])


def test_python_values_are_filtered_as_stock(pytensor_calls):
    def make(mode):
        v, s, i = pt.dvector("v", shape=(3,)), pt.dscalar("s"), pt.lscalar("i")
        return pytensor.function([v, s, i], [v * s + i, v.sum()], mode=mode)

    fn, numba_fn = make("LLVM"), make("NUMBA")
    for args in [
        ([1.0, 2.0, 3.0], 2.0, 1),
        ((1, 2, 3), 2, np.int32(3)),
        (np.arange(3, dtype="float32"), np.float64(0.5), np.array(2, dtype="int8")),
        (np.arange(6.0)[::2], np.array(1.5), True),
        (np.arange(3.0).astype(">f8"), np.array(1.5), 1),
    ]:
        _assert_same(fn(*args), numba_fn(*args), f"call with {args!r}")
    assert pytensor_calls == []


def test_allow_downcast_as_stock():
    def make(mode):
        v = pt.fvector("v")
        return pytensor.function([v], v * 2, mode=mode, allow_input_downcast=True)

    fn, numba_fn = make("LLVM"), make("NUMBA")
    _assert_same(fn(np.array([1.5, 2.0])), numba_fn(np.array([1.5, 2.0])), "float64 array downcast")
    _assert_same(fn([0.1, 0.2]), numba_fn([0.1, 0.2]), "list downcast")


def _unaligned(n):
    buffer = np.zeros(8 * n + 1, dtype="uint8")
    array = np.frombuffer(buffer.data, dtype="float64", count=n, offset=1)
    assert not array.flags.aligned
    return array


def _bad_calls():
    v, m = pt.dvector("v", shape=(3,)), pt.lmatrix("m")
    matrix = np.ones((2, 2), "int64")
    return (
        [v, m],
        [v.sum() + m.sum()],
        {
            "wrong dtype": (np.ones(3, "complex128"), matrix),
            "unsafe cast": (np.ones(3), np.ones((2, 2))),
            "lossy python float": (np.ones(3), [[1.5, 2.0]]),
            "wrong ndim": (np.ones((3, 1)), matrix),
            "wrong static shape": (np.ones(4), matrix),
            "unaligned": (_unaligned(3), matrix),
            "too few": (np.ones(3),),
            "too many": (np.ones(3), matrix, np.ones(3)),
            "variable": (v, matrix),
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
    assert _cells(fn) == _cells(numba_fn)


def test_an_error_of_the_graph_carries_the_thunks_notes_and_leaves_the_arguments_in_their_cells():
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = pytensor.function([x, y], x + y, mode="LLVM")
    with pytest.raises(ValueError) as lean_error:
        fn(np.ones(2), np.ones(3))
    cells = [c.storage[0] for c in fn.input_storage]
    for c in fn.input_storage:
        c.storage[0] = None
    with pytest.raises(ValueError) as stock_error:
        Function.__call__(fn, np.ones(2), np.ones(3))
    assert str(lean_error.value) == str(stock_error.value)
    assert lean_error.value.__notes__ == stock_error.value.__notes__
    assert [c.shape for c in cells] == [c.storage[0].shape for c in fn.input_storage] == [(2,), (3,)]


def test_trusted_calls_of_a_scalar_pack_read_the_cells_as_the_thunk_does(pytensor_calls):
    xs = [pt.dscalar(f"x{k}") for k in range(SCALAR_PACK_MIN)]
    fn = pytensor.function(xs, pt.add(*xs), mode="LLVM", trust_input=True)
    values = [np.asarray(1.0)] * (SCALAR_PACK_MIN - 2)
    assert fn(*values, 2.0, 3) == SCALAR_PACK_MIN + 3
    with pytest.raises(TypeError) as lean_error:
        fn(*values, 2.0, None)
    with pytest.raises(TypeError) as stock_error:
        Function.__call__(fn, *values, 2.0, None)
    assert str(lean_error.value) == str(stock_error.value)
    assert len(pytensor_calls) == 1


def test_profiled_and_non_collecting_functions_are_pytensors(pytensor_calls):
    x = pt.dvector("x")
    profiled = pytensor.function([x], x * 2, mode="LLVM", profile=True)
    profiled_later = pytensor.function([x], x * 2, mode="LLVM")
    profiled_later.profile = ProfileStats(message="set after the compile")
    kept = pytensor.function([x], x * 2, mode="LLVM")
    kept.vm.allow_gc = False
    for fn in (profiled, profiled_later):
        np.testing.assert_array_equal(fn(np.ones(2)), [2.0, 2.0])
        assert fn.profile.fct_callcount == 1
    np.testing.assert_array_equal(kept(np.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(kept.input_storage[0].data, [1.0, 1.0])
    assert len(pytensor_calls) == 3
    profiled_later.profile = None
    profiled_later(np.ones(2))
    assert len(pytensor_calls) == 3


def _borrowed(mode):
    x, y = pt.dvector("x"), pt.dvector("y")
    return pytensor.function(
        [In(x, borrow=True, mutable=True), In(y, borrow=True)], pt.inc_subtensor(x[0], y[1]), mode=mode
    )


def test_inputs_that_may_alias_are_pytensors_when_checked(pytensor_calls):
    fn, numba_fn = _borrowed("LLVM"), _borrowed("NUMBA")
    assert fn._potential_aliased_input_groups
    a, numba_a = np.ones(3), np.ones(3)
    _assert_same(fn(a, a), numba_fn(numba_a, numba_a), "one array for both inputs")
    np.testing.assert_array_equal(a, numba_a)
    assert len(pytensor_calls) == 1


def test_borrowed_outputs_and_inputs_alias_as_stock():
    x = pt.dvector("x")
    fn = pytensor.function([In(x, borrow=True)], Out(x, borrow=True), mode="LLVM")
    numba_fn = pytensor.function([In(x, borrow=True)], Out(x, borrow=True), mode="NUMBA")
    a = np.ones(2)
    assert (fn(a) is a) == (numba_fn(a) is a)
    np.testing.assert_array_equal(fn(a), a)


def _call_while_locked(fn, *args):
    """Call ``fn`` from another thread while this one holds its lock; whether the call had to wait, and its result."""
    results = []
    call = threading.Thread(target=lambda: results.append(fn(*args)))
    with fn.call_lock:
        call.start()
        call.join(timeout=0.2)
        waited = call.is_alive() and results == []
    call.join()
    return waited, results[0]


def test_a_call_through_the_cells_holds_the_lock_and_a_direct_call_takes_none():
    s = pt.dscalar("s")
    counter = pytensor.shared(np.array(0.0))
    updating = pytensor.function([s], counter + s, updates={counter: counter + s}, mode="LLVM")
    scalars = [pt.dscalar(f"s{k}") for k in range(SCALAR_PACK_MIN)]
    packed = pytensor.function(scalars, pt.add(*scalars), mode="LLVM")
    x = pt.dvector("x")
    direct = pytensor.function([x], x * 2, mode="LLVM")
    assert not calls_the_graph_directly(updating) and not calls_the_graph_directly(packed)
    assert calls_the_graph_directly(direct)
    assert _call_while_locked(updating, 1.0) == (True, 1.0)
    assert _call_while_locked(packed, *range(SCALAR_PACK_MIN)) == (True, sum(range(SCALAR_PACK_MIN)))
    waited, doubled = _call_while_locked(direct, np.ones(2))
    assert not waited
    np.testing.assert_array_equal(doubled, [2.0, 2.0])


def test_threads_lose_no_update():
    fn, s = _counter("LLVM")
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=lambda: [fn(1.0) for _ in range(500)]) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert s.get_value() == 2000.0


def test_pickled_and_copied_functions_take_their_own_lean_call(pytensor_calls):
    fn, s = _counter("LLVM")
    fn(1.0)
    loaded = pickle.loads(pickle.dumps(fn))
    copied = copy.copy(fn)
    other = pytensor.shared(np.array(100.0), name="other")
    swapped = fn.copy(swap={s: other})
    for function in (loaded, copied, swapped):
        assert isinstance(function, LLVMFunction)
        assert function.lean_call.__self__ is function
        assert type(function) is not type(fn) and type(function).__call__ is function.lean_call.__func__
    _assert_same(loaded(2.0), [np.array(1.0), np.array(3.0)], "unpickled")
    _assert_same(copied(2.0), [np.array(1.0), np.array(3.0)], "copied, sharing the shared variable")
    assert s.get_value() == 3.0
    _assert_same(swapped(1.0), [np.array(100.0), np.array(101.0)], "copied, another shared variable")
    assert other.get_value() == 101.0 and s.get_value() == 3.0
    assert pytensor_calls == []


def test_the_documented_sources_are_the_ones_written():
    x, scalar = pt.dvector("x"), pt.dscalar("s")
    direct = pytensor.function([x, scalar], [x.sum() * scalar, x], mode="LLVM")
    s = pytensor.shared(np.array(0.0), name="s")
    updating = pytensor.function([x], x.sum(), updates={s: s + 1}, mode="LLVM")
    documented_in = (lean_call_source, _locked_call_lines, _direct_call_lines)
    examples = [part.split("\n\n    ")[0] for f in documented_in for part in f.__doc__.split("::\n\n")[1:]]
    written = [lean_call_source(direct), lean_call_source(updating), lean_call_source(direct, entry=True)]
    for source, documented in zip(written, examples, strict=True):
        assert source == "\n".join(line[8:] for line in documented.splitlines()).strip("\n") + "\n"


def _entry_spied(fn):
    """``fn``'s lean call's compiled entry, wrapped to count its calls."""
    namespace = fn.lean_call.__func__.__globals__
    calls, entry = [], namespace["entry"]

    def spy(*args):
        calls.append(len(args))
        return entry(*args)

    namespace["entry"] = spy
    return calls


@pytest.mark.slow
def test_after_its_first_call_the_lean_call_calls_the_graph_function_s_compiled_entry(pytensor_calls):
    x, s, m = pt.dvector("x"), pt.dscalar("s"), pt.dmatrix("m")
    outputs = [(x * s).sum() + m.sum(), m.T @ x[:3]]
    fn = pytensor.function([x, s, m], outputs, mode="LLVM")
    stock = pytensor.function([x, s, m], outputs, mode="NUMBA")
    py = pytensor.function([x, s, m], outputs, mode=PY_MODE)
    assert not fn.vm.graph_fn.overloads  # compiled at the first call, whose lean call has no entry
    values = np.arange(5.0), np.array(1.5), np.arange(6.0).reshape(3, 2)
    _assert_same(fn(*values), stock(*values), "first call")
    [compiled] = fn.vm.graph_fn.overloads.values()
    assert fn.lean_call.__func__.__globals__["entry"] is compiled.entry_point
    entered = _entry_spied(fn)
    readonly = np.arange(5.0)
    readonly.flags.writeable = False
    arguments = {
        "canonical": values,
        "a strided vector": (np.arange(10.0)[::2], *values[1:]),
        "a Fortran-ordered matrix": (*values[:2], np.asfortranarray(values[2])),
        "a read-only vector": (readonly, *values[1:]),
        "a float32 vector": (np.arange(5.0, dtype="float32"), *values[1:]),
        "a list": (list(range(5)), *values[1:]),
    }
    for label, args in arguments.items():
        got = fn(*args)
        for mode, other in (("NUMBA", stock), ("py", py)):
            _assert_same(got, other(*args), f"{label} vs {mode}")
        assert len(entered) == 1, label  # the canonical call only
    with pytest.raises(TypeError, match="not aligned"):
        stock(_unaligned(5), *values[1:])
    with pytest.raises(TypeError, match="not aligned"):
        fn(_unaligned(5), *values[1:])
    assert entered == [3]
    assert len(fn.vm.graph_fn.overloads) > 1  # the dispatcher compiled the strided and read-only ones
    assert len(pytensor_calls) == 1  # the unaligned vector, which filter rejects and PyTensor's call raises on


@pytest.mark.parametrize("how", ["trust_input", "a shared variable", "updates"])
def test_the_lean_call_has_no_compiled_entry_where_it_would_pass_arguments_unchecked(how):
    x = pt.dvector("x")
    shared = pytensor.shared(np.ones(3), name="shared")
    inputs, outputs, kwargs = [x], [x * 2], {}
    if how == "a shared variable":
        outputs = [x * shared]
    elif how == "updates":
        kwargs["updates"] = {shared: shared + x}
    fn = pytensor.function(inputs, outputs, mode="LLVM", **kwargs)
    fn.trust_input = how == "trust_input"
    fn(np.ones(3))
    fn(np.ones(3))
    assert fn.vm.graph_fn.overloads
    assert fn.lean_call.__func__.__globals__.get("entry") is None
