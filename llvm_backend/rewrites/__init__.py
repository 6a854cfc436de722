"""The LLVM mode's graph rewrites, one module each. Importing this package registers each rewrite where it runs,
in PyTensor's ``optdb`` or in one of our databases (``registry``, at the rewrite's definition): ``llvm-backend
rewrites`` lists them in the order they run, and ``docs/reference.md`` holds that list."""

from llvm_backend.rewrites import (
    columns,
    hoist,
    logistic,
    made_vectors,
    products,
    reductions,
    registry,
    scalar_inputs,
    sums,
    supervisor,
    switches,
)

__all__ = [
    "columns",
    "hoist",
    "logistic",
    "made_vectors",
    "products",
    "reductions",
    "registry",
    "scalar_inputs",
    "sums",
    "supervisor",
    "switches",
]
