import ast
import operator
from functools import reduce

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.codegen import MAX_ITEMS, call_source, tuple_source
from llvm_backend.measure import unoptimized_ir_size
from llvm_backend.testing import compare_llvm_numba_and_py


def _widest_display(source: str) -> int:
    widths = [0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple | ast.List):
            widths.append(len(node.elts))
        elif isinstance(node, ast.Call):
            widths.append(len(node.args))
    return max(widths)


@pytest.mark.parametrize("n", [1, 30, 31, 61, 901, 1000])
def test_tuple_and_call_sources_stay_narrow_and_keep_order(n):
    names = [f"x{i}" for i in range(n)]
    for source in (tuple_source(names), call_source("f", names)):
        assert _widest_display(source) <= MAX_ITEMS
        assert [node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name) and node.id[0] == "x"]
    env = {f"x{i}": i for i in range(n)} | {"flatten_tuple": lambda t: tuple(x for g in t for x in g)}
    assert eval(tuple_source(names), env) == tuple(range(n))
    env["f"] = lambda *args: args
    assert eval(call_source("f", names), env) == tuple(range(n))


def _vectors(n):
    return [pt.dvector(f"x{i}") for i in range(n)], [np.full(4, float(i)) for i in range(n)]


@pytest.mark.parametrize("n", [1, 30, 31, 32, 100])
def test_many_inputs_and_outputs(n):
    xs, values = _vectors(n)
    compare_llvm_numba_and_py(xs, [x * 2 for x in xs], values)


@pytest.mark.parametrize("n", [1, 30, 31, 32, 100])
def test_many_inputs_one_output(n):
    # A chain of binary adds: fusion makes it one n-input Add under NUMBA and LLVM, while the py
    # reference (minimal rewrites) keeps the chain, since numpy ufuncs take at most 32 operands.
    xs, values = _vectors(n)
    compare_llvm_numba_and_py(xs, reduce(operator.add, (x.sum() for x in xs)), values)


@pytest.mark.parametrize("n", [31, 60])
def test_wide_concatenate(n):
    xs, values = _vectors(n)
    compare_llvm_numba_and_py(xs, pt.concatenate(xs), values)


def test_graph_function_ir_grows_linearly_with_width():
    def graph_ir(n):
        xs, _ = _vectors(n)
        fn = pytensor.function(xs, [x * 2 for x in xs] + [pt.concatenate(xs)], mode="LLVM")
        return unoptimized_ir_size(fn).kernel

    small, large = graph_ir(32), graph_ir(64)
    assert small > 0
    assert large < 2.2 * small


def test_non_contiguous_constants_become_arguments():
    x = pt.dvector("x")
    design = np.arange(40.0).reshape(10, 4)
    columns = [pt.constant(design[:, i]) for i in range(4)]
    out = sum(c * x[i] for i, c in enumerate(columns))
    fn, result = compare_llvm_numba_and_py([x], out, [np.arange(4.0)])
    np.testing.assert_allclose(result, design @ np.arange(4.0))
    assert len(fn.maker.linker.constant_params) == 4
