"""The function that runs a whole graph, written so that its IR and compile time grow linearly.

PyTensor's ``fgraph_to_python`` writes ``out = node_fn(a0, ..., aN)`` per node and ``return o0, ..., oM``,
which numba lowers through one variable per value (quadratic in places: a tuple display of over 30 items
becomes a chain of tuple additions; numba's ``Lower`` scans a block's assignments once per variable). Here
the function has one statement: it passes its parameters and the graph's other constants, as one tuple, to an
intrinsic that emits every node's call from a `GraphPlan` (`llvm_backend_intrinsics.graph`): no numba variable per
value, each node function typed once per distinct argument types, each value released after its last use. The
plan emits the graph's array and number constants itself (``GraphPlan.constants``), as numba's constants of their
types: as globals of the function, numba would format each array's every element into its IR's text at least
twice per compile.

0-d float64 and int64 inputs are taken as native scalars; from ``SCALAR_PACK_MIN`` of a dtype on, as one
`ScalarPack` parameter, which the thunk passes with the inputs' storage cells in it, read as native scalars
when it is unboxed (`llvm_backend_intrinsics.scalarpack`). Graphs of
over 30 inputs take their arrays of one dtype and ndim as one `ArrayPack` parameter, and return
over 30 outputs as one list per dtype and ndim; wide Join, ScalarizedJoin and MakeVector nodes take their
arrays as one pack. Constants numba would have to embed as dynamic globals (non-contiguous, or over 1 MB),
which make a function uncacheable, become extra trailing parameters, fed from constant storage cells.

For a graph ``y_i = x_i * 2`` of 32 vector inputs and outputs the source is::

    def llvm_graph_fn(array_pack_type):
        return llvm_graph(
            (
                array_pack_type,
                tensor_constant,
            )
        )

and its plan: slot 0 the pack, slot 1 the constant ``[2.]``, slots 2..33 the pack's items, and 32 calls
``elemwise(item, slot 1)`` (one shared numba function) whose results go to one returned list.
"""

from dataclasses import dataclass
from hashlib import sha256

import numpy as np
from numba import from_dtype, typeof
from pytensor.graph.basic import Constant
from pytensor.link.numba.dispatch.basic import cache_key_for_constant, numba_njit, numba_typify
from pytensor.link.utils import unique_name_generator
from pytensor.tensor.basic import ScalarFromTensor
from pytensor.tensor.type import TensorType

from llvm_backend.dispatch import MAX_ITEMS, LoweringContext, LoweringPlan, lower, plan_graph, source_hash
from llvm_backend_intrinsics.abi import ARRAYS_READ
from llvm_backend_intrinsics.argpack import ArrayPack, ArrayPackType, pack_of
from llvm_backend_intrinsics.graph import GraphPlan, PlanCall, PlanItem, graph_intrinsic
from llvm_backend_intrinsics.scalarpack import ScalarPack, ScalarPackType, scalar_pack_of
from llvm_backend_intrinsics.tuples import flatten_tuple

__all__ = [
    "GRAPH_MODULES",
    "NATIVE_SCALARS",
    "GraphSource",
    "PackParam",
    "graph_cache_key",
    "graph_source",
    "native_scalar",
    "takes_native_scalar",
    "tuple_source",
]

NATIVE_SCALARS = {"float64": float, "int64": int}
"""0-d input dtype -> the Python type a graph function takes such an input as. numba unboxes a Python scalar of
each into exactly that dtype, and far faster than a 0-d array (whose unboxing also allocates a MemInfo). Not
bool: numba computes on bools as Python does (``True * True`` is the int64 1), where PyTensor's bool Elemwise
stays bool, so a bool input read as a scalar would change the dtype of what scalar math makes of it."""

SCALAR_PACK_MIN = 6
"""From this many 0-d inputs of one `NATIVE_SCALARS` dtype on, a graph function takes them as one `ScalarPack`.
Per call from the thunk, each native scalar argument costs a Python conversion (``float(cell[0])``) and numba's
dispatch on and unboxing of one more argument; a pack costs a little per scalar and a fixed dispatch on a buffer,
which this many scalars repay (docs/decisions.md has the measurement)."""


GRAPH_MODULES = (
    __name__,
    "llvm_backend_intrinsics.argpack",
    "llvm_backend_intrinsics.functions",
    "llvm_backend_intrinsics.graph",
    "llvm_backend_intrinsics.scalarpack",
    "llvm_backend_intrinsics.tuples",
)
"""The modules writing a graph function around its nodes' functions: the hash of their source salts every graph's
cache key (`graph_cache_key`), as each lowering's version salts the keys of its nodes."""


def native_scalar(dtype: str, value):
    """The native scalar a graph function takes for the 0-d ``value`` of an input of ``dtype``."""
    return NATIVE_SCALARS[dtype](value)


@numba_njit
def zero_d_array(value):
    """A 0-d array holding ``value``: what a node taking a 0-d array reads of an input passed as a scalar."""
    return np.asarray(value)


FREEZE_LIMIT = 10**6
"""numba embeds contiguous array constants up to this many bytes in the IR; others are dynamic globals."""


def tuple_source(names: list[str]) -> str:
    """A tuple display of ``names`` with no more than ``MAX_ITEMS`` items per display."""
    if not names:
        return "()"
    if len(names) <= MAX_ITEMS:
        return f"({', '.join(names)},)"
    groups = [tuple_source(names[i : i + MAX_ITEMS]) for i in range(0, len(names), MAX_ITEMS)]
    return f"flatten_tuple({tuple_source(groups)})"


def _emitted_by_the_plan(value) -> bool:
    """Whether the plan emits constant ``value`` itself (`GraphPlan.constants`), not the function as a global: an
    array or a numpy number. numba writes every global's value into its IR's text, which it formats at least twice
    in a compile (a 400-element array: the whole array, each time)."""
    return isinstance(value, np.ndarray | np.number | np.bool_)


def _needs_parameter(value) -> bool:
    """Would numba make ``value`` a dynamic global (which disables the on-disk cache)?"""
    if not isinstance(value, np.ndarray):
        return False
    contiguous = value.flags.c_contiguous or value.flags.f_contiguous
    return not contiguous or value.nbytes > FREEZE_LIMIT


@dataclass(frozen=True)
class PackParam:
    """A parameter taking the sources at ``positions`` as one pack: arrays of one dtype and ndim as an
    `ArrayPack`, or 0-d inputs of one `NATIVE_SCALARS` dtype as a `ScalarPack`."""

    name: str
    numba_type: ArrayPackType | ScalarPackType
    dtype: np.dtype
    positions: tuple[int, ...]

    @property
    def scalar(self) -> bool:
        """Whether it is a `ScalarPack` parameter."""
        return isinstance(self.numba_type, ScalarPackType)

    def of_values(self, values: list):
        """The argument taking ``values``."""
        if self.scalar:
            return ScalarPack.of_values(self.numba_type, values)
        return ArrayPack(self.numba_type, self.dtype, values)


def pack_groups(kinds: list) -> dict[tuple[str, int], list[int]]:
    """(dtype, ndim) -> positions in ``kinds`` (a ``(dtype, ndim)`` per array, ``None`` per other value)
    that a graph takes as packs (or returns in lists): none if ``kinds`` has ``MAX_ITEMS`` items or fewer,
    else each group of two or more arrays."""
    if len(kinds) <= MAX_ITEMS or not ARRAYS_READ:
        return {}
    groups = {}
    for i, kind in enumerate(kinds):
        if kind is not None:
            groups.setdefault(kind, []).append(i)
    return {kind: positions for kind, positions in groups.items() if len(positions) > 1}


def takes_native_scalar(var) -> bool:
    """Whether a graph function takes input ``var`` as a native scalar: a 0-d tensor of a `NATIVE_SCALARS`
    dtype."""
    return isinstance(var.type, TensorType) and var.type.ndim == 0 and var.type.dtype in NATIVE_SCALARS


def _tensor_kind(var):
    return (var.type.dtype, var.type.ndim) if isinstance(var.type, TensorType) else None


@dataclass(frozen=True)
class GraphSource:
    """A graph function's source, the globals it refers to and its cache key parts, made whole by `graph_source`.

    Its parameters take the *sources*, the graph inputs followed by the ``constant_params``: first those
    in ``direct_sources``, one each, then one per pack in ``packs``. The 0-d inputs in ``scalar_sources`` are
    taken as native scalars, not 0-d arrays: directly, or in a scalar pack.
    """

    name: str
    params: list[str]
    returned: str
    """The expression the function returns: ``llvm_graph((...))``."""
    global_env: dict
    constant_params: list
    """``(name, value)`` of constants numba would make dynamic globals, passed as arguments instead."""
    direct_sources: list[int]
    """Positions of the sources passed as parameters of their own, in parameter order."""
    scalar_sources: dict[int, str]
    """Position -> dtype of the sources (0-d inputs) passed as native scalars (`NATIVE_SCALARS`)."""
    embedded: list[str]
    """Names of the constants the function embeds (globals of ``global_env``), after the parameters in
    ``llvm_graph``'s tuple."""
    packs: list[PackParam]
    """The pack parameters, after the direct ones."""
    direct_outputs: list[int]
    """Positions of the graph outputs returned as items of their own, first, in this order."""
    output_lists: list[tuple[int, ...]]
    """Positions of the graph outputs returned in each list, after the direct outputs."""
    node_keys: list
    plan: GraphPlan
    """The calls the function's one statement, ``return llvm_graph(arguments)``, emits."""
    slot_names: dict[int, str]

    @property
    def source(self) -> str:
        return f"def {self.name}({', '.join(self.params)}):\n    return {self.returned}\n"

    def listing(self) -> str:
        """The source, then what ``llvm_graph`` emits: a line per pack item read and per node call."""
        names = self.slot_names
        lines = [self.source, "# llvm_graph emits, from the tuple's items:"]
        lines += [f"#   {names[i.slot]} = {names[i.pack]}[{i.index}]" for i in self.plan.items]
        for call in self.plan.calls:
            args = [names[s] for s in call.arguments]
            if call.pack_from is not None:
                args[call.pack_from :] = [f"pack({', '.join(args[call.pack_from :])})"]
            function = getattr(call.function, "__name__", type(call.function).__name__)
            lines.append(
                f"#   {', '.join(names[s] for s in call.outputs)} = {function}({', '.join(args)})  <- {call.label}"
            )
        returned = [names[s] for s in self.plan.outputs]
        returned += [f"[{', '.join(names[s] for s in group)}]" for group in self.plan.lists]
        lines.append(f"#   return ({', '.join(returned)},)")
        return "\n".join(lines) + "\n"

    def arguments(self, sources: list, pack=PackParam.of_values, scalar=native_scalar) -> list:
        """The graph function's arguments from ``sources`` (one per input, then per constant parameter):
        direct ones (``scalar(dtype, source)`` for those in ``scalar_sources``), then ``pack(pack_param, items)``
        per pack."""
        scalars = self.scalar_sources
        return [
            *(scalar(scalars[i], sources[i]) if i in scalars else sources[i] for i in self.direct_sources),
            *(pack(spec, [sources[i] for i in spec.positions]) for spec in self.packs),
        ]

    @property
    def parameter_scalars(self) -> list[str | None]:
        """Per parameter, the dtype of the native scalar it takes directly, or None."""
        return [*(self.scalar_sources.get(i) for i in self.direct_sources), *(None for _ in self.packs)]

    def entry_source(self, n_inputs: int, function: str, name: str = "llvm_graph_entry") -> str:
        """A function of the graph's ``n_inputs`` inputs returning its outputs in order, as stock's graph
        function does, by calling ``function`` on one tuple of this graph function's arguments
        (`llvm_backend_intrinsics.functions.address_call`'s intrinsic): it packs what is packed, passes the constant
        parameters by name (globals of the entry, `entry_globals`) and reads the listed outputs back in place.

        A graph with output lists is run by ``llvm_graph_lists`` (``graph_intrinsic(plan, lists=True)``) in
        the entry itself instead, on the graph function's arguments and embedded constants: ``function``
        returns Python lists, which compiled code cannot read."""
        inputs = [f"entry_input_{k}" for k in range(n_inputs)]
        sources = [*inputs, *(name for name, _ in self.constant_params)]
        arguments = self.arguments(sources, pack=_pack_source, scalar=lambda _, name: f"{name}[()]")
        if self.output_lists:
            call = f"llvm_graph_lists({tuple_source([*arguments, *self.embedded])})"
        else:
            call = f"{function}({tuple_source(arguments)})"
        n_direct = len(self.direct_outputs)
        outputs = {j: f"result[{d}]" for d, j in enumerate(self.direct_outputs)}
        for g, positions in enumerate(self.output_lists):
            outputs |= {j: f"result[{n_direct + g}][{k}]" for k, j in enumerate(positions)}
        # stock's graph function of no outputs returns None
        returned = tuple_source([outputs[j] for j in range(len(outputs))]) if outputs else "None"
        return f"def {name}({', '.join(inputs)}):\n    result = {call}\n    return {returned}\n"

    def entry_globals(self) -> dict:
        """The globals a function of `entry_source` names, but ``function`` and ``llvm_graph_lists``: the graph
        function's, the pack builders and the constant parameters."""
        builders = {"pack_of": pack_of, "scalar_pack_of": scalar_pack_of, "flatten_tuple": flatten_tuple}
        return {**self.global_env, **builders, **dict(self.constant_params)}

    def argument_types(self, input_types: list) -> list:
        """The numba types of the arguments, given the graph inputs' types."""
        sources = [*input_types, *(typeof(value) for _, value in self.constant_params)]
        return self.arguments(
            sources, pack=lambda spec, _: spec.numba_type, scalar=lambda dtype, _: from_dtype(np.dtype(dtype))
        )


def _pack_source(spec: PackParam, items: list[str]) -> str:
    """The expression making pack ``spec`` of the values named ``items`` in compiled code (0-d arrays, for a
    scalar pack)."""
    if spec.scalar:
        return f"scalar_pack_of({spec.dtype.name!r}, {tuple_source([f'{item}[()]' for item in items])})"
    return f"pack_of({tuple_source(items)})"


def graph_source(fgraph, storage_map=None, ofg_memo=None, name="llvm_graph_fn") -> GraphSource:
    """Write ``fgraph`` as one Python function, each node's function made by `lower` from the graph's
    `LoweringPlan` (`plan_graph`: each node's lowering decided once), ``storage_map`` and ``ofg_memo`` handed
    to the lowerings in their `LoweringContext`.

    Four steps, one `_Writer` method each, laying out the plan's slots in order: the constants (embedded, or
    parameters when numba could not embed them), the parameters (direct ones, then packs, whose items get slots
    after the arguments'), one call per node, and the outputs; the last makes the `GraphSource`, whole."""
    writer = _Writer(fgraph, name)
    writer.classify_constants()
    writer.lay_out_parameters()
    plan = plan_graph(fgraph, writer.order)
    calls = writer.plan_calls(plan, lambda node: LoweringContext(node, plan[node], storage_map, ofg_memo))
    return writer.finish(calls)


class _Writer:
    """The state `graph_source` builds a `GraphSource` with: names, the plan's slot of every variable, and each
    variable's coordinates in the cache key (``(0, i)`` input ``i``, ``(-1, key)`` a constant, ``(n, j)``
    output ``j`` of the ``n``-th node)."""

    def __init__(self, fgraph, name: str):
        self.fgraph = fgraph
        self.name = name
        self.order = fgraph.toposort()
        self.unique_name = unique_name_generator([name, "llvm_graph", "flatten_tuple"])
        self.global_env = {"flatten_tuple": flatten_tuple, "__name__": __name__}
        self.constant_params: list = []
        self.scalar_sources: dict[int, str] = {}
        self.packs: list[PackParam] = []
        self.direct_sources: list[int] = []
        self.params: list[str] = []
        self.node_keys: list = []
        self.coords = {inp: (0, i) for i, inp in enumerate(fgraph.inputs)}
        self.constants: dict = {}
        self.parameter_constants: list = []
        self.embedded: list = []
        self.plan_constants: list = []
        """``(variable, value)`` of the constants the plan emits itself (`_emitted_by_the_plan`)."""
        self.slots: dict = {}
        self.scalar_slots: dict = {}
        """Each input passed as a native scalar -> its parameter's slot, or its item's in its scalar pack (``slots``
        has its 0-d array's, if a node reads one)."""
        self.n_arguments = 0
        self.next_slot = 0
        self.items: list[PlanItem] = []

    def name_of(self, var) -> str:
        return self.constants.get(var) or self.unique_name(var)

    def classify_constants(self) -> None:
        """Name every constant; embed it as a global, or make it a trailing parameter (`_needs_parameter`)."""
        nodes_inputs = (inp for node in self.order for inp in node.inputs)
        for var in [*nodes_inputs, *self.fgraph.outputs]:
            if isinstance(var, Constant) and var not in self.constants:
                self.constants[var] = self.unique_name(var)
                self.coords[var] = (-1, cache_key_for_constant(var.data))
                value = numba_typify(var.data, variable=var)
                if _needs_parameter(value):
                    self.constant_params.append((self.constants[var], value))
                    self.parameter_constants.append(var)
                elif _emitted_by_the_plan(value):
                    self.plan_constants.append((var, value))
                else:
                    self.global_env[self.constants[var]] = value
                    self.embedded.append(var)

    def lay_out_parameters(self) -> None:
        """The parameters (sources not packed, then one per pack) and the slots: parameters, embedded
        constants, then one per pack item."""
        sources = [*self.fgraph.inputs, *self.parameter_constants]
        inputs = self.fgraph.inputs
        self.scalar_sources = {i: inp.type.dtype for i, inp in enumerate(inputs) if takes_native_scalar(inp)}
        kinds = [None if i in self.scalar_sources else _tensor_kind(inp) for i, inp in enumerate(inputs)]
        kinds += [(str(v.dtype), v.ndim) for _, v in self.constant_params]
        groups = pack_groups(kinds).items()
        packs = [(ArrayPackType.of(dtype, ndim, len(at)), dtype, at) for (dtype, ndim), at in groups]
        for dtype in NATIVE_SCALARS:
            at = [i for i, scalar_dtype in self.scalar_sources.items() if scalar_dtype == dtype]
            packs += [(ScalarPackType.of(dtype, len(at)), dtype, at)] if len(at) >= SCALAR_PACK_MIN else []
        for pack_type, dtype, positions in packs:
            self.packs.append(PackParam(self.unique_name(pack_type), pack_type, np.dtype(dtype), tuple(positions)))
        packed = {i for pack in self.packs for i in pack.positions}
        self.direct_sources = [i for i in range(len(sources)) if i not in packed]
        self.params = [*(self.name_of(sources[i]) for i in self.direct_sources), *(p.name for p in self.packs)]
        self.slots = {sources[i]: slot for slot, i in enumerate(self.direct_sources)}
        constants = [*self.embedded, *(var for var, _ in self.plan_constants)]
        self.slots |= {var: len(self.params) + k for k, var in enumerate(constants)}
        self.n_arguments = len(self.slots) + len(self.packs)
        for p, pack in enumerate(self.packs, start=len(self.direct_sources)):
            for k, i in enumerate(pack.positions):
                self.items.append(PlanItem(self.n_arguments + len(self.items), p, k))
                self.slots[sources[i]] = self.items[-1].slot
        self.scalar_slots = {sources[i]: self.slots[sources[i]] for i in self.scalar_sources}
        self.next_slot = self.n_arguments + len(self.items)

    def plan_calls(self, plan: LoweringPlan, context_of) -> list[PlanCall]:
        """One call per node, its outputs in fresh slots, its function `lower`'s of ``context_of(node)``, its
        pack start ``plan``'s; nodes of one cache key and the same input and output types share one function."""
        calls = []
        for var, slot in self.scalar_slots.items():
            if any(not isinstance(client.op, ScalarFromTensor) for client, _ in self.fgraph.clients[var]):
                self.slots[var] = self.next_slot
                self.next_slot += 1
                calls.append(PlanCall(zero_d_array, (slot,), (self.slots[var],), None, f"{var} as a 0-d array"))
        shared = {}
        for n, node in enumerate(self.order, start=1):
            if isinstance(node.op, ScalarFromTensor) and node.inputs[0] in self.scalar_slots:
                # The graph function takes the input as this very scalar.
                self.slots[node.outputs[0]] = self.scalar_slots[node.inputs[0]]
                self.node_keys.append(((self.coords[node.inputs[0]],), "native scalar"))
                self.coords[node.outputs[0]] = (n, 0)
                continue
            fn, key = lower(context_of(node))
            if key is not None:
                # One numba compile (or cache load) instead of one per node, for the 240 identical Elemwise
                # of a wide graph. The types are part of it: a stock key need not tell an int32 node from a
                # float64 one.
                fn = shared.setdefault((key, *(str(v.type) for v in node.inputs + node.outputs)), fn)
            self.slots |= {out: self.next_slot + j for j, out in enumerate(node.outputs)}
            self.next_slot += len(node.outputs)
            arguments = tuple(self.slots[inp] for inp in node.inputs)
            outputs = tuple(self.slots[out] for out in node.outputs)
            calls.append(PlanCall(fn, arguments, outputs, plan[node].pack_start, node))
            self.node_keys.append(None if key is None else (tuple(self.coords[x] for x in node.inputs), key))
            self.coords |= {out: (n, j) for j, out in enumerate(node.outputs)}
        return calls

    def finish(self, calls: list[PlanCall]) -> GraphSource:
        """The outputs (direct ones, then one list per group), the plan, the returned expression and the key's
        last parts: the `GraphSource`."""
        fgraph, slots = self.fgraph, self.slots
        slot_names = self._slot_names()
        lists = pack_groups([_tensor_kind(out) for out in fgraph.outputs])
        listed = {i for positions in lists.values() for i in positions}
        direct_outputs = [i for i in range(len(fgraph.outputs)) if i not in listed]
        output_lists = [tuple(positions) for positions in lists.values()]
        plan = GraphPlan(
            self.n_arguments,
            tuple(self.items),
            tuple(calls),
            tuple(slots[fgraph.outputs[i]] for i in direct_outputs),
            tuple(tuple(slots[fgraph.outputs[i]] for i in positions) for positions in output_lists),
            tuple(value for _, value in self.plan_constants),
            tuple(slot_names.get(slot, f"s{slot}") for slot in range(self.next_slot)),
        )
        embedded = [self.name_of(var) for var in self.embedded]
        node_keys = [
            *self.node_keys,
            ("outputs", tuple(self.coords[out] for out in fgraph.outputs)),
            ("packs", tuple((str(p.numba_type), p.positions) for p in self.packs)),
            ("output lists", tuple(output_lists)),
            ("native scalars", tuple(self.scalar_sources.items())),
        ]
        return GraphSource(
            name=self.name,
            params=self.params,
            returned=f"llvm_graph({tuple_source([*self.params, *embedded])})",
            global_env={**self.global_env, "llvm_graph": graph_intrinsic(plan)},
            constant_params=self.constant_params,
            direct_sources=self.direct_sources,
            scalar_sources=self.scalar_sources,
            embedded=embedded,
            packs=self.packs,
            direct_outputs=direct_outputs,
            output_lists=output_lists,
            node_keys=node_keys,
            plan=plan,
            slot_names=slot_names,
        )

    def _slot_names(self) -> dict[int, str]:
        """Each slot's name in `GraphSource.listing`: its variable's, ``<name>_0d`` for the 0-d array of a native
        scalar, its pack's."""
        names = {slot: self.name_of(var) for var, slot in self.slots.items()}
        for var, slot in self.scalar_slots.items():
            if self.slots[var] != slot:
                names[self.slots[var]] = f"{self.name_of(var)}_0d"
            names[slot] = self.name_of(var)
        return names | {len(self.direct_sources) + k: pack.name for k, pack in enumerate(self.packs)}


def graph_cache_key(graph: GraphSource, salt) -> str | None:
    """The graph function's cache key, or ``None`` if any node is uncacheable."""
    if None in graph.node_keys:
        return None
    desc = (salt, tuple(source_hash(module) for module in GRAPH_MODULES), tuple(graph.node_keys), len(graph.params))
    return sha256(repr(desc).encode()).hexdigest()
