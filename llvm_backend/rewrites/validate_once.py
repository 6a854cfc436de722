"""Passes that run after in-place rewrites, their graph's cycle check made once per pass instead of once per
replacement.

Once a graph holds an in-place node, PyTensor's `DestroyHandler` checks the whole graph for a cycle of its data
and destroy orderings at every validation: each accepted replacement costs the graph's size. Two passes run then
and replace a node at a time: scalarization (``scalarize``, in ``fuse_indexed_into_elemwise``, a replacement
per node) and ``merge3`` (one per merged node). On a model of many scalar parameters whose elemwise work stays
unfused (fusion refuses a loop of more operands than a kernel takes), they made thousands of replacements, each
validated by a cycle check of thousands of nodes: rewriting grew with the square of the graph.

`ValidateOnce` runs such a pass with a `DeferredCycleChecks` in place of the graph's `DestroyHandler` (the same
account of what is destroyed, no cycle check), then attaches the stock handler again and validates the graph once:
the graph it leaves is consistent exactly as after the stock pass. Every other feature still validates each
replacement (the `Supervisor` among them, which keeps in-place work off protected inputs). Unchecked, a pass may
make a replacement stock's check refuses, a data cycle among them: when the graph the pass leaves has one
(`has_data_cycle`, before anything sorts it), does not validate, or the pass raises, every change it made is
undone, in reverse order, and the pass runs again as stock runs it, a validation per replacement. A graph without
a destroy handler, or with one of another kind or in ``cycle_detection=fast``, runs the pass as stock does.

`validated_once` wraps the passes of `VALIDATED_ONCE` in the sequence a query of the LLVM mode resolves to (the
rewrite cache's ``optdb.query`` calls it); a pass excluded from the query is not there to wrap.
"""

import sys

from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.features import Feature
from pytensor.graph.rewriting.basic import GraphRewriter, SequentialGraphRewriter

__all__ = ["VALIDATED_ONCE", "DeferredCycleChecks", "ValidateOnce", "has_data_cycle", "validated_once"]

VALIDATED_ONCE = frozenset({"fuse_indexed_into_elemwise/scalarize", "merge3"})
"""The passes run by `ValidateOnce`, by their path in ``optdb``: those after PyTensor's in-place rewrites that
replace a node at a time and need no validation to decide what they do next. Scalarization's sequence, whose
fusion of indexing relies on each replacement's validation (fused unchecked, it can leave a cycle for the
next pass to sort), runs its fusion as stock does."""


class DeferredCycleChecks(DestroyHandler):
    """A `DestroyHandler` that keeps the stock one's account of destroyers and views (what in-place rewrites and
    the `Supervisor` ask it) but whose validation passes: `ValidateOnce` attaches one for the duration of a
    pass, then the stock handler again, which validates the graph."""

    def on_validate(self, fgraph):
        return True


class _Changes(Feature):
    """Every input of a node changed while attached, to be undone in reverse order (as PyTensor's `History`
    undoes a replacement, past any number of validations)."""

    def __init__(self):
        self.changes: list = []

    def on_change_input(self, fgraph, node, i, var, new_var, reason=None):
        self.changes.append((node, i, var))

    def undo(self, fgraph) -> None:
        """Detach, and put every changed input back: the graph is again what it was when this was attached."""
        fgraph.remove_feature(self)
        for node, i, var in reversed(self.changes):
            fgraph.change_node_input(node, i, var, reason="llvm_backend validate once: undo", check=False)


def has_data_cycle(fgraph) -> bool:
    """Whether a node of ``fgraph`` depends on its own outputs: a topological sort by in-degrees, which ends
    (PyTensor's toposort does not, on a cycle)."""
    nodes = fgraph.apply_nodes
    pending = {node: sum(var.owner in nodes for var in node.inputs) for node in nodes}
    ready = [node for node, count in pending.items() if count == 0]
    sorted_nodes = 0
    while ready:
        sorted_nodes += 1
        for var in ready.pop().outputs:
            for client, _ in fgraph.clients[var]:
                if client in pending:
                    pending[client] -= 1
                    if pending[client] == 0:
                        ready.append(client)
    return sorted_nodes < len(nodes)


def _deferrable(fgraph) -> DestroyHandler | None:
    """``fgraph``'s destroy handler if validating checks the whole graph for cycles once it holds an in-place
    node: a stock `DestroyHandler` in the regular cycle detection."""
    handler = getattr(fgraph, "destroy_handler", None)
    return handler if type(handler) is DestroyHandler and handler.algo != "fast" else None


def _swap(fgraph, old: DestroyHandler, new: DestroyHandler) -> None:
    fgraph.remove_feature(old)
    fgraph.attach_feature(new)


class ValidateOnce(GraphRewriter):
    """``rewriter`` run with the graph's cycle check deferred to its end (see the module); what it leaves is
    what it leaves when run as stock runs it, or a graph of the same values in which it made replacements stock's
    validation refused midway but which is consistent as a whole."""

    def __init__(self, rewriter: GraphRewriter):
        self.rewriter = rewriter
        self.name = getattr(rewriter, "name", None)

    def add_requirements(self, fgraph):
        self.rewriter.add_requirements(fgraph)

    def apply(self, fgraph):
        handler = _deferrable(fgraph)
        if handler is None:
            return self.rewriter.apply(fgraph)
        changes, deferred = _Changes(), DeferredCycleChecks(algo=handler.algo)
        fgraph.attach_feature(changes)
        _swap(fgraph, handler, deferred)
        try:
            profile = self.rewriter.apply(fgraph)
            acyclic = not has_data_cycle(fgraph)
        except Exception:
            acyclic = False
        if not acyclic:
            changes.undo(fgraph)
        _swap(fgraph, deferred, handler)
        if acyclic:
            try:
                fgraph.validate()
                fgraph.remove_feature(changes)
                return profile
            except Exception:
                changes.undo(fgraph)
        return self.rewriter.apply(fgraph)

    def print_summary(self, stream=sys.stdout, level=0, depth=-1):
        self.rewriter.print_summary(stream, level, depth)

    def print_profile(self, stream, prof, level=0):
        self.rewriter.print_profile(stream, prof, level)


def validated_once(sequence, within: str = ""):
    """``sequence``, a query's resolved `SequentialGraphRewriter`, with each pass whose path (the names of the
    sequences it is in and its own, ``/``-separated, from ``within``) is in `VALIDATED_ONCE` run by a
    `ValidateOnce`, in place, in the lists the query made for this call; anything else is returned as it is."""
    if isinstance(sequence, SequentialGraphRewriter):
        for index, rewriter in enumerate(sequence):
            path = f"{within}{getattr(rewriter, 'name', None)}"
            if path in VALIDATED_ONCE and not isinstance(rewriter, ValidateOnce):
                sequence[index] = ValidateOnce(rewriter)
            elif any(name.startswith(f"{path}/") for name in VALIDATED_ONCE):
                validated_once(rewriter, f"{path}/")
    return sequence
