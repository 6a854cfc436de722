"""The LLVM linker: PyTensor's Numba linker, with every node lowered through our dispatch and the graph
function written by ``llvm_backend.codegen`` so that its IR grows linearly with the graph's width."""

from typing import NamedTuple

from numba.core import errors, types
from numba.np.numpy_support import from_dtype
from pytensor import config
from pytensor.graph.fg import FunctionGraph
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch.basic import numba_funcify_and_cache_key, numba_njit
from pytensor.link.numba.linker import NumbaLinker
from pytensor.link.utils import raise_with_op
from pytensor.tensor.type import TensorType

from llvm_backend.codegen import (
    NATIVE_SCALARS,
    GraphSource,
    PackParam,
    graph_cache_key,
    graph_source,
    tuple_source,
)
from llvm_backend.lowerings.composite import lowering_composites
from llvm_backend.rewrites.registry import REWRITE_TAG
from llvm_backend_intrinsics.argpack import ArrayPack
from llvm_backend_intrinsics.functions import address_call, chosen_address_call
from llvm_backend_intrinsics.graph import graph_intrinsic
from llvm_backend_intrinsics.scalarpack import ScalarPack
from llvm_backend_intrinsics.tuples import flatten_tuple

__all__ = ["ConvertedGraph", "LLVMLinker", "ListedOutputs", "PackCell", "graph_caller"]


class PackCell:
    """A thunk input for a pack parameter: its ``[0]``, which the thunk reads at each call, is an
    `ArrayPack` of the current values of the pack's input storage cells."""

    __slots__ = ("cells", "pack")

    def __init__(self, pack: PackParam, cells: list):
        self.pack = pack
        self.cells = cells

    def __getitem__(self, index):
        if index != 0:
            raise IndexError(index)
        return ArrayPack(self.pack.numba_type, self.pack.dtype, [cell[0] for cell in self.cells])


def _thunk_pack(spec: PackParam, cells: list):
    """The thunk input of pack parameter ``spec`` over the storage ``cells`` of its sources."""
    return [ScalarPack(spec.numba_type, cells)] if spec.scalar else PackCell(spec, cells)


class ListedOutputs:
    """The graph function of a graph whose outputs come back partly in lists (``GraphSource.output_lists``):
    calls ``dispatcher`` and returns the outputs in the graph's order, as PyTensor's thunk expects."""

    __slots__ = ("dispatcher", "n_direct", "order")

    def __init__(self, dispatcher, graph: GraphSource):
        self.dispatcher = dispatcher
        self.n_direct = len(graph.direct_outputs)
        positions = [*graph.direct_outputs, *(i for listed in graph.output_lists for i in listed)]
        order = sorted(range(len(positions)), key=positions.__getitem__)
        self.order = None if order == list(range(len(order))) else order

    def __call__(self, *args):
        result = self.dispatcher(*args)
        outputs = list(result[: self.n_direct])
        for listed in result[self.n_direct :]:
            outputs += listed
        if self.order is None:
            return outputs
        return [outputs[i] for i in self.order]


def graph_caller(graph_fn, cells: list, scalars: list[str | None]):
    """A function of no arguments calling ``graph_fn`` on the current values of ``cells`` (one per parameter,
    each read as ``cell[0]``), those of a parameter with a dtype in ``scalars`` read as that dtype's Python
    scalar (``float(cell[0])``). Written out, so each argument costs one expression and no Python call of ours:
    ``graph_fn(c0[0], float(c1[0]), c2[0])``."""
    names = [f"c{k}" for k in range(len(cells))]
    values = [f"{n}[0]" if dtype is None else f"{dtype}({n}[0])" for n, dtype in zip(names, scalars, strict=True)]
    source = (
        f"def bind({', '.join(['graph_fn', *names])}):\n"
        f"    def call_graph():\n"
        f"        return graph_fn({', '.join(values)})\n"
        f"    return call_graph\n"
    )
    namespace = dict(NATIVE_SCALARS)
    exec(compile(source, "<llvm_backend graph_caller>", "exec"), namespace)
    return namespace["bind"](graph_fn, *cells)


STAR_ARGS_LIMIT = 1000
"""Stock's ``jit_fn`` of more inputs is its graph function itself (its ``*args`` wrapper would exceed numba's
limit); ours of more inputs is the typed entry itself, without `typed_or_stock`."""


def graph_entry(fgraph, typed):
    """PyTensor's contract for a Numba-linked function's ``vm.jit_fn``: a numba dispatcher taking the values of the
    graph's inputs and returning its outputs, callable from Python and from nopython code (nutpie calls it inside a
    ``numba.cfunc``). It takes one parameter per input, as stock's graph function does (stock hands out a ``*args``
    wrapper of it when numba's cache is on: one call more from Python), so a wrong number of arguments is Python's
    ``TypeError`` from Python and numba's ``TypingError`` from nopython code. It is compiled again for arguments of new
    types: those of the graph's input types run `typed_entry`; any other (a float32 array for a float64 input, a Python
    float for a 0-d one) runs stock's graph function of the same graph, which computes as stock does on them
    (`typed_or_stock`). ``typed`` is the graph's `typed_entry`."""
    if len(fgraph.inputs) > STAR_ARGS_LIMIT:
        return numba_njit(typed.py_func, final_function=True)
    env = {"llvm_graph_call": typed_or_stock(fgraph, typed), "flatten_tuple": flatten_tuple}
    inputs = [f"entry_input_{k}" for k in range(len(fgraph.inputs))]
    source = f"def llvm_graph_entry({', '.join(inputs)}):\n    return llvm_graph_call({tuple_source(inputs)})\n"
    return numba_njit(compile_numba_function_src(source, "llvm_graph_entry", global_env=env), final_function=True)


def typed_entry(graph: GraphSource, n_inputs: int, graph_fn):
    """An ``@njit`` function of the graph's ``n_inputs`` inputs, of its input types, returning its outputs: it
    builds the packs on its stack, passes the constant parameters, and calls the graph function through the
    address of its code (`address_call`), so a caller's module gets none of the graph's IR to optimize and
    compile again. A graph with output lists is run in an entry of its own (which reads the lists back), called
    the same way."""
    env = graph.entry_globals()
    if graph.output_lists:
        env["llvm_graph_lists"] = graph_intrinsic(graph.plan, lists=True)
        source = graph.entry_source(n_inputs, "llvm_graph_fn", name="llvm_graph_lists_entry")
        lists_entry = numba_njit(compile_numba_function_src(source, "llvm_graph_lists_entry", global_env=env))
        inputs = [f"entry_input_{k}" for k in range(n_inputs)]
        source = f"def llvm_graph_entry_typed({', '.join(inputs)}):\n    return llvm_graph_fn({tuple_source(inputs)})\n"
        env = {"llvm_graph_fn": address_call(lists_entry), "flatten_tuple": flatten_tuple}
    else:
        env["llvm_graph_fn"] = address_call(graph_fn)
        source = graph.entry_source(n_inputs, "llvm_graph_fn", name="llvm_graph_entry_typed")
    return numba_njit(compile_numba_function_src(source, "llvm_graph_entry_typed", global_env=env))


def _takes(input_type, numba_type) -> bool:
    """Whether `typed_entry` takes an argument of ``numba_type`` for an input of PyTensor type ``input_type``: a
    tensor's array of its dtype and ndim, in any layout; an input of another type, whatever the thunk passes."""
    if not isinstance(input_type, TensorType):
        return True
    return (
        isinstance(numba_type, types.Array)
        and numba_type.ndim == input_type.ndim
        and numba_type.dtype == from_dtype(input_type.numpy_dtype)
    )


def typed_or_stock(fgraph, typed):
    """The intrinsic ``call(arguments)`` that runs ``typed`` on arguments it takes (`_takes`) and, on any others,
    stock's graph function of ``fgraph`` (made on the first such call), through the address of its code
    (`chosen_address_call`): numba's typing picks one per argument types."""
    return chosen_address_call(_TypedOrStock(fgraph, typed), "llvm_graph_entry_typed")


class _TypedOrStock:
    """The dispatcher `typed_or_stock`'s call runs for a tuple of argument types; the wrong number of arguments
    is a ``TypingError`` naming both counts."""

    def __init__(self, fgraph, typed):
        self.fgraph = fgraph
        self.input_types = [var.type for var in fgraph.inputs]
        self.typed = typed
        self.stock = None

    def __call__(self, arguments):
        if len(arguments) != len(self.input_types):
            raise errors.TypingError(f"jit_fn takes {len(self.input_types)} inputs, got {len(arguments)}")
        if all(map(_takes, self.input_types, arguments)):
            return self.typed
        if self.stock is None:
            self.stock = numba_funcify_and_cache_key(self.fgraph)[0]
        return self.stock

    def __reduce__(self):
        # numba pickles the closure of a cached function calling jit_fn to key its cache (which never keeps such
        # a function: it holds an address of this process); the graph is left out of that key
        return _TypedOrStock, (FunctionGraph([], [], clone=False), self.typed)


class ConvertedGraph(NamedTuple):
    """What `LLVMLinker.fgraph_convert` hands to ``jit_compile``: the graph function's source (`GraphSource`),
    its Python function and its cache key (None when some node is uncacheable)."""

    graph: GraphSource
    py_fn: object
    cache_key: str | None


class LLVMLinker(NumbaLinker):
    """A `NumbaLinker` whose nodes are lowered by ``llvm_backend.dispatch.lower``, from the graph's plan.

    The graph function's parameters (``GraphSource``) are the inputs it takes directly, its array packs (a
    `PackCell` each) and the constants numba could only embed as dynamic globals, which are passed as
    trailing arguments so the function stays cacheable on disk. The thunk it makes carries the graph
    function (``graph_fn``), its `GraphSource` (``graph_source``), the call of it on the current inputs that
    it makes (``call_graph``, `graph_caller`) and the graph's `typed_entry` (``_typed_entry``, what ``jit_fn``
    runs on arguments of the graph's input types), and PyTensor exposes them on ``fn.vm``. The typed entry is
    private: compiled code calls it, and numba compiles it without a CPython wrapper (for a wide graph, a wrapper
    is much of a first call's compile), so a call of it from Python would crash the process.
    """

    required_rewrites = (*NumbaLinker.required_rewrites, REWRITE_TAG)

    def fgraph_convert(self, fgraph, storage_map=None, **kwargs) -> ConvertedGraph:
        # One function per distinct OpFromGraph in the graph and in the inner graphs it compiles, as stock's
        # conversion of a FunctionGraph shares them.
        ofg_memo = {}
        with lowering_composites():
            graph = graph_source(fgraph, storage_map=storage_map, ofg_memo=ofg_memo)
        key = graph_cache_key(graph, (REWRITE_TAG, config.numba__fastmath))
        py_fn = compile_numba_function_src(
            graph.source,
            graph.name,
            global_env=graph.global_env,
            cache_key=key if config.numba__cache else None,
        )
        return ConvertedGraph(graph, py_fn, key)

    def jit_compile(self, converted: ConvertedGraph):
        # PyTensor calls the function through its CPython wrapper only; the C-callable wrapper
        # numba would also build is unused, and for wide signatures it costs as much as the kernel.
        dispatcher = numba_njit(
            converted.py_fn,
            final_function=True,
            no_cfunc_wrapper=True,
            cache=converted.cache_key is not None and config.numba__cache,
        )
        return ListedOutputs(dispatcher, converted.graph) if converted.graph.output_lists else dispatcher

    def graph_arguments(self, graph: GraphSource, storage_map) -> list:
        """The thunk's inputs: the storage cells of the graph function's parameters (those of native scalars
        too), a `PackCell` per array pack, and per scalar pack a cell holding the `ScalarPack` of its inputs'
        cells (the same object at every call: it reads the cells' current values as it is unboxed)."""
        cells = [*self.create_thunk_inputs(storage_map), *([value] for _, value in graph.constant_params)]
        return graph.arguments(cells, pack=_thunk_pack, scalar=lambda _, cell: cell)

    def create_jitable_thunk(self, compute_map, order, input_storage, output_storage, storage_map):
        """Stock's thunk (`JITLinker.create_jitable_thunk`), with the converted graph handed from step to step:
        it calls the graph function with its packs and constant parameters; the ``jit_fn`` handed out is
        `graph_entry`'s, which takes the graph's inputs as stock's does."""
        fgraph = self.fgraph
        output_nodes = [o.owner for o in fgraph.outputs if o.owner is not None][:1]
        converted = self.fgraph_convert(
            fgraph, order=order, input_storage=input_storage, output_storage=output_storage, storage_map=storage_map
        )
        thunk_inputs = self.graph_arguments(converted.graph, storage_map)
        thunk_outputs = [storage_map[var] for var in fgraph.outputs]
        graph_fn = self.jit_compile(converted)
        call_graph = graph_caller(graph_fn, thunk_inputs, converted.graph.parameter_scalars)

        def thunk(call_graph=call_graph, thunk_outputs=thunk_outputs):
            try:
                outputs = call_graph()
            except Exception:
                raise_with_op(fgraph, output_nodes[0], thunk)
            for o_storage, o_val in zip(thunk_outputs, outputs):
                o_storage[0] = o_val

        thunk.inputs = thunk_inputs
        thunk.outputs = thunk_outputs
        thunk.lazy = False
        thunk.graph_fn = graph_fn
        thunk.call_graph = call_graph
        thunk.graph_source = converted.graph
        thunk._typed_entry = typed_entry(converted.graph, len(fgraph.inputs), graph_fn)
        return [thunk], output_nodes, graph_entry(fgraph, thunk._typed_entry)
