"""How `llvm_backend` changes another library process-wide: each change a named, documented `Change` that
``apply()`` makes and ``revert()`` undoes exactly, both idempotent.

A change that touches what another library does not promise (a private function it wraps, an attribute it
replaces) names the library's `Seam`: the release series it was written against and a check of the shape of
what it touches (a signature, a registry entry, an attribute's kind). When the installed library is another
series or the shape differs, the change disables itself with one warning naming the library and its version,
and the library is left as it is. This module imports nothing of the package's; the list of changes is
``llvm_backend.process``'s.
"""

import importlib
import importlib.abc
import importlib.metadata
import inspect
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from pytensor.compile.mode import optdb

__all__ = [
    "ABSENT",
    "AttributeChange",
    "Change",
    "DispatchOverride",
    "EntryChange",
    "ImportedAttributeChange",
    "OptdbRegistration",
    "Registration",
    "Seam",
    "takes_parameters",
]


ABSENT = object()
"""What a change replaces where there was nothing."""


@dataclass(frozen=True)
class Seam:
    """What a change touches in ``library`` (a distribution name) that the library does not promise: written
    against its release ``series`` ("3.3": any 3.3.x), and ``shape(target)`` saying what of the target differs
    from what the change expects (None when it matches)."""

    library: str
    series: str
    shape: Callable[[object], str | None]

    def problem(self, target) -> str | None:
        """Why the change cannot be made on ``target``, naming the library and its version; None if it can."""
        version = importlib.metadata.version(self.library)
        if version.split(".")[: self.series.count(".") + 1] != self.series.split("."):
            return f"{self.library} {version} is not {self.series}.x, which llvm_backend was written against"
        shape = self.shape(target)
        return None if shape is None else f"{self.library} {version}: {shape}"


def takes_parameters(function: str, parameters: tuple[str, ...]) -> Callable[[object], str | None]:
    """A `Seam` shape: the current value is a function (named ``function`` in the message) with ``parameters``."""

    def shape(current) -> str | None:
        if current is ABSENT or not callable(current):
            return f"there is no function {function}"
        missing = [name for name in parameters if name not in inspect.signature(current).parameters]
        return f"its {function} has no parameter {', '.join(missing)}" if missing else None

    return shape


class Change:
    """One process-wide change. Subclasses make it in ``_apply`` and undo it in ``_revert``, and say in
    ``_current`` what the change replaces. With a `Seam` (``seam``, checked on what it replaces), a change whose
    library does not have the shape expected is not made: one warning says why, and ``disabled`` holds it."""

    def __init__(self, name: str, doc: str, seam: Seam | None = None):
        self.name = name
        self.__doc__ = doc
        self.seam = seam
        self.applied = False
        self.disabled: str | None = None

    @property
    def checked(self) -> Seam | None:
        """The seam checked before the change is made, if any."""
        return self.seam

    def apply(self) -> bool:
        """Make the change unless it is made already or its seam does not match; whether it was made now."""
        if self.applied or self._refused(self.seam, self._current):
            return False
        self._apply()
        self.applied = True
        return True

    def _current(self):
        """What the change replaces, on which its seam's shape is checked."""
        return None

    def _refused(self, seam: Seam | None, current: Callable) -> bool:
        """Whether ``seam`` does not match ``current()``: then, the first time, one warning."""
        problem = None if seam is None else seam.problem(current())
        if problem is not None and self.disabled is None:
            self.disabled = problem
            warnings.warn(f"llvm_backend: {problem}: {self.name} is not applied", RuntimeWarning, stacklevel=4)
        return problem is not None

    def revert(self) -> bool:
        """Put back what was there before `apply`, if it is applied; whether it was reverted now."""
        if not self.applied:
            return False
        self._revert()
        self.applied = False
        return True

    def _apply(self) -> None:
        raise NotImplementedError

    def _revert(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {'applied' if self.applied else 'not applied'}>"


class OptdbRegistration(Change):
    """``rewriter`` registered in PyTensor's ``optdb`` as ``name`` under ``tags`` at ``position``; reverting
    removes it from every tag's set and drops the sets the registration created."""

    def __init__(self, name: str, doc: str, rewriter, *tags: str, position: float):
        super().__init__(name, doc)
        self.rewriter = rewriter
        self.tags = tags
        self.position = position
        self._created: list[str] = []

    def _keys(self) -> list[str]:
        return [self.name, type(self.rewriter).__name__, *self.tags]

    def _apply(self) -> None:
        self._created = [key for key in self._keys() if key not in optdb.__db__]
        optdb.register(self.name, self.rewriter, *self.tags, position=self.position)

    def _revert(self) -> None:
        for key in self._keys():
            optdb.__db__[key].discard(self.rewriter)
        for key in self._created:
            del optdb.__db__[key]
        optdb._names.discard(self.name)
        del optdb.__position__[self.name]


class AttributeChange(Change):
    """``target.attribute`` set to ``value``; reverting puts back the attribute's own value, or deletes it
    when ``target`` had none of its own (its class's then shows again)."""

    def __init__(self, name: str, doc: str, target, attribute: str, value, seam: Seam | None = None):
        super().__init__(name, doc, seam)
        self.target, self.attribute, self.value = target, attribute, value
        self._previous = ABSENT

    def _current(self):
        return vars(self.target).get(self.attribute, ABSENT)

    def _apply(self) -> None:
        self._previous = vars(self.target).get(self.attribute, ABSENT)
        setattr(self.target, self.attribute, self.value)

    def _revert(self) -> None:
        if self._previous is ABSENT:
            delattr(self.target, self.attribute)
        else:
            setattr(self.target, self.attribute, self._previous)


class EntryChange(Change):
    """``table[key]`` set to ``value`` (a dict of PyTensor's or Python's); reverting puts back the entry that
    was there, or removes the key."""

    def __init__(self, name: str, doc: str, table: dict, key, value, seam: Seam | None = None):
        super().__init__(name, doc, seam)
        self.table, self.key, self.value = table, key, value
        self._previous = ABSENT

    def _current(self):
        return self.table.get(self.key, ABSENT)

    def _apply(self) -> None:
        self._previous = self.table.get(self.key, ABSENT)
        self.table[self.key] = self.value

    def _revert(self) -> None:
        if self._previous is ABSENT:
            del self.table[self.key]
        else:
            self.table[self.key] = self._previous


class Registration(EntryChange):
    """``value`` registered as ``key`` by the library's own ``register(key, value)``, which adds it to ``table``;
    reverting removes the entry (the library has no function for that)."""

    def __init__(self, name: str, doc: str, register: Callable, table: dict, key, value, seam: Seam | None = None):
        super().__init__(name, doc, table, key, value, seam)
        self.register = register

    def _apply(self) -> None:
        self._previous = ABSENT
        self.register(self.key, self.value)


class DispatchOverride(Change):
    """Each ``singledispatch`` function of ``overrides`` given its function for ``cls`` in place of the one
    registered (which must exist: a singledispatch registry cannot drop an entry); reverting registers those
    again."""

    def __init__(
        self, name: str, doc: str, cls: type, overrides: list[tuple[Callable, Callable]], seam: Seam | None = None
    ):
        super().__init__(name, doc, seam)
        self.cls, self.overrides = cls, overrides
        self._previous: list[Callable] = []

    def _current(self):
        """The functions registered for ``cls`` (`ABSENT` where none is)."""
        return [dispatcher.registry.get(self.cls, ABSENT) for dispatcher, _ in self.overrides]

    def _apply(self) -> None:
        self._previous = [dispatcher.registry[self.cls] for dispatcher, _ in self.overrides]
        for dispatcher, function in self.overrides:
            dispatcher.register(self.cls, function)

    def _revert(self) -> None:
        for (dispatcher, _), previous in zip(self.overrides, self._previous, strict=True):
            dispatcher.register(self.cls, previous)


class _LoaderThen(importlib.abc.Loader):
    """A module's own loader, then ``then(module)`` once the module has run; everything else is the loader's."""

    def __init__(self, loader, then: Callable):
        self.loader, self.then = loader, then

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        self.then(module)

    def __getattr__(self, name: str):
        return getattr(self.loader, name)


class _OnImport(importlib.abc.MetaPathFinder):
    """Finds nothing of its own: for one module name, the spec the finders after it find, whose loader then
    calls ``then(module)``."""

    def __init__(self, name: str, then: Callable):
        self.name, self.then = name, then

    def find_spec(self, fullname: str, path, target=None):
        if fullname != self.name or self not in sys.meta_path:
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _LoaderThen(spec.loader, self.then)
                return spec
        return None


class ImportedAttributeChange(Change):
    """``attribute`` of module ``module`` set to ``wrap(original)`` as soon as that module is imported: at once
    if it is already, or else right after it runs, by a finder first on ``sys.meta_path`` (so code importing it
    later sees the change, and the package never imports the module itself). ``wrap`` is a function or its
    ``"module:name"``, imported when the change is made. The seam is checked on the original then, and a
    mismatch leaves the module as it is. Reverting removes the finder and puts the original back."""

    def __init__(self, name: str, doc: str, module: str, attribute: str, wrap, seam: Seam | None = None):
        super().__init__(name, doc)
        self.module, self.attribute, self.wrap, self.module_seam = module, attribute, wrap, seam
        self._finder = _OnImport(module, self._patch)
        self._patched = None

    @property
    def checked(self) -> Seam | None:
        """The seam checked on the module's attribute when the module is imported."""
        return self.module_seam

    def _wrapper(self) -> Callable:
        if callable(self.wrap):
            return self.wrap
        module, _, name = self.wrap.partition(":")
        return getattr(importlib.import_module(module), name)

    def _patch(self, module) -> None:
        original = getattr(module, self.attribute, ABSENT)
        if self._refused(self.module_seam, lambda: original):
            return
        setattr(module, self.attribute, self._wrapper()(original))
        self._patched = (module, original)

    def _apply(self) -> None:
        if self.module in sys.modules:
            self._patch(sys.modules[self.module])
        else:
            sys.meta_path.insert(0, self._finder)

    def _revert(self) -> None:
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        if self._patched is not None:
            module, original = self._patched
            setattr(module, self.attribute, original)
            self._patched = None
