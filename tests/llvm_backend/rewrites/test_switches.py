"""A sum gated by one condition as the condition's switch of the sum (`llvm_backend.rewrites.switches`): the py
linker's and stock NUMBA's values with the condition holding or not, NaN and an empty vector included; the checks
and the sum in one loop; what is left alone."""

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.graph.fg import FunctionGraph
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise

import llvm_backend  # noqa: F401
from llvm_backend.rewrites.switches import sum_of_scalar_switch
from llvm_backend.tools.testing import compare_llvm_numba_and_py

N = 40


def _gated(v, k=-np.inf):
    """PyMC's ``check_parameters`` on a log-density: its terms summed where ``0 <= sigmoid(v) <= 0.9`` holds (two
    ``All`` over the vector), ``k`` (a length-1 constant, as constant folding leaves it) where not."""
    p = pt.sigmoid(v)
    check = pt.and_(pt.all(pt.ge(p, 0)), pt.all(pt.le(p, 0.9)))
    return pt.sum(pt.switch(check, -pt.softplus(-v) * 2.0, pt.constant(np.full(1, k))))


def _values(length: int) -> list[np.ndarray]:
    rng = np.random.default_rng(length)
    held, failed = rng.normal(0, 0.3, size=length), rng.normal(0, 0.3, size=length)
    failed[length // 2] = 10.0
    with_nan = held.copy()
    with_nan[1] = np.nan
    return [held, failed, with_nan]


@pytest.mark.parametrize("k", [-np.inf, np.inf, 0.0])
def test_values_match_py_and_stock_and_one_loop_checks_and_sums(k):
    v = pt.vector("v", shape=(N,))
    for value in _values(N):
        fn, _ = compare_llvm_numba_and_py([v], _gated(v, k), [value])
    [loop] = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, FusedElemwise)]
    assert {type(op).__name__ for op, *_ in filter(None, loop.op.reduced_outputs)} == {"Add", "AND"}


def test_zero_on_a_vector_of_unknown_length_empty_included():
    v = pt.dvector("v")
    for value in [*_values(N), np.zeros(0)]:
        compare_llvm_numba_and_py([v], _gated(v, 0.0), [value])


def test_the_condition_on_either_side():
    v, c = pt.dvector("v"), pt.bscalar("c")
    output = pt.sum(pt.switch(pt.eq(c, 1), pt.constant(np.zeros(1)), v * 3.0))
    for flag in (0, 1):
        compare_llvm_numba_and_py([v, c], output, [np.linspace(0.1, 1, N), np.int8(flag)], rtol=1e-12)
    assert _rewritten([v, c], output)


def _rewritten(inputs, output):
    """What `sum_of_scalar_switch` makes of ``output``'s own node (a Sum), on the graph as built."""
    fgraph = FunctionGraph(inputs, [output], clone=False)
    return sum_of_scalar_switch.transform(fgraph, output.owner)


def test_what_is_left_alone():
    """Another constant than 0 or an infinity, an infinity on a vector of unknown length, a condition per item; the
    same sums rewritten when they qualify."""
    v, w = pt.dvector("v"), pt.vector("w", shape=(N,))
    assert _rewritten([w], _gated(w, -np.inf))
    assert _rewritten([v], _gated(v, 0.0))
    per_item = pt.sum(pt.switch(pt.gt(v, 0), v, pt.constant(np.zeros(1))))
    for output in (_gated(w, 1.0), _gated(v, -np.inf), per_item):
        assert not _rewritten([w, v], output)
    for output in (_gated(v, 1.0), _gated(v, -np.inf)):
        compare_llvm_numba_and_py([v], output, [np.linspace(-1, 1, N)])
