"""What identifies code and settings across processes: packages, classes, functions, values, rewriters, flags.

Each identity is a string that is equal in two processes exactly when the code it names is; the rewrite cache
keys graphs (`keys`) and rewriters with them. Code of an installed, versioned distribution is named by its
version; code of no distribution (a script, a notebook, a test file) and of an editable install changes without a
version, so it is named by what it is: a function by its code, its defaults and closure and the values of the
module globals it reads, a class by its functions; this package by the hash of its source. What cannot be named so
(a global that cannot be pickled, a module without a file) raises `Uncacheable`: the graph is then not cached.
"""

import functools
import importlib.metadata
import importlib.util
import io
import site
import sys
import sysconfig
import threading
import types
from pathlib import Path

import numpy as np
from pytensor import config
from pytensor.graph.basic import Variable
from pytensor.graph.fg import AbstractFunctionGraph
from pytensor.graph.rewriting.basic import Rewriter
from pytensor.misc.frozendict import frozendict

from llvm_backend.rewrite_cache.pickling import UNKEYED_VARIABLE_ATTRIBUTES, GraphPickler, with_state
from llvm_backend.rewrite_cache.structure import Keyer, Uncacheable, digest, structure
from llvm_backend.sources import OWN_PACKAGES, project_source_hash

__all__ = [
    "OWN_PACKAGES",
    "PROBED_FLAGS",
    "UNKEYED_FLAGS",
    "Uncacheable",
    "class_identity",
    "digest",
    "flags",
    "function_identity",
    "inner_graph_identity",
    "package_identity",
    "rewriter_fingerprint",
    "state_identity",
    "value_identity",
    "versions",
]

UNKEYED_FLAGS = (
    "DebugMode__",
    "NanGuardMode__",
    "allow_gc",
    "base_compiledir",
    "check_input",
    "cmodule__",
    "compile__",
    "compiledir",
    "compiledir_format",
    "compiler_verbose",
    "exception_verbosity",
    "linker",
    "mode",
    "nocleanup",
    "on_unused_input",
    "optimizer_verbose",
    "optimizer_verbose_ignore",
    "print_global_stats",
    "profile",
    "profile_memory",
    "profile_optimizer",
    "profiling__",
    "traceback__",
    "unpickle_function",
)
"""The PyTensor flags known not to change a rewritten graph, by name, or by section when ending in ``__``: where
compiled code and reports go, how errors, profiles and tracebacks are shown, what other modes check, and the
default mode and linker (PyTensor sets ``mode`` to the mode compiling; a compile's own mode is keyed by its rewriter
and linker). Every other flag's value is keyed, a flag PyTensor adds included."""


def _unkeyed(flag: str) -> bool:
    return any(flag == name or (name.endswith("__") and flag.startswith(name)) for name in UNKEYED_FLAGS)


_package_identities: dict[str, str] = {}
_distributions: dict[str, list[str]] | None = None


@functools.cache
def _site_folders() -> tuple[Path, ...]:
    """The folders installed distributions live in."""
    paths = sysconfig.get_paths()
    folders = {paths["purelib"], paths["platlib"], *site.getsitepackages()}
    return tuple(Path(folder).resolve() for folder in folders)


def _installed(top: str) -> bool:
    """Whether top-level module ``top`` is a copy installed in site-packages: not a script, a notebook's
    module, a folder on ``sys.path`` or an editable install, whose code changes without a version."""
    module = sys.modules.get(top)
    file = getattr(module, "__file__", None)
    if file is None:
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            return False
        file = spec.origin if spec is not None else None
    return file is not None and any(Path(file).resolve().is_relative_to(folder) for folder in _site_folders())


def package_identity(module: str) -> str:
    """What identifies the code of ``module``'s top-level package: its ``__version__``, else its
    distributions' versions; the hash of its source for this package; ``""`` for code that changes without a
    version (a script, a test file, an editable install: `_installed`), named by its code instead."""
    global _distributions
    top = module.partition(".")[0]
    identity = _package_identities.get(top)
    if identity is None:
        version = getattr(sys.modules.get(top), "__version__", None)
        if top in OWN_PACKAGES:
            identity = f"{top}@source:{project_source_hash()}"
        elif top in sys.stdlib_module_names or top == "builtins":
            identity = "python"  # its version is keyed on its own
        elif not _installed(top):
            identity = ""
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


def _names_read(code: types.CodeType) -> set[str]:
    """The names ``code`` and the code nested in it look up (globals among them)."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


_walking = threading.local()


def _once(obj, identify) -> str:
    """``identify()``, or a placeholder when ``obj`` is being identified already further up (a method whose
    ``super()`` cell holds its class, a function reading itself)."""
    walking = _walking.__dict__.setdefault("ids", set())
    if id(obj) in walking:
        return f"<cycle {getattr(obj, '__qualname__', type(obj).__qualname__)}>"
    walking.add(id(obj))
    try:
        return identify()
    finally:
        walking.discard(id(obj))


def _cell_identity(cell) -> str:
    try:
        return value_identity(cell.cell_contents)
    except ValueError:  # a cell not filled yet
        return "<empty cell>"


def _what_user_code_reads(function: types.FunctionType) -> str:
    """A digest of what a function of no distribution depends on beyond its code: its defaults, its closure's
    values and the values of the module globals it reads."""
    cells = [_cell_identity(cell) for cell in function.__closure__ or ()]
    read = sorted(name for name in _names_read(function.__code__) if name in function.__globals__)
    parts = [
        value_identity(function.__defaults__),
        value_identity(function.__kwdefaults__),
        *cells,
        *(f"{name}={value_identity(function.__globals__[name])}" for name in read),
    ]
    return digest(*(part.encode() for part in parts))


_function_identities: dict = {}


def function_identity(function) -> str:
    """``function``'s qualified name, its package's identity and its code's hash; for a function of no
    distribution, also what it reads (`_what_user_code_reads`), which may change between two calls."""
    function = getattr(function, "__func__", function)
    module = getattr(function, "__module__", None) or ""
    code = getattr(function, "__code__", None)
    cached = _function_identities.get(function)
    if cached is not None and cached[0] is code:
        return cached[1]
    name = f"{module}.{getattr(function, '__qualname__', type(function).__qualname__)}"
    package = package_identity(module)
    identity = f"{name}@{package}@{code_hash(code) if code is not None else ''}"
    if package or code is None:
        _function_identities[function] = (code, identity)
        return identity
    return _once(function, lambda: f"{identity}@{_what_user_code_reads(function)}")


_class_identities: dict[type, str] = {}


def class_identity(cls: type) -> str:
    """The class's name and package identity; for a class of no distribution (defined in a script), the
    identity of every function in its MRO from such modules too, which may change between two calls."""
    identity = _class_identities.get(cls)
    if identity is not None:
        return identity
    name = f"{cls.__module__}.{cls.__qualname__}@{package_identity(cls.__module__)}"
    user_classes = [klass for klass in cls.__mro__ if klass is not object and not package_identity(klass.__module__)]
    if not user_classes:
        _class_identities[cls] = name
        return name

    def of_user_code() -> str:
        parts = [name]
        for klass in user_classes:
            for attribute, value in sorted(vars(klass).items()):
                value = getattr(value, "__func__", value)
                if isinstance(value, types.FunctionType):
                    parts.append(f"{attribute}:{function_identity(value)}")
        return ";".join(parts)

    return _once(cls, of_user_code)


def _module_identity(module: types.ModuleType) -> str:
    """A module's package identity, or for a module of no distribution the hash of its file."""
    package = package_identity(module.__name__)
    if package:
        return f"module {module.__name__}@{package}"
    file = getattr(module, "__file__", None)
    if file is None:
        raise Uncacheable(f"module {module.__name__} has no file to identify it by")
    return f"module {module.__name__}:{digest(Path(file).read_bytes())}"


def value_identity(value) -> str:
    """What identifies ``value`` (a global a function reads, a default, a closure's cell): atoms by ``repr``,
    arrays by their bytes, code by `function_identity` and `class_identity`, containers by their items, and any
    other object by its pickled state (`state_identity`)."""
    if value is None or isinstance(value, bool | int | float | complex | str | bytes):
        return repr(value)
    if isinstance(value, np.ndarray | np.generic) and not value.dtype.hasobject:
        return f"array {value.dtype.str} {np.shape(value)}:{digest(np.ascontiguousarray(value).tobytes())}"
    if isinstance(value, types.ModuleType):
        return _module_identity(value)
    if isinstance(value, type):
        return class_identity(value)
    if isinstance(value, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
        bound = getattr(value, "__self__", None)
        owner = "" if bound is None or isinstance(bound, types.ModuleType) else f" of {value_identity(bound)}"
        return function_identity(value) + owner
    if isinstance(value, functools.partial):
        return f"partial({value_identity(value.func)},{value_identity(value.args)},{value_identity(value.keywords)})"
    if type(value) in (list, tuple):
        return f"{type(value).__name__}({','.join(map(value_identity, value))})"
    if type(value) in (set, frozenset):
        return f"{type(value).__name__}({','.join(sorted(map(value_identity, value)))})"
    if type(value) is dict:
        items = sorted(f"{value_identity(k)}:{value_identity(v)}" for k, v in value.items())
        return f"dict({','.join(items)})"
    return _once(value, lambda: state_identity(value))


class _StatePickler(GraphPickler):
    """Pickles what an object is, not what it cached nor which objects it shares: a `frozendict` (an Elemwise's
    ``inplace_pattern``) as its items, without the hash it stores once it has been hashed; an `OpFromGraph`
    without its caches (`GraphPickler`); a graph an op holds as its `inner_graph_identity`; a graph variable
    without its `UNKEYED_VARIABLE_ATTRIBUTES` (its ``auto_name``, a count of the variables made before it in the
    process, its ``tag``, and caches such as a constant's unique value); and, without pickle's memo (``fast``),
    an object met twice written twice, so an op made by PyTensor (whose name is the very string its ``__dict__``
    uses as a key) and the same op unpickled from the cache have one state. An object holding itself cannot be
    pickled so (``ValueError``), and is `Uncacheable`.

    Pickle names classes and functions by module and name, and an object's ``__reduce__`` may name nothing else
    (``as_op``'s ``FromFunctionOp`` pickles as the module and name of its function): ``code`` collects the
    identity of every class and function met, and of the functions held among the attributes of an object met
    whose class reduces it its own way."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.code: set[str] = set()

    def reducer_override(self, obj):
        if type(obj) is frozendict:
            return frozendict, (dict(obj),)
        if (reduced := super().reducer_override(obj)) is not NotImplemented:
            return reduced
        if isinstance(obj, AbstractFunctionGraph):
            return str, (inner_graph_identity(obj),)
        if isinstance(obj, Variable):
            # a graph variable held by an op (an inner graph's), without what says nothing of what it is
            reduced = obj.__reduce_ex__(self.protocol)
            if len(reduced) > 2 and isinstance(reduced[2], dict) and UNKEYED_VARIABLE_ATTRIBUTES & reduced[2].keys():
                return with_state(
                    reduced, {k: v for k, v in reduced[2].items() if k not in UNKEYED_VARIABLE_ATTRIBUTES}
                )
        if isinstance(obj, type):
            self.code.add(class_identity(obj))
        elif isinstance(obj, types.FunctionType | types.BuiltinFunctionType | types.MethodType | functools.partial):
            self.code.add(value_identity(obj))
        elif type(obj).__reduce__ is not object.__reduce__ and type(getattr(obj, "__dict__", None)) is dict:
            # A reduction of its own may leave out what the object runs; pickle saves any other object's state.
            for value in vars(obj).values():
                if isinstance(value, types.FunctionType | types.MethodType | functools.partial):
                    self.code.add(value_identity(value))
        return NotImplemented


def state_identity(obj) -> str:
    """What identifies ``obj`` by its state: its class's identity, the digest of its pickle (`_StatePickler`)
    and the identities of the code it names; `Uncacheable` when it cannot be pickled."""
    buffer = io.BytesIO()
    pickler = _StatePickler(buffer, protocol=4)
    pickler.fast = True
    try:
        pickler.dump(obj)
    except Uncacheable:
        raise
    except Exception as error:
        raise Uncacheable(f"{obj!r} cannot be pickled: {error}") from error
    return f"{class_identity(type(obj))}:{digest(buffer.getvalue(), *(c.encode() for c in sorted(pickler.code)))}"


def inner_graph_identity(fgraph) -> str:
    """What identifies a graph an op holds (an `OpFromGraph`'s, a `Scan`'s): its class, its `structure` (each op
    and type by `state_identity`, so an inner graph's inner graphs by theirs), its features' classes and its
    update mapping. Written once per node, it grows linearly with the graph."""
    features = sorted(class_identity(type(feature)) for feature in getattr(fgraph, "_features", ()))
    updates = sorted((getattr(fgraph, "update_mapping", None) or {}).items())
    parts = [repr(features), repr(updates), *structure(fgraph.inputs, fgraph.outputs, Keyer(state_identity))]
    return f"{class_identity(type(fgraph))}:{digest(*(part.encode() for part in parts))}"


def versions(layout: int) -> str:
    """The versions of Python and of the packages a rewritten graph depends on, and ``layout``, the
    version of what is stored."""
    packages = ("pytensor", "numpy", "numba", "llvmlite", __name__)
    return repr((layout, sys.version, *map(package_identity, packages)))


PROBED_FLAGS = ("blas__ldflags", "gcc_version_str")
"""Flags whose default PyTensor computes by probing the machine, read only by rewrites of C code, which the LLVM
linker excludes: keyed by the value the user set, else as the machine's default, whether or not the process has
computed it yet, so two processes on one machine key alike and the cache probes nothing itself."""


def _flag_value(name: str) -> str:
    """The flag's value, or for one of `PROBED_FLAGS` the value the user set or that it is the default."""
    if name in PROBED_FLAGS:
        try:
            return config.fetch_val_for_key(name)
        except KeyError:
            return "<the machine's default>"
    return str(getattr(config, name))


def flags() -> str:
    """The values of every PyTensor flag but those `UNKEYED_FLAGS` names."""
    names = sorted(name for name in config._config_var_dict if not _unkeyed(name))
    return repr([(name, _flag_value(name)) for name in names])


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
