"""``CheckAndRaise`` and ``Assert`` under the LLVM mode (`llvm_backend.lowerings.checks`): the value, and the py
linker's and stock NUMBA's exception class and message, from an intrinsic of the graph function."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core.extending import _Intrinsic
from pytensor.raise_op import Assert, CheckAndRaise

import llvm_backend  # noqa: F401
from llvm_backend.codegen import graph_source
from llvm_backend.dispatch import LOWERINGS, plan_graph
from llvm_backend.tools.testing import PY_MODE, compare_llvm_numba_and_py

x = pt.dvector("x")
s = pt.dscalar("s")


class ParameterError(ValueError):
    """An exception class of a library's own, as PyMC's ``ParameterValueError``."""


def _checked():
    positive = CheckAndRaise(ParameterError, "s must be positive")(pt.exp(x) * s, pt.gt(s, 0))
    return Assert("x must be non-negative")(positive, pt.all(pt.ge(x, 0)))


def test_the_value_is_py_and_stocks_and_the_checks_are_ours():
    fn, _ = compare_llvm_numba_and_py([x, s], _checked(), [np.arange(3.0), 1.5])
    nodes = [node for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, CheckAndRaise)]
    assert len(nodes) == 2
    assert all(plan_graph(fn.maker.fgraph)[node].lowering is LOWERINGS[CheckAndRaise] for node in nodes)
    calls = [call for call in graph_source(fn.maker.fgraph).plan.calls if call.label in nodes]
    assert len(calls) == 2 and all(isinstance(call.function, _Intrinsic) for call in calls)


@pytest.mark.parametrize(
    ("values", "error"), [([np.arange(3.0), -1.0], ParameterError), ([-np.arange(3.0), 1.0], AssertionError)]
)
def test_a_false_condition_is_stocks_and_pys_exception(values, error):
    raised = {}
    for mode in (PY_MODE, "NUMBA", "LLVM"):
        fn = pytensor.function([x, s], _checked(), mode=mode)
        with pytest.raises(error) as caught:
            fn(*values)
        raised[str(mode)] = (type(caught.value), str(caught.value))
    assert len(set(raised.values())) == 1
