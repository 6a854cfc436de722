"""Exact sequences of the calls, loads and stores the graph intrinsic and the pack unboxing emit, each on a fresh
module, read with values named by what they are (an argument, a pack's item, a call's result), not by SSA name."""

import re
from types import SimpleNamespace

import llvmlite.binding as llvm
import numba
from llvmlite import ir
from numba.core import types
from numba.core.compiler import Flags
from numba.core.lowering import Environment
from numba.core.registry import cpu_target
from numba.core.targetconfig import ConfigStack

from llvm_backend.tools.inspect_ir import readable_symbol
from llvm_backend_intrinsics.argpack import ArrayPackType
from llvm_backend_intrinsics.graph import GraphPlan, PlanCall, PlanItem, graph_intrinsic

VECTOR = types.Array(types.float64, 1, "C")


class Reader:
    """The instructions of one parsed function in block layout order, and what its values are: the label of
    the root a value was extracted from or inserted into (through ``extractvalue``, ``insertvalue`` and
    ``bitcast``), keyed by the root's SSA name and the field path within it."""

    def __init__(self, function, labels: dict):
        self.function = function
        self.labels = dict(labels)
        self.defined = {}

    def instructions(self):
        """The function's instructions in block layout order, each known by its name once yielded."""
        for block in self.function.blocks:
            for instruction in block.instructions:
                if instruction.name:
                    self.defined[instruction.name] = instruction
                yield instruction

    def label(self, value, path=()):
        """What ``value`` (field ``path`` of it) is, or None."""
        instruction = self.defined.get(value.name) if value.name else None
        if instruction is None or instruction.opcode not in ("extractvalue", "insertvalue", "bitcast"):
            return self.labels.get((value.name, path)) if value.name else None
        aggregate, *element = instruction.operands
        if instruction.opcode == "bitcast":
            return self.label(aggregate, path)
        indices = tuple(int(i) for i in re.search(r"(?:, \d+)+$", str(instruction)).group().split(", ")[1:])
        if instruction.opcode == "extractvalue":
            return self.label(aggregate, indices + path)
        if path[: len(indices)] == indices:
            return self.label(element[0], path[len(indices) :])
        return self.label(aggregate, path)

    def render(self, value) -> str:
        """``value`` as an event shows it: its label, a constant, a global's name, else ``_``."""
        if value.value_kind == llvm.ValueKind.constant_int:
            return str(value.get_constant_value())
        if value.value_kind == llvm.ValueKind.global_variable:
            return value.name.removeprefix(".const.")
        return self.label(value) or "_"

    def indexed(self, pointer):
        """``(base, index)`` when ``pointer`` is a one-index ``getelementptr`` (index ``i`` unless constant)."""
        instruction = self.defined.get(pointer.name)
        if instruction is None or instruction.opcode != "getelementptr" or len(list(instruction.operands)) != 2:
            return None
        base, index = instruction.operands
        is_constant = index.value_kind == llvm.ValueKind.constant_int
        return base, index.get_constant_value() if is_constant else "i"


def callee(call) -> str:
    """The called function's name, the last part of a numba-mangled one (``add``)."""
    *_, function = call.operands
    return readable_symbol(function.name).rsplit(".", 1)[-1]


def parsed_function(module: ir.Module, name: str):
    """Function ``name`` of ``module`` parsed by LLVM, the module verified."""
    parsed = llvm.parse_assembly(str(module))
    parsed.verify()
    return parsed.get_function(name)


# ---------------------------------------------------------------- the graph intrinsic


@numba.njit
def add(x, y):
    return x + y


@numba.njit
def twice(x):
    return x * 2.0


def emit_graph(plan, argument_types):
    """The function in which the intrinsic of ``plan`` emits the graph
    (`llvm_backend_intrinsics.functions.call_as_function`), called
    on a tuple of ``argument_types`` from a numba-convention function in a fresh module; its parameters are
    named ``arg0``, ``arg1``, ... (the tuple flattened) and ``retptr``. Its lists are numba lists
    (``lists=True``), as `llvm_backend_intrinsics.graph._emit`'s docstring shows them."""
    arguments = types.Tuple(argument_types)
    signature, codegen = graph_intrinsic(plan, lists=True)._defn(cpu_target.typing_context, arguments)
    context = cpu_target.target_context.subtarget(
        enable_nrt=True, fndesc=SimpleNamespace(env_name="graph.env"), environment=Environment({})
    )
    context.refresh()
    module = ir.Module("graph")
    fn = ir.Function(module, context.call_conv.get_function_type(signature.return_type, [arguments]), "graph")
    parameters = context.call_conv.get_arguments(fn)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    (value,) = context.get_arg_packer([arguments]).from_arguments(builder, parameters)
    flags = Flags()
    flags.nrt = True
    with ConfigStack().enter(flags), context.push_code_library(context.codegen().create_library("graph")):
        out = codegen(context, builder, signature, [value])
    context.call_conv.return_value(builder, out)
    [body] = [f for f in module.functions if f.name.startswith("llvm_graph_body")]
    for k, parameter in enumerate(context.call_conv.get_arguments(body)):
        parameter.name = f"arg{k}"
    return parsed_function(module, body.name), len(signature.return_type)


def graph_events(reader: Reader, plan: GraphPlan, n_returned: int) -> list[str]:
    """Node calls, ``NRT_incref``/``NRT_decref``, loads of the pack's items, stores of arrays at constant
    indices (the list's items) and the returned tuple, with every array named by its slot (``s4``)."""
    item_slots = {(f"s{item.pack}", item.index): f"s{item.slot}" for item in plan.items}
    outputs = iter(f"s{call.outputs[0]}" for call in plan.calls)
    result_of = {}
    events = []
    for instruction in reader.instructions():
        operands = list(instruction.operands)
        if instruction.opcode == "call" and callee(instruction) in ("NRT_incref", "NRT_decref"):
            events.append(f"{callee(instruction)}({reader.render(operands[0])})")
        elif instruction.opcode == "call" and callee(instruction) in ("add", "twice"):
            slot = next(outputs)
            read = [reader.label(a) for a in operands[:-1] if reader.label(a)]
            events.append(f"{slot} = {callee(instruction)}({', '.join(read)})")
            result_of[operands[0].name] = slot
        elif instruction.opcode == "load" and operands[0].name in result_of:
            reader.labels[(instruction.name, (0,))] = result_of[operands[0].name]
        elif instruction.opcode == "load" and (place := reader.indexed(operands[0])):
            pack, index = reader.label(place[0]), place[1]
            reader.labels[(instruction.name, (0,))] = item_slots[pack, index]
            events.append(f"{item_slots[pack, index]} = {pack}[{index}]")
        elif instruction.opcode == "store" and operands[1].name == "retptr":
            returned = [reader.label(operands[0], (k, 0)) or "_" for k in range(n_returned)]
            events.append(f"return ({', '.join(returned)})")
        elif instruction.opcode == "store" and reader.label(operands[0], (0,)) and reader.indexed(operands[1]):
            events.append(f"list[{reader.indexed(operands[1])[1]}] = {reader.label(operands[0], (0,))}")
    return events


def test_graph_calls_references_and_pack_loads_in_order():
    """The plan of `llvm_backend_intrinsics.graph._emit`'s docstring, emitted as it shows."""
    plan = GraphPlan(
        n_arguments=2,
        items=(PlanItem(2, 1, 0), PlanItem(3, 1, 1)),
        calls=(PlanCall(add, (0, 2), (4,)), PlanCall(add, (4, 3), (5,)), PlanCall(twice, (5,), (6,))),
        outputs=(5, 0),
        lists=((4, 3, 6),),
    )
    function, n_returned = emit_graph(plan, (VECTOR, ArrayPackType(types.float64, 1, 2)))
    # The tuple flattened: arg0 is x's meminfo (x's struct is arg0..arg6), arg7 the pack's table.
    reader = Reader(function, {("arg0", ()): "s0", ("arg7", ()): "s1"})
    assert graph_events(reader, plan, n_returned) == [
        "s3 = s1[1]",
        "list[1] = s3",
        "NRT_incref(s3)",
        "s2 = s1[0]",
        "s4 = add(s0, s2)",
        "list[0] = s4",
        "NRT_incref(s4)",
        "s5 = add(s4, s3)",
        "NRT_decref(s4)",
        "s6 = twice(s5)",
        "list[2] = s6",
        "NRT_incref(s5)",
        "NRT_incref(s0)",
        "NRT_decref(s5)",
        "return (s5, s0, _)",
    ]


# ---------------------------------------------------------------- pack unboxing


def emit_unboxing(pack: ArrayPackType):
    """A fresh module with one function ``unbox`` unboxing its argument ``obj`` as ``pack`` (as numba's
    wrapper of a function taking a pack does), releasing the arrays, and returning whether unboxing failed."""
    context = cpu_target.target_context.subtarget(enable_nrt=True)
    context.refresh()
    module = ir.Module("unbox")
    fn = ir.Function(module, ir.FunctionType(ir.IntType(1), [context.get_argument_type(types.pyobject)]), "unbox")
    fn.args[0].name = "obj"
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    native = context.get_python_api(builder).to_native_value(pack, fn.args[0])
    native.cleanup()
    builder.ret(native.is_error)
    return parsed_function(module, "unbox")


ITEM_FIELDS = {8: "ob_type", 24: "nd", 56: "descr"}
"""``PyArrayObject_fields`` by byte offset (64-bit CPython), as the unboxing must read them."""


def unboxing_events(reader: Reader) -> list[str]:
    """Calls (naming their results when they are attributes of ``obj`` or the list's item), loads of the
    item's fields and of the table's arrays."""
    events = []
    for instruction in reader.instructions():
        operands = list(instruction.operands)
        if instruction.opcode == "call" and not callee(instruction).startswith("llvm."):
            name, arguments = callee(instruction), [reader.render(a) for a in operands[:-1]]
            if name == "PyObject_GetAttrString":
                reader.labels[(instruction.name, ())] = f"{arguments[0]}.{arguments[1]}"
            elif name == "PyList_GetItem":
                reader.labels[(instruction.name, ())] = "item"
            events.append(f"{name}({', '.join(arguments)})")
        elif instruction.opcode == "getelementptr" and (place := reader.indexed(instruction)):
            base, index = reader.render(place[0]), place[1]
            is_byte_offset = re.match(r"\s*%\S+ = getelementptr (inbounds )?i8, ", str(instruction))
            reader.labels[(instruction.name, ())] = f"{base}.{ITEM_FIELDS[index]}" if is_byte_offset else f"&{base}[i]"
        elif instruction.opcode == "load" and (place := reader.indexed(operands[0])):
            reader.labels[(instruction.name, (0,))] = f"{reader.render(place[0])}[{place[1]}]"
            events.append(f"load {reader.render(place[0])}[{place[1]}]")
        elif instruction.opcode == "load" and reader.label(operands[0]):
            reader.labels[(instruction.name, ())] = reader.label(operands[0])
            events.append(f"load {reader.label(operands[0])}")
    return events


def test_pack_unboxing_checks_and_adapts_each_item_in_one_loop():
    reader = Reader(emit_unboxing(ArrayPackType(types.float64, 1, 2)), {("obj", ()): "obj", ("pack", ()): "pack"})
    reader.labels[("loop.index", ())] = "i"
    # In block layout order: an if's join block is laid out before the blocks of its branches.
    assert unboxing_events(reader) == [
        "PyObject_GetAttrString(obj, arrays)",
        "PyObject_GetAttrString(obj, dtype)",
        "PyObject_GetAttrString(obj, ndarray)",
        "PyList_Size(obj.arrays)",
        "Py_DecRef(obj.arrays)",
        "Py_DecRef(obj.dtype)",
        "Py_DecRef(obj.ndarray)",
        "PyErr_Occurred()",
        "PyErr_Format(PyExc_TypeError, an array pack of 2 arrays was given %zd, _)",
        "PyList_GetItem(obj.arrays, i)",
        "load item.ob_type",
        "PyObject_IsInstance(item, obj.ndarray)",
        "load item.nd",
        "load item.descr",
        "PyObject_RichCompareBool(item.descr, obj.dtype, 2)",
        "PyErr_Format(PyExc_TypeError, array pack item %zd is not a 1-d array of dtype %S: %R, i, obj.dtype, item)",
        "NRT_adapt_ndarray_from_python(item, &pack[i])",
        "PyErr_SetString(PyExc_MemoryError, could not unbox an array pack item)",
        "load pack[i]",
        "NRT_decref(pack[i])",
        "load pack[i]",
        "NRT_decref(pack[i])",
    ]
