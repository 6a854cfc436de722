"""All, Any, Max and Min of a vector made of scalars as an elementwise chain (`llvm_backend.rewrites.reductions`):
the py linker's and stock NUMBA's values, NaN and mixed signs included, no vector left in the compiled graph and
one allocation fewer per call than stock; what it leaves alone."""

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytensor.tensor.basic import MakeVector
from pytensor.tensor.elemwise import CAReduce

import llvm_backend  # noqa: F401
from llvm_backend.tools.measure import nrt_allocations_per_call
from llvm_backend.tools.testing import PY_MODE, assert_same_result, compare_llvm_numba_and_py

a, b, c = pt.dscalars("a", "b", "c")
v = pt.dvector("v")
REDUCTIONS = {"all": pt.all, "any": pt.any, "max": pt.max, "min": pt.min}


def _checks(a, b, c, reduction):
    """A reduction of three 0-d values as PyMC's check_parameters builds them (booleans for all/any)."""
    if reduction in ("all", "any"):
        return REDUCTIONS[reduction]([pt.all(pt.ge(v, a)), pt.gt(b, 0), pt.le(c, 1)])
    return REDUCTIONS[reduction](pt.stack([pt.sum(v) * a, b, c]))


def _vector_nodes(fn) -> list:
    nodes = fn.maker.fgraph.apply_nodes
    inner = [n for node in nodes if hasattr(node.op, "fgraph") for n in node.op.fgraph.apply_nodes]
    return [n for n in [*nodes, *inner] if isinstance(n.op, MakeVector) or "Join" in str(n.op)]


VALUES = [-np.inf, -2.0, -0.0, 0.0, 0.5, 1.0, 3.0, np.inf, np.nan]


@pytest.mark.parametrize("reduction", list(REDUCTIONS))
def test_values_match_py_and_stock(reduction):
    inputs, output = [v, a, b, c], _checks(a, b, c, reduction)
    functions = {mode: pytensor.function(inputs, output, mode=mode) for mode in (PY_MODE, "NUMBA", "LLVM")}
    assert not _vector_nodes(functions["LLVM"])
    assert _vector_nodes(functions["NUMBA"])
    vector = np.array([0.25, 1.5, -0.5])
    for values in itertools.product(VALUES, repeat=3):
        want = functions[PY_MODE](vector, *values)
        for mode in ("NUMBA", "LLVM"):
            assert_same_result(functions[mode](vector, *values), want, f"{reduction}{values} under {mode} vs py")


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=3, max_size=3))
def test_max_and_min_match_anywhere(values):
    x, y, z = values
    for reduction in ("max", "min"):
        compare_llvm_numba_and_py([a, b, c], REDUCTIONS[reduction](pt.stack([a, b, c])), [x, y, z])


def test_integers_and_two_values():
    i, j = pt.lscalars("i", "j")
    compare_llvm_numba_and_py([i, j], [pt.max(pt.stack([i, j])), pt.min(pt.stack([i, j]))], [-3, 7])


def test_one_allocation_fewer_than_stock():
    outputs = [_checks(a, b, c, "all"), pt.switch(_checks(a, b, c, "all"), v * a, v)]
    arguments = (np.array([0.25, 1.5, -0.5]), *map(np.array, (-1.0, 2.0, 0.5)))
    counts = {}
    for mode in ("LLVM", "NUMBA"):
        fn = pytensor.function([v, a, b, c], outputs, mode=mode)
        jit_fn = fn.vm.jit_fn
        counts[mode] = nrt_allocations_per_call(lambda jit_fn=jit_fn: jit_fn(*arguments))
    assert counts["LLVM"] == counts["NUMBA"] - 1


def test_what_is_left_alone():
    """A lone value and a reduction of a vector input."""
    lone = pytensor.function([a], pt.max(pt.stack([a])), mode="LLVM")
    assert not any(isinstance(n.op, CAReduce) for n in lone.maker.fgraph.apply_nodes)
    assert lone(2.5) == 2.5
    vector = pytensor.function([v], pt.max(v), mode="LLVM")
    assert any(isinstance(n.op, CAReduce) for n in vector.maker.fgraph.apply_nodes)
    assert vector(np.array([1.0, 3.0])) == 3.0
