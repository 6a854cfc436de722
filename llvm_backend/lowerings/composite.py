"""Scalar `Composite`s as one function, typed once.

Stock numba funcifies a Composite's inner graph into a function that calls one jitted function per inner node,
so numba types a call into a separate dispatcher at every node: a model's fused gradient with 800 inner
multiplications types 800 calls. Under the LLVM mode the inner graph becomes one function whose body writes
out, in place of those calls, what the called functions return:

- `Add` and `Mul`: the operands joined by ``+`` or ``*`` (stock's n-ary functions);
- a scalar op stock lowers generically (`numba_funcify_ScalarOp`) whose ``nfunc_spec`` names a numpy
  function: that function applied to the operands;
- the result narrowed to the node's output dtype where stock's `register_scalar_funcify` narrows it (outputs
  not of bool, int64, uint64, float64 or complex128);

and calls stock's function for every other node. The arithmetic is stock's, written where numba types it with
its operands. Outside the LLVM mode (`lowering_composites` not active) stock's lowering runs unchanged.
"""

from contextlib import contextmanager
from contextvars import ContextVar
from hashlib import sha256

import numpy as np
from pytensor.graph.basic import Constant
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key, register_funcify_and_cache_key
from pytensor.scalar.basic import Add, Composite, Mul, ScalarOp

__all__ = ["COMPOSITE_VERSION", "composite_source", "lowering_composites"]

COMPOSITE_VERSION = 1
"""Part of every cache key of a Composite lowered here: bump it when the generated source changes."""

_ACTIVE = ContextVar("llvm_backend_composites", default=False)
_STOCK = numba_funcify_and_cache_key.dispatch(Composite)
_GENERIC = numba_funcify_and_cache_key.dispatch(ScalarOp)
_WIDE = {"bool", "int64", "uint64", "float64", "complex128"}
"""Output dtypes stock's `register_scalar_funcify` leaves as numba computes them (it narrows all others)."""
_JOINED = {Add: " + ", Mul: " * "}


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


def _expression(node, operands: list[str]) -> str | None:
    """What stock's function for ``node`` returns, written over ``operands``; None where it is not inlined."""
    joiner = _JOINED.get(type(node.op))
    if joiner is not None:
        expression = f"({joiner.join(operands)})"
    elif (function := _numpy_function(node.op)) is not None:
        expression = f"np.{function}({', '.join(operands)})"
    else:
        return None
    dtype = node.outputs[0].type.dtype
    return expression if dtype in _WIDE else f"direct_cast({expression}, np.dtype({dtype!r}))"


def composite_source(op: Composite, **kwargs) -> tuple[str, dict, str | None]:
    """The source of ``op``'s function (``composite``), its globals and its cache key (None if some node
    called has none)."""
    fgraph = op.fgraph
    names = {var: f"i{k}" for k, var in enumerate(fgraph.inputs)}
    env = {"np": np, "direct_cast": numba_basic.direct_cast}
    lines, keys = [], []

    def name(var) -> str:
        if isinstance(var, Constant) and var not in names:
            names[var] = f"c{len(env)}"
            env[names[var]] = np.dtype(var.type.dtype).type(var.data)
            keys.append((names[var], var.type.dtype, repr(var.data)))
        return names[var]

    for k, node in enumerate(fgraph.toposort()):
        operands = [name(var) for var in node.inputs]
        outputs = [f"t{k}_{j}" for j in range(len(node.outputs))]
        names.update(zip(node.outputs, outputs, strict=True))
        expression = _expression(node, operands) if len(node.outputs) == 1 else None
        if expression is None:
            function, key = numba_funcify_and_cache_key(node.op, node=node, **kwargs)
            env[f"f{k}"] = function
            keys.append(key)
            expression = f"f{k}({', '.join(operands)})"
        lines.append(f"    {', '.join(outputs)}{',' if len(outputs) > 1 else ''} = {expression}")
    results = [name(var) for var in fgraph.outputs]
    returned = results[0] if len(results) == 1 else f"({', '.join(results)},)"
    parameters = ", ".join(names[var] for var in fgraph.inputs)
    source = f"def composite({parameters}):\n" + "\n".join(lines) + f"\n    return {returned}\n"
    key = None if None in keys else sha256(str((COMPOSITE_VERSION, source, keys)).encode()).hexdigest()
    return source, env, key


@register_funcify_and_cache_key(Composite)
def numba_funcify_Composite(op, node, **kwargs):
    if not _ACTIVE.get():
        return _STOCK(op, node, **kwargs)
    kwargs.pop("storage_map", None)
    source, env, key = composite_source(op, **kwargs)
    return numba_basic.numba_njit(compile_numba_function_src(source, "composite", env, cache_key=key)), key
