"""The key of a graph's rewritten form: its ops, types, structure and constants, the rewriter, the flags and
the versions it depends on (see the package's docstring for what it covers)."""

import numpy as np
from pytensor.graph.basic import Constant

from llvm_backend.rewrite_cache.fingerprint import Uncacheable, class_identity, digest, flags, state_identity, versions

__all__ = ["FORMAT", "Uncacheable", "graph_key", "input_protection", "toposort"]

FORMAT = 2
"""The layout of a key and an entry; changing either changes this."""


def input_protection(fgraph) -> list:
    """Per input: whether a feature protects it from in-place rewrites; then the features' classes."""
    protected = set()
    for feature in fgraph._features:
        protected.update(getattr(feature, "protected", ()))
    features = sorted(class_identity(type(f)) for f in fgraph._features)
    return [[i in protected for i in fgraph.inputs], features]


def toposort(inputs, outputs) -> list:
    """The nodes between ``inputs`` and ``outputs``, each after its inputs' nodes, in an order that
    depends only on the graph's structure (a depth-first walk from the outputs)."""
    order, done, known = [], set(), set(inputs)
    for output in outputs:
        stack = [(output, False)]
        while stack:
            var, expanded = stack.pop()
            node = var.owner
            if node is None or var in known or node in done:
                continue
            if expanded:
                done.add(node)
                order.append(node)
                continue
            stack.append((var, True))
            stack.extend((v, False) for v in reversed(node.inputs) if v.owner is not None and v.owner not in done)
    return order


class _Keyer:
    def __init__(self):
        self.pickled: dict[int, str] = {}
        self.keep: list = []

    def state(self, obj) -> str:
        key = self.pickled.get(id(obj))
        if key is None:
            key = self.pickled[id(obj)] = state_identity(obj)
            self.keep.append(obj)
        return key

    def constant(self, var: Constant) -> str:
        data = var.data
        if isinstance(data, np.ndarray):
            if data.dtype.hasobject:
                raise Uncacheable(f"constant {var} holds Python objects")
            value = repr((data.dtype.str, data.shape)) + ":" + digest(np.ascontiguousarray(data).tobytes())
        else:
            value = self.state(data)
        return f"c({self.state(var.type)},{value},{var.name!r})"


def graph_key(fgraph, fingerprint: str) -> str:
    """The key of ``fgraph``'s rewritten form under the rewriter of ``fingerprint``; `Uncacheable` when the
    graph holds something that cannot be keyed."""
    keyer = _Keyer()
    refs = {var: f"i{k}" for k, var in enumerate(fgraph.inputs)}
    parts = [
        versions(FORMAT),
        flags(),
        fingerprint,
        repr(input_protection(fgraph)),
        repr(sorted((getattr(fgraph, "update_mapping", None) or {}).items())),
        repr([(keyer.state(var.type), var.name) for var in fgraph.inputs]),
    ]

    def ref(var) -> str:
        if var not in refs:
            if not isinstance(var, Constant):
                raise Uncacheable(f"{var} is neither an input, a constant nor computed")
            refs[var] = keyer.constant(var)
        return refs[var]

    for n, node in enumerate(toposort(fgraph.inputs, fgraph.outputs)):
        entry = [keyer.state(node.op), *map(ref, node.inputs)]
        for k, out in enumerate(node.outputs):
            refs[out] = f"n{n}.{k}"
            entry.append(f"{keyer.state(out.type)}:{out.name!r}")
        parts.append(" ".join(entry))
    parts.append(" ".join(map(ref, fgraph.outputs)))
    return digest(*(p.encode() for p in parts))
