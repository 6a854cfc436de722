"""`compile_pymc_model`: nutpie's ``CompiledPyMCModel`` of a PyMC model, its functions compiled by the LLVM mode
and the two C entry points nutpie calls emitted by us (`llvm_backend_intrinsics.nutpie`)."""

from uuid import uuid4

import numpy as np
from pytensor.compile.inner_function import HasInnerFunction, link_only_mode
from pytensor.compile.mode import Mode, get_mode
from pytensor.link.vm import VMLinker

from llvm_backend import rewrite_cache
from llvm_backend.collector import paced_collections
from llvm_backend.nutpie import nutpie_adapter

__all__ = ["compile_pymc_model"]


def _shared_slots(fn, user_data, keys: dict) -> list:
    """Where each shared input of ``fn`` lies in nutpie's record ``user_data`` (`SharedSlot`)."""
    from llvm_backend_intrinsics.nutpie import SharedSlot

    shared = user_data.dtype["shared"]
    base = user_data.dtype.fields["shared"][1]
    data, shape = (base + shared.fields[part][1] for part in ("data", "shape"))
    slots = []
    for var in fn.get_shared():
        key = keys[var]
        slots.append(
            SharedSlot(
                data + shared["data"].fields[key][1],
                shape + shared["shape"].fields[key][1],
                var.type.ndim,
                var.type.numpy_dtype,
            )
        )
    return slots


def _graph_overload(fn, slots: list):
    """The compiled code nutpie's entry points call for ``fn``, on ``x`` and the shared arrays (C contiguous).

    The graph function itself (`_takes_inputs_directly`), whose code numba caches on disk, so a warm process
    loads it and compiles nothing; else the graph's `typed_entry`, which builds its packs and passes its
    constant parameters, compiled in every process (it calls the graph function through its address)."""
    from numba.core import types
    from numba.np.numpy_support import from_dtype

    graph = fn.vm.graph_source
    signature = (types.Array(types.float64, 1, "C"), *(slot.numba_type for slot in slots))
    dispatcher = fn.vm._typed_entry
    if _takes_inputs_directly(graph):
        scalars = graph.scalar_sources
        signature = tuple(from_dtype(np.dtype(scalars[k])) if k in scalars else t for k, t in enumerate(signature))
        dispatcher = fn.vm.graph_fn
    dispatcher.compile(signature)
    return dispatcher.overloads[signature]


def _takes_inputs_directly(graph) -> bool:
    """Whether the graph function (`llvm_backend.codegen.GraphSource`) takes the graph's inputs one each, in
    order (0-d ones of `NATIVE_SCALARS` dtypes as native scalars), and returns its outputs in order: no packs,
    no constant parameters, no output lists."""
    return not graph.packs and not graph.constant_params and not graph.output_lists


def _link_inner_functions(fgraph) -> None:
    """Link the inner function of every op of ``fgraph`` holding one (a `Scan`, an `OpFromGraph`) on Python
    thunks (`_InnerPythonLinker`), each node given a copy of its op (`with_inner_function`): PyTensor would link
    them on C thunks, a C module per inner op, compiled by a cold process and keyed and loaded by a warm one."""
    from llvm_backend.adapters.pytensor import with_inner_function

    for node in fgraph.apply_nodes:
        if isinstance(node.op, HasInnerFunction):
            node.op = with_inner_function(node.op, link_only_mode(_InnerPythonLinker()))


class _InnerFunctionsOnPython:
    """A linker whose graph's ops' inner functions are linked on Python thunks (`_link_inner_functions`) before
    it links the graph itself."""

    def make_all(self, *args, **kwargs):
        _link_inner_functions(self.fgraph)
        return super().make_all(*args, **kwargs)


class _PythonLinker(_InnerFunctionsOnPython, rewrite_cache.CachedPerformLinker):
    """PyTensor's py linker through the rewrite cache (`CachedPerformLinker`), whose ops' inner functions run on
    Python thunks too: no C code is compiled or loaded for a function linked by it."""


class _InnerPythonLinker(_InnerFunctionsOnPython, VMLinker):
    """PyTensor's VM on Python thunks, without its C loop (the inner functions of FAST_COMPILE's Scans), whose
    ops' inner functions run on Python thunks too."""

    def __init__(self, **kwargs):
        super().__init__(**{**kwargs, "use_cloop": False, "c_thunks": False})


def _fast_mode() -> Mode:
    """FAST_COMPILE's rewrites on `_PythonLinker`: what the shape and initial-point functions, each called once or
    twice, are compiled on (no VM, whose C lazylinker a cold process builds, and no C thunk)."""
    return Mode(linker=_PythonLinker(), optimizer=get_mode("FAST_COMPILE").provided_optimizer)


def _model_functions(model, fast: Mode, *, initial_points, jitter_rvs, default_initialization_strategy, var_names):
    """The model's `ModelFunctions`: the log density and expansion on the LLVM mode, their rewrite and gradient
    through the rewrite cache; the initial point and shapes on ``fast`` (`_fast_mode`)."""
    import pytensor
    import pytensor.graph

    from llvm_backend.mode import LLVM
    from llvm_backend.nutpie.model_functions import initial_point_function, model_functions

    if default_initialization_strategy == "support_point" and jitter_rvs is None:
        jitter_rvs = set(model.free_RVs)
    initial_point = initial_point_function(
        model,
        mode=fast,
        overrides=initial_points,
        jitter_rvs=jitter_rvs,
        default_strategy=default_initialization_strategy,
    )
    return model_functions(
        model,
        mode=LLVM,
        fast_mode=fast,
        initial_point=initial_point,
        rewrite_graph=rewrite_cache.rewrite_graph_through_cache(pytensor.graph.rewrite_graph),
        grad=rewrite_cache.grad_through_cache(pytensor.grad),
        var_names=var_names,
    )


def _shared_data(functions) -> tuple[dict, dict]:
    """nutpie's ``shared_var_keys`` and ``shared_data`` of the functions' shared inputs: a fresh key per variable
    and a read-only C-contiguous copy of its value."""
    keys, shared_data = {}, {}
    for var in dict.fromkeys([*functions.logp_fn.get_shared(), *functions.expand_fn.get_shared()]):
        keys[var] = uuid4().hex
        shared_data[keys[var]] = np.array(var.get_value(), order="C", copy=True)
        shared_data[keys[var]].flags.writeable = False
    return keys, shared_data


def _compiled_model(compile_pymc, model, functions, fast: Mode):
    """nutpie's ``CompiledPyMCModel`` of ``functions`` (``compile_pymc`` is nutpie's checked module), with our two
    entry points over the compiled log density and expansion reading the shared data through nutpie's record."""
    from llvm_backend.nutpie.model_functions import dims_and_coords
    from llvm_backend_intrinsics.nutpie import expand_entry, logp_entry

    logp_fn, expand_fn = functions.logp_fn, functions.expand_fn
    keys, shared_data = _shared_data(functions)
    user_data = compile_pymc.make_user_data(keys, shared_data)
    logp_slots, expand_slots = _shared_slots(logp_fn, user_data, keys), _shared_slots(expand_fn, user_data, keys)
    dims, coords = dims_and_coords(model, functions.shape_info, functions.reparameterized_names, mode=fast)
    n_dim, n_expanded = functions.n_dim, functions.n_expanded
    return compile_pymc.CompiledPyMCModel(
        _n_dim=n_dim,
        dims=dims,
        _coords=coords,
        _shapes={name: tuple(shape) for name, _, shape in zip(*functions.shape_info, strict=True)},
        compiled_logp_func=logp_entry(_graph_overload(logp_fn, logp_slots), n_dim, logp_slots),
        compiled_expand_func=expand_entry(_graph_overload(expand_fn, expand_slots), n_dim, n_expanded, expand_slots),
        initial_point_func=functions.initial_point,
        shared_data=shared_data,
        shared_var_keys=keys,
        user_data=user_data,
        n_expanded=n_expanded,
        shape_info=functions.shape_info,
        logp_func=logp_fn,
        expand_func=expand_fn,
        reparameterized_names=functions.reparameterized_names,
    )


@paced_collections()
def compile_pymc_model(
    model,
    *,
    backend="numba",
    gradient_backend="pytensor",
    initial_points=None,
    jitter_rvs=None,
    default_initialization_strategy="support_point",
    var_names=None,
    freeze_model=None,
):
    """``nutpie.compile_pymc_model(model, backend="numba", ...)`` on the LLVM mode: its log density, gradient
    and expansion compiled by the LLVM mode, and the two C entry points nutpie calls emitted by us
    (`llvm_backend_intrinsics.nutpie`), not compiled as ``numba.cfunc`` functions. The arguments are nutpie's, less
    the ``numba.cfunc`` options it passes on. ``with_data`` keeps working: the entry points read the shared
    data through nutpie's record, as nutpie's do.

    Everything is built on modes and functions passed explicitly (`llvm_backend.nutpie.model_functions`), nothing
    process-wide changed meanwhile: the log density's rewrite and gradient through the rewrite cache, the shape
    and initial-point functions on FAST_COMPILE's rewrites on the py linker, through the cache too. It runs with the
    garbage collector paced (`paced_collections`). Raises ``RuntimeError`` naming the installed nutpie when the
    part of it used is not what this was written against (`nutpie_adapter.compile_pymc`).
    """
    from pymc.model.transform.optimization import freeze_dims_and_data

    if backend != "numba":
        raise ValueError(f"llvm_backend.nutpie compiles with nutpie's numba backend, not {backend!r}")
    if gradient_backend != "pytensor":
        raise ValueError(f"the numba backend computes gradients with pytensor, not {gradient_backend!r}")
    compile_pymc = nutpie_adapter.compile_pymc()
    if freeze_model:
        model = freeze_dims_and_data(model)
    fast = _fast_mode()
    functions = _model_functions(
        model,
        fast,
        initial_points=initial_points,
        jitter_rvs=jitter_rvs,
        default_initialization_strategy=default_initialization_strategy,
        var_names=var_names,
    )
    return _compiled_model(compile_pymc, model, functions, fast)
