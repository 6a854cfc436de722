"""What `llvm_backend` changes in PyTensor (3.3.x) beyond its public registries, each checked before it is made.

PyMC compiles every function on a ``Mode`` it rebuilds from the linker and the query of the mode it is given, so
a Mode subclass of ours does not reach its compiles: what the LLVM mode does there it does through PyTensor's
rewrite database and ``Mode`` class, for queries and linkers that are ours alone.

It links an op's inner function ahead of PyTensor on a mode of ours (`with_inner_function`), and holds what the
rewrite cache reads of PyTensor beyond its public API: which attributes of an
`OpFromGraph` are caches (`op_from_graph_state`) and what a `Scan` adds to itself as it runs (`scan_state`), each
checked against a new op of the installed PyTensor, and the cache a `TensorConstant` fills (`CONSTANT_CACHE`), left
out of keys only when checked so.
"""

import functools
from copy import copy
from importlib.metadata import version

from pytensor.compile.builders import OpFromGraph
from pytensor.compile.inner_function import HasInnerFunction
from pytensor.compile.mode import Mode, optdb, predefined_linkers, predefined_modes, register_linker, register_mode
from pytensor.graph.rewriting.db import SequenceDB
from pytensor.link.numba.dispatch.basic import numba_funcify, numba_funcify_and_cache_key
from pytensor.scalar.basic import Composite
from pytensor.scan.op import Scan

from llvm_backend import rewrite_cache
from llvm_backend.changes import ABSENT, AttributeChange, DispatchOverride, EntryChange, Registration, Seam
from llvm_backend.function import function_maker
from llvm_backend.lowerings.composite import numba_funcify_Composite, numba_funcify_Composite_without_key
from llvm_backend.mode import LINKER_NAME, LLVM, MODE_NAME
from llvm_backend.rewrite_cache.pickling import STATES, UNKEYED_VARIABLE_ATTRIBUTES

__all__ = [
    "COMPOSITE_FUNCIFY",
    "CONSTANT_CACHE",
    "LLVM_FUNCTIONS",
    "LLVM_LINKER",
    "LLVM_MODE",
    "NUMBA_IS_LLVM",
    "OP_FROM_GRAPH_CACHES",
    "REWRITE_CACHE_QUERY",
    "SCAN_ADDED",
    "op_from_graph_state",
    "scan_state",
    "with_inner_function",
]

SERIES = "3.3"
"""The PyTensor release series the changes are written against."""


def _unset_query(current) -> str | None:
    if current is not ABSENT:
        return f"optdb.query is set already ({current!r})"
    if not isinstance(optdb, SequenceDB) or not callable(getattr(SequenceDB, "query", None)):
        return f"optdb is a {type(optdb).__name__} without SequenceDB.query"
    return None


def _a_property(current) -> str | None:
    return None if isinstance(current, property) else f"Mode.function_maker is {current!r}, not a property"


def _registered(current) -> str | None:
    missing = current.count(ABSENT)
    return f"Composite has no numba function registered in {missing} of 2 registries" if missing else None


def _free(current) -> str | None:
    return None if current is ABSENT else f"the name is taken by {current!r}"


def _a_mode(current) -> str | None:
    return None if isinstance(current, Mode) else f'predefined_modes["NUMBA"] is {current!r}, not a Mode'


REWRITE_CACHE_QUERY = AttributeChange(
    "rewrite_cache_query",
    """``optdb.query`` is `rewrite_cache.cached_query` (an attribute of the ``optdb`` object, over
    `SequenceDB.query`): a query that is ours (`rewrite_cache.is_ours`: it includes our tag) resolves to its
    rewriters in a `CachedRewriter`, whatever Mode carries the LLVM linker (PyMC's rebuilt Mode too); every
    other query gets exactly what PyTensor's ``optdb.query`` returns.""",
    optdb,
    "query",
    rewrite_cache.cached_query,
    seam=Seam("pytensor", SERIES, _unset_query),
)

LLVM_LINKER = Registration(
    "llvm_linker",
    """``register_linker("llvm", ...)``: ``predefined_linkers["llvm"]`` is the LLVM mode's linker, so
    ``Mode(linker="llvm")`` finds it. Seen by whoever asks for that name.""",
    register_linker,
    predefined_linkers,
    LINKER_NAME,
    LLVM.linker,
    seam=Seam("pytensor", SERIES, _free),
)

LLVM_MODE = Registration(
    "llvm_mode",
    """``register_mode("LLVM", ...)``: ``predefined_modes["LLVM"]`` is the LLVM mode, so ``mode="LLVM"`` (any case)
    finds it. Seen by whoever asks for that name.""",
    register_mode,
    predefined_modes,
    MODE_NAME,
    LLVM,
    seam=Seam("pytensor", SERIES, _free),
)

COMPOSITE_FUNCIFY = DispatchOverride(
    "composite_funcify",
    """PyTensor's ``numba_funcify_and_cache_key`` and ``numba_funcify`` give a `Composite` our function
    (`llvm_backend.lowerings.composite`): a Composite inside a node stock lowers during the LLVM linker's
    conversion (an Elemwise our loops do not take, a Blockwise, an inner graph) is typed a node at a time.
    Every other call, stock NUMBA's included, gets stock's function and key: ours hands it on unless the
    calling context (a `ContextVar`, set by `lowering_composites`; each thread starts without it) is inside
    our conversion. Whoever reads those two registries for Composite sees our function.""",
    Composite,
    [
        (numba_funcify_and_cache_key, numba_funcify_Composite),
        (numba_funcify, numba_funcify_Composite_without_key),
    ],
    seam=Seam("pytensor", SERIES, _registered),
)

LLVM_FUNCTIONS = AttributeChange(
    "llvm_functions",
    """``Mode.function_maker`` is `llvm_backend.function.function_maker`: a mode whose linker is ours makes
    `LLVMFunction`\\ s (safe to call from several threads), whatever Mode carries the linker (PyMC's
    ``compile`` rebuilds a plain one on it). Every other mode gets PyTensor's `FunctionMaker`, as before.""",
    Mode,
    "function_maker",
    property(function_maker),
    seam=Seam("pytensor", SERIES, _a_property),
)

NUMBA_IS_LLVM = EntryChange(
    "numba_is_llvm",
    """``predefined_modes["NUMBA"]`` is the LLVM mode while ``llvm_backend.nutpie.numba_is_llvm()`` is open, as
    the code opening it asks: every compile of the process asking for "NUMBA", in any thread, gets "LLVM". Not
    applied on import.""",
    predefined_modes,
    "NUMBA",
    LLVM,
    seam=Seam("pytensor", SERIES, _a_mode),
)


OP_FROM_GRAPH_CACHES = {
    "_lop_op_cache": {},
    "_rop_op_cache": None,
    "_connection_pattern": None,
    "_frozen_lop": None,
    "_frozen_rop": None,
}
"""What an `OpFromGraph` fills as it is used (the ops of its gradient and R-op, its connection pattern, its frozen
overrides), as a new one holds it."""
OP_FROM_GRAPH_ADDED = ("_fn", "_inner_shape_template", "_inner_shape_frozen")
"""What it adds to itself as it is used (its compiled function, its shape graph at its first ``infer_shape``)."""


@functools.cache
def _op_from_graph_problem() -> str | None:
    """Why `op_from_graph_state` cannot be trusted with this PyTensor (None if it can): not the 3.3 series, or a
    new `OpFromGraph` that does not hold `OP_FROM_GRAPH_CACHES` as they say, or holds `OP_FROM_GRAPH_ADDED`."""
    import pytensor.tensor as pt

    pytensor_version = version("pytensor")
    if pytensor_version.split(".")[:2] != SERIES.split("."):
        return f"pytensor {pytensor_version} is not {SERIES}.x, which llvm_backend was written against"
    x = pt.dscalar()
    state = vars(OpFromGraph([x], [x + 1.0]))
    differ = [name for name, value in OP_FROM_GRAPH_CACHES.items() if name not in state or state[name] != value]
    differ += [name for name in OP_FROM_GRAPH_ADDED if name in state]
    return f"pytensor {pytensor_version}: a new OpFromGraph holds {differ} otherwise" if differ else None


def op_from_graph_state(op: OpFromGraph) -> dict:
    """``op``'s state (its ``__dict__``) with its caches as a new op holds them (`OP_FROM_GRAPH_CACHES`, none of
    `OP_FROM_GRAPH_ADDED`): what the op computes, the same before and after its first gradient, shape or call,
    and a state PyTensor refills on demand once unpickled. The rewrite cache pickles OpFromGraphs so
    (`llvm_backend.rewrite_cache.pickling.STATES`). RuntimeError, naming PyTensor's version, if that is not what a
    new OpFromGraph holds: the rewrite cache then keys no graph holding one."""
    problem = _op_from_graph_problem()
    if problem is not None:
        raise RuntimeError(f"llvm_backend: an OpFromGraph cannot be pickled without its caches: {problem}")
    state = {name: value for name, value in vars(op).items() if name not in OP_FROM_GRAPH_ADDED}
    return state | {name: value if value is None else type(value)() for name, value in OP_FROM_GRAPH_CACHES.items()}


STATES[OpFromGraph] = op_from_graph_state


SCAN_ADDED = ("_fn", "t_call", "t_fn")
"""What a `Scan` adds to itself as it runs on the py or C linker: its compiled inner function (whose class
default, None, has it compiled again when needed) and its last call's timings."""


@functools.cache
def _scan_problem() -> str | None:
    """Why `scan_state` cannot be trusted with this PyTensor (None if it can): not the 3.3 series, a new `Scan`
    holding one of `SCAN_ADDED`, or a `Scan` class whose ``_fn`` is not None by default."""
    import pytensor
    import pytensor.tensor as pt
    from pytensor.graph.fg import FunctionGraph

    pytensor_version = version("pytensor")
    if pytensor_version.split(".")[:2] != SERIES.split("."):
        return f"pytensor {pytensor_version} is not {SERIES}.x, which llvm_backend was written against"
    x = pt.dvector()
    out = pytensor.scan(lambda v, acc: acc + v, [x], [pt.zeros((), "float64")], return_updates=False)
    [op] = {node.op for node in FunctionGraph([x], [out], clone=False).apply_nodes if isinstance(node.op, Scan)}
    held = [name for name in SCAN_ADDED if name in vars(op)]
    if held or Scan._fn is not None:
        return f"pytensor {pytensor_version}: a new Scan holds {held}, Scan._fn is {Scan._fn!r}"
    return None


def scan_state(op: Scan) -> dict:
    """``op``'s state (its ``__dict__``) without `SCAN_ADDED`: what the loop computes, the same before and after
    it ran, and a state PyTensor refills on demand once unpickled. The rewrite cache pickles Scans so
    (`llvm_backend.rewrite_cache.pickling.STATES`). RuntimeError, naming PyTensor's version, if a new Scan holds
    one of them: the rewrite cache then keys no graph holding one."""
    problem = _scan_problem()
    if problem is not None:
        raise RuntimeError(f"llvm_backend: a Scan cannot be pickled without what it adds as it runs: {problem}")
    return {name: value for name, value in vars(op).items() if name not in SCAN_ADDED}


STATES[Scan] = scan_state


@functools.cache
def _inner_function_problem() -> str | None:
    """Why `with_inner_function` cannot be trusted with this PyTensor (None if it can): not the 3.3 series, or a
    `HasInnerFunction` (the class of `Scan` and `OpFromGraph`) whose ``_fn``, the inner function its
    ``make_thunk`` links when it is None, is not None by default."""
    pytensor_version = version("pytensor")
    if pytensor_version.split(".")[:2] != SERIES.split("."):
        return f"pytensor {pytensor_version} is not {SERIES}.x, which llvm_backend was written against"
    if vars(HasInnerFunction).get("_fn", ABSENT) is not None or not issubclass(Scan, HasInnerFunction):
        return f"pytensor {pytensor_version}: HasInnerFunction does not link its inner function into _fn"
    return None


def with_inner_function(op: HasInnerFunction, mode: Mode) -> HasInnerFunction:
    """``op`` if its inner function is linked already, else a copy of it (equal to it) whose inner function is
    linked now, on ``mode``: PyTensor links it when it makes the op's thunk, on its VM with C thunks even under
    the py linker (``HasInnerFunction.link_mode``), and keeps it on the op, which graphs share. RuntimeError,
    naming PyTensor's version, if the op does not link it so (`_inner_function_problem`)."""
    problem = _inner_function_problem()
    if problem is not None:
        raise RuntimeError(f"llvm_backend: an op's inner function cannot be linked ahead of PyTensor: {problem}")
    if op._fn is not None:
        return op
    linked = copy(op)
    linked._fn = op.compile_fn(mode)
    return linked


CONSTANT_CACHE = "_unique_value"
"""Where a `TensorConstant` keeps the value its ``unique_value`` found, from the first time it is asked (a rewrite
asks): the rewrite cache's keys leave it out (`llvm_backend.rewrite_cache.pickling.UNKEYED_VARIABLE_ATTRIBUTES`),
so an inner graph's constant keys alike whether or not a rewrite looked at it."""


def _constant_cache_problem() -> str | None:
    """Why `CONSTANT_CACHE` is not what a `TensorConstant` fills with ``unique_value`` (None if it is)."""
    import numpy as np
    import pytensor.tensor as pt

    constant = pt.constant(np.full(3, 0.5))
    before = set(vars(constant))
    if constant.unique_value != 0.5 or set(vars(constant)) - before != {CONSTANT_CACHE}:
        return f"pytensor {version('pytensor')}: TensorConstant.unique_value does not fill {CONSTANT_CACHE} alone"
    return None


if _constant_cache_problem() is None:
    UNKEYED_VARIABLE_ATTRIBUTES.add(CONSTANT_CACHE)
