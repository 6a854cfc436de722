"""The LLVM linker: PyTensor's Numba linker, with every node lowered through our dispatch and the graph
function written by ``llvm_backend.codegen`` so that its IR grows linearly with the graph's width."""

from pytensor import config
from pytensor.link.numba.cache import compile_numba_function_src
from pytensor.link.numba.dispatch.basic import numba_njit
from pytensor.link.numba.linker import NumbaLinker

from llvm_backend.codegen import graph_cache_key, graph_source
from llvm_backend.dispatch import CODEGEN_VERSION, llvm_funcify_and_cache_key

__all__ = ["REWRITE_TAG", "LLVMLinker"]

REWRITE_TAG = "llvm_backend"
"""The tag of our rewrites in PyTensor's ``optdb``; only the LLVM mode requests it."""


class LLVMLinker(NumbaLinker):
    """A `NumbaLinker` whose nodes are lowered by ``llvm_funcify_and_cache_key``.

    Constants that numba could only embed as dynamic globals are passed to the graph function as
    trailing arguments (``constant_params``), so the function stays cacheable on disk.
    """

    required_rewrites = (*NumbaLinker.required_rewrites, REWRITE_TAG)
    constant_params: list = []

    def fgraph_convert(self, fgraph, storage_map=None, **kwargs):
        def convert_node(node):
            return llvm_funcify_and_cache_key(node.op, node=node, storage_map=storage_map)

        graph = graph_source(fgraph, convert_node)
        key = graph_cache_key(graph, (REWRITE_TAG, CODEGEN_VERSION, config.numba__fastmath))
        self.constant_params = graph.constant_params
        py_fn = compile_numba_function_src(
            graph.source,
            graph.name,
            global_env=graph.global_env,
            cache_key=key if config.numba__cache else None,
        )
        return py_fn, key

    def jit_compile(self, fn_and_key):
        py_fn, key = fn_and_key
        # PyTensor calls the function through its CPython wrapper only; the C-callable wrapper
        # numba would also build is unused, and for wide signatures it costs as much as the kernel.
        return numba_njit(
            py_fn,
            final_function=True,
            no_cfunc_wrapper=True,
            cache=key is not None and config.numba__cache,
        )

    def create_thunk_inputs(self, storage_map):
        return super().create_thunk_inputs(storage_map) + [[v] for _, v in self.constant_params]
