"""Our dispatch entry point: op -> numba function, through our intrinsics where we have one.

``llvm_funcify_and_cache_key`` is a ``singledispatch`` of our own returning ``(numba function, cache key)``.
An op whose class has an entry in ``LOWERINGS`` (registered with ``register_lowering``) is lowered by our
code, which calls the intrinsic named on its registration line, and cached under a key salted with ours.
Every other op falls back, explicitly, to PyTensor's stock numba function and its own cache entry,
which it shares with ``mode="NUMBA"``. PyTensor's dispatch tables are never touched.
"""

from collections.abc import Callable
from functools import singledispatch, wraps
from hashlib import sha256

from pytensor import config
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch.basic import (
    default_hash_key_from_props,
    numba_funcify_and_cache_key,
    numba_funcify_ensure_cache,
    numba_njit,
)

__all__ = [
    "CODEGEN_VERSION",
    "LOWERINGS",
    "cacheable",
    "llvm_funcify_and_cache_key",
    "lowering_cache_key",
    "register_lowering",
    "stock_funcify_and_key",
]

# Bump when any lowering's generated code changes, so stale on-disk cache entries are not reused.
CODEGEN_VERSION = 6

LOWERINGS: dict[type, Callable] = {}
"""Op class -> the intrinsic its LLVM-mode lowering calls."""


def stock_funcify_and_key(op, node=None, **kwargs) -> tuple[Callable, str | None]:
    """Stock numba's function for ``op`` and its cache key, made cacheable on disk when caching is on.

    With the cache off the key is still returned (stock's ``numba_funcify_ensure_cache`` drops it): the graph
    function shares one numba function between nodes of one key, and tools that compile with the cache off
    must see the code users run."""
    if config.numba__cache:
        return numba_funcify_ensure_cache(op, node=node, **kwargs)
    return numba_funcify_and_cache_key(op, node=node, **kwargs)


@singledispatch
def llvm_funcify_and_cache_key(op, node=None, **kwargs) -> tuple[Callable, str | None]:
    """Return ``(numba function, cache key or None)`` for ``op``; stock numba's when not lowered by us."""
    return stock_funcify_and_key(op, node=node, **kwargs)


def lowering_cache_key(op, **extra) -> str:
    """A cache key for one of our lowerings: the op's props, salted so stock entries never collide.

    An ``OpFromGraph`` (PyTensor's scalarization ops are) has no props: its key is its class and ``extra``,
    which must then say all the node function depends on."""
    if not hasattr(op, "_props_dict"):
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
    function is re-exposed through a one-line generated wrapper registered under the key.
    """
    if cache_key is None or not config.numba__cache:
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


def register_lowering(op_type: type, intrinsic: Callable, when: Callable | None = None):
    """Register ``funcify(op, node, **kwargs) -> (fn, key)`` as the lowering of ``op_type``.

    ``intrinsic`` is the function from ``intrinsics/`` that the lowering calls; it is recorded in
    ``LOWERINGS`` so the table says which op is lowered by what. ``key`` must come from
    ``lowering_cache_key`` (or be ``None`` for an uncacheable function). With ``when``, only nodes for
    which ``when(node)`` holds are lowered by us; the others get stock's function and cache entry.
    """

    def decorator(funcify):
        LOWERINGS[op_type] = intrinsic

        @wraps(funcify)
        def funcify_and_cache(op, node=None, **kwargs):
            if when is not None and not when(node):
                return stock_funcify_and_key(op, node=node, **kwargs)
            return cacheable(*funcify(op, node=node, **kwargs))

        llvm_funcify_and_cache_key.register(op_type)(funcify_and_cache)
        return funcify

    return decorator
