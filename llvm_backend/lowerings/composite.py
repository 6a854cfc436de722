"""Scalar `Composite`s as one function whose body is typed a node at a time, never as a whole.

Stock numba funcifies a Composite's inner graph into a function that calls one jitted function per inner node,
so numba types a call into a separate dispatcher at every node: a fused gradient with n inner multiplications
types n calls. Under the LLVM mode the inner graph becomes a `GraphPlan` run by
`llvm_backend_intrinsics.graph.graph_intrinsic`, which resolves each distinct (function, argument types) pair once and
emits the calls as SSA values: numba's type inference never sees a body of a thousand statements as one function.
In place of stock's calls the plan calls what those functions compute:

- `Add` and `Mul`: ``operator.add`` or ``operator.mul`` over the operands from the left (stock's n-ary
  functions, ``i0 + i1 + i2``);
- `Switch`: ``select(condition, x, y)`` (`llvm_backend_intrinsics.select`, one LLVM ``select`` at the type numba unifies
  ``x`` and ``y`` to, as stock's ``switch`` returns them); a PyMC model's bounds checks are one Switch each,
  and stock types and compiles a separate ``switch`` function for every one;
- a scalar op stock lowers generically (`numba_funcify_ScalarOp`) whose ``nfunc_spec`` names a numpy
  function: that function applied to the operands;
- such an op whose ``nfunc_spec`` names a ``scipy.special`` function with a ``cython_special`` routine of float64
  arguments, applied to float64 operands for a float64 result: that routine, called directly
  (`llvm_backend_intrinsics.special`), where stock resolves its address in object mode;
- the result narrowed to the node's output dtype with stock's ``direct_cast`` where stock's
  `register_scalar_funcify` narrows it (outputs not of bool, int64, uint64, float64 or complex128);

and calls stock's function for every other node. Each call is typed by numba with its operands' types, as in
stock's functions, so the arithmetic and the values are stock's. Outside the LLVM mode (`lowering_composites`
not active) stock's lowering runs unchanged.

From import on, PyTensor's ``numba_funcify_and_cache_key`` and ``numba_funcify`` give a Composite
`numba_funcify_Composite` (``composite_funcify`` in ``llvm_backend.adapters.pytensor``, reverted there): stock
lowers some nodes around a Composite (an Elemwise our loops do not take, a Blockwise, an inner graph) and looks
its scalar op up in those tables. The table entry is the same for every thread and never swapped during a
conversion; which lowering a call gets is the calling context's (`lowering_composites` sets a `ContextVar`, and
each thread starts without it), so a stock NUMBA compile in another thread gets stock's function and key meanwhile.

A Composite node of a graph, and the scalar function of a loop over one (`llvm_backend.lowerings.loops`), is
`composite_intrinsic`'s: the plan emitted where it is called, in the graph function's module, with no
function of its own. `numba_funcify_Composite` (an ``@njit`` function) serves stock's lowerings, which need
a dispatcher.
"""

import itertools
import operator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from hashlib import sha256

import numpy as np
from numba import typeof
from numba.core import types
from numba.extending import intrinsic
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key
from pytensor.scalar.basic import Add, Composite, Mul, ScalarOp, Switch

from llvm_backend.dispatch import register_lowering
from llvm_backend_intrinsics.graph import GraphPlan, PlanCall, graph_intrinsic
from llvm_backend_intrinsics.select import select
from llvm_backend_intrinsics.special import double_routine, special_function

__all__ = [
    "COMPOSITE_VERSION",
    "CompositeBody",
    "composite_body",
    "composite_intrinsic",
    "lowering_composites",
    "needs_no_stock_function",
    "numba_funcify_Composite",
    "numba_funcify_Composite_without_key",
]

COMPOSITE_VERSION = 4
"""Part of every cache key of a Composite lowered here: bump it when the generated source changes."""

_ACTIVE = ContextVar("llvm_backend_composites", default=False)
_STOCK = numba_funcify_and_cache_key.dispatch(Composite)
_GENERIC = numba_funcify_and_cache_key.dispatch(ScalarOp)
_WIDE = {"bool", "int64", "uint64", "float64", "complex128"}
"""Output dtypes stock's `register_scalar_funcify` leaves as numba computes them (it narrows all others)."""
_JOINED = {Add: operator.add, Mul: operator.mul}


@contextmanager
def lowering_composites():
    """While open (the LLVM linker's conversion of a graph), Composites are lowered here."""
    token = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def _numpy_function(op) -> str | None:
    """The numpy function stock's generic lowering of ``op`` calls, if that lowering is the one it gets."""
    if numba_funcify_and_cache_key.dispatch(type(op)) is not _GENERIC:
        return None
    spec = getattr(op, "nfunc_spec", None)
    if not spec or "." in spec[0] or not hasattr(np, spec[0]):
        return None
    return spec[0]


def _special_routine(node) -> str | None:
    """The ``scipy.special`` function stock's generic lowering of ``node`` calls through its ``cython_special``
    routine of doubles, if the node's operands and result are float64 and scipy has one."""
    if numba_funcify_and_cache_key.dispatch(type(node.op)) is not _GENERIC or len(node.outputs) != 1:
        return None
    spec = getattr(node.op, "nfunc_spec", None)
    module, _, name = spec[0].rpartition(".") if spec else ("", "", "")
    if module != "scipy.special":
        return None
    if any(var.type.dtype != "float64" for var in (*node.inputs, *node.outputs)):
        return None
    return name if double_routine(name, len(node.inputs)) is not None else None


def _function(node):
    """The function the plan calls for ``node`` in place of stock's, and how the text names it; None for
    stock's own."""
    if type(node.op) is Switch:
        return select, "select"
    if len(node.outputs) == 1 and (name := _numpy_function(node.op)) is not None:
        return getattr(np, name), f"np.{name}"
    if (name := _special_routine(node)) is not None:
        return special_function(name), f"special.{name}"
    return None


def needs_no_stock_function(node) -> bool:
    """Whether the plan computes scalar ``node`` with no function of stock's: a joined n-ary op, or one of
    `_function`'s."""
    return len(node.outputs) == 1 and (type(node.op) in _JOINED or _function(node) is not None)


@dataclass(frozen=True)
class CompositeBody:
    """A Composite's inner graph as a plan over one tuple: its inputs, then ``constants``."""

    plan: GraphPlan
    constants: tuple
    text: str
    """The plan as Python, one line per call (what the cache key hashes, and what a reader inspects)."""
    key: str | None
    """None if a stock function called has no cache key."""


def composite_body(op: Composite, **kwargs) -> CompositeBody:
    """The plan running ``op``'s inner graph (``kwargs``: those of stock's funcify, for the inner ops it
    lowers)."""
    writer = _BodyWriter(op.fgraph)
    for node in op.fgraph.toposort():
        writer.write_node(node, kwargs)
    return writer.finish()


class _BodyWriter:
    """What `composite_body` builds the plan with: a reference per value (``("i", k)`` input ``k``, ``("c", k)``
    constant ``k``, ``("t", k)`` the ``k``-th temporary), the calls, their lines of text, the cache keys and the
    names of the values in the IR (an inner variable's name, else its input's position or its op's name)."""

    def __init__(self, fgraph):
        self.fgraph = fgraph
        self.refs = {var: ("i", k) for k, var in enumerate(fgraph.inputs)}
        self.names = {("i", k): var.name or f"i{k}" for k, var in enumerate(fgraph.inputs)}
        self.constants, self.calls, self.lines, self.keys = [], [], [], []
        self.temporaries = itertools.count()
        self.dtypes = {}

    def constant(self, value):
        self.constants.append(value)
        self.keys.append((type(value).__name__, repr(value)))
        return ("c", len(self.constants) - 1)

    def ref(self, var):
        if var not in self.refs:
            self.refs[var] = self.constant(np.dtype(var.type.dtype).type(var.data))
        return self.refs[var]

    def dtype_ref(self, dtype: str):
        if dtype not in self.dtypes:
            self.dtypes[dtype] = self.constant(np.dtype(dtype))
        return self.dtypes[dtype]

    def call(self, function, name, arguments, label, n_outputs=1):
        outputs = tuple(("t", next(self.temporaries)) for _ in range(n_outputs))
        self.names |= dict.fromkeys(outputs, str(label))
        self.calls.append((function, tuple(arguments), outputs, label))
        self.lines.append(f"{', '.join(map(_text, outputs))} = {name}({', '.join(map(_text, arguments))})")
        return outputs

    def write_node(self, node, kwargs):
        """The calls computing ``node``: a chain of ``operator`` calls for a joined n-ary op, our function
        (`_function`), else stock's funcify of the inner op; a narrow result cast to the node's dtype."""
        arguments = [self.ref(var) for var in node.inputs]
        label = node.op
        joined = _JOINED.get(type(node.op))
        if joined is not None and len(node.outputs) == 1:
            value = arguments[0]
            for operand in arguments[1:]:
                (value,) = self.call(joined, f"operator.{joined.__name__}", [value, operand], label)
        elif (function := _function(node)) is not None:
            (value,) = self.call(*function, arguments, label)
        else:
            stock, key = numba_funcify_and_cache_key(node.op, node=node, **kwargs)
            self.keys.append(key)
            outputs = self.call(stock, f"f{len(self.lines)}", arguments, label, len(node.outputs))
            self.refs.update(zip(node.outputs, outputs, strict=True))
            self.names |= {ref: var.name for var, ref in zip(node.outputs, outputs) if var.name}
            return
        dtype = node.outputs[0].type.dtype
        if dtype not in _WIDE:
            (value,) = self.call(numba_basic.direct_cast, "direct_cast", [value, self.dtype_ref(dtype)], label)
        self.refs[node.outputs[0]] = value
        if node.outputs[0].name:
            self.names[value] = node.outputs[0].name

    def finish(self) -> CompositeBody:
        """The plan over the inputs and constants, its text and its cache key."""
        outputs = [self.ref(var) for var in self.fgraph.outputs]
        n_arguments = len(self.fgraph.inputs) + len(self.constants)
        base = {"i": 0, "c": len(self.fgraph.inputs), "t": n_arguments}

        def slot(reference) -> int:
            return base[reference[0]] + reference[1]

        calls = tuple(PlanCall(f, tuple(map(slot, a)), tuple(map(slot, o)), label=lab) for f, a, o, lab in self.calls)
        names = {slot(reference): name for reference, name in self.names.items()}
        names |= {base["c"] + k: f"c{k}" for k in range(len(self.constants))}
        plan = GraphPlan(
            n_arguments,
            calls=calls,
            outputs=tuple(map(slot, outputs)),
            names=tuple(names.get(s, f"s{s}") for s in range(max(names, default=-1) + 1)),
        )
        text = "\n".join([*self.lines, f"return {', '.join(map(_text, outputs))}"])
        key = None if None in self.keys else sha256(str((COMPOSITE_VERSION, text, self.keys)).encode()).hexdigest()
        return CompositeBody(plan, tuple(self.constants), text, key)


def _text(reference) -> str:
    kind, index = reference
    return f"{kind}{index}"


def composite_intrinsic(op: Composite, **kwargs):
    """``(intrinsic, cache key)``: the intrinsic ``composite(*inputs)`` computing what the function of
    `numba_funcify_Composite` computes (its one output, or the tuple of them), emitted where it is called.

    A loop over the Composite (`llvm_backend.lowerings.loops`) calls it at each element: its code is then the
    loop's, and the graph function's, where an ``@njit`` function would be a module of its own that numba
    optimizes and compiles to machine code before linking it into the graph's."""
    kwargs.pop("storage_map", None)
    body = composite_body(op, **kwargs)
    run = graph_intrinsic(body.plan)
    constant_types = [typeof(value) for value in body.constants]
    single = len(op.fgraph.outputs) == 1

    @intrinsic
    def composite(typingctx, *inputs):
        arguments = types.Tuple([*inputs, *constant_types])
        run_type = typingctx.resolve_value_type(run)
        run_signature = typingctx.resolve_function_type(run_type, (arguments,), {})
        returned = run_signature.return_type
        star = types.StarArgTuple(inputs)

        def codegen(context, builder, signature, args):
            [packed] = args
            values = [builder.extract_value(packed, k) for k in range(len(inputs))]
            values += [context.get_constant_generic(builder, t, v) for t, v in zip(constant_types, body.constants)]
            result = context.get_function(run_type, run_signature)(
                builder, [context.make_tuple(builder, arguments, values)]
            )
            return builder.extract_value(result, 0) if single else result

        return (returned[0] if single else returned)(star), codegen

    return composite, body.key


@register_lowering(Composite, graph_intrinsic)
def lower_composite(context):
    return composite_intrinsic(context.op, **context.stock_kwargs)


def numba_funcify_Composite(op, node, **kwargs):
    """PyTensor's ``numba_funcify_and_cache_key`` for `Composite` while ``llvm_backend.adapters.pytensor``'s
    ``composite_funcify`` is applied (from import on): stock's function and key, unless the calling context is
    inside `lowering_composites`; there an ``@njit`` function running the plan, for stock's lowerings of the
    nodes around it."""
    if not _ACTIVE.get():
        return _STOCK(op, node, **kwargs)
    kwargs.pop("storage_map", None)
    body = composite_body(op, **kwargs)
    parameters = [f"i{k}" for k in range(len(op.fgraph.inputs))]
    arguments = [*parameters, *(f"c{j}" for j in range(len(body.constants)))]
    returned = f"composite_body(({', '.join(arguments)},))" + ("[0]" if len(op.fgraph.outputs) == 1 else "")
    source = f"def composite({', '.join(parameters)}):\n    return {returned}\n"
    env = {"composite_body": graph_intrinsic(body.plan)} | {f"c{j}": v for j, v in enumerate(body.constants)}
    function = compile_numba_function_src(source, "composite", env, cache_key=body.key)
    return numba_basic.numba_njit(function), body.key


def numba_funcify_Composite_without_key(op, node, **kwargs):
    """`numba_funcify_Composite`'s function alone: PyTensor's ``numba_funcify`` for `Composite`, as stock's
    registration makes it."""
    return numba_funcify_Composite(op, node, **kwargs)[0]
