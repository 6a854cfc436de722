"""Products of data matrices by vectors as suits their width (`llvm_backend.rewrites.columns`): a linear predictor over
many columns as one matrix-vector product (a loop of ours over the columns, as rows, up to MAX_LOOP_ROWS observations; a
Dot over more), the coefficients read as one slice of the parameters; a product by a narrow matrix (few columns, or few
rows) as column products and row sums that fusion folds into its loops, a design matrix in a shared variable
(``pm.Data``) too. The py linker's and stock NUMBA's values, errors on wrong lengths, and what is left alone."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.tensor.basic import Join
from pytensor.tensor.math import Dot
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.variable import TensorConstant

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.columns import MAX_LOOP_ROWS, MIN_COLUMNS
from llvm_backend.tools.testing import compare_llvm_numba_and_py, rewritten_graph

N_OBS = 50


def _design(n_cols: int, dtype="float64", n_obs=N_OBS) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n_cols)
    return rng.normal(size=(n_obs, n_cols)).astype(dtype), rng.normal(size=n_obs).astype(dtype)


def _regression(n_cols: int, coefficient, dtype="float64", n_obs=N_OBS):
    """PyMC's shape of a regression: ``x = [intercept, log_sigma, b_0, ...]``, the mean a sum of each
    ``coefficient(x, i)`` times a constant column; its Normal log-density and gradient."""
    X, y = _design(n_cols, dtype, n_obs)
    x = pt.vector("x", shape=(n_cols + 2,), dtype=dtype)
    mu = x[:1] + sum(coefficient(x, i) * pt.constant(X)[:, i] for i in range(n_cols))
    sigma = pt.exp(x[1])
    logp = pt.sum(-0.5 * ((pt.constant(y) - mu) / sigma) ** 2 - x[1]) - 0.5 * pt.sum(x**2)
    return x, [logp, pt.grad(logp, x)]


def _slice(x, i):
    return x[2 + i : 3 + i]


def _ops(fgraph, op_class) -> list:
    return [node for node in fgraph.apply_nodes if isinstance(node.op, op_class)]


def _products(fgraph) -> list:
    """The nodes reading a constant matrix of the model's data (a product by it)."""
    return [
        node
        for node in fgraph.apply_nodes
        if any(isinstance(i, TensorConstant) and i.type.ndim == 2 for i in node.inputs)
    ]


def _one_loop_product(fgraph, n_cols: int, n_obs=N_OBS) -> bool:
    """Whether the graph's one product by its data is our loop over the columns as rows (a fused sum along
    them), and no Dot."""
    [product] = _products(fgraph)
    [matrix] = [i for i in product.inputs if isinstance(i, TensorConstant) and i.type.ndim == 2]
    return isinstance(product.op, FusedElemwise) and matrix.data.shape == (n_cols, n_obs) and not _ops(fgraph, Dot)


def _points(n_cols: int, dtype="float64") -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.normal(0, 0.5, size=n_cols + 2).astype(dtype) for _ in range(3)]


@pytest.mark.slow
@pytest.mark.parametrize("n_cols", [MIN_COLUMNS, 20])
def test_values_match_py_and_stock_and_the_predictor_is_one_product(n_cols):
    x, outputs = _regression(n_cols, _slice)
    for point in _points(n_cols):
        fn, _ = compare_llvm_numba_and_py([x], outputs, [point], rtol=1e-10, atol=1e-12)
    assert _one_loop_product(fn.maker.fgraph, n_cols)
    # the coefficients are x[2:2 + n_cols], a view: no join copies them
    assert not _ops(fn.maker.fgraph, Join)
    assert not _ops(rewritten_graph(outputs, [x], mode="NUMBA"), Dot)


@pytest.mark.slow
@pytest.mark.parametrize("n_obs", [MAX_LOOP_ROWS, MAX_LOOP_ROWS + 1])
def test_a_predictor_over_more_than_max_loop_rows_observations_is_a_dot(n_obs):
    x, outputs = _regression(MIN_COLUMNS, _slice, n_obs=n_obs)
    for point in _points(MIN_COLUMNS):
        fn, _ = compare_llvm_numba_and_py([x], outputs, [point], rtol=1e-9, atol=1e-9)
    if n_obs <= MAX_LOOP_ROWS:
        assert _one_loop_product(fn.maker.fgraph, MIN_COLUMNS, n_obs)
    else:
        [product] = _products(fn.maker.fgraph)
        assert isinstance(product.op, Dot) and product.inputs[0].data.shape == (n_obs, MIN_COLUMNS)


@pytest.mark.slow
def test_coefficients_that_are_not_one_slice_are_joined():
    """Scalars times columns (each an ExpandDims of a 0-d item), in reverse order: a join of them."""
    x, outputs = _regression(10, lambda x, i: x[11 - i])
    for point in _points(10):
        fn, _ = compare_llvm_numba_and_py([x], outputs, [point], rtol=1e-10, atol=1e-12)
    assert _one_loop_product(fn.maker.fgraph, 10)


@pytest.mark.slow
def test_float32():
    x, outputs = _regression(12, _slice, dtype="float32")
    for point in _points(12, dtype="float32"):
        fn, _ = compare_llvm_numba_and_py([x], outputs, [point], rtol=1e-4, atol=1e-4)
    assert _one_loop_product(fn.maker.fgraph, 12)


@pytest.mark.slow
def test_what_is_left_alone():
    """Fewer than MIN_COLUMNS columns, and columns whose product is used twice."""
    x, outputs = _regression(MIN_COLUMNS - 1, _slice)
    fn, _ = compare_llvm_numba_and_py([x], outputs, [_points(MIN_COLUMNS - 1)[0]], rtol=1e-10, atol=1e-12)
    assert not _ops(fn.maker.fgraph, Dot)
    X, _ = _design(MIN_COLUMNS)
    v = pt.vector("v", shape=(MIN_COLUMNS,))
    products = [v[i : i + 1] * pt.constant(X)[:, i] for i in range(MIN_COLUMNS)]
    outputs = [sum(products), products[0]]
    fn, _ = compare_llvm_numba_and_py([v], outputs, [np.linspace(-1, 1, MIN_COLUMNS)])
    assert not _ops(fn.maker.fgraph, Dot)


def test_a_vector_input_of_the_wrong_length_raises_as_stock_does():
    """The rest of the sum is an input of unknown length: one of another length than the columns raises
    stock's ValueError."""
    X, _ = _design(MIN_COLUMNS)
    v, r = pt.vector("v", shape=(MIN_COLUMNS,)), pt.dvector("r")
    output = r + sum(v[i : i + 1] * pt.constant(X)[:, i] for i in range(MIN_COLUMNS))
    fn, _ = compare_llvm_numba_and_py([v, r], output, [np.ones(MIN_COLUMNS), np.arange(N_OBS, dtype=float)])
    assert _one_loop_product(fn.maker.fgraph, MIN_COLUMNS)
    stock = pytensor.function([v, r], output, mode="NUMBA")
    for function in (fn, stock):
        with pytest.raises(ValueError):
            function(np.ones(MIN_COLUMNS), np.ones(N_OBS + 1))


def _logistic(n_predictors: int):
    """A logistic regression's log-density and gradient with ``dot(X, beta)`` over a constant design matrix: its
    gradient holds ``dot(X.T, d)``, a product by a matrix of ``n_predictors`` rows."""
    rng = np.random.default_rng(n_predictors)
    X, y = rng.normal(size=(N_OBS, n_predictors)), rng.integers(0, 2, size=N_OBS)
    x = pt.vector("x", shape=(n_predictors + 1,))
    logit = x[0] + pt.dot(pt.constant(X), x[1:])
    logp = pt.sum(pt.switch(pt.eq(pt.constant(y), 1), -pt.softplus(-logit), -pt.softplus(logit))) - pt.sum(x**2)
    return x, [logp, pt.grad(logp, x)]


@pytest.mark.slow
@pytest.mark.parametrize("n_predictors", [1, 5, MIN_COLUMNS - 1])
def test_narrow_products_are_column_products_and_row_sums(n_predictors):
    x, outputs = _logistic(n_predictors)
    rng = np.random.default_rng(3)
    for _ in range(3):
        point = rng.normal(0, 0.5, size=n_predictors + 1)
        fn, _ = compare_llvm_numba_and_py([x], outputs, [point], rtol=1e-10, atol=1e-12)
    assert not _ops(fn.maker.fgraph, Dot)
    assert _ops(rewritten_graph(outputs, [x], mode="NUMBA"), Dot)


def test_a_product_by_a_wide_matrix_of_a_vector_of_unknown_length_is_left_a_product():
    X, _ = _design(MIN_COLUMNS)
    v = pt.dvector("v")
    fn, _ = compare_llvm_numba_and_py([v], pt.dot(pt.constant(X), v), [np.linspace(0, 1, MIN_COLUMNS)])
    assert len(_ops(fn.maker.fgraph, Dot)) == 1


def test_a_vector_of_the_wrong_length_raises_as_stock_does():
    """Few columns, a vector of unknown length: left a product, which raises; few rows: row sums, whose
    products raise stock's ValueError."""
    narrow, _ = _design(3)
    v = pt.dvector("v")
    for matrix, length in ((narrow, 3), (narrow.T.copy(), N_OBS)):
        output = pt.dot(pt.constant(matrix), v)
        fn, _ = compare_llvm_numba_and_py([v], output, [np.linspace(-1, 1, length)])
        assert bool(_ops(fn.maker.fgraph, Dot)) == (matrix.shape[1] == 3)
        stock = pytensor.function([v], output, mode="NUMBA")
        for function in (fn, stock):
            with pytest.raises(ValueError):
                function(np.ones(length + 1))


def _logistic_of_data(n_predictors: int, n_obs: int = N_OBS):
    """`_logistic` with the design matrix and outcomes in shared variables of unknown shape, as ``pm.Data`` holds
    them; returns the parameter vector, the log-density and gradient, and the shared design matrix and outcomes."""
    rng = np.random.default_rng(n_predictors)
    X = pytensor.shared(rng.normal(size=(n_obs, n_predictors)), name="X", shape=(None, None))
    y = pytensor.shared(rng.integers(0, 2, size=n_obs), name="y", shape=(None,))
    x = pt.vector("x", shape=(n_predictors + 1,))
    logit = x[0] + pt.dot(X, x[1:])
    logp = pt.sum(pt.switch(pt.eq(y, 1), -pt.softplus(-logit), -pt.softplus(logit))) - pt.sum(x**2)
    return x, [logp, pt.grad(logp, x)], (X, y)


@pytest.mark.parametrize("n_predictors", [1, 4, MIN_COLUMNS - 1])
def test_products_by_a_data_matrix_are_its_columns_in_the_loops(n_predictors):
    x, outputs, _ = _logistic_of_data(n_predictors)
    rng = np.random.default_rng(5)
    for _ in range(2):
        point = rng.normal(0, 0.5, size=n_predictors + 1)
        fn, _ = compare_llvm_numba_and_py([x], outputs, [point], rtol=1e-10, atol=1e-12)
    assert not _ops(fn.maker.fgraph, Dot)
    assert _ops(rewritten_graph(outputs, [x], mode="NUMBA"), Dot)


def test_a_data_matrix_of_min_columns_is_left_a_product():
    x, outputs, _ = _logistic_of_data(MIN_COLUMNS)
    fn, _ = compare_llvm_numba_and_py([x], outputs, [np.linspace(-1, 1, MIN_COLUMNS + 1)], rtol=1e-10, atol=1e-12)
    assert len(_ops(fn.maker.fgraph, Dot)) == 2


@pytest.mark.parametrize("columns", [3, 5])
def test_a_data_matrix_set_to_another_width_raises_as_stock_does(columns):
    """Four coefficients, a design matrix set to 3 or 5 columns: stock's Dot raises ValueError, and so do the
    column products (one column more would be left out of the sum, one fewer read out of bounds)."""
    x, outputs, (X, _) = _logistic_of_data(4)
    llvm, stock = (pytensor.function([x], outputs, mode=mode) for mode in ("LLVM", "NUMBA"))
    X.set_value(np.ones((N_OBS, columns)))
    for function in (llvm, stock):
        with pytest.raises(ValueError):
            function(np.zeros(5))


def test_data_set_to_another_number_of_observations_is_read_anew():
    """The number of observations of ``pm.Data`` may change between calls (``pm.set_data``)."""
    x, outputs, (X, y) = _logistic_of_data(3)
    llvm, stock = (pytensor.function([x], outputs, mode=mode) for mode in ("LLVM", "NUMBA"))
    point = np.array([0.3, -0.2, 0.5, 0.1])
    rng = np.random.default_rng(11)
    X.set_value(rng.normal(size=(N_OBS + 7, 3)))
    for function in (llvm, stock):
        with pytest.raises(ValueError):
            function(point)
    y.set_value(rng.integers(0, 2, size=N_OBS + 7))
    for got, want in zip(llvm(point), stock(point), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-10)


def test_a_data_matrix_times_vectors_of_two_lengths_raises_as_stock_does():
    """One data matrix times a vector of 3 and one of 5 values: whatever its width, one product does not fit, and
    stock's Dot raises ValueError; the column products of the 3-value one must not read the 5-value one's first 3."""
    X = pytensor.shared(np.ones((N_OBS, 3)), name="X", shape=(None, None))
    a, b = pt.vector("a", shape=(3,)), pt.vector("b", shape=(5,))
    outputs = [pt.sum(pt.dot(X, a)), pt.sum(pt.dot(X, b))]
    llvm, stock = (pytensor.function([a, b], outputs, mode=mode) for mode in ("LLVM", "NUMBA"))
    for function in (llvm, stock):
        with pytest.raises(ValueError):
            function(np.ones(3), np.ones(5))
