"""Pickling graphs for the rewrite cache: each op as what it computes, without what it caches as it is used.

An `OpFromGraph` (PyTensor's ``logsumexp`` and ``softmax``, PyMC's symbolic distributions) fills caches as it is
used: the op of its gradient, built at its first ``pytensor.grad`` as a closure pickle cannot name, its connection
pattern, its shape graph. A model's graph holding one could then be neither keyed nor stored, or keyed apart in
two processes, and every process rewrote it again. `GraphPickler` pickles an op whose class `STATES` names by the
state that function gives (``llvm_backend.adapters.pytensor`` names `OpFromGraph`'s: its state with those caches
as a new op holds them), the variables it is told to with an empty ``tag`` (a stored graph's inputs, which
loading replaces by its caller's), and everything else as pickle does.
"""

import io
import pickle
from collections.abc import Callable

from pytensor.graph.utils import Scratchpad

__all__ = ["STATES", "UNKEYED_VARIABLE_ATTRIBUTES", "GraphPickler", "dumps", "with_state"]

STATES: dict[type, Callable[[object], dict]] = {}
"""Per class, the state an instance of it (or of a subclass) is pickled with: what it is, without its caches."""
UNKEYED_VARIABLE_ATTRIBUTES: set[str] = {"auto_name", "tag"}
"""Attributes of a graph variable an op holds (an inner graph's) that its key leaves out, as the key of the graph
itself leaves them out of its own variables: its ``auto_name`` (a count of the variables made before it in the
process), its ``tag`` (annotations: stack traces, facts rewrites found of a constant's data, such as
``is_diagonal``), and what ``llvm_backend.adapters.pytensor`` adds (caches a variable fills as it is used)."""


class GraphPickler(pickle.Pickler):
    """A `pickle.Pickler` writing an instance of a class of `STATES` as pickle would, but with the state that
    class's function gives, and the variables of ``untagged`` with an empty ``tag``; everything else as pickle
    does."""

    def __init__(self, file, protocol: int, untagged=(), **kwargs):
        super().__init__(file, protocol, **kwargs)
        self.protocol = protocol
        self.untagged = {id(var): var for var in untagged}

    def reducer_override(self, obj):
        for cls, state in STATES.items():
            if isinstance(obj, cls):
                return with_state(obj.__reduce_ex__(self.protocol), state(obj))
        if id(obj) in self.untagged:
            reduced = obj.__reduce_ex__(self.protocol)
            return with_state(reduced, reduced[2] | {"tag": Scratchpad()})
        return NotImplemented


def with_state(reduced, state: dict) -> tuple:
    """The reduction ``reduced`` (what ``__reduce_ex__`` returns) with ``state`` in place of the state it sets;
    TypeError if it sets none as a dict."""
    if not (isinstance(reduced, tuple) and len(reduced) > 2 and isinstance(reduced[2], dict)):
        raise TypeError(f"a reduction without a state dict: {reduced!r}")
    return (*reduced[:2], state, *reduced[3:])


def dumps(obj, protocol: int, untagged=()) -> bytes:
    """``pickle.dumps(obj, protocol)`` through a `GraphPickler`, the variables of ``untagged`` with an empty
    ``tag``."""
    buffer = io.BytesIO()
    GraphPickler(buffer, protocol=protocol, untagged=untagged).dump(obj)
    return buffer.getvalue()
