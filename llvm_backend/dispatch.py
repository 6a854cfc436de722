"""Our dispatch entry point: op -> numba function, through our intrinsics where we have one.

``llvm_funcify_and_cache_key`` is a ``singledispatch`` of our own. An op whose class has an entry in
``LOWERINGS`` (registered with ``register_lowering``) is lowered by our code, which calls the
intrinsic named on its registration line; every other op falls back, explicitly, to PyTensor's stock
numba dispatch. PyTensor's own dispatch tables are never touched, so ``mode="NUMBA"`` is unchanged.
"""

from collections.abc import Callable
from functools import singledispatch

from pytensor.link.numba.dispatch.basic import (
    default_hash_key_from_props,
    numba_funcify_and_cache_key,
)

__all__ = ["LOWERINGS", "llvm_funcify_and_cache_key", "lowering_cache_key", "register_lowering"]

# Bump when any lowering's generated code changes, so stale on-disk cache entries are not reused.
CODEGEN_VERSION = 1

LOWERINGS: dict[type, Callable] = {}
"""Op class -> the intrinsic its LLVM-mode lowering calls."""


@singledispatch
def llvm_funcify_and_cache_key(op, node=None, **kwargs) -> tuple[Callable, str | None]:
    """Return ``(numba function, cache key or None)`` for ``op``; stock numba's when not lowered by us."""
    return numba_funcify_and_cache_key(op, node=node, **kwargs)


def lowering_cache_key(op, **extra) -> str:
    """A cache key for one of our lowerings: the op's props, salted so stock entries never collide."""
    return default_hash_key_from_props(op, llvm_backend=CODEGEN_VERSION, **extra)


def register_lowering(op_type: type, intrinsic: Callable):
    """Register ``funcify(op, node, **kwargs) -> (fn, key)`` as the lowering of ``op_type``.

    ``intrinsic`` is the function from ``intrinsics/`` that the lowering calls; it is recorded in
    ``LOWERINGS`` so the table says which op is lowered by what.
    """

    def decorator(funcify):
        LOWERINGS[op_type] = intrinsic
        llvm_funcify_and_cache_key.register(op_type)(funcify)
        return funcify

    return decorator
