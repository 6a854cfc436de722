"""The LLVM linker: PyTensor's Numba linker, with every node lowered through our dispatch."""

from hashlib import sha256

from pytensor import config
from pytensor.graph.basic import Constant
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch.basic import (
    cache_key_for_constant,
    numba_njit,
    numba_typify,
)
from pytensor.link.numba.linker import NumbaLinker
from pytensor.link.utils import fgraph_to_python

from llvm_backend.dispatch import CODEGEN_VERSION, llvm_funcify_and_cache_key

__all__ = ["REWRITE_TAG", "LLVMLinker", "funcify_fgraph"]

REWRITE_TAG = "llvm_backend"
"""The tag of our rewrites in PyTensor's ``optdb``; only the LLVM mode requests it."""


def cacheable(jitable, cache_key: str | None):
    """Wrap ``jitable`` so numba caches it on disk under ``cache_key``, when caching is on.

    PyTensor's cache locator only finds functions compiled from registered source, so the
    function is re-exposed through a one-line generated wrapper registered under the key.
    """
    if cache_key is None or not config.numba__cache:
        return jitable, None
    name = jitable.__name__
    wrapper = compile_numba_function_src(
        src=f"def {name}(*args): return jitable(*args)",
        function_name=name,
        # numba rebuilds a cached function's environment by importing its module by name
        global_env={"__name__": __name__, "jitable": jitable},
        cache_key=f"{cache_key}_fastmath{int(config.numba__fastmath)}",
    )
    return numba_njit(wrapper, cache=True), cache_key


def funcify_fgraph(fgraph, fgraph_name="llvm_funcified_fgraph", **kwargs):
    """Generate and jit the Python function that runs ``fgraph``, and its cache key.

    Each node becomes a call to its numba function (``llvm_funcify_and_cache_key``); the graph's key combines
    every node's key with where its inputs come from, and is ``None`` if any node is uncacheable.
    """
    coords = {inp: (0, i) for i, inp in enumerate(fgraph.inputs)}
    for i, node in enumerate(fgraph.toposort(), start=1):
        coords |= {out: (i, j) for j, out in enumerate(node.outputs)}
    node_keys = []

    def convert_op(op, *args, node, **kwargs):
        func, key = cacheable(*llvm_funcify_and_cache_key(op, node=node, **kwargs))
        node_keys.append(None if key is None else (tuple(coords[i] for i in node.inputs), key))
        return func

    def convert_value(value, variable, **kwargs):
        if isinstance(variable, Constant):
            coords[variable] = (-1, cache_key_for_constant(value))
        return numba_typify(value, variable=variable, **kwargs)

    py_func = fgraph_to_python(
        fgraph,
        op_conversion_fn=convert_op,
        type_conversion_fn=convert_value,
        fgraph_name=fgraph_name,
        **kwargs,
    )
    key = None
    if None not in node_keys:
        outputs = tuple(coords[out] for out in fgraph.outputs)
        desc = (REWRITE_TAG, CODEGEN_VERSION, tuple(node_keys), len(fgraph.inputs), outputs)
        key = sha256(repr(desc).encode()).hexdigest()
    return numba_njit(py_func), key


class LLVMLinker(NumbaLinker):
    """A `NumbaLinker` whose nodes are lowered by ``llvm_funcify_and_cache_key``."""

    required_rewrites = (*NumbaLinker.required_rewrites, REWRITE_TAG)

    def fgraph_convert(self, fgraph, **kwargs):
        return cacheable(*funcify_fgraph(fgraph, **kwargs))
