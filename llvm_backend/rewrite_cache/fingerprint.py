"""What identifies code and settings across processes: packages, classes, functions, rewriters, flags.

Each identity is a string that is equal in two processes exactly when the code it names is; the rewrite cache
keys graphs (`keys`) and rewriters with them.
"""

import hashlib
import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
from pytensor import config
from pytensor.graph.rewriting.basic import Rewriter

__all__ = [
    "OWN_PACKAGES",
    "class_identity",
    "digest",
    "flags",
    "function_identity",
    "package_identity",
    "rewriter_fingerprint",
    "versions",
]

OWN_PACKAGES = ("llvm_backend", "llvm_backend_intrinsics")
"""This project's top-level packages: their identity is the hash of their source."""

FLAG_PREFIXES = (
    "floatX",
    "cast_policy",
    "optimizer",
    "optdb__",
    "tensor__",
    "scan__",
    "numba__",
    "cycle_detection",
    "check_stack_trace",
    "on_opt_error",
    "on_shape_error",
    "compute_test_value",
    "openmp",
)
"""PyTensor flags that steer rewriting (or what our linker makes of the graph); their values are keyed."""


def digest(*parts: bytes) -> str:
    """SHA-256 of ``parts``, each prefixed with its length."""
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


_package_identities: dict[str, str] = {}
_distributions: dict[str, list[str]] | None = None


def _own_source_hash() -> str:
    """The hash of every module of `OWN_PACKAGES`, each named by its package and path within it (the folder of
    an installed package need not bear its name: ``llvm_backend_intrinsics`` is ``intrinsics/``)."""
    named = []
    for package in OWN_PACKAGES:
        folder = Path(importlib.util.find_spec(package).origin).parent
        named += [(f"{package}/{p.relative_to(folder).as_posix()}", p) for p in folder.rglob("*.py")]
    return digest(*(name.encode() + b"\0" + p.read_bytes() for name, p in sorted(named)))


def package_identity(module: str) -> str:
    """What identifies the code of ``module``'s top-level package: its ``__version__``, else its
    distributions' versions (this package: the hash of its source, as an editable install's version does not
    change with it); ``""`` for a module of no installed distribution (a script, a test file)."""
    global _distributions
    top = module.partition(".")[0]
    identity = _package_identities.get(top)
    if identity is None:
        version = getattr(sys.modules.get(top), "__version__", None)
        if top in OWN_PACKAGES:
            identity = _own_source_hash()
        elif top in sys.stdlib_module_names or top == "builtins":
            identity = "python"  # its version is keyed on its own
        elif isinstance(version, str):
            identity = f"{top}=={version}"
        else:
            if _distributions is None:
                _distributions = importlib.metadata.packages_distributions()
            names = _distributions.get(top, [])
            identity = ",".join(f"{name}=={importlib.metadata.version(name)}" for name in sorted(names))
        _package_identities[top] = identity
    return identity


def _const_repr(const) -> str:
    """``repr`` of a code object's constant, a frozenset's items in sorted order (its own order varies
    from process to process with string hashing)."""
    if isinstance(const, types.CodeType):
        return code_hash(const)
    if isinstance(const, frozenset):
        return "frozenset(" + ",".join(sorted(_const_repr(c) for c in const)) + ")"
    if isinstance(const, tuple):
        return "(" + ",".join(_const_repr(c) for c in const) + ")"
    return repr(const)


def code_hash(code: types.CodeType) -> str:
    """A digest of what ``code`` does: its bytecode, names and constants."""
    parts = [code.co_code, repr(code.co_names).encode(), repr(code.co_varnames).encode()]
    parts.extend(_const_repr(const).encode() for const in code.co_consts)
    return digest(*parts)


def function_identity(function) -> str:
    """``function``'s qualified name, its package's identity and its code's hash."""
    function = getattr(function, "__func__", function)
    module = getattr(function, "__module__", None) or ""
    name = f"{module}.{getattr(function, '__qualname__', type(function).__qualname__)}"
    code = getattr(function, "__code__", None)
    return f"{name}@{package_identity(module)}@{code_hash(code) if code is not None else ''}"


_class_identities: dict[type, str] = {}


def class_identity(cls: type) -> str:
    """The class's name and package identity; for a class of no distribution (defined in a script), the
    code of every function in its MRO from such modules too."""
    identity = _class_identities.get(cls)
    if identity is None:
        parts = [f"{cls.__module__}.{cls.__qualname__}@{package_identity(cls.__module__)}"]
        for klass in cls.__mro__:
            if klass is not object and not package_identity(klass.__module__):
                for name, value in sorted(vars(klass).items()):
                    value = getattr(value, "__func__", value)
                    if isinstance(value, types.FunctionType):
                        parts.append(f"{name}:{code_hash(value.__code__)}")
        identity = _class_identities[cls] = ";".join(parts)
    return identity


def versions(layout: int) -> str:
    """The versions of Python and of the packages a rewritten graph depends on, and ``layout``, the
    version of what is stored."""
    import llvmlite
    import numba
    import pytensor

    return repr(
        (
            layout,
            sys.version,
            pytensor.__version__,
            np.__version__,
            numba.__version__,
            llvmlite.__version__,
            package_identity(__name__),
        )
    )


def flags() -> str:
    """The values of the PyTensor flags that steer rewriting."""
    names = sorted(name for name in config._config_var_dict if name.startswith(FLAG_PREFIXES))
    return repr([(name, str(getattr(config, name))) for name in names])


def rewriter_fingerprint(rewriter: Rewriter) -> str:
    """A digest of what ``rewriter`` does: a walk of its rewriters in the order they run, with their
    classes, names, the functions they call (by code) and their scalar settings.

    Only public attributes holding scalars, functions, classes or rewriters (alone or in lists and tuples)
    are walked, and an equilibrium rewriter's node rewriters through ``get_node_rewriters``: dicts and sets
    on rewriters are caches and profiles, which change as rewriters are used, not what they do."""
    seen: dict[int, int] = {}

    def token_of(value) -> list[str] | None:
        if value is None or isinstance(value, bool | int | float | str):
            return [repr(value)]
        if isinstance(value, type):
            return [class_identity(value)]
        if isinstance(value, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
            return [function_identity(value)]
        if isinstance(value, Rewriter):
            return walk(value)
        if isinstance(value, list | tuple):
            items = [token_of(item) for item in value]
            if all(item is not None for item in items):
                return ["(", *(t for item in items for t in item), ")"]
        return None

    def walk(obj: Rewriter) -> list[str]:
        if id(obj) in seen:
            return [f"<{seen[id(obj)]}>"]
        seen[id(obj)] = len(seen)
        out = [class_identity(type(obj)), repr(getattr(obj, "name", None))]
        for attribute, value in sorted(getattr(obj, "__dict__", {}).items()):
            tokens = None if attribute.startswith("_") else token_of(value)
            if tokens is not None:
                out.extend((attribute, *tokens))
        if hasattr(obj, "get_node_rewriters"):
            out.extend(("node rewriters", *token_of(list(obj.get_node_rewriters()))))
        return out

    return digest(*(t.encode() for t in walk(rewriter)))
