"""``SolveTriangular`` and ``ExtractDiag`` under the LLVM mode (`llvm_backend.lowerings.linalg`): the py linker's
and stock NUMBA's values, stock's ``LinAlgError``s and zero-pivot NaNs, an intrinsic of the graph function for
float systems and every diagonal, and stock's function for other systems."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.tensor.basic import ExtractDiag
from pytensor.tensor.linalg import cholesky, solve_triangular
from pytensor.tensor.linalg.solvers.triangular import SolveTriangular

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import compare_llvm_numba_and_py

A = pt.dmatrix("A")
B = pt.dmatrix("B")
b = pt.dvector("b")
F = pt.fmatrix("F")
rng = np.random.default_rng(5)
a_value = np.tril(rng.normal(size=(4, 4))) + 4 * np.eye(4)
b_value = rng.normal(size=(4, 3))
spd = a_value @ a_value.T

CASES = {
    "lower, matrix right side": ([A, B], solve_triangular(A, B, lower=True), [a_value, b_value]),
    "upper, vector right side": ([A, b], solve_triangular(A.T, b, lower=False), [a_value, b_value[:, 0]]),
    "unit diagonal": ([A, B], solve_triangular(A, B, lower=True, unit_diagonal=True), [a_value, b_value]),
    "transposed system": ([A, B], solve_triangular(A, B, lower=True, trans=1), [a_value, b_value]),
    "a strided right side": ([A, B], solve_triangular(A, B[:, ::-2], lower=True), [a_value, b_value]),
    "a gradient": (
        [A, B],
        pt.grad((solve_triangular(A, B, lower=True) ** 2).sum(), [A, B]),
        [a_value, b_value],
    ),
    "a Cholesky factor, as MvNormal's logp": (
        [A, B],
        (solve_triangular(cholesky(A), B, lower=True) ** 2).sum(),
        [spd, b_value],
    ),
    "float32": ([F], solve_triangular(F, F.T, lower=True), [a_value.astype(np.float32)]),
    "a zero pivot": ([A, B], solve_triangular(A, B, lower=True), [np.tril(np.ones((4, 4))) - np.eye(4), b_value]),
    "an empty right side": ([A, B], solve_triangular(A, B, lower=True), [a_value, np.zeros((4, 0))]),
}


def _solves(fn):
    return [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, SolveTriangular)]


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_py_and_stock_and_the_solves_are_ours(name):
    inputs, output, values = CASES[name]
    rtol = 1e-4 if name == "float32" else None
    fn, _ = compare_llvm_numba_and_py(inputs, output, values, rtol=rtol)
    plan = plan_graph(fn.maker.fgraph)
    assert _solves(fn), "the rewritten graph kept no SolveTriangular"
    assert all(plan[node].lowering is LOWERINGS[SolveTriangular] for node in _solves(fn))


def test_a_system_of_mixed_dtypes_is_stocks_function():
    fn, _ = compare_llvm_numba_and_py([A, F], solve_triangular(A, F, lower=True), [a_value, np.ones((4, 2), "f")])
    plan = plan_graph(fn.maker.fgraph)
    assert _solves(fn) and all(plan[node].lowering is None for node in _solves(fn))


@pytest.mark.parametrize(("a", "right"), [(np.eye(3), np.ones((2, 2))), (np.ones((3, 2)), np.ones((3, 2)))])
def test_a_system_of_the_wrong_shape_is_stocks_linalg_error(a, right):
    messages = {}
    for mode in ("NUMBA", "LLVM"):
        fn = pytensor.function([A, B], solve_triangular(A, B, lower=True), mode=mode)
        with pytest.raises(np.linalg.LinAlgError) as raised:
            fn.vm.jit_fn(a, right)
        messages[mode] = str(raised.value)
    assert messages["LLVM"] == messages["NUMBA"]


def test_a_solve_is_an_intrinsic_of_the_graph_function():
    fn = pytensor.function([A, B], solve_triangular(A, B, lower=True), mode="LLVM")
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), SolveTriangular)]
    assert len(calls) == 1 and isinstance(calls[0].function, _Intrinsic)


T = pt.tensor3("T")
L = pt.lmatrix("L")
t_value = rng.normal(size=(2, 3, 4))

DIAGONALS = {
    "a matrix's": ([A], pt.diagonal(A), [a_value]),
    "above the main diagonal": ([A], pt.diagonal(A, offset=2), [a_value]),
    "below it, of a reversed matrix": ([A], pt.diagonal(A[::-1], offset=-1), [a_value]),
    "past the matrix": ([A], pt.diagonal(A, offset=5), [a_value]),
    "of a tensor's last two axes": ([T], pt.diagonal(T, axis1=1, axis2=2), [t_value]),
    "of axes in reverse order": ([T], pt.diagonal(T, offset=1, axis1=2, axis2=0), [t_value]),
    "a copy, written after": ([A], pt.set_subtensor(ExtractDiag(view=False)(A)[0], 7.0), [a_value]),
    "a gradient": ([A], pt.grad(pt.log(pt.diagonal(A)).sum(), A), [a_value]),
    "of integers": ([L], pt.diagonal(L), [np.arange(12).reshape(3, 4)]),
}


@pytest.mark.parametrize("name", list(DIAGONALS))
def test_diagonals_match_py_and_stock_and_are_ours(name):
    inputs, output, values = DIAGONALS[name]
    fn, _ = compare_llvm_numba_and_py(inputs, output, values)
    plan = plan_graph(fn.maker.fgraph)
    diagonals = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, ExtractDiag)]
    assert diagonals, "the rewritten graph kept no ExtractDiag"
    assert all(plan[node].lowering is LOWERINGS[ExtractDiag] for node in diagonals)


def test_a_diagonal_is_an_intrinsic_of_the_graph_function():
    fn = pytensor.function([T], pt.diagonal(T, axis1=0, axis2=2), mode="LLVM")
    source = graph_source(fn.maker.fgraph)
    calls = [call for call in source.plan.calls if isinstance(getattr(call.label, "op", None), ExtractDiag)]
    assert len(calls) == 1 and isinstance(calls[0].function, _Intrinsic)
