"""Our lowerings of PyTensor ops, one module per op family; importing registers them in ``LOWERINGS``."""

from llvm_backend.lowerings import composite, increments, join, loops, reduction, views

__all__ = ["composite", "increments", "join", "loops", "reduction", "views"]
