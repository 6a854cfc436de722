"""nutpie with the LLVM mode's kernels.

nutpie compiles a PyMC model's log-density and gradient with PyTensor's mode "NUMBA", which it names itself
and offers no argument to change; it then calls the function's ``vm.jit_fn`` from a ``numba.cfunc`` compiled in
every process. `compile_pymc_model` compiles the graphs with the LLVM mode and emits the two C entry points
nutpie calls itself (`llvm_backend_intrinsics.nutpie`); `numba_is_llvm` makes any compile under "NUMBA" use the
LLVM mode::

    import llvm_backend.nutpie

    compiled = llvm_backend.nutpie.compile_pymc_model(model)  # nutpie.compile_pymc_model's arguments
    trace = nutpie.sample(compiled, draws=1000)

    with llvm_backend.nutpie.numba_is_llvm():  # any code that compiles under "NUMBA"
        idata = pm.sample(nuts_sampler="nutpie", model=model)

`numba_is_llvm` is process-global while it is open, as the code opening it asks (``NUMBA_IS_LLVM`` in
``llvm_backend.adapters.pytensor``): every compile that asks for "NUMBA" by name, in any thread, gets the LLVM
mode. When the last one open, in any thread, exits, "NUMBA" is PyTensor's own mode again.

``pm.sample(model=model, compile_kwargs={"mode": "LLVM"})`` (or ``backend="LLVM"``) needs neither: when PyMC
picks nutpie for it, `sample_external_nuts` marks the call in the calling context (`SAMPLING_ON_LLVM`), and
nutpie's ``compile_pymc_model``, called by PyMC inside, is `compile_pymc_model` for a call so marked
(`nutpie_compile`; ``adapters.pymc.PYMC_NUTPIE_ON_LLVM`` and ``adapters.nutpie.NUTPIE_COMPILE_ON_LLVM``). No other
thread sees either.
"""

import contextvars
import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from uuid import uuid4

import numpy as np
from pytensor.compile.mode import Mode, get_mode

from llvm_backend import adapters, rewrite_cache
from llvm_backend.adapters.pytensor import NUMBA_IS_LLVM
from llvm_backend.changes import Change
from llvm_backend.collector import paced_collections
from llvm_backend.linker import LLVMLinker

__all__ = ["SAMPLING_ON_LLVM", "compile_pymc_model", "numba_is_llvm", "nutpie_compile", "sample_external_nuts"]

SAMPLING_ON_LLVM = contextvars.ContextVar("llvm_backend_sampling_on_llvm", default=False)
"""True within a ``pm.sample`` call that asked for a mode on our linker and picked nutpie (`sample_external_nuts`),
in the thread (the context) making it."""

_lock = threading.Lock()
_open: dict[Change, int] = {}
"""How many blocks of each change `_held` holds open, in every thread."""


@contextmanager
def _held(change: Change) -> Iterator[None]:
    """``change`` (a process-wide `Change`) applied while any block holding it is open, in any thread: the first
    to enter applies it, the last to exit reverts it, also when an exception leaves. Blocks may nest and overlap
    across threads."""
    with _lock:
        _open[change] = _open.get(change, 0) + 1
        change.apply()
    try:
        yield
    finally:
        with _lock:
            _open[change] -= 1
            if not _open[change]:
                change.revert()


@contextmanager
def numba_is_llvm() -> Iterator[None]:
    """Within, PyTensor's mode "NUMBA" (``mode="NUMBA"``, ``get_mode("NUMBA")``) is the LLVM mode, for every
    thread of the process; the previous "NUMBA" is put back when the last block open exits, also when an exception
    leaves. Blocks may nest and overlap across threads."""
    with _held(NUMBA_IS_LLVM):
        yield


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


def _fast_mode() -> Mode:
    """FAST_COMPILE's rewrites on PyTensor's py linker, through the rewrite cache: what the shape and initial-point
    functions, each called once or twice, are compiled on (no VM, whose C lazylinker a cold process builds)."""
    return Mode(linker=rewrite_cache.CachedPerformLinker(), optimizer=get_mode("FAST_COMPILE").provided_optimizer)


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

    Everything is built on modes and functions passed explicitly (`llvm_backend.model_functions`), nothing
    process-wide changed meanwhile: the log density's rewrite and gradient through the rewrite cache, the shape
    and initial-point functions on FAST_COMPILE's rewrites on the py linker, through the cache too. It runs with the
    garbage collector paced (`paced_collections`). Raises ``RuntimeError`` naming the installed nutpie when the
    part of it used is not what this was written against (``adapters.nutpie.compile_pymc``).
    """
    import pytensor
    import pytensor.graph
    from pymc.model.transform.optimization import freeze_dims_and_data

    from llvm_backend.mode import LLVM
    from llvm_backend.model_functions import dims_and_coords, initial_point_function, model_functions
    from llvm_backend_intrinsics.nutpie import expand_entry, logp_entry

    if backend != "numba":
        raise ValueError(f"llvm_backend.nutpie compiles with nutpie's numba backend, not {backend!r}")
    if gradient_backend != "pytensor":
        raise ValueError(f"the numba backend computes gradients with pytensor, not {gradient_backend!r}")
    compile_pymc = adapters.nutpie.compile_pymc()
    if freeze_model:
        model = freeze_dims_and_data(model)
    if default_initialization_strategy == "support_point" and jitter_rvs is None:
        jitter_rvs = set(model.free_RVs)
    fast = _fast_mode()
    initial_point = initial_point_function(
        model,
        mode=fast,
        overrides=initial_points,
        jitter_rvs=jitter_rvs,
        default_strategy=default_initialization_strategy,
    )
    functions = model_functions(
        model,
        mode=LLVM,
        fast_mode=fast,
        initial_point=initial_point,
        rewrite_graph=rewrite_cache.rewrite_graph_through_cache(pytensor.graph.rewrite_graph),
        grad=rewrite_cache.grad_through_cache(pytensor.grad),
        var_names=var_names,
    )
    logp_fn, expand_fn = functions.logp_fn, functions.expand_fn
    keys, shared_data = {}, {}
    for var in dict.fromkeys([*logp_fn.get_shared(), *expand_fn.get_shared()]):
        keys[var] = uuid4().hex
        shared_data[keys[var]] = np.array(var.get_value(), order="C", copy=True)
        shared_data[keys[var]].flags.writeable = False
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


def _asks_for_llvm(arguments: dict) -> bool:
    """Whether PyMC's nutpie call was given a mode on our linker: ``compile_kwargs["mode"]`` (where
    ``pm.sample(backend=...)`` puts it too), or the deprecated ``nuts={"backend": ...}``, which PyMC prefers."""
    nuts_kwargs, compile_kwargs = arguments["nuts_kwargs"] or {}, arguments["compile_kwargs"] or {}
    mode = nuts_kwargs["backend"] if "backend" in nuts_kwargs else compile_kwargs.get("mode")
    return isinstance(get_mode(mode).linker, LLVMLinker)


def sample_external_nuts(original: Callable) -> Callable:
    """PyMC's ``_sample_external_nuts`` (``pm.sample`` with an external NUTS), a call that picked nutpie and asked
    for a mode on our linker marked in the calling context (`SAMPLING_ON_LLVM`), so nutpie's compile within it is
    ours (`nutpie_compile`): PyMC drops the mode, and nutpie compiles under "NUMBA" by name. Every other call is
    PyMC's as it is. ``adapters.pymc.PYMC_NUTPIE_ON_LLVM`` checks PyMC's function before wrapping it."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def sample(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        if arguments["sampler"] != "nutpie" or not _asks_for_llvm(arguments):
            return original(*args, **kwargs)
        marked = SAMPLING_ON_LLVM.set(True)
        try:
            return original(*args, **kwargs)
        finally:
            SAMPLING_ON_LLVM.reset(marked)

    return sample


def nutpie_compile(original: Callable) -> Callable:
    """nutpie's ``compile_pymc_model``, which is `compile_pymc_model` when called within a ``pm.sample`` call
    that asked for LLVM (`SAMPLING_ON_LLVM`). Such a call passing nutpie's ``numba.cfunc`` options, which ours does
    not take, is nutpie's own, on stock kernels, with a warning saying so; any other call is nutpie's own."""
    ours = inspect.signature(compile_pymc_model).parameters

    @functools.wraps(original)
    def compile(model, **kwargs):
        if not SAMPLING_ON_LLVM.get():
            return original(model, **kwargs)
        if kwargs.keys() <= ours.keys():
            return compile_pymc_model(model, **kwargs)
        warnings.warn(
            f"llvm_backend: nutpie's numba.cfunc options {sorted(kwargs.keys() - ours.keys())} are nutpie's own "
            "compile's: this pm.sample samples on stock NUMBA kernels",
            RuntimeWarning,
            stacklevel=2,
        )
        return original(model, **kwargs)

    return compile
