"""Scalar Composites lowered as one function (``llvm_backend.lowerings.composite``): stock's arithmetic written
into one body, values as the py linker and stock NUMBA, stock's lowering untouched outside the LLVM mode."""

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

import llvm_backend  # noqa: F401
from llvm_backend.lowerings.composite import composite_source, lowering_composites
from llvm_backend.tools.testing import compare_llvm_numba_and_py

DTYPES = ["int8", "uint8", "int32", "int64", "uint64", "float32", "float64", "bool"]


def _composite(outputs_of):
    """A Composite of float64 scalars ``a``, ``b``, ``c`` with outputs ``outputs_of(a, b, c)``."""
    a, b, c = (ps.float64(n) for n in "abc")
    return Composite([a, b, c], list(outputs_of(a, b, c)))


def test_arithmetic_and_numpy_ufuncs_are_written_into_the_body():
    op = _composite(lambda a, b, c: [ps.exp(a * b + c) * a, ps.switch(ps.gt(a, b), a, c), ps.sigmoid(c)])
    source, env, key = composite_source(op)
    body = source.splitlines()[1:]
    assert any(" * " in line for line in body) and any(" + " in line for line in body)
    assert any("np.exp(" in line for line in body) and any("np.greater(" in line for line in body)
    # Switch and Sigmoid have lowerings of their own in stock: called, not written out
    called = sorted(name for name in env if name.startswith("f"))
    assert len(called) == 2, source
    assert key is not None


def test_a_constant_output_is_returned():
    a = ps.float64("a")
    source, env, _ = composite_source(Composite([a], [a * 2.0, ps.constant(np.float64(3.0))]))
    constants = [name for name in env if name.startswith("c")]
    assert len(constants) == 2 and source.rstrip().endswith(f"{constants[1]},)"), source


def test_narrow_outputs_are_cast_as_stock_casts_them():
    a, b = ps.int8("a"), ps.int8("b")
    source, _, _ = composite_source(Composite([a, b], [a * b + a]))
    assert source.count("direct_cast(") == 2, source


def test_a_composite_is_typed_as_one_function(monkeypatch):
    """Under stock, every inner node is a separate jitted function, typed and compiled at its call; here the
    Composite is one: compiling a 40-multiplication Composite compiles one scalar function, not 40 more."""
    xs = pt.dvectors(*(f"x{i}" for i in range(6)))
    out = xs[0]
    for i in range(40):
        out = pt.exp(out * xs[i % 6] + xs[(i + 1) % 6])
    compiled = Counter()
    compile_ = dispatcher.Dispatcher.compile

    def counting(self, sig):
        compiled[self.py_func.__name__] += 1
        return compile_(self, sig)

    monkeypatch.setattr(dispatcher.Dispatcher, "compile", counting)
    with config.change_flags(numba__cache=False):
        for mode in ("NUMBA", "LLVM"):
            compiled.clear()
            fn = pytensor.function(xs, out, mode=mode)
            fn(*(np.full(3, 0.01) for _ in xs))
            assert any(isinstance(n.op, Elemwise) for n in fn.maker.fgraph.apply_nodes)
            if mode == "NUMBA":
                assert compiled["multiply"] + compiled["mul"] >= 40, compiled
            else:
                assert compiled["multiply"] + compiled["mul"] + compiled["exp"] + compiled["add"] == 0, compiled
                assert compiled["composite"] == 1, compiled


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
