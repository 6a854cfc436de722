"""A graph's structure as the rewrite cache keys it: its nodes in an order its structure alone decides, each by
its op's identity and references to its inputs; its inputs and outputs by their types' identities and names; its
constants by their values.

One walk visits each node once, so what it writes grows linearly with the graph, shared subgraphs included. It
gives the key of a graph being compiled (`keys.graph_key`) and the identity of a graph an op holds (an
`OpFromGraph`'s or a `Scan`'s inner graph, in `fingerprint.state_identity`): pickling an inner graph without
pickle's memo writes a subgraph once per path to it. What identifies an op, a type or a constant's non-array
value is the `Keyer`'s ``identify`` function.
"""

import hashlib
from collections.abc import Callable

import numpy as np
from pytensor.graph.basic import Constant

__all__ = ["Keyer", "Uncacheable", "digest", "structure", "toposort"]


class Uncacheable(Exception):
    """The graph (or the rewriter) holds something the key cannot describe."""


def digest(*parts: bytes) -> str:
    """SHA-256 of ``parts``, each prefixed with its length."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


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


class Keyer:
    """Identities for one walk, each object's computed once: ``identify(obj)`` for ops, types and constants'
    non-array values."""

    def __init__(self, identify: Callable[[object], str]):
        self.identify = identify
        self.identities: dict[int, str] = {}
        self.keep: list = []

    def state(self, obj) -> str:
        identity = self.identities.get(id(obj))
        if identity is None:
            identity = self.identities[id(obj)] = self.identify(obj)
            self.keep.append(obj)
        return identity

    def constant(self, var: Constant) -> str:
        data = var.data
        if isinstance(data, np.ndarray):
            if data.dtype.hasobject:
                raise Uncacheable(f"constant {var} holds Python objects")
            value = repr((data.dtype.str, data.shape)) + ":" + digest(np.ascontiguousarray(data).tobytes())
        else:
            value = self.state(data)
        return f"c({self.state(var.type)},{value},{var.name!r})"


def structure(inputs, outputs, keyer: Keyer) -> list[str]:
    """The parts naming the graph from ``inputs`` to ``outputs``: the inputs' types and names, a line per node
    (`toposort`'s order) with its op, its inputs (an input's position, an earlier node's output or a constant's
    value) and its outputs' types and names, then the outputs. `Uncacheable` when a variable is neither an
    input, a constant nor computed from them."""
    refs = {var: f"i{k}" for k, var in enumerate(inputs)}

    def ref(var) -> str:
        if var not in refs:
            if not isinstance(var, Constant):
                raise Uncacheable(f"{var} is neither an input, a constant nor computed")
            refs[var] = keyer.constant(var)
        return refs[var]

    parts = [repr([(keyer.state(var.type), var.name) for var in inputs])]
    for n, node in enumerate(toposort(inputs, outputs)):
        entry = [keyer.state(node.op), *map(ref, node.inputs)]
        for k, out in enumerate(node.outputs):
            refs[out] = f"n{n}.{k}"
            entry.append(f"{keyer.state(out.type)}:{out.name!r}")
        parts.append(" ".join(entry))
    parts.append(" ".join(map(ref, outputs)))
    return parts
