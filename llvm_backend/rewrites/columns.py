"""Products of data matrices by vectors, written as suits their width.

A PyMC model's linear predictor over a constant design matrix ``X`` reaches the compiler in one of two forms (the
gradient of the second holds a third):

- ``intercept + sum(b_i * X[:, i] for i in ...)``: one ``Add`` of k products of a length-1 coefficient by a
  constant column. Fused with the likelihood and its gradient, it is one loop over the observations that reads k
  column streams and holds k coefficients and the gradient's k accumulators: for a few dozen columns, more values
  than a CPU has registers, spilled to the stack at every observation.
  `_linear_predictors` writes such an ``Add`` of `MIN_COLUMNS` or more terms as one product of a constant matrix
  by the vector of coefficients, computed before the loop::

      add(r, mul(s_1, c_1), ..., mul(s_k, c_k))   ->  add(r, sum(R * s[:, None], axis=0))    R = [c_1 ... c_k]
                                                     (add(r, dot(C, s)) over more than MAX_LOOP_ROWS observations)

  ``s = join(s_1, ..., s_k)``, or a slice of one vector when the ``s_i`` are its consecutive items (PyMC's raveled
  parameters). ``R`` holds the columns as its rows: our loop adds each row times its coefficient into the vector of
  products, along contiguous memory, as a hand-written loop does. Up to `MAX_LOOP_ROWS` observations it keeps pace
  with a ``Dot`` (BLAS) and compiles in less time than the ``Dot``'s numba code; above, where the vector no longer
  stays in the L1 cache, the ``Dot`` (``C``, the columns side by side), which is faster there. Each term is a
  two-input ``Mul`` used only there, of a `TensorConstant` vector (not broadcastable) and a length-1 vector, both of
  the ``Add``'s float dtype, the constants all of one length. The loop reads the product's vector, one allocation
  per call, where it read the columns.
- ``intercept + dot(X, beta)`` with few columns (a handful of predictors), and in its gradient
  ``dot(X.T, d)``, a product by a matrix of few rows: each a ``Dot`` of its own, whose vectors are allocated and
  written in one loop and read in the next. `_narrow_products` writes a product of a constant matrix of fewer
  than `MIN_COLUMNS` columns by a vector of that static length as the sum of its columns times the vector's
  items, and one of fewer than `MIN_COLUMNS` rows as the vector of its rows' sums of products with the vector,
  which elemwise fusion folds into the loops around them (each ``Squeeze{axis=1}(Dot(M, m))`` of a one-column ``m``
  whose ``Dot`` is used only there, ``M`` and ``v`` of its float dtype). In the row sums a ``v`` of another length
  than a row raises the ``ValueError`` the ``Dot`` raised; the column products need ``v``'s static length.
- The same model with its data in ``pm.Data``: ``dot(X, beta)`` and ``dot(X.T, d)`` of a shared ``X`` whose shape
  the graph does not know (data can be set to other rows between calls). A product of such a matrix by a vector of
  a static length below `MIN_COLUMNS` is the sum of its columns (views, nothing copied) times the vector's items,
  and a product of its transpose the vector of its columns' sums of products; the matrix is checked once per call
  to have that many columns, raising the ``ValueError`` the ``Dot`` raised (`_with_columns`).

Matrices made of constants are made once, when the graph is rewritten, C-contiguous. The values are the same sums of the
same products, added in another order: the reassociation PyTensor's fast-math contract allows. The two never
undo each other: one makes products of `MIN_COLUMNS` or more columns, the other takes apart only narrower ones.
"""

import numpy as np
import pytensor.scalar as ps
import pytensor.tensor as pt
from pytensor.graph.basic import Constant, Variable
from pytensor.graph.rewriting.basic import GraphRewriter
from pytensor.raise_op import CheckAndRaise
from pytensor.tensor.elemwise import DimShuffle, Elemwise
from pytensor.tensor.math import Dot
from pytensor.tensor.shape import SpecifyShape
from pytensor.tensor.subtensor import Subtensor, get_idx_list
from pytensor.tensor.variable import TensorConstant

from llvm_backend.rewrites.registry import PRE_FUSION_NAME, register_llvm_rewrite

__all__ = ["MAX_LOOP_ROWS", "MIN_COLUMNS", "DataColumns", "data_columns"]

MIN_COLUMNS = 8
"""The fewest column products a matrix-vector product replaces, and the fewest columns (or rows) of a constant
matrix whose product by a vector is left one."""

MAX_LOOP_ROWS = 2048
"""The most observations whose linear predictor is a loop of ours rather than a ``Dot``: up to it the loop keeps
pace with BLAS, past it the ``Dot`` is faster (docs/decisions.md has the measurement)."""


def _column_product(fgraph, var: Variable) -> tuple | None:
    """``(s, column)`` when ``var`` is ``Mul(s, column)`` (either order) used only once, with ``column`` a constant
    non-broadcastable float vector and ``s`` a length-1 vector, both of ``var``'s dtype; else None."""
    node = var.owner
    if node is None or not isinstance(node.op, Elemwise) or not isinstance(node.op.scalar_op, ps.Mul):
        return None
    if len(node.inputs) != 2 or len(fgraph.clients[var]) != 1 or var.type.dtype not in ("float32", "float64"):
        return None
    for column, s in (node.inputs, node.inputs[::-1]):
        if (
            isinstance(column, TensorConstant)
            and column.type.broadcastable == (False,)
            and s.type.broadcastable == (True,)
            and column.type.dtype == s.type.dtype == var.type.dtype
        ):
            return s, column
    return None


def _matrix(columns: list, axis: int = 1) -> TensorConstant:
    """The constant whose columns (``axis=1``) or rows (``axis=0``) are ``columns``' data, C-contiguous."""
    return pt.constant(np.ascontiguousarray(np.stack([c.data for c in columns], axis=axis)))


def _unit_slice(var: Variable) -> tuple | None:
    """``(x, start)`` when ``var`` is ``x[start:start + 1]`` (or ``x[start:]``, ``start`` its last item) of a vector
    ``x``, with a constant nonnegative ``start``; else None."""
    node = var.owner
    if node is None or not isinstance(node.op, Subtensor) or node.inputs[0].type.ndim != 1:
        return None
    [index] = get_idx_list(node.inputs, node.op.idx_list)
    if not isinstance(index, slice) or index.step is not None:
        return None
    x, start, stop = node.inputs[0], index.start, index.stop
    if not isinstance(start, Constant) or int(start.data) < 0:
        return None
    # x[start:] is a unit slice when start is x's last item
    stop = x.type.shape[0] if stop is None else stop.data if isinstance(stop, Constant) else None
    return (x, int(start.data)) if stop is not None and int(stop) == int(start.data) + 1 else None


def _coefficients(terms: list) -> tuple[list, Variable]:
    """``terms`` (``(s, column)`` pairs) in the order of the vector of their ``s``, and that vector: a slice of
    one vector when the ``s`` are its consecutive items (a view, nothing copied), else their join."""
    slices = [_unit_slice(s) for s, _ in terms]
    if all(slices) and len({id(x) for x, _ in slices}) == 1:
        order = sorted(range(len(terms)), key=lambda k: slices[k][1])
        starts = [slices[k][1] for k in order]
        if starts == list(range(starts[0], starts[0] + len(starts))):
            return [terms[k] for k in order], slices[0][0][starts[0] : starts[-1] + 1]
    return terms, pt.join(0, *(s for s, _ in terms))


def _replacing(output: Variable, new: Variable) -> tuple[Variable, Variable]:
    """``(output, new)``, ``new`` given ``output``'s static shape when its type is less specific."""
    return output, new if new.type == output.type else pt.specify_shape(new, output.type.shape)


def _linear_predictors(fgraph) -> list:
    """The replacement of each ``Add`` with `MIN_COLUMNS` or more products of a length-1 vector by a column: a
    loop's sum of rows times coefficients, or a ``Dot`` over more than `MAX_LOOP_ROWS` observations."""
    replacements = []
    for node in fgraph.toposort():
        if not isinstance(node.op, Elemwise) or not isinstance(node.op.scalar_op, ps.Add):
            continue
        found = [_column_product(fgraph, term) for term in node.inputs]
        terms = [f for f in found if f is not None]
        lengths = {column.data.shape[0] for _, column in terms}
        if len(terms) < MIN_COLUMNS or len(lengths) != 1:
            continue
        terms, coefficients = _coefficients(terms)
        columns = [c for _, c in terms]
        if lengths.pop() <= MAX_LOOP_ROWS:
            product = (_matrix(columns, axis=0) * coefficients[:, None]).sum(axis=0)
        else:
            product = pt.dot(_matrix(columns), coefficients)
        rest = [term for term, f in zip(node.inputs, found, strict=True) if f is None]
        [output] = node.outputs
        replacements.append(_replacing(output, pt.add(*rest, product) if rest else product))
    return replacements


def _one_column(var: Variable) -> bool:
    return var.type.ndim == 2 and var.type.shape[1] == 1


def _column_vector(fgraph, var: Variable) -> Variable:
    """A vector of ``var[:, 0]``'s values for a matrix ``var`` of one column (`_one_column`): ``v`` for
    ``ExpandDims{axis=1}(v)``; an elemwise of such columns and of single values (a gradient's
    ``ExpandDims{axis=1}(r) / sigma``), used only here, as the same elemwise of their vectors, which fusion folds
    into the loop that reads it; else the view ``var[:, 0]``."""
    node = var.owner
    if node is not None and isinstance(node.op, DimShuffle) and node.op.new_order == (0, "x"):
        return node.inputs[0]
    if node is not None and type(node.op) is Elemwise and len(node.outputs) == 1 and len(fgraph.clients[var]) == 1:
        if all(i.type.broadcastable == (True, True) or _one_column(i) for i in node.inputs):
            return node.op(
                *(
                    i.dimshuffle(0) if i.type.broadcastable == (True, True) else _column_vector(fgraph, i)
                    for i in node.inputs
                )
            )
    return var[:, 0]


def _product_under(fgraph, var: Variable) -> tuple | None:
    """``(dot, rows)`` when ``var`` is a ``Dot``'s output, or a ``SpecifyShape`` of one (gradients carry them),
    each used only there: the ``Dot`` node and its output's static number of rows (None if unknown)."""
    rows = var.type.shape[0]
    if var.owner is not None and isinstance(var.owner.op, SpecifyShape):
        if len(fgraph.clients[var.owner.inputs[0]]) != 1:
            return None
        var = var.owner.inputs[0]
        rows = rows if rows is not None else var.type.shape[0]
    if var.owner is None or not isinstance(var.owner.op, Dot) or len(fgraph.clients[var]) != 1:
        return None
    return var.owner, rows


def _narrow_dots(fgraph):
    """Each ``(output, M, m, rows)``: ``output = Squeeze{axis=1}(Dot(M, m))`` (`_product_under`) whose ``Dot`` is
    used only there, ``M`` a matrix and ``m`` a matrix of one column, both of ``output``'s float dtype, ``rows`` the
    product's static number of rows (None if unknown)."""
    for node in fgraph.toposort():
        if not isinstance(node.op, DimShuffle) or node.op.new_order != (0,) or node.inputs[0].owner is None:
            continue
        if len(fgraph.clients[node.inputs[0]]) != 1:
            continue
        found = _product_under(fgraph, node.inputs[0])
        if found is None:
            continue
        dot, rows = found
        matrix, column = dot.inputs
        [output] = node.outputs
        if _one_column(column) and matrix.type.dtype == column.type.dtype == output.type.dtype:
            yield output, matrix, column, rows


def _transposed(var: Variable) -> Variable | None:
    """``X`` when ``var`` is ``X.T`` (``DimShuffle{1, 0}``) of a matrix ``X``; else None."""
    node = var.owner
    if node is None or not isinstance(node.op, DimShuffle) or node.op.new_order != (1, 0):
        return None
    return node.inputs[0]


def _with_columns(matrix: Variable, columns: int) -> Variable:
    """``matrix`` when its type says it has ``columns`` columns; else ``matrix`` checked at run time to have them,
    raising the ``ValueError`` the ``Dot`` it replaces raised (its columns are read one by one: one more would
    be left out, one fewer read out of bounds)."""
    if matrix.type.shape[1] == columns:
        return matrix
    message = f"matrix-vector product: the matrix has another number of columns than the vector's {columns} items"
    return CheckAndRaise(ValueError, message)(matrix, pt.eq(matrix.shape[1], columns))


def _data_widths(dots: list) -> dict:
    """Matrix -> its number of columns, for each non-constant matrix multiplied by a vector of a static length
    below `MIN_COLUMNS` (a design matrix in ``pm.Data`` times its coefficients), which its transpose's products
    (the gradient's) take as their number of rows."""
    widths = {}
    for _, matrix, column, _ in dots:
        length = column.type.shape[0]
        if not isinstance(matrix, TensorConstant) and length is not None and length < MIN_COLUMNS:
            widths[matrix] = length
    return widths


def _narrow_product(fgraph, matrix: Variable, column: Variable, rows: int | None, widths: dict) -> Variable | None:
    """``matrix @ column`` (its vector ``v``, `_column_vector`) as the sum of the matrix's columns times ``v``'s
    items (fewer than `MIN_COLUMNS` columns, ``v`` of that static length) or as the vector of its rows' sums of
    products with ``v`` (fewer than `MIN_COLUMNS` rows, known from a constant's data or, for the transpose of a
    data matrix, from its columns in ``widths`` or the product's static ``rows``); else None."""
    length = column.type.shape[0]
    if isinstance(matrix, TensorConstant):
        rows, columns = matrix.data.shape
        if columns < MIN_COLUMNS and length == columns:
            v = _column_vector(fgraph, column)
            return pt.add(*(pt.constant(matrix.data[:, j]) * v[j : j + 1] for j in range(columns)))
        if rows < MIN_COLUMNS:
            v = _column_vector(fgraph, column)
            return pt.stack([pt.sum(pt.constant(matrix.data[i]) * v) for i in range(rows)])
        return None
    if widths.get(matrix) == length is not None:
        v, checked = _column_vector(fgraph, column), _with_columns(matrix, length)
        return pt.add(*(checked[:, j] * v[j : j + 1] for j in range(length)))
    data = _transposed(matrix)
    width = widths.get(data, rows) if data is not None else None
    if width is not None and width < MIN_COLUMNS:
        v, checked = _column_vector(fgraph, column), _with_columns(data, width)
        return pt.stack([pt.sum(checked[:, i] * v) for i in range(width)])
    return None


def _narrow_products(fgraph) -> list:
    """The replacement of each narrow matrix-vector product (`_narrow_dots`) by its columns' or rows' sums of
    products (`_narrow_product`)."""
    dots = list(_narrow_dots(fgraph))
    widths = _data_widths(dots)
    replacements = []
    for output, matrix, column, rows in dots:
        new = _narrow_product(fgraph, matrix, column, rows, widths)
        if new is not None:
            replacements.append(_replacing(output, new))
    return replacements


class DataColumns(GraphRewriter):
    """`data_columns`: every product of a constant matrix by a vector written as suits its width, at once: wide
    ones as one `Dot` (`_linear_predictors`), narrow ones as column products and row sums (`_narrow_products`)."""

    def apply(self, fgraph):
        for find in (_linear_predictors, _narrow_products):
            replacements = find(fgraph)
            if replacements:
                fgraph.replace_all_validate(replacements, reason="data_columns")

    def __str__(self) -> str:
        return "data_columns"


data_columns = register_llvm_rewrite(PRE_FUSION_NAME, position=0.5, name="data_columns")(DataColumns())
