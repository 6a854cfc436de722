"""Our lowerings of PyTensor ops, one module per op family; importing registers them in ``LOWERINGS``."""

from llvm_backend.lowerings import (
    advanced_indexing,
    alloc,
    checks,
    composite,
    cumulative,
    dot,
    join,
    linalg,
    loops,
    reduction,
    shapes,
    split,
    updates,
    views,
)

__all__ = [
    "advanced_indexing",
    "alloc",
    "checks",
    "composite",
    "cumulative",
    "dot",
    "join",
    "linalg",
    "loops",
    "reduction",
    "shapes",
    "split",
    "updates",
    "views",
]
