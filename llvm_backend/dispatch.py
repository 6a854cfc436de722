"""Our dispatch entry point: op -> numba function, through our intrinsics where we have one.

``LOWERINGS`` is the one table of what we lower: a `Lowering` record per op class (the intrinsic it calls,
the condition on the node, its spec, where the entries it can take as one pack start, its funcify and its
cache version), registered with ``register_lowering`` and found along the op's MRO (`lowering_for`).

Each node's lowering is decided once per graph, in a `LoweringPlan` (`plan_graph`): per node a `PlanEntry`
(the `Lowering` that applies, or None for stock's; its spec; its pack start; the hints of the graph passes,
``GRAPH_PASSES``, which annotate the plan with what depends on the graph around a node). ``lower`` builds a
node's numba function from a `LoweringContext` holding the node and its entry, through its record's funcify,
cached under a key salted with the lowering's version; every other node falls back, explicitly, to PyTensor's
stock numba function and its own cache entry, which it shares with ``mode="NUMBA"``. This module writes to none of
PyTensor's dispatch tables; the package's one entry there, `Composite`'s, is ``llvm_backend.adapters.pytensor``'s
``composite_funcify``.
"""

import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from hashlib import sha256
from types import MappingProxyType

from numba.core.extending import _Intrinsic
from pytensor import config
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch.basic import (
    default_hash_key_from_props,
    numba_funcify_and_cache_key,
    numba_funcify_ensure_cache,
    numba_njit,
)
from pytensor.tensor.type import TensorType

from llvm_backend.sources import OWN_PACKAGES, project_source_hash
from llvm_backend_intrinsics.abi import ARRAYS_READ

__all__ = [
    "GRAPH_PASSES",
    "LOWERINGS",
    "MAX_ITEMS",
    "Lowering",
    "LoweringContext",
    "LoweringPlan",
    "PlanEntry",
    "cacheable",
    "llvm_funcify_and_cache_key",
    "lower",
    "lowering_cache_key",
    "lowering_for",
    "one_pack",
    "packed_arguments",
    "plan_entry",
    "plan_graph",
    "register_graph_pass",
    "register_lowering",
    "source_hash",
    "stock_funcify_and_key",
]

MAX_ITEMS = 30
"""The widest call or tuple display CPython still compiles to a single opcode: past it, the graph function
takes arrays of one dtype and ndim as one pack, and lowerings with a pack start take their entries as one."""

_NO_HINTS = MappingProxyType({})


def one_pack(variables) -> bool:
    """Whether ``variables`` are tensors of one dtype and ndim, which a function can take as one pack."""
    return (
        ARRAYS_READ
        and all(isinstance(v.type, TensorType) for v in variables)
        and len({(v.type.dtype, v.type.ndim) for v in variables}) == 1
    )


@cache
def source_hash(module_name: str) -> str:
    """A hash of the source module ``module_name`` runs. For a module of this project, `project_source_hash`, the
    hash of all of it: an intrinsic's code changes with any helper it emits through (`llvm_backend_intrinsics.
    naming`, ``messages``...), so a key salted with it must; for any other module, its own source (empty if it has
    none to read)."""
    if module_name.partition(".")[0] in OWN_PACKAGES:
        return project_source_hash()
    try:
        return sha256(inspect.getsource(importlib.import_module(module_name)).encode()).hexdigest()[:16]
    except (OSError, TypeError):
        return ""


@dataclass(frozen=True)
class Lowering:
    """How the LLVM mode lowers nodes of ``op_type`` (and its subclasses).

    ``funcify(context: LoweringContext) -> (numba function, cache key)`` builds the node function, which calls
    ``intrinsic``; ``when(node)``, if given, says which nodes it takes (the others get stock's function);
    ``spec(node)``, if given, is what the funcify needs of the node, computed once per graph (`plan_entry`),
    or None for a node it does not take; ``pack_start``, if not None, is where the node's inputs that the
    function can take as one `ArrayPack` start (from there to the last input). ``version``: bump it when the
    lowering's generated code changes; it salts the cache keys of the nodes it lowers (`lowering_cache_key`),
    with the hash of the source of the funcify's and the intrinsic's modules (`source_hash`)."""

    op_type: type
    intrinsic: Callable
    funcify: Callable
    when: Callable | None = None
    pack_start: int | None = None
    spec: Callable | None = None
    version: int = 1

    def decide(self, node) -> tuple[bool, object]:
        """Whether the lowering takes ``node``, and its spec of it (None without a ``spec``)."""
        if self.when is not None and not self.when(node):
            return False, None
        if self.spec is None:
            return True, None
        spec = self.spec(node)
        return spec is not None, spec

    def applies(self, node) -> bool:
        return self.decide(node)[0]

    @property
    def condition(self) -> str:
        """The first line of ``when``'s docstring (else of ``spec``'s), or "always"."""
        test = self.when or self.spec
        if test is None:
            return "always"
        return (test.__doc__ or test.__name__).strip().splitlines()[0]

    @property
    def salt(self) -> str:
        """What the cache keys of the nodes it lowers are salted with: the funcify, its version and the hashes of
        the funcify's and the intrinsic's modules."""
        funcify = f"{self.funcify.__module__}.{self.funcify.__qualname__}"
        sources = (source_hash(self.funcify.__module__), source_hash(self.intrinsic.__module__))
        return f"{funcify}@{self.version}:{':'.join(sources)}"


LOWERINGS: dict[type, Lowering] = {}
"""Op class -> its `Lowering`; read it through `lowering_for`, which follows the op's MRO."""


def lowering_for(op) -> Lowering | None:
    """The `Lowering` registered for ``op``'s class or its nearest registered base class, if any."""
    for cls in type(op).__mro__:
        lowering = LOWERINGS.get(cls)
        if lowering is not None:
            return lowering
    return None


@dataclass(frozen=True)
class PlanEntry:
    """How a node is lowered: by ``lowering`` (None: stock's function) with its ``spec``, taking its inputs from
    ``pack_start`` on as one pack (None: each its own), with the ``hints`` of the graph passes."""

    lowering: Lowering | None = None
    spec: object = None
    pack_start: int | None = None
    hints: Mapping = field(default=_NO_HINTS)


def plan_entry(node) -> PlanEntry:
    """``node``'s `PlanEntry`, without hints: its lowering looked up and decided once."""
    lowering = lowering_for(node.op)
    if lowering is None:
        return PlanEntry()
    ours, spec = lowering.decide(node)
    if not ours:
        return PlanEntry()
    pack_start = lowering.pack_start
    if pack_start is not None:
        arrays = node.inputs[pack_start:]
        pack_start = pack_start if len(arrays) > MAX_ITEMS and one_pack(arrays) else None
    return PlanEntry(lowering, spec, pack_start)


@dataclass(frozen=True)
class LoweringPlan:
    """Each node's `PlanEntry`, for one graph."""

    entries: Mapping

    def __getitem__(self, node) -> PlanEntry:
        return self.entries[node]


GRAPH_PASSES: list[Callable] = []
"""The graph passes `plan_graph` runs, in order: ``graph_pass(fgraph, plan) -> {node: {hint: value}}``, hints
added to those nodes' entries (such as ``lowerings/join.py``'s filled joins)."""


def register_graph_pass(graph_pass: Callable) -> Callable:
    """Decorator: add ``graph_pass`` to ``GRAPH_PASSES``."""
    GRAPH_PASSES.append(graph_pass)
    return graph_pass


def plan_graph(fgraph, order=None) -> LoweringPlan:
    """The `LoweringPlan` of ``fgraph``'s nodes (in ``order``, its toposort by default): an entry per node, then
    the hints of each of ``GRAPH_PASSES``."""
    entries = {node: plan_entry(node) for node in (fgraph.toposort() if order is None else order)}
    for graph_pass in GRAPH_PASSES:
        for node, hints in graph_pass(fgraph, LoweringPlan(MappingProxyType(dict(entries)))).items():
            entries[node] = replace(entries[node], hints=MappingProxyType({**entries[node].hints, **hints}))
    return LoweringPlan(MappingProxyType(entries))


def packed_arguments(node) -> int | None:
    """Where the arrays ``node``'s function takes as one pack start among its inputs, if it is worth it: its
    `Lowering`'s ``pack_start``, when the lowering applies to the node and the inputs from there on are more
    than ``MAX_ITEMS`` tensors of one dtype and ndim."""
    return plan_entry(node).pack_start


@dataclass(frozen=True)
class LoweringContext:
    """What a lowering's funcify is given: the node, its `PlanEntry` and what stock's funcify takes of the
    graph (``storage_map``, and ``ofg_memo``, one function per distinct OpFromGraph)."""

    node: object
    entry: PlanEntry
    storage_map: Mapping | None = None
    ofg_memo: dict | None = None

    @property
    def op(self):
        return self.node.op

    @property
    def spec(self):
        return self.entry.spec

    @property
    def hints(self) -> Mapping:
        return self.entry.hints

    @property
    def stock_kwargs(self) -> dict:
        """The keyword arguments of a stock numba funcify of this node or of a node within it."""
        given = {"storage_map": self.storage_map, "ofg_memo": self.ofg_memo}
        return {name: value for name, value in given.items() if value is not None}


def stock_funcify_and_key(op, node=None, **kwargs) -> tuple[Callable, str | None]:
    """Stock numba's function for ``op`` and its cache key, made cacheable on disk when caching is on.

    With the cache off the key is still returned (stock's ``numba_funcify_ensure_cache`` drops it): the graph
    function shares one numba function between nodes of one key, and tools that compile with the cache off
    must see the code users run."""
    if config.numba__cache:
        return numba_funcify_ensure_cache(op, node=node, **kwargs)
    return numba_funcify_and_cache_key(op, node=node, **kwargs)


def lower(context: LoweringContext) -> tuple[Callable, str | None]:
    """Return ``(numba function, cache key or None)`` for ``context``'s node: through its entry's `Lowering`,
    else stock numba's."""
    lowering = context.entry.lowering
    if lowering is None:
        return stock_funcify_and_key(context.op, node=context.node, **context.stock_kwargs)
    return cacheable(*lowering.funcify(context))


def llvm_funcify_and_cache_key(op, node=None, storage_map=None, ofg_memo=None) -> tuple[Callable, str | None]:
    """`lower` for ``node`` alone (no graph passes: no hints)."""
    return lower(LoweringContext(node, plan_entry(node), storage_map, ofg_memo))


def lowering_cache_key(op, *, use_props: bool = True, **extra) -> str:
    """A cache key for one of our lowerings: the op's props, salted with its `Lowering`'s ``salt`` so stock
    entries never collide, and a new version of the lowering has keys of its own.

    An ``OpFromGraph`` (PyTensor's scalarization ops are) has no props: its key is its class and ``extra``,
    which must then say all the node function depends on; so is the key with ``use_props=False`` (props that
    are objects are keyed by their pickle, which need not be the same for an op unpickled from the rewrite
    cache)."""
    lowering = lowering_for(op)
    salt = "llvm_backend" if lowering is None else f"llvm_backend:{lowering.salt}"
    if not use_props or not hasattr(op, "_props_dict"):
        description = (salt, type(op).__module__, type(op).__qualname__, sorted(extra.items()))
        return sha256(repr(description).encode()).hexdigest()
    return default_hash_key_from_props(op, llvm_backend=salt, **extra)


def cacheable(jitable, cache_key: str | None):
    """Wrap ``jitable`` so numba caches it on disk under ``cache_key``, when caching is on (with it off, the
    key still names the function, for sharing it between nodes).

    PyTensor's cache locator only finds functions compiled from registered source, so the
    function is re-exposed through a one-line generated wrapper registered under the key. An intrinsic is
    returned as it is: it has no code of its own, the graph function emits it (and is cached whole).
    """
    if cache_key is None or not config.numba__cache or isinstance(jitable, _Intrinsic):
        return jitable, cache_key
    name = jitable.__name__
    wrapper = compile_numba_function_src(
        src=f"def {name}(*args): return jitable(*args)",
        function_name=name,
        # numba rebuilds a cached function's environment by importing its module by name
        global_env={"__name__": __name__, "jitable": jitable},
        cache_key=f"{cache_key}_fastmath{int(config.numba__fastmath)}",
    )
    return numba_njit(wrapper, cache=True), cache_key


def register_lowering(
    op_type: type,
    intrinsic: Callable,
    when: Callable | None = None,
    pack_start: int | None = None,
    spec: Callable | None = None,
    version: int = 1,
):
    """Decorator: register ``funcify(context: LoweringContext) -> (fn, key)`` as the lowering of ``op_type``.

    ``intrinsic`` is the function from ``llvm_backend_intrinsics`` that the lowering calls. ``key`` must come from
    ``lowering_cache_key`` (or be ``None`` for an uncacheable function). With ``when``, only nodes for which
    ``when(node)`` holds are lowered by us (its docstring's first line says which, in ``llvm-backend
    lowerings``); the others get stock's function and cache entry. ``spec``, ``pack_start`` and ``version``:
    see `Lowering`.
    """

    def decorator(funcify):
        if op_type in LOWERINGS:
            raise ValueError(f"{op_type.__name__} already has a lowering: {LOWERINGS[op_type].funcify.__qualname__}")
        LOWERINGS[op_type] = Lowering(op_type, intrinsic, funcify, when, pack_start, spec, version)
        return funcify

    return decorator
