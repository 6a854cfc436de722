"""A `Supervisor` whose check costs what is destroyed, not what is protected.

PyTensor keeps in-place rewrites off a compiled function's inputs and outputs with a `Supervisor` feature.
Its check, run at every validation (one per accepted rewrite), asks the `DestroyHandler`, for each
protected input and each output, whether something destroys it: O(inputs + outputs) per rewrite, so
quadratic in the width of a graph whose rewrites grow with its width (a graph of 240 inputs and 240 outputs
runs hundreds of validations), under the C backend as under ours.

`IndexedSupervisor` reaches the same verdict from the other side. A variable is destroyed exactly when it
is a key of the DestroyHandler's ``droot`` (each destroyed root and every view of it), so it looks those
keys up among the protected inputs and the outputs with set operations: no work when nothing is destroyed,
else C loops over the destroyed variables and the outputs, instead of a Python call per protected variable.
When one is protected, or with ``cycle_detection=fast`` or another kind of destroy handler than the stock one and
`DeferredCycleChecks` (which keeps its account), the stock check runs (and raises its own error).

It also keeps PyTensor's in-place rewrites off the 0-d tensors nodes compute (``zero_d``, which it lists among
its ``protected`` variables, where those rewrites look for what they must not write into): in the LLVM mode
they are values PyTensor's scalarization turns into scalar code, in place on nothing. Stock's in-place rewrite of
Elemwise tries each output of a node on each of its inputs, one graph validation per try: outputs times inputs
validations on a PyMC model's gradient, whose one Elemwise over 0-d tensors can have over a hundred outputs, for
a graph that ends the same. A node may still destroy a 0-d tensor: validation checks
the stock Supervisor's variables only (`IndexedSupervisor.stock_check`).

`use_indexed_supervisor`, the first rewrite of the LLVM mode, puts one in place of the stock Supervisor.
"""

from pytensor.compile.aliasing import Supervisor
from pytensor.configdefaults import config
from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.rewriting.basic import GraphRewriter
from pytensor.tensor.type import TensorType

from llvm_backend.rewrites.registry import OPTDB, register_llvm_rewrite
from llvm_backend.rewrites.validate_once import DeferredCycleChecks

__all__ = ["SUPERVISOR_NAME", "IndexedSupervisor", "UseIndexedSupervisor", "use_indexed_supervisor"]

SUPERVISOR_NAME = "llvm_backend_indexed_supervisor"
"""The name of `use_indexed_supervisor` in ``optdb``."""


def _computed_0d(var) -> bool:
    return var.owner is not None and isinstance(var.type, TensorType) and var.type.ndim == 0


class IndexedSupervisor(Supervisor):
    """`Supervisor` checking the destroyed variables against the protected ones (see the module), which also
    protects every 0-d tensor a node computes (``zero_d``, kept up to date as nodes come and go)."""

    def __init__(self, protected):
        super().__init__(protected)
        self._protected = frozenset(self._given)
        self.zero_d: set = set()

    @property
    def protected(self) -> list:
        """The variables given, then the computed 0-d tensors: what PyTensor's in-place rewrites leave alone."""
        return [*self._given, *self.zero_d]

    @protected.setter
    def protected(self, variables) -> None:
        self._given = list(variables)
        self._stock = Supervisor(self._given)

    def clone(self):
        return type(self)(self._given)

    def on_attach(self, fgraph):
        super().on_attach(fgraph)
        self.zero_d = {var for var in fgraph.variables if _computed_0d(var)}

    def on_import(self, fgraph, node, reason):
        self.zero_d.update(var for var in node.outputs if _computed_0d(var))

    def on_prune(self, fgraph, node, reason):
        self.zero_d.difference_update(node.outputs)

    def on_validate(self, fgraph):
        handler = getattr(fgraph, "destroy_handler", None)
        if config.cycle_detection != "fast" and type(handler) in (DestroyHandler, DeferredCycleChecks):
            droot, _, _ = handler.refresh_droot_impact()
            if not droot or (self._protected.isdisjoint(droot) and droot.keys().isdisjoint(fgraph.outputs)):
                return True
        return self.stock_check(fgraph)

    def stock_check(self, fgraph):
        """The stock `Supervisor`'s check of the variables given and the outputs (not of ``zero_d``)."""
        return self._stock.on_validate(fgraph)


class UseIndexedSupervisor(GraphRewriter):
    """Replace a graph's stock `Supervisor` by an `IndexedSupervisor` protecting the same variables."""

    def add_requirements(self, fgraph):
        """Nothing: a graph without a Supervisor keeps none."""

    def apply(self, fgraph):
        stock = getattr(fgraph, "_supervisor", None)
        if type(stock) is not Supervisor:
            return
        fgraph.remove_feature(stock)
        del fgraph._supervisor
        fgraph.attach_feature(IndexedSupervisor(stock.protected))


use_indexed_supervisor = register_llvm_rewrite(
    OPTDB,
    position=-0.5,
    name=SUPERVISOR_NAME,
    placement="before every rewrite that validates: the LLVM mode's graphs get an `IndexedSupervisor`.",
)(UseIndexedSupervisor())
