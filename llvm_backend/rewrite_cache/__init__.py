"""A disk cache of rewritten graphs for the LLVM mode.

PyTensor rewrites a graph anew in every process: seconds for a model of a few thousand nodes, paid again by
every session that compiles the same model even when every compiled function then comes from numba's cache.
`CachedRewriter` wraps the rewriter a mode's query resolves to: it keys the graph it is given (`graph_key`)
and, when an earlier process stored the rewritten graph under that key, puts that graph in place instead of
rewriting.

The key covers what the rewritten graph depends on: every node's op and every variable's type (their
pickled state, their classes' package versions, and the code they run where no versioned distribution names it:
an ``as_op`` function or an Op defined in a script is keyed by its code and the module globals it reads, see
`fingerprint`), the graph's structure, names and constants' values, which inputs the function protects from
in-place rewrites and its updates; the rewriters the query resolved to (their order, names, settings and the code
of their functions); every PyTensor flag but those known not to change a rewritten graph
(`fingerprint.UNKEYED_FLAGS`); and the versions of Python, PyTensor, numpy, numba, llvmlite and of this package
(the hash of its source). A graph holding something that cannot be keyed (an op that
cannot be pickled, a global that cannot) is rewritten as usual and not stored. An op whose pickled state holds a
set of strings keys differently from process to process (string hashing varies), which costs a miss, never a
wrong hit.

What is stored is the rewritten graph itself, pickled with its key, which loading compares; an entry that cannot
be put in place is removed and the graph rewritten. A cache that cannot be written is read without writing.
Entries live in PyTensor's ``compiledir`` (``llvm_backend_rewrites``), at most `MAX_ENTRIES` of them and
`MAX_BYTES` in all, the least recently used removed first.
``LLVM_BACKEND_REWRITE_CACHE=0`` in the environment turns the cache off; ``llvm-backend cache clear``
empties it.

Which queries it serves is decided in one place, `is_ours`: exactly those that include our tag
(``REWRITE_TAG``, which the LLVM linker requires), whatever `Mode` object carries the linker ("LLVM", modes
derived from it, PyMC's ``compile``, which rebuilds a plain ``Mode`` from the mode's linker and query,
``Mode(linker="llvm")``), and those including `CACHE_TAG`, which no rewrite is registered under: a mode on
`CachedPerformLinker` (PyTensor's py linker requiring the tag) rewrites as on the py linker, through the cache, and
`rewrite_graph_through_cache` gives PyTensor's ``rewrite_graph`` through the cache. ``gradient`` stores
gradients: `grad_through_cache` gives ``pytensor.grad`` through the cache.
Importing the package makes `cached_query` PyTensor's ``optdb.query``
(``rewrite_cache_query`` in ``llvm_backend.adapters.pytensor``), which wraps such a query's rewriters in a
`CachedRewriter` and returns every other query's as PyTensor builds them. The key includes the linker of the mode
compiling the graph.

The layers, one module each: ``structure`` (a graph's structure, each node once, for a graph compiled and
an op's inner graph alike), ``fingerprint`` (what identifies code, classes, ops, rewriters and flags), ``keys``
(the key of a graph), ``install`` (a stored graph put in place), ``store`` (the files on disk),
``rewriter`` (`CachedRewriter`, `cached_query` and `is_ours`) and ``gradient`` (`grad_through_cache`).
"""

from llvm_backend.rewrite_cache import store
from llvm_backend.rewrite_cache.fingerprint import rewriter_fingerprint
from llvm_backend.rewrite_cache.gradient import grad_through_cache
from llvm_backend.rewrite_cache.keys import Uncacheable, graph_key
from llvm_backend.rewrite_cache.rewriter import (
    CACHE_TAG,
    CachedPerformLinker,
    CachedRewriter,
    cached_query,
    enabled,
    is_ours,
    outcomes,
    rewrite_graph_through_cache,
)
from llvm_backend.rewrite_cache.store import MAX_BYTES, MAX_ENTRIES, RewriteCache

__all__ = [
    "CACHE_TAG",
    "MAX_BYTES",
    "MAX_ENTRIES",
    "CachedPerformLinker",
    "CachedRewriter",
    "RewriteCache",
    "Uncacheable",
    "cached_query",
    "enabled",
    "grad_through_cache",
    "graph_key",
    "is_ours",
    "outcomes",
    "rewrite_graph_through_cache",
    "rewriter_fingerprint",
    "store",
]
