"""Putting a stored rewritten graph in place of the graph being compiled."""

from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.fg import Output

from llvm_backend.rewrite_cache.structure import toposort

__all__ = ["install"]


def _output_nodes(fgraph) -> dict:
    nodes = {}
    for var in fgraph.outputs:
        for node, _ in fgraph.clients[var]:
            if isinstance(node.op, Output):
                nodes[node.op.idx] = node
    return nodes


def _set_outputs(fgraph, outputs, reason: str) -> None:
    nodes = _output_nodes(fgraph)
    for idx, var in enumerate(outputs):
        fgraph.change_node_input(nodes[idx], 0, var, reason=reason)


def install(fgraph, entry) -> None:
    """Put the stored graph ``entry`` (its own inputs, its outputs, whether rewriting attached a
    `DestroyHandler`) in place of ``fgraph``'s, on ``fgraph``'s inputs, attaching a `DestroyHandler` anew
    if so: what follows rewriting asks it which inputs are destroyed, and orders each in-place node after
    the other readers of what it destroys. When that fails, ``fgraph``'s outputs are put back."""
    inputs, outputs, destroy_handler = entry
    if len(inputs) != len(fgraph.inputs) or len(outputs) != len(fgraph.outputs):
        raise ValueError("the stored graph has other inputs or outputs")
    to_fgraph = dict(zip(inputs, fgraph.inputs, strict=True))
    for stored, var in to_fgraph.items():
        if stored.type != var.type:
            raise ValueError(f"stored input {stored} is {stored.type}, not {var.type}")
    for node in toposort(inputs, outputs):
        node.inputs = [to_fgraph.get(var, var) for var in node.inputs]
    outputs = [to_fgraph.get(var, var) for var in outputs]
    before = list(fgraph.outputs)
    attached = DestroyHandler() if destroy_handler and not hasattr(fgraph, "destroy_handler") else None
    try:
        _set_outputs(fgraph, outputs, "llvm_backend rewrite cache")
        if attached is not None:
            fgraph.attach_feature(attached)
        if hasattr(fgraph, "validate"):
            fgraph.validate()
    except Exception:
        # A DestroyHandler attached stays: it follows the undo, and rewriting attaches one anyway when
        # in-place rewrites run.
        _set_outputs(fgraph, before, "llvm_backend rewrite cache: undo")
        raise
