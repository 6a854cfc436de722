"""A whole graph's calls emitted as one intrinsic, in IR linear in the number of calls.

numba lowers a Python function of N calls through one variable per value: an alloca, a store, an incref and a decref per
assignment, deletions placed by a liveness pass, and a scan of the block's assignments per variable
(``Lower._find_singly_assigned_variable``, quadratic in the block's size). `graph_intrinsic` takes the graph as a
`GraphPlan` and emits the calls itself: each value is an SSA register, a call's arguments are borrowed, each result is
released after its last use, and each node function is typed once per distinct argument types.

The plan's values are numbered *slots*: the items of the one tuple argument first, then the arrays read
from pack arguments (`PlanItem`), then each call's outputs. For ``y_i = f(x_i, c)`` over a pack of three
vectors and a constant ``c`` the emitted code is, as Python::

    pack, c = args  # slots 0, 1
    y0 = f(pack[0], c)  # slot 2 read from the pack (borrowed), y0 is slot 3
    y1 = f(pack[1], c)
    y2 = f(pack[2], c)
    return (y0, y1, y2)  # or a list of them: GraphPlan.lists

With the outputs returned in a list and ``MIN_RUN`` or more such calls (a *run*, `_runs`), the calls are one
loop, whose IR does not grow with the run's length::

    pack, c = args
    listed = [None] * n  # n array structs in the frame
    for k in range(n):
        listed[k] = f(pack[k], c)  # the list takes the call's reference
    return (python_list(listed),)  # boxed in one loop, each Python array taking its reference

The calls are emitted in a function of their own, internal to the module, which the intrinsic calls once
(`llvm_backend_intrinsics.functions.call_as_function`): numba's pruning can then remove the caller's reference counts on
the arguments.

A function whose result goes to Python gets the Python list itself: numba boxes a tuple of arrays with code
per item, and a numba list would be one more heap allocation per call. Compiled code reading the lists takes
them as numba lists (``graph_intrinsic(plan, lists=True)``).
"""

from dataclasses import dataclass, field

from llvmlite import ir
from numba.core import cgutils, errors, types, typing
from numba.core.callconv import CPUCallConv
from numba.core.imputils import fix_returning_optional
from numba.core.typing.typeof import Purpose, typeof
from numba.cpython.listobj import ListInstance
from numba.extending import intrinsic

from llvm_backend_intrinsics.abi import ARRAY_MEMINFO_FIELD, call_numba, excinfo_slot, return_slot, return_slot_type
from llvm_backend_intrinsics.argpack import (
    ArrayPackType,
    BoxedListType,
    array_list_type,
    box_into_list,
    table_item,
    table_of,
)
from llvm_backend_intrinsics.functions import call_as_function
from llvm_backend_intrinsics.naming import named, naming_call
from llvm_backend_intrinsics.scalarpack import ScalarPackType
from llvm_backend_intrinsics.vector_math import declare_math_of

__all__ = ["GraphPlan", "PlanCall", "PlanItem", "graph_intrinsic"]


@dataclass(frozen=True)
class PlanItem:
    """Slot ``slot`` is array ``index`` of the pack in slot ``pack``."""

    slot: int
    pack: int
    index: int


@dataclass(frozen=True)
class PlanCall:
    """``outputs = function(*arguments)``; from ``pack_from`` on, the arguments (arrays of one dtype and
    ndim) go as one `ArrayPackType` argument."""

    function: object
    arguments: tuple[int, ...]
    outputs: tuple[int, ...]
    pack_from: int | None = None
    label: object = None
    """What typing errors name (the node)."""


@dataclass(frozen=True)
class GraphPlan:
    """A graph as calls over slots; ``outputs`` are returned one each, then each group of ``lists`` (arrays
    of one dtype and ndim) as one list."""

    n_arguments: int
    items: tuple[PlanItem, ...] = ()
    calls: tuple[PlanCall, ...] = ()
    outputs: tuple[int, ...] = ()
    lists: tuple[tuple[int, ...], ...] = field(default=())
    constants: tuple = ()
    """The values of the last of the ``n_arguments`` slots, which the intrinsic emits itself (numba's constants
    of their types, as it lowers a global) instead of taking them in its tuple."""
    names: tuple[str, ...] = ()
    """Per slot, the name of its values in the IR (its graph variable's); a slot past them is ``s<slot>``."""

    def name(self, slot: int) -> str:
        """The name of ``slot``'s values in the IR."""
        return self.names[slot] if slot < len(self.names) else f"s{slot}"

    @property
    def n_passed(self) -> int:
        """How many of the ``n_arguments`` slots the tuple argument holds: all but the constants."""
        return self.n_arguments - len(self.constants)


def _pack_argument_type(argument_types, label):
    """The pack type of the arguments a call takes as one pack; TypingError naming the call's ``label``
    unless they are arrays of one dtype and ndim."""
    first = argument_types[0]
    if not all(isinstance(t, types.Array) and (t.dtype, t.ndim) == (first.dtype, first.ndim) for t in argument_types):
        raise errors.TypingError(
            f"{label}: packed arguments must be arrays of one dtype and ndim, got {', '.join(map(str, argument_types))}"
        )
    return ArrayPackType(first.dtype, first.ndim, len(argument_types))


def _type_plan(typingctx, plan: GraphPlan, argument_types):
    """The slot types and, per call, its function type, signature and argument types."""
    slot_types = {i: types.unliteral(t) for i, t in enumerate(argument_types)}
    constant_types = (types.unliteral(typeof(value, Purpose.constant)) for value in plan.constants)
    slot_types |= dict(enumerate(constant_types, start=plan.n_passed))
    for item in plan.items:
        pack = slot_types[item.pack]
        if not isinstance(pack, ArrayPackType | ScalarPackType) or not 0 <= item.index < pack.count:
            raise errors.TypingError(f"run_graph: slot {item.pack} is {pack}, which has no item {item.index}")
        slot_types[item.slot] = pack.item_type
    function_types = {}
    resolved = {}
    typed_calls = []
    for call in plan.calls:
        call_types = [slot_types[s] for s in call.arguments]
        if call.pack_from is not None:
            call_types = [*call_types[: call.pack_from], _pack_argument_type(call_types[call.pack_from :], call.label)]
        if id(call.function) not in function_types:
            function_types[id(call.function)] = typingctx.resolve_value_type(call.function)
        function_type = function_types[id(call.function)]
        key = (function_type, tuple(call_types))
        if key not in resolved:
            try:
                resolved[key] = typingctx.resolve_function_type(function_type, tuple(call_types), {})
            except errors.TypingError as error:
                raise errors.TypingError(f"{call.label}: {error}") from error
        signature = resolved[key]
        if signature is None:
            raise errors.TypingError(f"{call.label}: {call.function} cannot take {tuple(call_types)}")
        results = signature.return_type
        if len(call.outputs) == 1:
            slot_types[call.outputs[0]] = results
        elif isinstance(results, types.BaseTuple) and len(results) == len(call.outputs):
            slot_types |= dict(zip(call.outputs, results))
        elif isinstance(results, types.IterableType) and not isinstance(results, types.BaseTuple):
            slot_types |= dict.fromkeys(call.outputs, results.iterator_type.yield_type)
        else:
            raise errors.TypingError(f"{call.label}: {len(call.outputs)} outputs from a call returning {results}")
        typed_calls.append((function_type, signature, call_types))
    return slot_types, typed_calls


def _fold(context, builder, signature, arguments):
    """The call's argument values, cast to ``signature``'s types and folded into its Python signature
    (defaults, ``*args``), as numba's lowering of a call does."""
    if signature.pysig is None:
        return [context.cast(builder, v, t, s) for (v, t), s in zip(arguments, signature.args)]

    def normal(index, param, argument):
        value, value_type = argument
        return context.cast(builder, value, value_type, signature.args[index])

    def default(index, param, value):
        return context.get_constant_generic(builder, signature.args[index], value)

    def star(index, param, star_arguments):
        star_types = signature.args[index]
        values = [context.cast(builder, v, t, s) for (v, t), s in zip(star_arguments, star_types)]
        return cgutils.make_anonymous_struct(builder, values)

    return typing.fold_arguments(signature.pysig, arguments, {}, normal, default, star)


def _call(context, builder, function_type, signature, arguments, frame: dict):
    """Call ``function_type`` on ``arguments``, propagating its exception status.

    A numba-compiled function is called as numba's ``user_function`` does, but its return slot and
    exception pointer are allocas shared by every call returning that type (``frame``, which also keeps
    each callee's declaration). numba's own call makes two per call site and zeroes the return slot before
    each call: for 240 nodes, 480 allocas and 240 memsets, a large part of LLVM's work on the graph
    function. Anything else goes through
    numba's implementation of the call."""
    call_conv = context.call_conv
    overloads = getattr(getattr(function_type, "dispatcher", None), "overloads", {})
    if not (
        isinstance(call_conv, CPUCallConv)
        and isinstance(function_type, types.Dispatcher)
        and signature.args in overloads
    ):
        return context.get_function(function_type, signature)(builder, arguments)
    compiled = overloads[signature.args]
    fndesc = compiled.fndesc
    if fndesc not in frame:
        frame[fndesc] = context.declare_function(builder.module, fndesc)
        declare_math_of(builder.module, compiled.library)
    callee = frame[fndesc]
    slot_type = return_slot_type(context, fndesc.restype)
    if slot_type not in frame:
        frame[slot_type] = return_slot(context, builder, fndesc.restype)
    if "excinfo" not in frame:
        frame["excinfo"] = excinfo_slot(builder)
    status, result = call_numba(
        context, builder, callee, fndesc, arguments, frame[slot_type], frame["excinfo"], marked=False
    )
    context.add_linking_libs([compiled.library])
    return fix_returning_optional(context, builder, signature, status, result)


def _unpack(context, builder, container_type, container, count: int, label) -> list:
    """The ``count`` items of an iterable result (a list, an array along its first axis), owned, as numba
    unpacks ``a, b = f()``: a ValueError if it holds fewer or more. Releases the container."""
    iterator_type = container_type.iterator_type
    pair_type = types.Pair(iterator_type.yield_type, types.boolean)
    iterator = context.get_function("getiter", typing.signature(iterator_type, container_type))(builder, (container,))
    iternext = context.get_function("iternext", typing.signature(pair_type, iterator_type))
    items = []
    for k in range(count + 1):
        pair = iternext(builder, (iterator,))
        valid = context.pair_second(builder, pair, pair_type)
        with cgutils.if_unlikely(builder, builder.not_(valid) if k < count else valid):
            context.call_conv.return_user_exc(builder, ValueError, (f"{label}: expected {count} outputs",))
        if k < count:
            items.append(context.pair_first(builder, pair, pair_type))
    context.nrt.decref(builder, iterator_type, iterator)
    context.nrt.decref(builder, container_type, container)
    return items


def _last_uses(plan: GraphPlan) -> dict[int, int]:
    """Slot -> index of the last call reading it (``len(plan.calls)`` for the ones returned one each; a
    listed one is stored in its list as soon as it is made)."""
    last = {}
    for i, call in enumerate(plan.calls):
        last |= dict.fromkeys(call.arguments, i)
    return last | {s: len(plan.calls) for s in plan.outputs}


def _reference(context, builder, value_type, value, name: str):
    """``NRT_incref``/``NRT_decref`` of ``value``: an array's meminfo directly, other types through numba's
    data model walk (which extracts every field of every array to find the meminfos)."""
    if not isinstance(value_type, types.Array):
        getattr(context.nrt, name)(builder, value_type, value)
        return
    function = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [cgutils.voidptr_t]), f"NRT_{name}"
    )
    builder.call(function, [builder.extract_value(value, ARRAY_MEMINFO_FIELD, name=f"{value.name}.meminfo")])


class _Slots:
    """The values of a plan's slots as its calls are emitted, and which of them the graph owns.

    An argument is borrowed from the caller and a pack item from its pack's table (loaded on its first
    read); a call's output is owned until it is released or handed over to a list."""

    def __init__(self, context, builder, plan: GraphPlan, slot_types, arguments, argument_types):
        self.context = context
        self.builder = builder
        self.types = slot_types
        self.plan = plan
        self.items = {item.slot: item for item in plan.items}
        passed = [builder.extract_value(arguments, i, name=plan.name(i)) for i in range(len(argument_types))]
        self.values = {
            i: context.cast(builder, value, argument_type, slot_types[i])
            for i, (value, argument_type) in enumerate(zip(passed, argument_types))
        }
        for i, value in enumerate(plan.constants, start=plan.n_passed):
            self.values[i] = context.get_constant_generic(builder, slot_types[i], value)
        self.owned = set()

    def value(self, slot):
        """The value of ``slot``, loading a pack item from its table on its first read."""
        if slot not in self.values:
            item = self.items[slot]
            self.values[slot] = table_item(self.builder, self.values[item.pack], item.index, self.plan.name(slot))
        return self.values[slot]

    def typed(self, slots) -> list:
        """``(value, numba type)`` of each of ``slots``."""
        return [(self.value(s), self.types[s]) for s in slots]

    def take(self, slots, values) -> None:
        """``values`` become the owned values of ``slots`` (a call's outputs), named after them."""
        self.values |= {slot: named(value, self.plan.name(slot)) for slot, value in zip(slots, values)}
        self.owned |= set(slots)

    def reference(self, slot, name: str) -> None:
        """``NRT_incref`` or ``NRT_decref`` (``name``) of ``slot``'s value."""
        _reference(self.context, self.builder, self.types[slot], self.value(slot), name)


@dataclass(frozen=True)
class _ListPlace:
    """Item ``index`` of a returned list whose items are stored from ``data`` on."""

    data: ir.Value
    item_type: types.Type
    model: object
    index: int


def _emit_lists(context, builder, groups, list_types):
    """The lists returning ``groups``, and each listed slot's places in them: a numba list is allocated at
    its length; a Python list's arrays are stored in the frame until it is built (`_emit_return`)."""
    lists = []
    places = {}
    for group, list_type in zip(groups, list_types):
        is_list = isinstance(list_type, types.List)
        item_type = list_type.dtype if is_list else list_type.array_type
        model = context.data_model_manager[item_type]
        if is_list:
            instance = ListInstance.allocate(context, builder, list_type, len(group))
            instance.size = ir.Constant(ir.IntType(64), len(group))
            lists.append(instance.value)
            data = instance.data
        else:
            data = cgutils.alloca_once(builder, model.get_data_type(), size=len(group), name="listed")
            lists.append(data)
        for k, slot in enumerate(group):
            places.setdefault(slot, []).append(_ListPlace(data, item_type, model, k))
    return lists, places


def _emit_store_listed(context, builder, slots: _Slots, places, slot, give: bool):
    """Store ``slot`` in its list ``places`` as soon as it is made, so its value need not live on to the end
    (hundreds of arrays held to the end make one block LLVM's instruction schedulers are superlinear over).
    Each place holds a reference; with ``give``, the last one takes the graph's."""
    for n, place in enumerate(places):
        item = context.cast(builder, slots.value(slot), slots.types[slot], place.item_type)
        target = builder.gep(place.data, [ir.Constant(ir.IntType(64), place.index)], name=f"{item.name}.listed")
        builder.store(place.model.as_data(builder, item), target)
        if give and n == len(places) - 1:
            slots.owned.discard(slot)
        else:
            _reference(context, builder, place.item_type, item, "incref")


def _emit_pack_argument(context, builder, slots: _Slots, pack_slots, pack_type):
    """The pack of ``pack_slots``: a view of a pack argument's table when they are its consecutive items,
    else a table in the frame (the slots outlive the call, so it borrows them)."""
    places = [slots.items.get(s) for s in pack_slots]
    first = places[0]
    if None not in places and all(p.pack == first.pack and p.index == first.index + k for k, p in enumerate(places)):
        return builder.gep(slots.values[first.pack], [ir.Constant(ir.IntType(64), first.index)], name="pack.view")
    return table_of(context, builder, pack_type, slots.typed(pack_slots))


def _emit_plan_call(context, builder, slots: _Slots, call: PlanCall, typed_call, frame: dict) -> list:
    """The values of ``call``'s outputs (owned); its arguments are borrowed from their slots."""
    function_type, signature, call_types = typed_call
    arguments = slots.typed(call.arguments)
    if call.pack_from is not None:
        packed = _emit_pack_argument(context, builder, slots, call.arguments[call.pack_from :], call_types[-1])
        arguments = [*arguments[: call.pack_from], (packed, call_types[-1])]
    names = [slots.plan.name(s) for s in call.arguments]
    if call.pack_from is not None:
        names = [*names[: call.pack_from], "pack"]
    with naming_call(names, [slots.plan.name(s) for s in call.outputs]):
        folded = _fold(context, builder, signature, arguments)
        result = _call(context, builder, function_type, signature, folded, frame)
    if len(call.outputs) == 1:
        return [result]
    if isinstance(signature.return_type, types.BaseTuple):
        return [builder.extract_value(result, k, name=slots.plan.name(s)) for k, s in enumerate(call.outputs)]
    return _unpack(context, builder, signature.return_type, result, len(call.outputs), call.label)


MIN_RUN = 4
"""Consecutive calls forming a run (`_runs`) are emitted as one loop from this many on."""


def _call_shape(plan: GraphPlan, i: int, items: dict, listed: dict, read: set):
    """What call ``i`` does, as a run member: per argument ``("slot", s)`` or, for a pack item, ``("item",
    pack slot, index)``; and for its one output, ``(list, index)`` of its one list place. None when it cannot
    be in a run: its output is read by a call, returned one each or listed more than once, or it takes a pack."""
    call = plan.calls[i]
    if call.pack_from is not None or len(call.outputs) != 1:
        return None
    [out] = call.outputs
    if out in read or out in plan.outputs or len(listed.get(out, ())) != 1:
        return None
    arguments = tuple(("item", items[s].pack, items[s].index) if s in items else ("slot", s) for s in call.arguments)
    return arguments, listed[out][0]


def _step(previous, shape) -> int | None:
    """+1 or -1 when a call of ``shape`` is the next member of a run whose last member has ``previous``: the
    same invariant slots, and the next (or previous) item of the same packs and place of the same list."""
    (arguments_a, (list_a, index_a)), (arguments_b, (list_b, index_b)) = previous, shape
    step = index_b - index_a
    if list_a != list_b or step not in (1, -1) or len(arguments_a) != len(arguments_b):
        return None
    for a, b in zip(arguments_a, arguments_b):
        if a[0] != b[0] or a[1] != b[1] or (a[0] == "item" and a[2] + step != b[2]):
            return None
    return step


@dataclass(frozen=True)
class _Run:
    """Calls ``start`` to ``start + length - 1``, each stepping ``step`` (+1 or -1) through pack items and
    list places."""

    start: int
    length: int
    step: int


def _runs(plan: GraphPlan, typed_calls) -> dict[int, _Run]:
    """First call -> each *run*: ``MIN_RUN`` or more consecutive calls of one function and typed signature,
    each reading the next (or each the previous) item of the same packs and the same other slots, and storing
    its one output, read by no call, in the next (previous) place of the same list. A wide graph's ``y_i =
    f(x_i, c)`` is one."""
    items = {item.slot: item for item in plan.items}
    listed = {}
    for g, group in enumerate(plan.lists):
        for k, slot in enumerate(group):
            listed.setdefault(slot, []).append((g, k))
    read = {s for call in plan.calls for s in call.arguments}
    shapes = [_call_shape(plan, i, items, listed, read) for i in range(len(plan.calls))]
    runs = {}
    start, step = 0, None
    for i in range(1, len(plan.calls) + 1):
        next_step = None
        if i < len(plan.calls) and shapes[i] is not None and shapes[i - 1] is not None:
            if plan.calls[i].function is plan.calls[start].function and typed_calls[i] == typed_calls[start]:
                next_step = _step(shapes[i - 1], shapes[i])
        if next_step is not None and step in (None, next_step):
            step = next_step
            continue
        if i - start >= MIN_RUN:
            runs[start] = _Run(start, i - start, step)
        start, step = i, None
    return runs


def _emit_run(context, builder, slots: _Slots, run: _Run, calls, typed_call, place: _ListPlace, frame: dict):
    """The calls of ``run`` as one loop: iteration ``k`` calls the function on item ``first + step * k`` of
    each pack read and on the invariant slots (read before the loop), and stores its output, owned, in list
    place ``place.index + step * k``. A pack item read is named after its pack (``xs.item``), the output after
    its list (``listed.item``)."""
    first = calls[0]
    intp = ir.IntType(64)
    arguments, names = [], []
    for s in first.arguments:
        item = slots.items.get(s)
        arguments.append((slots.value(s), None) if item is None else (slots.values[item.pack], item.index))
        names.append(slots.plan.name(s) if item is None else f"{slots.plan.name(item.pack)}.item")
    out_type = slots.types[first.outputs[0]]
    function_type, signature, _ = typed_call
    with cgutils.for_range(builder, ir.Constant(intp, run.length)) as loop:
        offset = builder.mul(loop.index, intp(run.step), name="run.offset")
        values = [
            (value if at is None else table_item(builder, value, builder.add(offset, intp(at), name="run.at"), name), t)
            for (value, at), t, name in zip(arguments, (slots.types[s] for s in first.arguments), names)
        ]
        with naming_call(names, ["listed.item"]):
            folded = _fold(context, builder, signature, values)
            result = _call(context, builder, function_type, signature, folded, frame)
        item = named(context.cast(builder, result, out_type, place.item_type), "listed.item")
        target = builder.gep(place.data, [builder.add(offset, intp(place.index), name="run.place")], name="run.listed")
        builder.store(place.model.as_data(builder, item), target)


def _emit_releases(slots: _Slots, candidates, last: dict, i: int) -> None:
    """Release each owned slot of ``candidates`` whose last use is call ``i``."""
    for slot in sorted(set(candidates) & slots.owned):
        if last.get(slot, i) == i:
            slots.reference(slot, "decref")
            slots.owned.discard(slot)


def _emit_return(context, builder, slots: _Slots, outputs, lists, return_type):
    """The tuple of ``outputs`` (each a new reference) and ``lists``, a Python list built from each frame
    buffer; releases what the graph still owns."""
    returned = []
    for slot in outputs:
        slots.reference(slot, "incref")
        returned.append(slots.value(slot))
    for slot in sorted(slots.owned):
        slots.reference(slot, "decref")
    listed = return_type.types[len(outputs) :]
    lists = [
        box_into_list(context, builder, v, t.array_type, t.count) if isinstance(t, BoxedListType) else v
        for v, t in zip(lists, listed, strict=True)
    ]
    return context.make_tuple(builder, return_type, [*returned, *lists])


def _emit(context, builder, plan, slot_types, typed_calls, list_types, return_type, arguments, argument_types):
    """Emit ``plan``'s calls on the tuple ``arguments`` and return the tuple of its outputs and lists.

    References: arguments and pack items are borrowed; each call borrows its arguments and returns its
    outputs owned. An owned output is released right after the last call reading it or, read by no later
    call and listed, handed to the last list place it is stored in (every other place takes a reference of
    its own). Each output returned one each gets a new reference, then what the graph still owns is released.
    A run (`_runs`) is one loop (`_emit_run`), its invariant arguments released after it as after its last call.

    For an array ``x`` and a pack of two arrays, the plan::

        GraphPlan(
            n_arguments=2,  # slot 0: x, slot 1: the pack
            items=(PlanItem(2, 1, 0), PlanItem(3, 1, 1)),  # slots 2 and 3: the pack's arrays
            calls=(
                PlanCall(add, (0, 2), (4,)),
                PlanCall(add, (4, 3), (5,)),
                PlanCall(twice, (5,), (6,)),
            ),
            outputs=(5, 0),
            lists=((4, 3, 6),),
        )

    is emitted as, with ``lists=True`` (by default the listed arrays are stored in the frame the same way
    and made a Python list on return), in Python with the references made explicit (``incref``/``decref``:
    ``NRT_incref``/``NRT_decref`` of an array's meminfo; ``tests/llvm_backend_intrinsics/test_ir_sequences.py`` checks
    the IR)::

        x, pack = arguments
        listed = [None, None, None]  # allocated at its length
        s3 = pack[1]
        listed[1] = s3
        incref(s3)  # a listed slot no call makes is stored first; the list takes a reference
        s2 = pack[0]  # loaded on its first read
        s4 = add(x, s2)
        listed[0] = s4
        incref(s4)  # the second call still reads s4
        s5 = add(s4, s3)
        decref(s4)  # after its last read
        s6 = twice(s5)
        listed[2] = s6  # read by no later call: the list takes the graph's reference
        incref(s5)
        incref(x)  # returned one each
        decref(s5)  # still owned
        return (s5, x, listed)
    """
    slots = _Slots(context, builder, plan, slot_types, arguments, argument_types)
    lists, places = _emit_lists(context, builder, plan.lists, list_types)
    produced = {slot for call in plan.calls for slot in call.outputs}
    for slot in sorted(places.keys() - produced):
        _emit_store_listed(context, builder, slots, places[slot], slot, give=False)
    _emit_calls(context, builder, plan, typed_calls, slots, places)
    return _emit_return(context, builder, slots, plan.outputs, lists, return_type)


def _emit_calls(context, builder, plan: GraphPlan, typed_calls, slots: _Slots, places: dict) -> None:
    """``plan``'s calls in order, each run (`_runs`) as one loop (`_emit_run`): each output is stored in its
    list ``places`` as it is made, and each owned slot released after the last call reading it."""
    last = _last_uses(plan)
    runs = _runs(plan, typed_calls)
    frame = {}
    i = 0
    while i < len(plan.calls):
        call, typed_call = plan.calls[i], typed_calls[i]
        if i in runs:
            end = i + runs[i].length - 1
            [place] = places[call.outputs[0]]
            _emit_run(context, builder, slots, runs[i], plan.calls[i : end + 1], typed_call, place, frame)
            _emit_releases(slots, call.arguments, last, end)
            i = end + 1
            continue
        slots.take(call.outputs, _emit_plan_call(context, builder, slots, call, typed_call, frame))
        for slot in call.outputs:
            _emit_store_listed(context, builder, slots, places.get(slot, ()), slot, give=last.get(slot, i) == i)
        _emit_releases(slots, {*call.arguments, *call.outputs}, last, i)
        i += 1


def graph_intrinsic(plan: GraphPlan, lists: bool = False):
    """An intrinsic running ``plan`` on one tuple of its ``n_passed`` values; it returns the tuple of
    ``plan.outputs`` followed by one Python list per group of ``plan.lists`` (`BoxedListType`), built in
    one loop with no heap allocation of numba's, for a function called from Python. With ``lists=True`` each
    group comes back as a numba list instead, which compiled code can read (`llvm_backend.linker.graph_entry`).
    """

    @intrinsic
    def run_graph(typingctx, arguments):
        if not isinstance(arguments, types.BaseTuple) or len(arguments) != plan.n_passed:
            raise errors.TypingError(f"run_graph: expected a tuple of {plan.n_passed} arguments, got {arguments}")
        slot_types, typed_calls = _type_plan(typingctx, plan, arguments)
        list_types = [array_list_type(slot_types[group[0]]) for group in plan.lists]
        if not lists:
            list_types = [BoxedListType(t.dtype, len(group)) for t, group in zip(list_types, plan.lists)]
        return_type = types.BaseTuple.from_types([*(slot_types[s] for s in plan.outputs), *list_types])

        def codegen(context, builder, signature, args):
            def emit_body(body_builder, decoded):
                [values] = decoded
                return _emit(
                    context, body_builder, plan, slot_types, typed_calls, list_types, return_type, values, arguments
                )

            return call_as_function(context, builder, signature, args, emit_body, "llvm_graph_body")

        return return_type(arguments), codegen

    return run_graph
