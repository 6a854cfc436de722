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
When one is protected, or with ``cycle_detection=fast`` or another kind of destroy handler, the
stock check runs (and raises its own error).

`use_indexed_supervisor`, the first rewrite of the LLVM mode, puts one in place of the stock Supervisor.
"""

from pytensor.compile.aliasing import Supervisor
from pytensor.configdefaults import config
from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.rewriting.basic import GraphRewriter

__all__ = ["IndexedSupervisor", "UseIndexedSupervisor", "use_indexed_supervisor"]


class IndexedSupervisor(Supervisor):
    """`Supervisor` checking the destroyed variables against the protected ones (see the module)."""

    def __init__(self, protected):
        super().__init__(protected)
        self._protected = frozenset(self.protected)

    def on_validate(self, fgraph):
        handler = getattr(fgraph, "destroy_handler", None)
        if config.cycle_detection != "fast" and type(handler) is DestroyHandler:
            droot, _, _ = handler.refresh_droot_impact()
            if not droot or (self._protected.isdisjoint(droot) and droot.keys().isdisjoint(fgraph.outputs)):
                return True
        return super().on_validate(fgraph)


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


use_indexed_supervisor = UseIndexedSupervisor()
