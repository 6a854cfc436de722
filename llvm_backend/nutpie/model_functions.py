"""The functions nutpie samples a PyMC model with, built from PyMC's public API on modes passed in.

`model_functions` gives what nutpie 0.16's private ``nutpie.compile_pymc._make_functions`` gives on its numba path
(``compute_grad=True, join_expanded=True``), as a `ModelFunctions` with named fields: the log density and its
gradient and the expansion compiled on the mode given, the shapes found on the fast mode given, the log density
rewritten and differentiated by the callables given. `initial_point_function` is PyMC's ``make_initial_point_fn``
(``return_transformed=True``) on a mode given, `compile_on` PyMC's ``pymc.pytensorf.compile`` on the mode itself,
and `dims_and_coords` nutpie's ``_prepare_dims_and_coords``.

Nothing here reads a process-wide switch (``pytensor.compile.mode.FAST_COMPILE``, ``predefined_modes``,
``pytensor.graph.rewrite_graph``, ``pytensor.tensor.grad``) or changes one: what a call compiles, rewrites and
differentiates with is what its caller passes, whatever other threads do meanwhile.
"""

import functools
import itertools
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from math import prod

import numpy as np
import pandas as pd
import pytensor
import pytensor.tensor as pt
from pymc.initial_point import convert_str_to_rv_dict, make_initial_point_expression
from pymc.model import modelcontext
from pymc.pytensorf import collect_default_updates, find_rng_nodes, replace_rng_nodes, reseed_rngs
from pymc.util import get_transformed_name
from pytensor.compile.mode import Mode, get_mode
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph import Constant, clone_replace

__all__ = [
    "UNCONSTRAINED_PARAMETER",
    "ModelFunctions",
    "compile_on",
    "dims_and_coords",
    "initial_point_function",
    "model_functions",
    "value_shapes",
    "with_lock",
]

UNCONSTRAINED_PARAMETER = "unconstrained_parameter"
"""The dim of the flat unconstrained point in `dims_and_coords`' coords (nutpie's ``_UNCONSTRAINED_PARAMETER``)."""


@dataclass(frozen=True)
class ModelFunctions:
    """What nutpie's ``_make_functions`` returns, by name (in its order of return).

    ``n_dim`` is the length of the flat unconstrained point ``logp_fn`` and ``expand_fn`` take (float64), the
    value variables of the model's free RVs one after the other, in ``model.free_RVs`` order, each raveled;
    ``n_expanded`` the length of ``expand_fn``'s one output: that point, then the traced variables not in it.
    ``logp_fn`` returns the log density and its gradient (flat, in the point's order). ``initial_point`` takes a
    seed and returns a flat float64 point. ``shape_info`` is ``(names, slices, shapes)`` of the expanded vector,
    the point's variables first, the shapes as the shape function gave them (int64 arrays).
    ``reparameterized_names`` are the names of the value variables of transformed free RVs."""

    n_dim: int
    n_expanded: int
    logp_fn: pytensor.compile.Function
    expand_fn: pytensor.compile.Function
    initial_point: Callable
    shape_info: tuple[list[str], list[slice], list[np.ndarray]]
    reparameterized_names: list[str]


def compile_on(model, inputs, outputs, mode, random_seed=None, **kwargs) -> pytensor.compile.Function:
    """``pymc.pytensorf.compile(inputs, outputs, random_seed, mode, **kwargs)`` within ``with model:``, compiled on
    ``mode`` itself: the RNGs of the graph's random variables updated on every call and reseeded with
    ``random_seed`` (not reseeded if it is ``False``), ``random_make_inplace`` included, and CheckParameterValue
    rewritten as PyMC does, to a -inf switch if ``model.check_bounds`` (or ``model`` is None), else removed.

    PyMC rebuilds a plain ``Mode`` from the mode's linker and query; ``mode.including`` keeps the mode's class (a
    Mode subclass's ``optimizer`` and ``function_maker`` apply) on a copy of its linker."""
    rng_updates = collect_default_updates(
        inputs=[inp.variable if isinstance(inp, pytensor.In) else inp for inp in inputs],
        outputs=[out.variable if isinstance(out, pytensor.Out) else out for out in _as_list(outputs)],
    )
    if rng_updates and random_seed is not False:
        reseed_rngs(list(rng_updates), random_seed)
    check_bounds = True if model is None else model.check_bounds
    check = "local_check_parameter_to_ninf_switch" if check_bounds else "local_remove_check_parameter"
    mode = get_mode(mode).including("random_make_inplace", check)
    updates = {**rng_updates, **kwargs.pop("updates", {})}
    return pytensor.function(inputs, outputs, updates=updates, mode=mode, **kwargs)


def _as_list(outputs):
    """``outputs`` if a list or tuple, else a list of it (PyMC's ``makeiter``)."""
    return outputs if isinstance(outputs, list | tuple) else [outputs]


def with_lock(fn: Callable) -> Callable:
    """``fn`` called by one thread at a time (nutpie's ``_wrap_with_lock``): a seeded initial-point function
    reseeds shared RNGs, then reads them."""
    lock = threading.Lock()

    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with lock:
            return fn(*args, **kwargs)

    return locked


def _enclosing_model():
    """The model of the innermost ``with model:`` block of this thread, None outside one."""
    try:
        return modelcontext(None)
    except TypeError:
        return None


def initial_point_function(
    model, *, mode: Mode, overrides=None, jitter_rvs=None, default_strategy: str = "support_point"
) -> Callable:
    """PyMC's ``make_initial_point_fn(model=model, overrides=overrides, jitter_rvs=jitter_rvs,
    default_strategy=default_strategy, return_transformed=True)`` compiled on ``mode``, not FAST_COMPILE: a
    function of a seed returning a dict of the free RVs' value-variable names (transformed names for transformed
    RVs) to their initial values, in ``model.free_RVs`` order.

    As PyMC's, it draws from RNGs of its own, reseeded from the seed on every call, and its CheckParameterValue
    rewrite follows the model of the enclosing ``with`` block, not ``model``. Calls hold a lock of the function
    (`with_lock`), so threads may share it."""
    values = make_initial_point_expression(
        free_rvs=model.free_RVs,
        rvs_to_transforms=model.rvs_to_transforms,
        initval_strategies={**model.rvs_to_initial_values, **convert_str_to_rv_dict(model, overrides or {})},
        jitter_rvs=jitter_rvs,
        default_strategy=default_strategy,
        return_transformed=True,
    )
    fn = compile_on(_enclosing_model(), [], replace_rng_nodes(values), mode)
    names = [
        var.name if (transform := model.rvs_to_transforms[var]) is None else get_transformed_name(var.name, transform)
        for var in model.free_RVs
    ]
    rngs = find_rng_nodes(fn.maker.fgraph.outputs)

    def seeded(seed, *args, **kwargs):
        reseed_rngs(rngs, seed)
        return dict(zip(names, fn(*args, **kwargs)))

    return with_lock(seeded)


def value_shapes(model, *, mode: Mode) -> dict[str, np.ndarray]:
    """nutpie's ``_compute_shapes`` with both compiles on ``mode``: the shape (an int64 array) of every value
    variable, free RV and deterministic, by name, with the free RVs' values at the model's default initial point
    (support points, no jitter, seed 0) and the observed RVs at their data. A transformed RV and its value
    variable have different names; an untransformed one's name is its RV's."""
    point = initial_point_function(model, mode=mode)(0)
    traced = {
        var.name: var
        for var in model.value_vars + model.free_RVs + model.deterministics
        if var not in model.observed_RVs + model.potentials
    }
    givens = [(obs, model.rvs_to_values[obs]) for obs in model.observed_RVs]
    givens += [(traced[name], point[name]) for name in traced if name in point]
    shape_fn = pytensor.function(
        [], [pt.as_tensor(var.shape) for var in traced.values()], givens=givens, mode=mode, on_unused_input="ignore"
    )
    return dict(zip(traced, shape_fn()))


def _flat_initial_point(point_fn: Callable, names: list[str], shapes: list[np.ndarray]) -> Callable:
    """nutpie's ``_rv_dict_to_flat_array_wrapper``: ``point_fn``'s values of ``names`` as one flat float64
    array, in that order, raising ``ValueError`` (nutpie's message) for a value whose shape is not its own."""

    @functools.wraps(point_fn)
    def flat(seed=None):
        values = point_fn(seed)
        point = np.empty(sum(np.prod(shape).astype(int) for shape in shapes), dtype="float64", order="C")
        cursor = 0
        for name, shape in zip(names, shapes, strict=True):
            value = values[name]
            size = int(np.prod(value.shape))
            if tuple(value.shape) != tuple(shape):
                raise ValueError(f"Size of initial value for {name} is {value.shape}, expected {shape}")
            point[cursor : cursor + size] = value.ravel().astype("float64")
            cursor += size
        return point

    return flat


def _layout(names: Iterable[str], shapes: dict, start=0) -> tuple[list[str], list[slice], list[np.ndarray], int]:
    """Names, slices and shapes of variables laid one after the other in a flat vector from ``start``, and where
    the last ends (counted as nutpie does: a product of the shape array's items)."""
    names, slices, layout_shapes, end = list(names), [], [], start
    for name in names:
        layout_shapes.append(shapes[name])
        slices.append(slice(end, end + prod(shapes[name])))
        end += prod(shapes[name])
    return names, slices, layout_shapes, end


def _logp_and_gradient(model, value_vars: list, rewrite_graph: Callable, grad: Callable) -> tuple:
    """The model's log density, rewritten by ``rewrite_graph`` as nutpie does (canonicalize, stabilize, and the
    parameter checks removed unless ``model.check_bounds``), and its gradient by ``grad`` with respect to
    ``value_vars``, raveled and joined. The rewrite works on a copy: the model's graph, whose nodes the log
    density shares with the deterministics, is left as it was, whether the rewrite ran or came from a cache."""
    rewrites = ["canonicalize", "stabilize"]
    if not model.check_bounds:
        rewrites.append("local_remove_check_parameter")
    logp = rewrite_graph(model.logp(), include=rewrites, clone=True)
    gradient = pt.concatenate([pt.as_tensor(g, allow_xtensor_conversion=True).ravel() for g in grad(logp, value_vars)])
    return logp, gradient


def model_functions(
    model,
    *,
    mode: Mode,
    fast_mode: Mode,
    initial_point: Callable,
    rewrite_graph: Callable,
    grad: Callable,
    var_names: Iterable[str] | None = None,
) -> ModelFunctions:
    """What nutpie's ``_make_functions(model, mode=mode, compute_grad=True, join_expanded=True,
    pymc_initial_point_fn=initial_point, var_names=var_names)`` returns, as `ModelFunctions`.

    The log density and gradient and the expansion are compiled on ``mode`` (`compile_on`), the shapes on
    ``fast_mode`` (`value_shapes`); the log density is rewritten by ``rewrite_graph(graph, include=[...])`` and
    differentiated by ``grad(cost, wrt_list)``, as given. ``initial_point`` is a seeded function of the free
    RVs' initial values by value-variable name (`initial_point_function`); the expansion carries, after the
    point, the traced variables not in it (``model.unobserved_value_vars``), those named in ``var_names`` only if
    given. Reads none of the process-wide switches the module names and sets none; ``mode`` and ``fast_mode``
    are used as passed (Mode instances: a name would be looked up in ``predefined_modes``)."""
    shapes = value_shapes(model, mode=fast_mode)
    value_vars = [model.rvs_to_values[rv] for rv in model.free_RVs]
    logp, gradient = _logp_and_gradient(model, value_vars, rewrite_graph, grad)
    names, slices, point_shapes, n_dim = _layout((var.name for var in value_vars), shapes)
    joined = pt.TensorType("float64", shape=(n_dim,))(name="_unconstrained_point")
    pieces = [joined[piece] for piece in slices]
    replacements = {
        model.rvs_to_values[rv]: piece.reshape(shape).astype(rv.dtype)
        for rv, shape, piece in zip(model.free_RVs, point_shapes, pieces)
    }
    logp, gradient = clone_replace([logp, gradient], replacements)
    logp_fn = compile_on(model, (joined,), (logp, gradient), mode)

    remaining = [var for var in model.unobserved_value_vars if var.name not in names]
    if var_names is not None:
        kept = set(var_names)
        remaining = [var for var in remaining if var.name in kept]
    more_names, more_slices, more_shapes, n_expanded = _layout((var.name for var in remaining), shapes, n_dim)
    expanded = pt.concatenate(
        [
            *(piece.ravel() for piece in pieces),
            *(pt.as_tensor(var, allow_xtensor_conversion=True).ravel() for var in remaining),
        ]
    )
    expand_fn = compile_on(model, (joined,), [expanded], mode, givens=list(replacements.items()))
    return ModelFunctions(
        n_dim=n_dim,
        n_expanded=n_expanded,
        logp_fn=logp_fn,
        expand_fn=expand_fn,
        initial_point=_flat_initial_point(initial_point, names, point_shapes),
        shape_info=(names + more_names, slices + more_slices, point_shapes + more_shapes),
        reparameterized_names=[
            model.rvs_to_values[rv].name for rv in model.free_RVs if model.rvs_to_transforms.get(rv) is not None
        ],
    )


def _dim_length(length, mode: Mode) -> int:
    """The value of a model's dim length: a constant's or shared variable's own, else evaluated on ``mode``."""
    if isinstance(length, Constant):
        return int(length.data)
    if isinstance(length, SharedVariable):
        return int(length.get_value(borrow=True))
    return int(length.eval(mode=mode))


def _unconstrained_names(model, shape_info) -> list[str]:
    """A name for each item of the flat unconstrained point: the value variable's, with ``_i.j`` for an item of
    an array."""
    value_names = {var.name for var in model.value_vars}
    return [
        f"{base}_{'.'.join(str(i) for i in index)}" if index else base
        for base, _, shape in zip(*shape_info)
        if base in value_names
        for index in itertools.product(*[range(length) for length in shape])
    ]


def dims_and_coords(model, shape_info, reparameterized_names: Sequence[str], *, mode: Mode) -> tuple[dict, dict]:
    """nutpie's ``_prepare_dims_and_coords``: the model's coords as ``pd.Index``\\ es (a range for a dim without
    values, its length evaluated on ``mode`` if it is a graph), plus `UNCONSTRAINED_PARAMETER` naming the flat
    point's items; and the model's dims, plus a transformed RV's dims for its value variable when the two have
    the same shape. Raises ``ValueError`` if the model has a coord named `UNCONSTRAINED_PARAMETER`."""
    coords = {}
    for name, values in model.coords.items():
        if values is None:
            values = pd.RangeIndex(_dim_length(model.dim_lengths[name], mode))
        coords[name] = pd.Index(values)
    if UNCONSTRAINED_PARAMETER in coords:
        raise ValueError(f"Model contains invalid name '{UNCONSTRAINED_PARAMETER}'.")
    coords[UNCONSTRAINED_PARAMETER] = pd.Index(_unconstrained_names(model, shape_info))

    shape_by_name = {name: tuple(shape) for name, _, shape in zip(*shape_info)}
    value_to_rv = {value.name: rv.name for value, rv in model.values_to_rvs.items()}
    dims = dict(model.named_vars_to_dims)
    for value_name in reparameterized_names:
        rv_name = value_to_rv.get(value_name)
        rv_dims = dims.get(rv_name) if rv_name is not None else None
        if rv_dims is not None and shape_by_name.get(rv_name) == shape_by_name.get(value_name):
            dims[value_name] = rv_dims
    return dims, coords
