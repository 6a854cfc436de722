"""Gradients through the cache: ``pytensor.grad``'s graph stored under the key of the cost's graph.

nutpie builds the gradient of a PyMC model's log density with ``pytensor.grad`` in every process, then compiles
the two: in a warm process, whose rewriting the cache serves and whose code numba's cache loads, that graph
building is still paid. `grad_through_cache` keys the cost's graph (`graph_key`, with which of its inputs
the gradient is taken) and, on a hit, builds the stored gradient's graph on the caller's own cost graph, node for
node: the same graph ``pytensor.grad`` builds, which keys alike downstream. Only the plain call is served
(``grad(cost, wrt)`` with ``wrt`` a list or tuple of the cost's inputs); any other is PyTensor's.
"""

import functools
import logging
from collections.abc import Callable
from types import SimpleNamespace

from pytensor.graph.fg import FunctionGraph

from llvm_backend.rewrite_cache import store
from llvm_backend.rewrite_cache.fingerprint import digest
from llvm_backend.rewrite_cache.keys import Uncacheable, graph_key
from llvm_backend.rewrite_cache.rewriter import enabled, outcomes
from llvm_backend.rewrite_cache.structure import toposort

__all__ = ["grad_through_cache"]

_logger = logging.getLogger(__name__)


def _key(fgraph, positions: list[int]) -> str:
    return graph_key(fgraph, digest(b"pytensor.grad", repr(positions).encode()))


def _on_cost(entry, inputs: list, cost) -> list:
    """The stored gradients of ``entry`` (its inputs, then its cost and gradients) built on ``cost``'s own graph:
    each stored node of the cost's graph stands for the caller's node at its place in the graph's order, whose
    outputs the gradients' nodes read instead. ``ValueError`` when the two graphs do not match."""
    stored_inputs, (stored_cost, *grads), _ = entry
    if len(stored_inputs) != len(inputs):
        raise ValueError("the stored gradient has other inputs")
    to_caller = {}
    for stored, var in zip(stored_inputs, inputs, strict=True):
        if stored.type != var.type:
            raise ValueError(f"stored input {stored} is {stored.type}, not {var.type}")
        to_caller[stored] = var
    stored_nodes, nodes = toposort(stored_inputs, [stored_cost]), toposort(inputs, [cost])
    if len(stored_nodes) != len(nodes):
        raise ValueError("the stored cost has another graph")
    for stored, node in zip(stored_nodes, nodes, strict=True):
        if stored.op != node.op or len(stored.outputs) != len(node.outputs):
            raise ValueError(f"the stored cost has {stored.op} where the cost has {node.op}")
        to_caller.update(zip(stored.outputs, node.outputs, strict=True))
    in_cost = set(stored_nodes)
    for node in toposort(stored_inputs, grads):
        if node not in in_cost:
            node.inputs = [to_caller.get(var, var) for var in node.inputs]
    return [to_caller.get(grad, grad) for grad in grads]


def grad_through_cache(grad: Callable) -> Callable:
    """``grad`` (PyTensor's ``grad``, or a function of its signature calling it) served by the cache
    (``store.DEFAULT``) for ``grad(cost, wrt)`` with ``wrt`` a list or tuple of inputs of ``cost``'s graph; every
    other call, and a graph that cannot be keyed, is ``grad``'s. ``llvm_backend.rewrite_cache.outcomes`` counts
    hits and stores as a `CachedRewriter`'s."""

    @functools.wraps(grad)
    def through_cache(cost, wrt, *args, **kwargs):
        if args or kwargs or not isinstance(wrt, list | tuple) or not enabled():
            return grad(cost, wrt, *args, **kwargs)
        fgraph = FunctionGraph(outputs=[cost], clone=False)
        positions = {var: k for k, var in enumerate(fgraph.inputs)}
        if not all(var in positions for var in wrt):
            return grad(cost, wrt)
        try:
            key = _key(fgraph, [positions[var] for var in wrt])
        except Uncacheable as reason:
            _logger.debug("llvm_backend: gradient not cached: %s", reason)
            outcomes["uncacheable"] += 1
            return grad(cost, wrt)
        entry = store.DEFAULT.load(key)
        if entry is not None:
            try:
                grads = _on_cost(entry, fgraph.inputs, cost)
            except Exception as error:
                _logger.warning("llvm_backend: rewrite cache entry %s not used: %s", key, error)
                store.DEFAULT.remove(key)
            else:
                outcomes["hit"] += 1
                return type(wrt)(grads) if isinstance(wrt, tuple) else grads
        grads = grad(cost, wrt)
        try:
            store.DEFAULT.store(key, SimpleNamespace(inputs=fgraph.inputs, outputs=[cost, *grads]))
        except Exception as error:
            _logger.debug("llvm_backend: gradient not stored: %s", error)
            store.DEFAULT.remove(key)
            outcomes["not stored"] += 1
        else:
            outcomes["stored"] += 1
        return grads

    return through_cache
