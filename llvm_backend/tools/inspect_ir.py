"""What a compiled PyTensor Function emits, stage by stage, and counts over its LLVM IR.

Stages (``STAGES``):

- ``graph``: the rewritten graph (``pytensor.dprint`` of ``fn.maker.fgraph``), any mode;
- ``py``: the Python source of the generated graph function that numba compiles;
- ``llvm``: the IR modules numba emits, before LLVM optimizes them;
- ``llvm-opt``: the optimized IR of the compiled library (kernel, node functions and numba's wrappers);
- ``asm``: its machine code.

The numba stages come from ``measure.uncached_kernel``: the graph recompiled with PyTensor's numba cache
off, because under the cache the dispatcher is a one-line ``*args`` wrapper whose IR is a stub.
``kernel_only`` keeps the kernel function alone (the generated graph function, with the module-local
function holding the graph's calls where LLVM did not inline it), not numba's ``cpython.*``/``cfunc.*``
wrappers or the node functions it calls. ``ir_stats`` parses IR with
``llvmlite.binding``: instructions by opcode, calls by callee, NRT allocation sites, loops.
"""

import difflib
import importlib
import importlib.util
import inspect
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import llvmlite.binding as llvm
import pytensor
from pytensor.link.numba.linker import NumbaLinker

from llvm_backend.tools.graphs import GRAPHS, Graph
from llvm_backend.tools.measure import Kernel, function_and_locals, function_text, uncached_kernel

__all__ = [
    "IR_STAGES",
    "NRT_ALLOCATORS",
    "NUMBA_STAGES",
    "STAGES",
    "IRStats",
    "Inspection",
    "InspectionError",
    "format_diff",
    "format_stats",
    "ir_stats",
    "load_target",
    "readable_symbol",
    "stage_text",
]

STAGES = ("graph", "py", "llvm", "llvm-opt", "asm")
NUMBA_STAGES = ("py", "llvm", "llvm-opt", "asm")
"""Stages that need a Numba-linked Function, and recompile its graph with the numba cache off."""
IR_STAGES = ("llvm", "llvm-opt")
NRT_ALLOCATORS = ("NRT_MemInfo_alloc", "NRT_Allocate")
"""Callee name prefixes of NRT heap allocations (``NRT_MemInfo_alloc_aligned``, ...)."""


class InspectionError(ValueError):
    """A request that cannot be answered: an unknown target, a stage the mode has not, ..."""


@dataclass(frozen=True)
class IRStats:
    """Counts over the defined functions of some LLVM IR."""

    functions: int = 0
    instructions: int = 0
    opcodes: dict[str, int] = field(default_factory=dict)
    calls: dict[str, int] = field(default_factory=dict)
    """Calls (and invokes) by callee, named by `readable_symbol`."""
    nrt_allocation_sites: int = 0
    """Calls to ``NRT_MemInfo_alloc*`` / ``NRT_Allocate*``."""
    loops: int = 0
    """Natural loops (one per loop header)."""
    vectorized_loops: int = 0
    """Loops with an instruction whose result or operand is a vector (``<N x ...>``)."""

    def __add__(self, other: "IRStats") -> "IRStats":
        return IRStats(
            self.functions + other.functions,
            self.instructions + other.instructions,
            dict(Counter(self.opcodes) + Counter(other.opcodes)),
            dict(Counter(self.calls) + Counter(other.calls)),
            self.nrt_allocation_sites + other.nrt_allocation_sites,
            self.loops + other.loops,
            self.vectorized_loops + other.vectorized_loops,
        )


def readable_symbol(name: str) -> str:
    """A numba-mangled symbol as a dotted path (``_ZN5numba3foo...E...`` -> ``numba.foo``), else as is.

    Reads the length-prefixed parts of the mangled name; the ABI tags and types after them are dropped.
    """
    if not name.startswith("_ZN"):
        return name
    parts, rest = [], name[3:]
    while length := re.match(r"\d+", rest):
        start = length.end()
        parts.append(rest[start : start + int(length.group())])
        rest = rest[start + int(length.group()) :]
    return ".".join(parts).replace("_3c", "<").replace("_3e", ">") or name


def _callee(call) -> str:
    # LLVM keeps the called value as the last operand of a call or invoke
    *_, called = call.operands
    is_function = called.value_kind == llvm.ValueKind.function
    return readable_symbol(called.name) if is_function else "<indirect>"


def _successors(block, blocks: dict) -> list:
    """The blocks ``block`` branches to: its terminator's label operands, as the function's own blocks
    (``blocks`` maps each block to itself; value references compare by the LLVM value they wrap)."""
    *_, terminator = block.instructions
    return [blocks[op] for op in terminator.operands if op.type.type_kind == llvm.TypeKind.label]


def _back_edges(entry, successors: dict) -> list[tuple]:
    """Edges ``(latch, header)`` to a block on the depth-first path: the loops' back edges."""
    edges, visited, on_path = [], {entry}, {entry}
    stack = [(entry, iter(successors[entry]))]
    while stack:
        block, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            on_path.discard(block)
        elif child in on_path:
            edges.append((block, child))
        elif child not in visited:
            visited.add(child)
            on_path.add(child)
            stack.append((child, iter(successors[child])))
    return edges


def _loops(function) -> list[set]:
    """The natural loops of ``function``, each as its set of blocks."""
    blocks = list(function.blocks)
    own = {block: block for block in blocks}
    successors = {block: _successors(block, own) for block in blocks}
    predecessors = {block: [] for block in blocks}
    for block, targets in successors.items():
        for target in targets:
            predecessors[target].append(block)
    bodies = {}
    for latch, header in _back_edges(blocks[0], successors):
        body = bodies.setdefault(header, {header})
        pending = [latch]
        while pending:
            block = pending.pop()
            if block not in body:
                body.add(block)
                pending.extend(predecessors[block])
    return list(bodies.values())


def _is_vector(instruction) -> bool:
    return instruction.type.is_vector or any(op.type.is_vector for op in instruction.operands)


def _function_stats(function) -> IRStats:
    opcodes, calls = Counter(), Counter()
    allocation_sites = 0
    for block in function.blocks:
        for instruction in block.instructions:
            opcodes[instruction.opcode] += 1
            if instruction.opcode in ("call", "invoke"):
                callee = _callee(instruction)
                calls[callee] += 1
                allocation_sites += callee.startswith(NRT_ALLOCATORS)
    loops = _loops(function)
    vectorized = sum(any(_is_vector(i) for block in loop for i in block.instructions) for loop in loops)
    return IRStats(1, sum(opcodes.values()), dict(opcodes), dict(calls), allocation_sites, len(loops), vectorized)


def ir_stats(ir_text: str, function_name: str | None = None) -> IRStats:
    """Counts over the function ``function_name`` of the IR module ``ir_text``, or over all it defines."""
    module = llvm.parse_assembly(ir_text)
    if function_name is not None:
        return sum((_function_stats(f) for f in function_and_locals(module, function_name)), IRStats())
    return sum((_function_stats(f) for f in module.functions if not f.is_declaration), IRStats())


def _defines(ir_text: str, name: str) -> bool:
    return any(f.name == name and not f.is_declaration for f in llvm.parse_assembly(ir_text).functions)


def _target_machine(triple: str):
    target = llvm.Target.from_triple(triple)
    features = llvm.get_host_cpu_features().flatten()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features, opt=3, codemodel="jitdefault")


def _kernel_asm(optimized_ir: str, name: str) -> str:
    """Machine code of function ``name`` and the module-local functions it calls alone: every other
    definition made ``available_externally``, which LLVM does not emit."""
    module = llvm.parse_assembly(optimized_ir)
    kernel = {f.name for f in function_and_locals(module, name)}
    for function in module.functions:
        if not function.is_declaration and function.name not in kernel:
            function.linkage = "available_externally"
    return str(_target_machine(module.triple).emit_assembly(module))


class Inspection:
    """The stages of one compiled Function; the numba stages share one recompile with the cache off."""

    def __init__(self, fn):
        self.fn = fn

    @cached_property
    def kernel(self) -> Kernel:
        if not isinstance(self.fn.maker.linker, NumbaLinker):
            raise InspectionError(
                f"{self.fn.maker.linker} is not a Numba linker: only the graph stage applies, not {NUMBA_STAGES}"
            )
        return uncached_kernel(self.fn)

    def _kernel_module(self) -> str:
        return next(text for text in self.kernel.unoptimized_modules if _defines(text, self.kernel.name))

    def _generated_source(self) -> str:
        graph = getattr(self.fn.vm, "graph_source", None)
        if graph is not None:
            return graph.listing()
        py_func = self.kernel.dispatcher.py_func
        return getattr(py_func, "__source__", None) or inspect.getsource(py_func)

    def _llvm_text(self, kernel_only: bool) -> str:
        if kernel_only:
            return function_text(self._kernel_module(), self.kernel.name)
        return "\n".join(self.kernel.unoptimized_modules)

    def _optimized_text(self, kernel_only: bool) -> str:
        if kernel_only:
            return function_text(self.kernel.optimized_ir, self.kernel.name)
        return self.kernel.optimized_ir

    def _asm_text(self, kernel_only: bool) -> str:
        if kernel_only:
            return _kernel_asm(self.kernel.optimized_ir, self.kernel.name)
        return self.kernel.dispatcher.inspect_asm(self.kernel.signature)

    def text(self, stage: str, kernel_only: bool = False) -> str:
        """The text of ``stage`` (see `STAGES`); ``kernel_only`` cuts IR and asm to the kernel function
        (the graph and the generated source are the kernel's already)."""
        if stage == "graph":
            return pytensor.dprint(self.fn.maker.fgraph, file="str")
        if stage == "py":
            return self._generated_source()
        readers = {"llvm": self._llvm_text, "llvm-opt": self._optimized_text, "asm": self._asm_text}
        if stage not in readers:
            raise InspectionError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
        return readers[stage](kernel_only)

    def stats(self, stage: str, kernel_only: bool = False) -> IRStats:
        """`ir_stats` of an IR stage (``llvm``: summed over the modules numba emitted)."""
        name = self.kernel.name if kernel_only else None
        if stage == "llvm":
            modules = [self._kernel_module()] if kernel_only else self.kernel.unoptimized_modules
            return sum((ir_stats(text, name) for text in modules), IRStats())
        if stage == "llvm-opt":
            return ir_stats(self.kernel.optimized_ir, name)
        raise InspectionError(f"stats count LLVM IR: stage {stage!r} is not one of {', '.join(IR_STAGES)}")


def stage_text(fn, stage: str, kernel_only: bool = False) -> str:
    """The text of ``stage`` for compiled Function ``fn`` (see `Inspection.text`)."""
    return Inspection(fn).text(stage, kernel_only)


def _module_from_file(path: str):
    if not Path(path).is_file():
        raise InspectionError(f"no file {path}")
    spec = importlib.util.spec_from_file_location(re.sub(r"\W", "_", path), path)
    if spec is None:
        raise InspectionError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module_named(name: str):
    """The module ``name``; InspectionError if it (or a package on its path) does not exist. A module it
    imports being missing is an error of that module, raised as it is."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if error.name is None or not f"{name}.".startswith(f"{error.name}."):
            raise
        raise InspectionError(f"no module named {error.name}") from error


def load_target(target: str) -> tuple[list, list]:
    """``(inputs, outputs)`` of a built-in graph name, or of ``path/to/file.py:function`` or
    ``module:function`` called without arguments (it may also return a `Graph`).

    InspectionError if the target names no built-in graph, file, module or function of it, or its function
    returns something else."""
    if target in GRAPHS:
        graph = GRAPHS[target]()
        return graph.inputs, graph.outputs
    location, colon, name = target.rpartition(":")
    if not (colon and location and name):
        raise InspectionError(
            f"TARGET {target!r} is none of: a built-in graph ({', '.join(GRAPHS)}), "
            "path/to/file.py:function, module:function"
        )
    module = _module_from_file(location) if location.endswith(".py") else _module_named(location)
    function = getattr(module, name, None)
    if not callable(function):
        raise InspectionError(f"{location} has no function {name}")
    built = function()
    if isinstance(built, Graph):
        return built.inputs, built.outputs
    if not (isinstance(built, tuple | list) and len(built) == 2):
        raise InspectionError(f"{target} returned {type(built).__name__}, not (inputs, outputs) or a Graph")
    inputs, outputs = built
    return list(inputs), outputs


def _stats_rows(stats: list[IRStats]) -> list[list]:
    rows = [
        ["functions", *(s.functions for s in stats)],
        ["instructions", *(s.instructions for s in stats)],
        ["loops", *(s.loops for s in stats)],
        ["vectorized loops", *(s.vectorized_loops for s in stats)],
        ["NRT allocation sites", *(s.nrt_allocation_sites for s in stats)],
    ]
    for kind, counts in (("opcode", [s.opcodes for s in stats]), ("calls to", [s.calls for s in stats])):
        totals = sum((Counter(c) for c in counts), Counter())
        rows += [[f"{kind} {key}", *(c.get(key, 0) for c in counts)] for key, _ in totals.most_common()]
    return rows


def format_stats(stats_by_mode: dict[str, IRStats], title: str = "IR") -> str:
    """A Markdown table of `IRStats`, one column per mode (side by side)."""
    header = [title, *stats_by_mode]
    rows = [header, ["---"] * len(header), *_stats_rows(list(stats_by_mode.values()))]
    return "\n".join("| " + " | ".join(map(str, row)) + " |" for row in rows)


def format_diff(before: str, after: str, before_label: str, after_label: str) -> str:
    """A unified diff of two texts, or a line saying they are the same."""
    lines = difflib.unified_diff(
        before.splitlines(), after.splitlines(), fromfile=before_label, tofile=after_label, lineterm=""
    )
    return "\n".join(lines) or f"no differences between {before_label} and {after_label}"
