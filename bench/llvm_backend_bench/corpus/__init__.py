"""The PyMC model corpus: model families, each in the forms users write, for the ``pymc_corpus`` bench family.

A family is one statistical model; its forms are the ways PyMC's documentation and its users write it: data as
NumPy constants or in ``pm.Data``, centered or non-centered, groups gathered by index, predictors through ``pt.dot``
or ``X @ beta``, shapes given by ``dims`` and ``coords``. A rule of the backend that is fast on one form only shows
up as a gap between forms of one family.

Each `CorpusModel` builds a fresh ``pm.Model`` (data drawn from a fixed seed), and some carry a hand-written
``@njit`` reference: a function of the raveled vector of the model's value variables (in ``model.value_vars``'
order, in the transformed space, with the log-Jacobians PyMC adds) and of the model's data as the reference's
``data()`` returns it, returning the log-density as a float and its gradient as a new array. `check_reference`
holds a reference to PyMC's own function.

The family modules each list their models in ``MODELS``; `MODELS` here is all of them by name.
"""

import numpy as np

from llvm_backend.tools.graphs import Graph
from llvm_backend_bench.corpus import glm, hierarchical, linear, multivariate, timeseries
from llvm_backend_bench.corpus.model import CorpusModel

__all__ = ["CHECK_POINTS", "CHECK_TOLERANCE", "MODELS", "CorpusModel", "check_reference", "corpus_graph"]

CHECK_POINTS = 5
"""Random points (besides the initial one) at which a reference is checked against PyMC's function."""
CHECK_TOLERANCE = 1e-10
"""Relative and absolute: a reference and PyMC's function differ by rounding only."""


def corpus_graph(model: CorpusModel) -> Graph:
    """``model``'s log-density and joined gradient of one raveled vector, at its initial point: the graph
    ``logp_dlogp_function(ravel_inputs=True)`` compiles (``pm.Data`` stays shared, as there)."""
    from pymc.pytensorf import join_nonshared_inputs

    pymc_model = model.build()
    point = pymc_model.initial_point(0)
    outputs, joined = join_nonshared_inputs(point, [pymc_model.logp(), pymc_model.dlogp()], pymc_model.value_vars)
    x0 = np.concatenate([np.ravel(point[v.name]) for v in pymc_model.value_vars])
    description = f"PyMC {model.family} ({model.form}): logp and gradient of {x0.size} parameters, one raveled vector"
    return Graph(f"pymc_corpus/{model.name}", description, [joined], outputs, [x0])


def check_reference(model: CorpusModel, graph: Graph, points: int = CHECK_POINTS, seed: int = 33) -> None:
    """Raise ``AssertionError`` unless ``model``'s reference returns what PyMC's function of ``graph`` does under
    stock NUMBA, to `CHECK_TOLERANCE`, at the graph's point and at ``points`` random ones about it."""
    from llvm_backend_bench.pymc_models import pymc_compile

    expected = pymc_compile(graph, "NUMBA")
    x0, data = graph.values[0], model.data()
    rng = np.random.default_rng(seed)
    for x in [x0, *(x0 + rng.normal(0, 0.5, size=x0.size) for _ in range(points))]:
        logp, grad = expected(x)
        got_logp, got_grad = model.reference(x, *data)
        message = f"the @njit reference of {model.name} disagrees with PyMC's function at x = {x.tolist()}"
        np.testing.assert_allclose(got_logp, logp, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE, err_msg=message)
        np.testing.assert_allclose(got_grad, grad, rtol=CHECK_TOLERANCE, atol=CHECK_TOLERANCE, err_msg=message)


def _all_models() -> dict[str, CorpusModel]:
    models = [m for module in (linear, glm, hierarchical, timeseries, multivariate) for m in module.MODELS]
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"corpus model names repeat: {sorted(n for n in names if names.count(n) > 1)}")
    return {m.name: m for m in models}


MODELS = _all_models()
