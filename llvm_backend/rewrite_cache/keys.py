"""The key of a graph's rewritten form: its ops, types, structure and constants, the rewriter, the flags and
the versions it depends on (see the package's docstring for what it covers)."""

from llvm_backend.rewrite_cache.fingerprint import class_identity, flags, state_identity, versions
from llvm_backend.rewrite_cache.structure import Keyer, Uncacheable, digest, structure

__all__ = ["FORMAT", "Uncacheable", "graph_key", "input_protection"]

FORMAT = 2
"""The layout of a key and an entry; changing either changes this."""


def input_protection(fgraph) -> list:
    """Per input: whether a feature protects it from in-place rewrites; then the features' classes."""
    protected = set()
    for feature in fgraph._features:
        protected.update(getattr(feature, "protected", ()))
    features = sorted(class_identity(type(f)) for f in fgraph._features)
    return [[i in protected for i in fgraph.inputs], features]


def graph_key(fgraph, fingerprint: str) -> str:
    """The key of ``fgraph``'s rewritten form under the rewriter of ``fingerprint``; `Uncacheable` when the
    graph holds something that cannot be keyed."""
    return digest(
        versions(FORMAT).encode(),
        flags().encode(),
        fingerprint.encode(),
        repr(input_protection(fgraph)).encode(),
        repr(sorted((getattr(fgraph, "update_mapping", None) or {}).items())).encode(),
        *(p.encode() for p in structure(fgraph.inputs, fgraph.outputs, Keyer(state_identity))),
    )
