"""PyTensor's scalarization treats the graph's 0-d inputs as the scalars the LLVM mode passes them as.

The LLVM mode's graph function takes every 0-d input of a `NATIVE_SCALARS` dtype as a native scalar
(`llvm_backend.codegen`): free to read for scalar math, but a node that takes it as an array gets a 0-d array
made for it at each call. PyTensor's scalarization (``ScalarizeRewriter``, in ``fuse_indexed_into_elemwise``
at position 100) hands a node a native scalar only where one is behind a ``TensorFromScalar``, which a graph
input never is: a `FusedElemwise` reads every scalar parameter of a PyMC model broadcast as an array
(``ExpandDims(beta)`` beside a design matrix's column), a `MakeVector` of scalar inputs takes 0-d arrays.

``expose_scalar_inputs`` runs just before it (position 99.9) and gives every node reading such an input,
other than a ``ScalarFromTensor``, ``TensorFromScalar(ScalarFromTensor(x))`` instead: scalarization then
passes the scalar itself to the fused loops, joins and Elemwise that take scalars, and PyTensor's own
``remove_scalar_tensor_boundaries``, right after it, folds the pair back to ``x`` wherever an array is still
needed. For ``FusedElemwise(X_0, ExpandDims{axis=0}(beta_0))`` with ``beta_0`` a ``dscalar`` input::

    FusedElemwise(X_0, ScalarFromTensor(beta_0))
"""

from pytensor.graph.rewriting.basic import GraphRewriter
from pytensor.tensor.basic import ScalarFromTensor, scalar_from_tensor, tensor_from_scalar

from llvm_backend.codegen import takes_native_scalar
from llvm_backend.rewrites.registry import OPTDB, register_llvm_rewrite

__all__ = ["EXPOSE_SCALARS_NAME", "ExposeScalarInputs", "expose_scalar_inputs"]

EXPOSE_SCALARS_NAME = "llvm_backend_expose_scalar_inputs"
"""The name of `expose_scalar_inputs` in ``optdb``."""


class ExposeScalarInputs(GraphRewriter):
    """Each node reading a 0-d input the graph function takes as a native scalar (`takes_native_scalar`) reads
    ``TensorFromScalar(ScalarFromTensor(x))`` instead; ``ScalarFromTensor`` nodes and the graph's outputs keep
    ``x``. Only in a function's graph (PyTensor's ``FunctionMaker`` gives it an ``update_mapping``): an inner
    graph rewritten with the mode's rewrites too (a Scan's) is run by stock's functions, on arrays."""

    def apply(self, fgraph):
        if fgraph.update_mapping is None:
            return
        for var in fgraph.inputs:
            if not takes_native_scalar(var):
                continue
            readers = [
                (node, i)
                for node, i in fgraph.clients[var]
                if node in fgraph.apply_nodes and not isinstance(node.op, ScalarFromTensor)
            ]
            if not readers:
                continue
            exposed = tensor_from_scalar(scalar_from_tensor(var))
            for node, i in readers:
                fgraph.change_node_input(node, i, exposed, reason="expose_scalar_inputs")


expose_scalar_inputs = register_llvm_rewrite(
    OPTDB,
    position=99.9,
    name=EXPOSE_SCALARS_NAME,
    placement="just before PyTensor's numba fusion and scalarization (100): 0-d inputs reach those as scalars.",
)(ExposeScalarInputs())
