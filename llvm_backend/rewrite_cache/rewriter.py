"""The rewriter wrapper: `CachedRewriter` serves a compile from the store or rewrites and stores, and
`cached_query`, ``optdb.query`` from import on, puts it on every query that `is_ours`."""

import functools
import logging
import os
import sys
from collections import Counter
from collections.abc import Callable

from pytensor.compile.mode import optdb
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.basic import GraphRewriter
from pytensor.graph.rewriting.db import RewriteDatabaseQuery, SequenceDB
from pytensor.graph.rewriting.utils import rewrite_graph
from pytensor.link.basic import PerformLinker

from llvm_backend.rewrite_cache import store
from llvm_backend.rewrite_cache.fingerprint import class_identity, digest, rewriter_fingerprint
from llvm_backend.rewrite_cache.install import install
from llvm_backend.rewrite_cache.keys import Uncacheable, graph_key
from llvm_backend.rewrite_cache.store import RewriteCache
from llvm_backend.rewrites.registry import REWRITE_TAG
from llvm_backend.rewrites.supervisor import use_indexed_supervisor
from llvm_backend.rewrites.validate_once import validated_once

__all__ = [
    "CACHE_TAG",
    "CachedPerformLinker",
    "CachedRewriter",
    "cached_query",
    "enabled",
    "is_ours",
    "outcomes",
    "rewrite_graph_through_cache",
]

_logger = logging.getLogger(__name__)

outcomes: Counter = Counter()
"""How many graphs this process's `CachedRewriter`s (and gradients, ``gradient.grad_through_cache``) found in
their cache ("hit"), rewrote and stored ("stored"), rewrote without storing ("not stored": the rewritten graph
could not be pickled or put back) or could not key ("uncacheable")."""


def enabled() -> bool:
    """Whether ``LLVM_BACKEND_REWRITE_CACHE`` leaves the cache on (it is unless set to 0/false/off/no)."""
    return os.environ.get("LLVM_BACKEND_REWRITE_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")


CACHE_TAG = "llvm_backend_rewrite_cache"
"""A tag no rewrite is registered under: a query including it is served by the cache (`is_ours`) with the
rewrites it resolves to without it. `CachedPerformLinker` requires it. Querying it leaves an empty entry for it
in each rewrite database queried, as querying any tag not registered does."""


def is_ours(query: RewriteDatabaseQuery) -> bool:
    """Whether the rewrite cache serves ``query``: exactly when it includes our tag, `REWRITE_TAG`, or
    `CACHE_TAG` (among its ``include`` and not among its ``exclude``, which would take our rewrites out again).
    The LLVM linker requires the first (``LLVMLinker.required_rewrites``) and `CachedPerformLinker` the second, so
    every Mode carrying either asks such a query; no other test is made anywhere."""
    return any(tag in query.include and tag not in query.exclude for tag in (REWRITE_TAG, CACHE_TAG))


class CachedPerformLinker(PerformLinker):
    """PyTensor's py linker, requiring `CACHE_TAG`: a mode on it rewrites as it would on the py linker, through
    the cache. What a function compiled with it computes is the py linker's."""

    required_rewrites = (*PerformLinker.required_rewrites, CACHE_TAG)


def _query_of(tags) -> RewriteDatabaseQuery:
    """The query ``optdb.query(*tags)`` asks: the query given, or the one PyTensor builds of ``"+tag"``,
    ``"&tag"`` and ``"-tag"`` strings."""
    if tags and isinstance(tags[0], RewriteDatabaseQuery):
        return tags[0]
    return RewriteDatabaseQuery(
        include=[tag[1:] for tag in tags if tag.startswith("+")],
        require=[tag[1:] for tag in tags if tag.startswith("&")],
        exclude=[tag[1:] for tag in tags if tag.startswith("-")],
    )


def cached_query(*tags, **kwargs) -> GraphRewriter:
    """``optdb.query`` while ``llvm_backend.adapters.pytensor``'s ``rewrite_cache_query`` is applied: what PyTensor's
    `SequenceDB.query` of ``optdb`` returns, in a `CachedRewriter` when the query `is_ours` and the cache is
    `enabled`; a query of the LLVM mode (including `REWRITE_TAG`) runs its passes after the in-place rewrites
    validated once (`validated_once`), cache or not. For every other query, PyTensor's own result, unchanged."""
    sequence = SequenceDB.query(optdb, *tags, **kwargs)
    query = _query_of(tags)
    if REWRITE_TAG in query.include and REWRITE_TAG not in query.exclude:
        sequence = validated_once(sequence)
    if is_ours(query) and enabled():
        return CachedRewriter(sequence, store.DEFAULT)
    return sequence


def rewrite_graph_through_cache(rewrite_graph: Callable = rewrite_graph) -> Callable:
    """PyTensor's ``rewrite_graph`` (or a function of its signature calling it, ``rewrite_graph``), its query
    served by the cache (with `CACHE_TAG`) when the graph given is variables: it builds their graph itself, which
    nothing else watches. A ``FunctionGraph`` given, whose features may watch each replacement, is rewritten as
    PyTensor does."""

    @functools.wraps(rewrite_graph)
    def through_cache(graph, include=("canonicalize",), custom_rewrite=None, clone=False, **kwargs):
        if not isinstance(graph, FunctionGraph):
            include = (*include, CACHE_TAG)
        return rewrite_graph(graph, include=include, custom_rewrite=custom_rewrite, clone=clone, **kwargs)

    return through_cache


class CachedRewriter(GraphRewriter):
    """``rewriter``, skipped when ``cache`` holds the rewritten graph; what it returns is a
    ``(outcome, profile)`` pair, outcome one of "hit", "stored", "uncacheable", "not stored"."""

    def __init__(self, rewriter: GraphRewriter, cache: RewriteCache):
        self.rewriter = rewriter
        self.cache = cache
        self.name = getattr(rewriter, "name", None)
        self.supervises = use_indexed_supervisor in getattr(rewriter, "data", ())

    def add_requirements(self, fgraph):
        """Nothing: the wrapped rewriter adds its own when it runs."""

    def apply(self, fgraph):
        outcome, profile = self._apply(fgraph)
        outcomes[outcome] += 1
        return outcome, profile

    def key(self, fgraph) -> str:
        """``fgraph``'s key under this rewriter and the linker of the mode compiling it, which PyTensor stamps
        on the graph while its rewriters run (inner graphs, Scan's and OpFromGraph's, are rewritten for it)."""
        mode = getattr(fgraph, "_compile_mode", None)
        linker = "no mode" if mode is None else class_identity(type(mode.linker))
        return graph_key(fgraph, digest(rewriter_fingerprint(self.rewriter).encode(), linker.encode()))

    def _apply(self, fgraph):
        if self.supervises:
            # The query's own first rewrite, run here so that a hit ends with the features a miss does.
            use_indexed_supervisor.apply(fgraph)
        try:
            key = self.key(fgraph)
        except Uncacheable as reason:
            _logger.debug("llvm_backend: graph not cached: %s", reason)
            return "uncacheable", self.rewriter.rewrite(fgraph)
        entry = self.cache.load(key)
        if entry is not None:
            try:
                install(fgraph, entry)
                return "hit", None
            except Exception as error:
                _logger.warning("llvm_backend: rewrite cache entry %s not used: %s", key, error)
                self.cache.remove(key)
        profile = self.rewriter.rewrite(fgraph)
        try:
            self.cache.store(key, fgraph)
        except Exception as error:
            _logger.debug("llvm_backend: rewritten graph not stored: %s", error)
            self.cache.remove(key)
            return "not stored", profile
        return "stored", profile

    def print_summary(self, stream=sys.stdout, level=0, depth=-1):
        print(f"{' ' * level}{type(self).__name__} id={id(self)}", file=stream)
        self.rewriter.print_summary(stream, level + 2, depth)

    def print_profile(self, stream, prof, level=0):
        outcome, profile = prof
        print(f"{' ' * level}llvm_backend rewrite cache: {outcome}", file=stream)
        if profile is not None:
            self.rewriter.print_profile(stream, profile, level + 2)
