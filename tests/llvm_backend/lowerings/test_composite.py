"""Scalar Composites lowered as one function (``llvm_backend.lowerings.composite``): stock's arithmetic written
into one body, values as the py linker and stock NUMBA, stock's lowering untouched outside the LLVM mode."""

import re
from collections import Counter

import numba
import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from numba.core import dispatcher
from pytensor import config
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key
from pytensor.scalar import Composite
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.scalarize import ScalarizedElemwise

import llvm_backend  # noqa: F401
from llvm_backend.lowerings.composite import composite_body, lowering_composites
from llvm_backend.tools.inspect_ir import stage_text
from llvm_backend.tools.testing import compare_llvm_numba_and_py

DTYPES = ["int8", "uint8", "int32", "int64", "uint64", "float32", "float64", "bool"]


def _composite(outputs_of):
    """A Composite of float64 scalars ``a``, ``b``, ``c`` with outputs ``outputs_of(a, b, c)``."""
    a, b, c = (ps.float64(n) for n in "abc")
    return Composite([a, b, c], list(outputs_of(a, b, c)))


def test_arithmetic_numpy_ufuncs_and_switches_are_calls_of_the_plan():
    op = _composite(lambda a, b, c: [ps.exp(a * b + c) * a, ps.switch(ps.gt(a, b), a, c), ps.sigmoid(c)])
    body = composite_body(op)
    lines = body.text.splitlines()
    for call in ("operator.mul(", "operator.add(", "np.exp(", "np.greater(", "select("):
        assert any(call in line for line in lines), body.text
    # Sigmoid has a lowering of its own in stock: its function is called
    stock = [call.function for call in body.plan.calls if isinstance(call.function, numba.core.dispatcher.Dispatcher)]
    assert len(stock) == 1, body.text
    assert len(body.plan.calls) == len(lines) - 1 and body.key is not None


def test_an_n_ary_add_is_added_from_the_left():
    a, b, c, d = (ps.float64(n) for n in "abcd")
    body = composite_body(Composite([a, b, c, d], [a + b + c + d]))
    assert body.text.splitlines() == [
        "t0 = operator.add(i0, i1)",
        "t1 = operator.add(t0, i2)",
        "t2 = operator.add(t1, i3)",
        "return t2",
    ]


def test_a_constant_output_is_returned():
    a = ps.float64("a")
    body = composite_body(Composite([a], [a * 2.0, ps.constant(np.float64(3.0))]))
    assert body.constants == (np.float64(2.0), np.float64(3.0))
    assert body.text.splitlines()[-1] == "return t0, c1"
    assert body.plan.outputs == (3, 2)


def test_narrow_outputs_are_cast_as_stock_casts_them():
    a, b = ps.int8("a"), ps.int8("b")
    body = composite_body(Composite([a, b], [a * b + a]))
    assert body.text.count("direct_cast(") == 2, body.text
    assert body.constants == (np.dtype("int8"),)  # one argument for every cast to it


def _compiled_per_mode(monkeypatch, inputs, output, values) -> tuple[Counter, Counter]:
    """The dispatcher compiles, by function name, of compiling and calling ``output`` under NUMBA, then under
    LLVM (numba's cache off); each graph keeps an Elemwise loop."""
    compiled = {"NUMBA": Counter(), "LLVM": Counter()}
    compile_ = dispatcher.Dispatcher.compile
    mode = None

    def counting(self, sig):
        compiled[mode][self.py_func.__name__] += 1
        return compile_(self, sig)

    monkeypatch.setattr(dispatcher.Dispatcher, "compile", counting)
    with config.change_flags(numba__cache=False):
        for mode in compiled:
            fn = pytensor.function(inputs, output, mode=mode)
            fn(*values)
            assert any(isinstance(n.op, Elemwise) for n in fn.maker.fgraph.apply_nodes)
    return compiled["NUMBA"], compiled["LLVM"]


def test_a_composite_is_typed_as_one_function(monkeypatch):
    """Under stock, every inner node is a separate jitted function, typed and compiled at its call; here the
    Composite is one body, emitted in its loop: compiling a 40-multiplication Composite compiles no scalar
    function, where stock compiles 40 or more."""
    xs = pt.dvectors(*(f"x{i}" for i in range(6)))
    out = xs[0]
    for i in range(40):
        out = pt.exp(out * xs[i % 6] + xs[(i + 1) % 6])
    stock, ours = _compiled_per_mode(monkeypatch, xs, out, [np.full(3, 0.01) for _ in xs])
    assert stock["multiply"] + stock["mul"] >= 40, stock
    assert ours["multiply"] + ours["mul"] + ours["exp"] + ours["add"] == 0, ours
    assert ours["composite"] == 0 and ours["llvm_graph_fn"] == 1, ours


def test_switches_compile_no_function_of_their_own(monkeypatch):
    """A model's bounds checks: under stock every Switch of a Composite is a ``switch`` function compiled at its
    call; here they are ``select`` calls in the Composite's body."""
    xs = pt.dvectors(*(f"x{i}" for i in range(4)))
    terms = [pt.switch(pt.ge(xs[i], 0), pt.log(xs[i] + 1) * xs[(i + 1) % 4], -np.inf) for i in range(4)]
    out = pt.add(*terms)
    values = [np.array([0.5, -1.0, 2.0]) * (i + 1) for i in range(4)]
    stock, ours = _compiled_per_mode(monkeypatch, xs, out, values)
    assert stock["switch"] >= 4, stock
    assert ours["switch"] == 0 and ours["composite"] == 0, ours
    compare_llvm_numba_and_py(xs, out, values)


@pytest.mark.parametrize(
    "condition_dtype, x_dtype, y_dtype",
    [
        ("bool", "int8", "float32"),
        ("float64", "uint64", "int64"),
        ("int32", "float32", "float32"),
        ("float32", "int16", "uint8"),
        ("uint8", "float64", "int64"),
    ],
)
def test_switch_values_and_dtypes_agree_with_the_py_linker_and_stock(condition_dtype, x_dtype, y_dtype):
    rng = np.random.default_rng(1)
    c = pt.vector("c", dtype=condition_dtype)
    x, y = pt.vector("x", dtype=x_dtype), pt.vector("y", dtype=y_dtype)
    outputs = [pt.switch(c, x * 2, y + 1), pt.switch(c * x > y, x, y) * 3]
    condition = _values(condition_dtype, (9,), rng)
    if condition_dtype.startswith("float"):
        condition[:3] = [np.nan, 0.0, -0.0]
    values = [condition, _values(x_dtype, (9,), rng), _values(y_dtype, (9,), rng)]
    _, results = compare_llvm_numba_and_py([c, x, y], outputs, values)
    assert [r.dtype for r in results] == [o.type.dtype for o in outputs]


def test_stock_lowers_composites_outside_the_llvm_mode():
    op = _composite(lambda a, b, c: [a * b + c])
    node = op.make_node(*(v.type() for v in op.fgraph.inputs))
    stock_fn, stock_key = numba_funcify_and_cache_key(op, node=node)
    with lowering_composites():
        ours_fn, ours_key = numba_funcify_and_cache_key(op, node=node)
        _, again = numba_funcify_and_cache_key(op, node=node)
    assert ours_key == again and ours_key != stock_key
    assert stock_fn.py_func.__name__ != "composite" and ours_fn.py_func.__name__ == "composite"
    assert _called_from_nopython(stock_fn) == _called_from_nopython(ours_fn) == 5.0


def _called_from_nopython(function):
    """``function(1.0, 2.0, 3.0)`` from nopython code (node functions have no CPython wrapper)."""

    @numba.njit
    def call(a, b, c):
        return function(a, b, c)

    return call(1.0, 2.0, 3.0)


def _values(dtype, shape, rng):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind == "f":
        return rng.normal(0, 3, shape).astype(dtype)
    return rng.integers(0, 120, shape).astype(dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", DTYPES)
def test_values_agree_with_the_py_linker_and_stock(dtype):
    rng = np.random.default_rng(0)
    x, y = pt.vector("x", dtype=dtype), pt.vector("y", dtype=dtype)
    s = pt.scalar("s", dtype=dtype)
    outputs = [
        x * y + x,
        (x + y + s) * x,
        pt.maximum(x, y) + s * x,
        pt.switch(x > y, x * s, y + 2),
        pt.cast(x * 3, "int16") + 1,
        (x * y).sum(),
        pt.exp(pt.cast(x, "float64")) * y,
    ]
    if dtype != "bool":
        outputs.append(pt.sqr(x * y) + pt.abs(y))
    values = [_values(dtype, (7,), rng), _values(dtype, (7,), rng), _values(dtype, (), rng)]
    compare_llvm_numba_and_py([x, y, s], outputs, values)


def test_multi_output_composites_and_inner_constants():
    x, y = pt.dvectors("x", "y")
    a = pt.exp(x * 2.5 - y)
    b = pt.log1p(pt.abs(a * y)) + 3
    compare_llvm_numba_and_py([x, y], [a, b, a * b], [np.linspace(-1, 1, 5), np.linspace(2, 3, 5)])


def test_a_nested_multi_output_composite_is_one_call_unpacked():
    a, b = ps.float64("a"), ps.float64("b")
    inner = Composite([a, b], [a + b, ps.exp(a) * b])
    x, y = ps.float64("x"), ps.float64("y")
    total, product = inner(x, y)
    outer = Composite([x, y], [total * product - x, ps.log1p(ps.abs(product))])
    body = composite_body(outer)
    assert body.text.splitlines()[0] == "t0, t1 = f0(i0, i1)", body.text
    xs, ys = pt.dvectors("xs", "ys")
    outputs = Elemwise(outer)(xs, ys)
    values = [np.linspace(-2, 2, 7), np.linspace(-3, 3, 7)]
    expected = [(values[0] + values[1]) * np.exp(values[0]) * values[1] - values[0]]
    expected.append(np.log1p(np.abs(np.exp(values[0]) * values[1])))
    # Not against the py linker: its Composite.impl reads the inner Composite's second output for both
    # (PyTensor 3.3.8), giving product * product - x.
    for mode in ("NUMBA", "LLVM"):
        results = pytensor.function([xs, ys], outputs, mode=mode)(*values)
        for got, want in zip(results, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=mode)


@pytest.mark.parametrize("dtype", ["int8", "float32", "float64"])
def test_composites_are_emitted_in_the_graph_function(monkeypatch, dtype):
    """A Composite on scalars (a node of the graph) and one in an Elemwise loop compile no function of their
    own: their code is written into the graph function's, with their constants (a narrow dtype's casts take
    it as one)."""
    a, b = pt.scalar("a", dtype=dtype), pt.scalar("b", dtype=dtype)
    x = pt.vector("x", dtype=dtype)
    outputs = [a * b + a * 3, (x * a + b) * x - 2]
    values = [np.array(3, dtype=dtype), np.array(2, dtype=dtype), np.arange(5).astype(dtype)]
    compiled = Counter()
    compile_ = dispatcher.Dispatcher.compile

    def counting(self, sig):
        compiled[self.py_func.__name__] += 1
        return compile_(self, sig)

    monkeypatch.setattr(dispatcher.Dispatcher, "compile", counting)
    with config.change_flags(numba__cache=False):
        fn = pytensor.function([a, b, x], outputs, mode="LLVM")
        fn(*values)
    ops = [type(n.op) for n in fn.maker.fgraph.apply_nodes]
    if dtype == "float64":  # scalarized: a Composite node of the graph beside the loop
        assert Composite in ops and ScalarizedElemwise in ops, ops
    else:
        assert [
            isinstance(n.op, Elemwise) and isinstance(n.op.scalar_op, Composite) for n in fn.maker.fgraph.apply_nodes
        ].count(True) == 2, ops
    assert compiled["llvm_graph_fn"] == 1 and not {"composite", "elemwise_loop"} & set(compiled), compiled
    compare_llvm_numba_and_py([a, b, x], outputs, values)


def test_a_scipy_special_op_of_doubles_is_its_cython_routine_called_directly():
    """``psi`` (the gradient of ``gammaln``) and ``gammainc``: stock resolves their routine's address in object
    mode, a function per op in every process; the graph calls the routine (`llvm_backend_intrinsics.special`)."""
    x = pt.dvector("x")
    outputs = [pt.psi(x) * 2, pt.gammainc(x, x + 1.0), pt.grad(pt.gammaln(x).sum(), x)]
    fn, _ = compare_llvm_numba_and_py([x], outputs, [np.array([0.5, 1.0, 3.7])])
    optimized = stage_text(fn, "llvm-opt")
    for routine in ("psi", "gammainc"):
        assert re.search(rf"call [^\n]*@llvm_backend_special_\w*{routine}\(", optimized), routine
