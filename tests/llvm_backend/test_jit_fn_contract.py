"""PyTensor's contract for a Numba-linked function: ``fn.vm.jit_fn(*input values)`` is a numba dispatcher,
callable from Python and from nopython code (nutpie calls it inside a ``numba.cfunc``), returning the outputs.
Our graph function may take packs and constant parameters and return outputs in lists; ``jit_fn`` hides
them."""

import inspect

import numba
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.registry import CPUDispatcher

import llvm_backend  # noqa: F401
from llvm_backend.dispatch import MAX_ITEMS
from llvm_backend.tools.testing import PY_MODE, assert_same_result

LARGE = np.linspace(0.0, 1.0, 200_000)
"""Over numba's 1 MB limit for embedded constants: a parameter of our graph function."""


def _nopython_caller(n_inputs: int):
    """An ``@njit`` function ``caller(jit_fn, *inputs)`` returning ``jit_fn(*inputs)``."""
    names = [f"a{k}" for k in range(n_inputs)]
    namespace = {}
    exec(f"def caller(jit_fn, {', '.join(names)}):\n    return jit_fn({', '.join(names)})\n", namespace)
    return numba.njit(namespace["caller"])


def _graphs():
    x = pt.dvector("x")
    design = np.arange(40.0).reshape(10, 4)
    many = [pt.dvector(f"v{k}") for k in range(MAX_ITEMS + 1)]
    many_values = [np.arange(3.0) + k for k in range(len(many))]
    return {
        "large constant": ([x], [pt.exp(pt.constant(LARGE) * x[0]).sum() + x], [np.arange(3.0)]),
        "strided constant": ([x], [pt.constant(design[:, 1]) * x[0] + x[1]], [np.arange(4.0)]),
        "31 inputs": (many, [pt.add(*many) * 2, pt.concatenate(many)], many_values),
        "35 outputs": ([x], [x * k + k for k in range(35)], [np.arange(3.0)]),
        "no inputs": ([], [pt.constant(design).sum(axis=0), pt.constant(design)[1:]], []),
    }


GRAPHS = _graphs()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRAPHS))
def test_every_numba_function_the_thunk_hands_out_is_callable_from_python(name):
    # numba's call of a function compiled without a CPython wrapper, from Python, is a segmentation fault: none
    # may be a public attribute of fn.vm
    inputs, outputs, values = GRAPHS[name]
    fn = pytensor.function(inputs, outputs, mode="LLVM")
    fn.vm.jit_fn(*values)
    public = {name: value for name, value in vars(fn.vm).items() if not name.startswith("_")}
    # a graph function of outputs in lists is wrapped (ListedOutputs)
    public = {name: getattr(value, "dispatcher", value) for name, value in public.items()}
    dispatchers = {name: value for name, value in public.items() if isinstance(value, CPUDispatcher)}
    assert {"jit_fn", "graph_fn"} <= set(dispatchers)
    for attribute, dispatcher in dispatchers.items():
        assert not dispatcher.targetoptions.get("no_cpython_wrapper", False), attribute
    assert fn.vm._typed_entry.targetoptions["no_cpython_wrapper"]
    want = pytensor.function(inputs, outputs, mode="NUMBA")(*values)
    for container, value in zip(fn.input_storage, values, strict=True):
        container.storage[0] = value
    for k, (a, b) in enumerate(zip(fn.vm.call_graph(), want, strict=True)):
        assert_same_result(a, b, f"{name}: output {k} of the graph function")


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRAPHS))
def test_jit_fn_returns_what_stock_returns_from_python_and_nopython(name):
    inputs, outputs, values = GRAPHS[name]
    results = {}
    for mode in ("NUMBA", "LLVM"):
        jit_fn = pytensor.function(inputs, outputs, mode=mode).vm.jit_fn
        assert isinstance(jit_fn, CPUDispatcher)
        results[mode] = (jit_fn(*values), _nopython_caller(len(values))(jit_fn, *values))
    want = results["NUMBA"][0]
    for got in results["LLVM"]:
        assert len(got) == len(want)
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same_result(a, b, f"{name}: output {k}")


@pytest.mark.slow
def test_jit_fn_of_240_inputs_matches_the_py_linker():
    # Stock takes minutes to compile a 240-input graph, so the reference here is the py linker.
    xs = [pt.dvector(f"x{k}") for k in range(240)]
    values = [np.arange(2.0) * k for k in range(240)]
    outputs = [pt.concatenate(xs).sum(), xs[7] * 2]
    fn = pytensor.function(xs, outputs, mode="LLVM")
    assert fn.vm.graph_source.packs
    want = pytensor.function(xs, outputs, mode=PY_MODE)(*values)
    for got in (fn.vm.jit_fn(*values), _nopython_caller(240)(fn.vm.jit_fn, *values)):
        for a, b in zip(got, want, strict=True):
            assert_same_result(a, b, "240 inputs")


def test_jit_fn_inside_a_cfunc_as_nutpie_calls_it():
    x = pt.dvector("x")
    jit_fn = pytensor.function([x], [pt.exp(pt.constant(LARGE) * x[0]).sum() * x], mode="LLVM").vm.jit_fn

    @numba.cfunc("float64(float64)")
    def logp(value):
        return jit_fn(np.full(2, value))[0][1]

    assert logp.ctypes(0.5) == pytest.approx(np.exp(LARGE * 0.5).sum() * 0.5)


def _defined(module) -> set[str]:
    """The names of the functions ``module`` defines, but numba's reference-count helpers (every module has them)."""
    return {f.name for f in module.functions if not f.is_declaration and not f.name.startswith("NRT_")}


@pytest.mark.parametrize("name", ["large constant", "35 outputs", "plain"])
def test_a_cfunc_calling_jit_fn_links_none_of_the_graph(name):
    # nutpie's cfunc used to link the graph function's module and optimize and compile it again.
    x = pt.dvector("x")
    inputs, outputs, _ = GRAPHS[name] if name in GRAPHS else ([x], [pt.exp(x).sum() * x], None)
    fn = pytensor.function(inputs, outputs, mode="LLVM")
    jit_fn = fn.vm.jit_fn

    @numba.cfunc("float64(float64)")
    def first(value):
        return jit_fn(np.full(3, value))[0].sum()

    want = pytensor.function(inputs, outputs, mode=PY_MODE)(np.full(3, 0.5))[0].sum()
    assert first.ctypes(0.5) == pytest.approx(want)
    fn(np.full(3, 0.5))
    graph_fn = fn.vm.graph_fn.dispatcher if hasattr(fn.vm.graph_fn, "dispatcher") else fn.vm.graph_fn
    # what a caller linking a library would get (its own module is empty when loaded from the cache)
    graph_functions = set().union(*(_defined(c.library._get_module_for_linking()) for c in graph_fn.overloads.values()))
    assert any("llvm_graph_fn" in name for name in graph_functions)
    defined = _defined(first._library._final_module)
    assert not defined & graph_functions
    assert all("first" in name or "llvm_graph_entry" in name for name in defined)


def test_jit_fn_raises_what_the_graph_function_raises():
    x, y = pt.dvector("x"), pt.dvector("y")
    fn = pytensor.function([x, y], [pt.constant(LARGE[:3]) * x + y], mode="LLVM")
    values = (np.ones(3), np.ones(2))
    with pytest.raises(ValueError) as from_thunk:
        fn(*values)
    caller = _nopython_caller(2)
    for call in (fn.vm.jit_fn, lambda *v: caller(fn.vm.jit_fn, *v)):
        with pytest.raises(ValueError) as raised:
            call(*values)
        assert str(raised.value) in str(from_thunk.value)


def test_a_cached_caller_of_jit_fn_is_compiled_but_not_cached(tmp_path, monkeypatch):
    # jit_fn calls the graph function through an address of this process, which no cache may keep.
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    x = pt.dvector("x")
    jit_fn = pytensor.function([x], [pt.exp(x).sum()], mode="LLVM").vm.jit_fn

    @numba.njit(cache=True)
    def caller(value):
        return jit_fn(value)[0]

    with pytest.warns(numba.NumbaWarning, match="dynamic globals"):
        assert caller(np.zeros(4)) == 4.0
    assert not list(tmp_path.rglob("*.nbc"))


def test_jit_fn_of_no_outputs_returns_what_stock_returns():
    x = pt.dvector("x")
    got = {
        mode: pytensor.function([x], [], mode=mode, on_unused_input="ignore").vm.jit_fn for mode in ("NUMBA", "LLVM")
    }
    value = np.arange(3.0)
    assert got["NUMBA"](value) is None
    assert got["LLVM"](value) is None
    assert _nopython_caller(1)(got["LLVM"], value) is None


def _jit_fns(inputs, outputs):
    return {mode: pytensor.function(inputs, outputs, mode=mode).vm.jit_fn for mode in ("NUMBA", "LLVM")}


@pytest.mark.slow
@pytest.mark.parametrize("n_inputs", [3, 60])
def test_jit_fn_given_the_wrong_number_of_arguments_raises_what_stock_raises(n_inputs):
    """From nopython code, numba's TypingError, as stock's. From Python, Python's TypeError, as stock's graph
    function raises (its jit_fn when numba's cache is off); with the cache on, stock hands out a ``*args`` wrapper,
    on which it is numba's TypingError."""
    xs = [pt.dscalar(f"x{k}") for k in range(n_inputs)]
    jit_fns = _jit_fns(xs, [pt.add(*xs)])
    with pytensor.config.change_flags(numba__cache=False):
        stock_graph_function = pytensor.function(xs, [pt.add(*xs)], mode="NUMBA").vm.jit_fn
    values = [np.array(float(k)) for k in range(n_inputs)]
    for wrong in (values[:-1], [*values, values[0]]):
        for jit_fn in (stock_graph_function, jit_fns["LLVM"]):
            with pytest.raises(TypeError, match=f"expected {n_inputs}, got {len(wrong)}"):
                jit_fn(*wrong)
        with pytest.raises(numba.TypingError):
            jit_fns["NUMBA"](*wrong)
        for jit_fn in jit_fns.values():
            with pytest.raises(numba.TypingError):
                _nopython_caller(len(wrong))(jit_fn, *wrong)
    for mode, jit_fn in jit_fns.items():
        assert jit_fn(*values)[0] == sum(range(n_inputs)), mode


def test_jit_fn_takes_one_parameter_per_input_as_stock_s_graph_function():
    xs = [pt.dscalar(f"x{k}") for k in range(4)]
    jit_fn = _jit_fns(xs, [pt.add(*xs)])["LLVM"]
    parameters = list(inspect.signature(jit_fn.py_func).parameters.values())
    assert [p.kind for p in parameters] == [inspect.Parameter.POSITIONAL_OR_KEYWORD] * 4


def _float32_cases():
    xs = [pt.dscalar(f"x{k}") for k in range(60)]
    vs = [pt.dvector(f"v{k}") for k in range(100)]
    x = pt.dvector("x")
    return {
        "60 float32 scalars": (
            xs,
            [sum((x - k) ** 2 / 7 for k, x in enumerate(xs))],
            [np.array(k * 1.1, dtype="float32") for k in range(60)],
        ),
        "a float32 vector among 100": (
            vs,
            [pt.concatenate(vs), pt.concatenate(vs).sum()],
            [np.arange(2.0) + k for k in range(99)] + [np.arange(2, dtype="float32")],
        ),
        "a float32 vector scaled by a float64 scalar": (
            [x, xs[0]],
            [x * xs[0]],
            [np.arange(3, dtype="float32"), np.array(1.5)],
        ),
    }


FLOAT32_CASES = _float32_cases()


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FLOAT32_CASES))
def test_jit_fn_on_arguments_of_other_types_computes_as_stock_does(name):
    # stock compiles its graph function again for the arguments' types and computes in them
    inputs, outputs, values = FLOAT32_CASES[name]
    jit_fns = _jit_fns(inputs, outputs)
    want = jit_fns["NUMBA"](*values)
    for got in (jit_fns["LLVM"](*values), _nopython_caller(len(values))(jit_fns["LLVM"], *values)):
        for k, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same_result(a, b, f"{name}: output {k}")
            np.testing.assert_array_equal(a, b)
