"""Source of the Python function that runs a whole graph, written so numba lowers it in linear IR.

PyTensor's ``fgraph_to_python`` writes ``out = node_fn(a0, ..., aN)`` and ``return o0, ..., oM``. With more
than 30 items CPython compiles those into ``BUILD_LIST`` + ``LIST_TO_TUPLE``, which numba's peephole turns
into a chain of tuple additions (O(N²) IR, and typing and LLVM time to match). Here no call or tuple
display has more than 30 items: wider ones are built in groups of 30 joined by ``flatten_tuple``, and a
wide call passes one such tuple (``node_fn(*args)``). Constants numba would have to embed as dynamic
globals (non-contiguous, or over 1 MB), which make a function uncacheable, become extra trailing
parameters, fed from constant storage cells.

For a graph ``y_i = x_i * 2`` with 32 vector inputs and outputs the source is (nodes abridged)::

    def llvm_graph_fn(x0, x1, ..., x31):
        # Elemwise{mul}(x0, [2.])
        y0 = elemwise_mul(x0, tensor_constant)
        ...
        return flatten_tuple(((y0, y1, ..., y29,), (y30, y31,),))
"""

from dataclasses import dataclass, field
from hashlib import sha256
from textwrap import indent

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.link.numba.dispatch.basic import cache_key_for_constant, numba_typify
from pytensor.link.utils import unique_name_generator

from intrinsics.tuples import flatten_tuple

__all__ = ["MAX_ITEMS", "GraphSource", "call_source", "graph_cache_key", "graph_source", "tuple_source"]

MAX_ITEMS = 30
"""The widest call or tuple display CPython still compiles to a single opcode."""

FREEZE_LIMIT = 10**6
"""numba embeds contiguous array constants up to this many bytes in the IR; others are dynamic globals."""


def tuple_source(names: list[str]) -> str:
    """A tuple display of ``names`` with no more than ``MAX_ITEMS`` items per display."""
    if len(names) <= MAX_ITEMS:
        return f"({', '.join(names)},)"
    groups = [tuple_source(names[i : i + MAX_ITEMS]) for i in range(0, len(names), MAX_ITEMS)]
    return f"flatten_tuple({tuple_source(groups)})"


def call_source(function: str, args: list[str]) -> str:
    """A call of ``function`` on ``args``; a wide one passes them as one tuple."""
    if len(args) <= MAX_ITEMS:
        return f"{function}({', '.join(args)})"
    return f"{function}(*{tuple_source(args)})"


def _needs_parameter(value) -> bool:
    """Would numba make ``value`` a dynamic global (which disables the on-disk cache)?"""
    if not isinstance(value, np.ndarray):
        return False
    contiguous = value.flags.c_contiguous or value.flags.f_contiguous
    return not contiguous or value.nbytes > FREEZE_LIMIT


@dataclass
class GraphSource:
    """A graph function's source, the globals it refers to and its cache key parts."""

    name: str
    params: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)
    global_env: dict = field(default_factory=dict)
    constant_params: list = field(default_factory=list)
    """``(name, value)`` of constants passed as trailing parameters."""
    node_keys: list = field(default_factory=list)

    @property
    def source(self) -> str:
        return f"def {self.name}({', '.join(self.params)}):\n{indent(chr(10).join(self.body), '    ')}\n"


def graph_source(fgraph, convert_node, name="llvm_graph_fn") -> GraphSource:
    """Write ``fgraph`` as one Python function; ``convert_node(node) -> (fn, key)`` gives each node's."""
    unique_name = unique_name_generator([name, "flatten_tuple"])
    graph = GraphSource(name, global_env={"flatten_tuple": flatten_tuple, "__name__": __name__})
    coords = {inp: (0, i) for i, inp in enumerate(fgraph.inputs)}
    constants = {}

    def name_of(var):
        if isinstance(var, Constant) and var not in constants:
            constants[var] = unique_name(var)
            coords[var] = (-1, cache_key_for_constant(var.data))
            value = numba_typify(var.data, variable=var)
            if _needs_parameter(value):
                graph.constant_params.append((constants[var], value))
            else:
                graph.global_env[constants[var]] = value
        return constants.get(var) or unique_name(var)

    for i, node in enumerate(fgraph.toposort(), start=1):
        fn, key = convert_node(node)
        fn_name = unique_name(fn)
        graph.global_env[fn_name] = fn
        args = [name_of(inp) for inp in node.inputs]
        graph.node_keys.append(None if key is None else (tuple(coords[x] for x in node.inputs), key))
        outs = [unique_name(out) for out in node.outputs]
        coords |= {out: (i, j) for j, out in enumerate(node.outputs)}
        graph.body.append(indent(str(node), "# "))
        graph.body.append(f"{', '.join(outs)} = {call_source(fn_name, args)}")
    graph.body.append(f"return {tuple_source([name_of(out) for out in fgraph.outputs])}")
    graph.params = [unique_name(inp) for inp in fgraph.inputs] + [n for n, _ in graph.constant_params]
    graph.node_keys.append(("outputs", tuple(coords[out] for out in fgraph.outputs)))
    return graph


def graph_cache_key(graph: GraphSource, salt) -> str | None:
    """The graph function's cache key, or ``None`` if any node is uncacheable."""
    if None in graph.node_keys:
        return None
    desc = (salt, tuple(graph.node_keys), len(graph.params))
    return sha256(repr(desc).encode()).hexdigest()
