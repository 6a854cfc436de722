"""Differences between the PyTensor lines we support (2.38.x and 3.0.x), in one place."""

from pytensor.scalar import ScalarType

try:  # PyTensor 3.0
    from pytensor.compile.aliasing import Supervisor
except ImportError:  # PyTensor 2.38
    from pytensor.compile.function.types import Supervisor

__all__ = ["Supervisor", "is_scalar_index"]


def is_scalar_index(entry) -> bool:
    """Whether a ``Subtensor.idx_list`` entry is one scalar index (not a slice).

    3.0.x stores the position of the index among the node's inputs (an int); 2.38.x its ``ScalarType``.
    """
    return isinstance(entry, int | ScalarType)
