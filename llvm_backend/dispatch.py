"""Our dispatch entry point: op -> numba function, through our intrinsics where we have one.

``LOWERINGS`` is the one table of what we lower: a `Lowering` record per op class (the intrinsic it calls,
the condition on the node, where the entries it can take as one pack start, its funcify), registered with
``register_lowering`` and found along the op's MRO (`lowering_for`). ``llvm_funcify_and_cache_key`` lowers a
node through its record, cached under a key salted with ours; every other node falls back, explicitly, to
PyTensor's stock numba function and its own cache entry, which it shares with ``mode="NUMBA"``. PyTensor's
dispatch tables are never touched.
"""

from collections.abc import Callable
from dataclasses import dataclass
from hashlib import sha256

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

from intrinsics.argpack import PACKS_SUPPORTED

__all__ = [
    "CODEGEN_VERSION",
    "LOWERINGS",
    "MAX_ITEMS",
    "Lowering",
    "cacheable",
    "llvm_funcify_and_cache_key",
    "lowering_cache_key",
    "lowering_for",
    "one_pack",
    "packed_arguments",
    "register_lowering",
    "stock_funcify_and_key",
]

# Bump when any lowering's generated code changes, so stale on-disk cache entries are not reused.
CODEGEN_VERSION = 20

MAX_ITEMS = 30
"""The widest call or tuple display CPython still compiles to a single opcode: past it, the graph function
takes arrays of one dtype and ndim as one pack, and lowerings with a pack start take their entries as one."""


def one_pack(variables) -> bool:
    """Whether ``variables`` are tensors of one dtype and ndim, which a function can take as one pack."""
    return (
        PACKS_SUPPORTED
        and all(isinstance(v.type, TensorType) for v in variables)
        and len({(v.type.dtype, v.type.ndim) for v in variables}) == 1
    )


@dataclass(frozen=True)
class Lowering:
    """How the LLVM mode lowers nodes of ``op_type`` (and its subclasses).

    ``funcify(op, node, **kwargs) -> (numba function, cache key)`` builds the node function, which calls
    ``intrinsic``; ``when(node)``, if given, says which nodes it takes (the others get stock's function);
    ``pack_start``, if not None, is where the node's inputs that the function can take as one `ArrayPack`
    start (from there to the last input)."""

    op_type: type
    intrinsic: Callable
    funcify: Callable
    when: Callable | None = None
    pack_start: int | None = None

    def applies(self, node) -> bool:
        return self.when is None or bool(self.when(node))

    @property
    def condition(self) -> str:
        """The first line of ``when``'s docstring, or "always"."""
        if self.when is None:
            return "always"
        return (self.when.__doc__ or self.when.__name__).strip().splitlines()[0]


LOWERINGS: dict[type, Lowering] = {}
"""Op class -> its `Lowering`; read it through `lowering_for`, which follows the op's MRO."""


def lowering_for(op) -> Lowering | None:
    """The `Lowering` registered for ``op``'s class or its nearest registered base class, if any."""
    for cls in type(op).__mro__:
        lowering = LOWERINGS.get(cls)
        if lowering is not None:
            return lowering
    return None


def packed_arguments(node) -> int | None:
    """Where the arrays ``node``'s function takes as one pack start among its inputs, if it is worth it: its
    `Lowering`'s ``pack_start``, when the lowering applies to the node and the inputs from there on are more
    than ``MAX_ITEMS`` tensors of one dtype and ndim."""
    lowering = lowering_for(node.op)
    if lowering is None or lowering.pack_start is None or not lowering.applies(node):
        return None
    arrays = node.inputs[lowering.pack_start :]
    return lowering.pack_start if len(arrays) > MAX_ITEMS and one_pack(arrays) else None


def stock_funcify_and_key(op, node=None, **kwargs) -> tuple[Callable, str | None]:
    """Stock numba's function for ``op`` and its cache key, made cacheable on disk when caching is on.

    With the cache off the key is still returned (stock's ``numba_funcify_ensure_cache`` drops it): the graph
    function shares one numba function between nodes of one key, and tools that compile with the cache off
    must see the code users run."""
    if config.numba__cache:
        return numba_funcify_ensure_cache(op, node=node, **kwargs)
    return numba_funcify_and_cache_key(op, node=node, **kwargs)


def llvm_funcify_and_cache_key(op, node=None, **kwargs) -> tuple[Callable, str | None]:
    """Return ``(numba function, cache key or None)`` for ``node``: through its `Lowering` when it has one
    that applies, else stock numba's."""
    lowering = lowering_for(op)
    if lowering is None or not lowering.applies(node):
        return stock_funcify_and_key(op, node=node, **kwargs)
    return cacheable(*lowering.funcify(op, node=node, **kwargs))


def lowering_cache_key(op, *, use_props: bool = True, **extra) -> str:
    """A cache key for one of our lowerings: the op's props, salted so stock entries never collide.

    An ``OpFromGraph`` (PyTensor's scalarization ops are) has no props: its key is its class and ``extra``,
    which must then say all the node function depends on; so is the key with ``use_props=False`` (props that
    are objects are keyed by their pickle, which need not be the same for an op unpickled from the rewrite
    cache)."""
    if not use_props or not hasattr(op, "_props_dict"):
        description = (
            "llvm_backend",
            CODEGEN_VERSION,
            type(op).__module__,
            type(op).__qualname__,
            sorted(extra.items()),
        )
        return sha256(repr(description).encode()).hexdigest()
    return default_hash_key_from_props(op, llvm_backend=CODEGEN_VERSION, **extra)


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


def register_lowering(op_type: type, intrinsic: Callable, when: Callable | None = None, pack_start: int | None = None):
    """Decorator: register ``funcify(op, node, **kwargs) -> (fn, key)`` as the lowering of ``op_type``.

    ``intrinsic`` is the function from ``intrinsics/`` that the lowering calls. ``key`` must come from
    ``lowering_cache_key`` (or be ``None`` for an uncacheable function). With ``when``, only nodes for which
    ``when(node)`` holds are lowered by us (its docstring's first line says which, in ``llvm-backend
    lowerings``); the others get stock's function and cache entry. ``pack_start``: see `Lowering`.
    """

    def decorator(funcify):
        if op_type in LOWERINGS:
            raise ValueError(f"{op_type.__name__} already has a lowering: {LOWERINGS[op_type].funcify.__qualname__}")
        LOWERINGS[op_type] = Lowering(op_type, intrinsic, funcify, when, pack_start)
        return funcify

    return decorator
