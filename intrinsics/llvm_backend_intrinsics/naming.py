"""Names of emitted values: what the IR a user inspects calls each value, after the graph's variables.

llvmlite names every instruction it is asked to (``builder.load(ptr, name="mu.load")``), deduplicating a name
repeated within a function (``mu.load``, ``mu.load.1``) and quoting one that is not an LLVM identifier, so any
string makes valid IR. A node's intrinsic is typed once per argument types, and numba emits every call of it
with the one codegen typing returned, whatever the variables at the call site are called. So the graph
intrinsic says the names of each call's arguments and outputs while it emits the call (`naming_call`), and an
intrinsic emitting a node reads them (`call_names`), falling back to its inputs' and outputs' positions
(``in0``, ``out0``) where no call said them. numba's helpers take no name: what they make is named once made
(`named`, and `named_aggregate` and `named_status` for a chain of ``insertvalue`` and a call's status). Names never
change what is computed.
"""

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from llvmlite import ir
from numba.core import cgutils

__all__ = [
    "CallNames",
    "alloca_once_value",
    "call_names",
    "named",
    "named_aggregate",
    "named_status",
    "naming_call",
    "output_name",
    "unpack_named",
]

_ANONYMOUS = re.compile(r"(\.\d+)?")
"""What llvmlite calls a value made without a name: ``.1``, ``.2``... within its function."""


@dataclass(frozen=True)
class CallNames:
    """The names of one call's arguments and outputs, in order."""

    arguments: tuple[str, ...]
    outputs: tuple[str, ...]


_CALL: ContextVar[CallNames | None] = ContextVar("llvm_backend_call_names", default=None)


@contextmanager
def naming_call(arguments: Sequence[str], outputs: Sequence[str]) -> Iterator[None]:
    """While open, the call being emitted takes arguments named ``arguments`` and makes outputs named
    ``outputs`` (`call_names`)."""
    token = _CALL.set(CallNames(tuple(arguments), tuple(outputs)))
    try:
        yield
    finally:
        _CALL.reset(token)


def call_names(n_arguments: int, n_outputs: int) -> CallNames:
    """The names of the arguments and outputs of the call being emitted (`naming_call`), for an intrinsic of
    ``n_arguments`` arguments and ``n_outputs`` outputs: ``in<k>`` and ``out<j>`` where no call said them, or
    said another number of them (a call taking a pack)."""
    said = _CALL.get()
    arguments = tuple(f"in{k}" for k in range(n_arguments))
    outputs = tuple(f"out{j}" for j in range(n_outputs))
    if said is not None and len(said.arguments) == n_arguments:
        arguments = said.arguments
    if said is not None and len(said.outputs) == n_outputs:
        outputs = said.outputs
    return CallNames(arguments, outputs)


def output_name(default: str) -> str:
    """The name the call being emitted (`naming_call`) said for its one output, or ``default`` where no call said
    one (or said several): what an intrinsic names the value it returns, so a graph's call output keeps its
    variable's name."""
    said = _CALL.get()
    return said.outputs[0] if said is not None and len(said.outputs) == 1 else default


def named(value: ir.Value, name: str) -> ir.Value:
    """``value``, named ``name`` if it is an instruction made without a name (by one of numba's helpers, which
    take none); a constant, an argument or a named value is left as it is."""
    if isinstance(value, ir.Instruction) and _ANONYMOUS.fullmatch(value.name):
        value.name = name
    return value


def unpack_named(builder: ir.IRBuilder, value: ir.Value, count: int, name: str) -> list[ir.Value]:
    """The ``count`` items of the aggregate ``value`` (numba's ``cgutils.unpack_tuple``), named ``<name>0``,
    ``<name>1``..."""
    return [builder.extract_value(value, k, name=f"{name}{k}") for k in range(count)]


def alloca_once_value(builder: ir.IRBuilder, value: ir.Value, name: str) -> ir.Value:
    """numba's ``cgutils.alloca_once_value`` (a slot in the entry block holding ``value``), named ``name``: numba's
    takes a name but does not give it to the slot."""
    return named(cgutils.alloca_once_value(builder, value), name)


def named_aggregate(value: ir.Value, name: str) -> ir.Value:
    """``value``, an aggregate numba built with one ``insertvalue`` per field (``make_tuple``,
    ``make_anonymous_struct``, ``pack_array``), named ``name``; the partial aggregates before it, ``<name>.0``,
    ``<name>.1``... (the aggregate filled through its ``k``-th ``insertvalue``). Only anonymous instructions of
    the chain are named."""
    chain = []
    while isinstance(value, ir.InsertValue) and _ANONYMOUS.fullmatch(value.name):
        chain.append(value)
        value = value.operands[0]
    chain.reverse()
    for k, partial in enumerate(chain[:-1]):
        partial.name = f"{name}.{k}"
    return named(chain[-1], name) if chain else value


def named_status(status, name: str):
    """numba's ``status`` of a call (``call_conv.call_function``, ``call_conv._get_return_status``), each of its
    anonymous values named ``<name>.<field>`` (``status.code``, ``status.is_error``, ``status.excinfoptr``...),
    with the tests numba reads them from: ``<name>.is_normal`` (``is_ok`` is it or ``is_none``) and
    ``<name>.excinfo`` (the exception info loaded, which ``excinfoptr`` selects)."""
    for field, value in status._asdict().items():
        if value is not None:
            named(value, f"{name}.{field}")
    if isinstance(status.is_ok, ir.Instruction) and status.is_ok.opname == "or":
        named(status.is_ok.operands[0], f"{name}.is_normal")
    if isinstance(status.excinfoptr, ir.SelectInstr):
        named(status.excinfoptr.lhs, f"{name}.excinfo")
    return status
