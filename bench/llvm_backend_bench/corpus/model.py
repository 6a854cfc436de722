"""`CorpusModel`: one model of the corpus, as every family module lists it."""

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CorpusModel"]


@dataclass(frozen=True)
class CorpusModel:
    """One model of the corpus: ``build()`` makes it; ``reference(x, *data())``, when given, computes its
    log-density and gradient by hand."""

    name: str
    family: str
    form: str
    build: Callable
    reference: Callable | None = None
    data: Callable[[], tuple] | None = None

    def __post_init__(self):
        if (self.reference is None) != (self.data is None):
            raise ValueError(f"corpus model {self.name}: a reference needs its data, and data its reference")
