"""A disk cache of rewritten graphs for the LLVM mode.

PyTensor rewrites a graph anew in every process: seconds for a model of a few thousand nodes (a 65-parameter
regression's logp and gradient: ~4.5 s here), paid again by every session that compiles the same model even
when every compiled function then comes from numba's cache. `CachedRewriter` wraps the rewriter a mode's
query resolves to: it keys the graph it is given (`graph_key`) and, when an earlier process stored the
rewritten graph under that key, puts that graph in place instead of rewriting.

The key covers what the rewritten graph depends on: every node's op and every variable's type (their
pickled state, and their classes' package versions, or code when no distribution provides them), the
graph's structure, names and constants' values, which inputs the function protects from in-place rewrites
and its updates; the rewriters the query resolved to (their order, names, settings and the code of their
functions); the PyTensor flags that steer rewriting; and the versions of Python, PyTensor, numpy, numba,
llvmlite and of this package (the hash of its source: an editable install's version does not change with
it). A graph holding something that cannot be keyed (an op that cannot be pickled) is rewritten as usual
and not stored. An op whose pickled state holds a set of strings keys differently from process to process
(string hashing varies), which costs a miss, never a wrong hit.

What is stored is the rewritten graph itself, pickled; an entry that cannot be put in place is removed and
the graph rewritten. Entries live in PyTensor's ``compiledir``
(``llvm_backend_rewrites``), at most `MAX_ENTRIES` of them and `MAX_BYTES` in all, the least recently used
removed first.
``LLVM_BACKEND_REWRITE_CACHE=0`` in the environment turns the cache off; ``llvm-backend cache clear``
empties it.

It serves every compile whose rewrites include the LLVM linker's, whatever `Mode` object carries the linker
("LLVM", modes derived from it, PyMC's ``compile``, which rebuilds a plain ``Mode`` from the mode's linker and
query, ``Mode(linker="llvm")``): importing the package makes `cached_sequence` PyTensor's ``optdb``'s
``seq_rewriter_type``, which wraps such a query's rewriters in a `CachedRewriter` and leaves every other
query's as PyTensor builds them. The key includes the linker of the mode compiling the graph.
"""

import hashlib
import importlib.metadata
import io
import logging
import os
import pickle
import sys
import tempfile
import types
from collections import Counter
from pathlib import Path

import numpy as np
from pytensor import config
from pytensor.graph.basic import Constant
from pytensor.graph.destroyhandler import DestroyHandler
from pytensor.graph.fg import Output
from pytensor.graph.rewriting.basic import GraphRewriter, Rewriter, SequentialGraphRewriter
from pytensor.misc.frozendict import frozendict

from llvm_backend.supervisor import use_indexed_supervisor

__all__ = [
    "DEFAULT",
    "MAX_BYTES",
    "MAX_ENTRIES",
    "CachedRewriter",
    "RewriteCache",
    "Uncacheable",
    "cached_sequence",
    "graph_key",
    "outcomes",
    "rewriter_fingerprint",
]

_logger = logging.getLogger(__name__)

FORMAT = 1
"""The layout of a key and an entry; changing either changes this."""

MAX_ENTRIES = 4096
MAX_BYTES = 2**30
"""The cache's bounds: past either, the least recently used entries go."""

_FLAG_PREFIXES = (
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

_OWN_PACKAGES = ("llvm_backend", "intrinsics")


class Uncacheable(Exception):
    """The graph (or the rewriter) holds something the key cannot describe."""


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.hexdigest()


_package_identities: dict[str, str] = {}
_distributions: dict[str, list[str]] | None = None


def _own_source_hash() -> str:
    root = Path(__file__).resolve().parent.parent
    files = sorted(p for package in _OWN_PACKAGES for p in (root / package).rglob("*.py"))
    return _digest(*(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() for p in files))


def _package_identity(module: str) -> str:
    """What identifies the code of ``module``'s top-level package: its ``__version__``, else its
    distributions' versions (this package: the hash of its source, as an editable install's version does not
    change with it); ``""`` for a module of no installed distribution (a script, a test file)."""
    global _distributions
    top = module.partition(".")[0]
    identity = _package_identities.get(top)
    if identity is None:
        version = getattr(sys.modules.get(top), "__version__", None)
        if top in _OWN_PACKAGES:
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
        return _code_hash(const)
    if isinstance(const, frozenset):
        return "frozenset(" + ",".join(sorted(_const_repr(c) for c in const)) + ")"
    if isinstance(const, tuple):
        return "(" + ",".join(_const_repr(c) for c in const) + ")"
    return repr(const)


def _code_hash(code: types.CodeType) -> str:
    parts = [code.co_code, repr(code.co_names).encode(), repr(code.co_varnames).encode()]
    parts.extend(_const_repr(const).encode() for const in code.co_consts)
    return _digest(*parts)


def _function_identity(function) -> str:
    function = getattr(function, "__func__", function)
    module = getattr(function, "__module__", None) or ""
    name = f"{module}.{getattr(function, '__qualname__', type(function).__qualname__)}"
    code = getattr(function, "__code__", None)
    return f"{name}@{_package_identity(module)}@{_code_hash(code) if code is not None else ''}"


_class_identities: dict[type, str] = {}


def _class_identity(cls: type) -> str:
    """The class's name and package identity; for a class of no distribution (defined in a script), the
    code of every function in its MRO from such modules too."""
    identity = _class_identities.get(cls)
    if identity is None:
        parts = [f"{cls.__module__}.{cls.__qualname__}@{_package_identity(cls.__module__)}"]
        for klass in cls.__mro__:
            if klass is not object and not _package_identity(klass.__module__):
                for name, value in sorted(vars(klass).items()):
                    value = getattr(value, "__func__", value)
                    if isinstance(value, types.FunctionType):
                        parts.append(f"{name}:{_code_hash(value.__code__)}")
        identity = _class_identities[cls] = ";".join(parts)
    return identity


def _versions() -> str:
    import llvmlite
    import numba
    import pytensor

    return repr(
        (
            FORMAT,
            sys.version,
            pytensor.__version__,
            np.__version__,
            numba.__version__,
            llvmlite.__version__,
            _package_identity(__name__),
        )
    )


def _flags() -> str:
    names = sorted(name for name in config._config_var_dict if name.startswith(_FLAG_PREFIXES))
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
            return [_class_identity(value)]
        if isinstance(value, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
            return [_function_identity(value)]
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
        out = [_class_identity(type(obj)), repr(getattr(obj, "name", None))]
        for attribute, value in sorted(getattr(obj, "__dict__", {}).items()):
            tokens = None if attribute.startswith("_") else token_of(value)
            if tokens is not None:
                out.extend((attribute, *tokens))
        if hasattr(obj, "get_node_rewriters"):
            out.extend(("node rewriters", *token_of(list(obj.get_node_rewriters()))))
        return out

    return _digest(*(t.encode() for t in walk(rewriter)))


def _input_protection(fgraph) -> list:
    """Per input: whether a feature protects it from in-place rewrites; then the features' classes."""
    protected = set()
    for feature in fgraph._features:
        protected.update(getattr(feature, "protected", ()))
    features = sorted(_class_identity(type(f)) for f in fgraph._features)
    return [[i in protected for i in fgraph.inputs], features]


def _toposort(inputs, outputs) -> list:
    """The nodes between ``inputs`` and ``outputs``, each after its inputs' nodes, in an order that
    depends only on the graph's structure (a depth-first walk from the outputs)."""
    order, done, known = [], set(), set(inputs)
    for output in outputs:
        stack = [(output, False)]
        while stack:
            var, expanded = stack.pop()
            node = var.owner
            if node is None or var in known or node in done:
                continue
            if expanded:
                done.add(node)
                order.append(node)
                continue
            stack.append((var, True))
            stack.extend((v, False) for v in reversed(node.inputs) if v.owner is not None and v.owner not in done)
    return order


class _StatePickler(pickle.Pickler):
    """Pickles what an object is, not what it cached: a `frozendict` (an Elemwise's ``inplace_pattern``)
    as its items, without the hash it stores once it has been hashed."""

    def reducer_override(self, obj):
        if type(obj) is frozendict:
            return frozendict, (dict(obj),)
        return NotImplemented


def _state_bytes(obj) -> bytes:
    buffer = io.BytesIO()
    _StatePickler(buffer, protocol=4).dump(obj)
    return buffer.getvalue()


class _Keyer:
    def __init__(self):
        self.pickled: dict[int, str] = {}
        self.keep: list = []

    def state(self, obj) -> str:
        key = self.pickled.get(id(obj))
        if key is None:
            try:
                blob = _state_bytes(obj)
            except Exception as error:
                raise Uncacheable(f"{obj!r} cannot be pickled: {error}") from error
            key = self.pickled[id(obj)] = _class_identity(type(obj)) + ":" + _digest(blob)
            self.keep.append(obj)
        return key

    def constant(self, var: Constant) -> str:
        data = var.data
        if isinstance(data, np.ndarray):
            if data.dtype.hasobject:
                raise Uncacheable(f"constant {var} holds Python objects")
            value = repr((data.dtype.str, data.shape)) + ":" + _digest(np.ascontiguousarray(data).tobytes())
        else:
            value = self.state(data)
        return f"c({self.state(var.type)},{value},{var.name!r})"


def graph_key(fgraph, fingerprint: str) -> str:
    """The key of ``fgraph``'s rewritten form under the rewriter of ``fingerprint``; `Uncacheable` when the
    graph holds something that cannot be keyed."""
    keyer = _Keyer()
    refs = {var: f"i{k}" for k, var in enumerate(fgraph.inputs)}
    parts = [
        _versions(),
        _flags(),
        fingerprint,
        repr(_input_protection(fgraph)),
        repr(sorted((getattr(fgraph, "update_mapping", None) or {}).items())),
        repr([(keyer.state(var.type), var.name) for var in fgraph.inputs]),
    ]

    def ref(var) -> str:
        if var not in refs:
            if not isinstance(var, Constant):
                raise Uncacheable(f"{var} is neither an input, a constant nor computed")
            refs[var] = keyer.constant(var)
        return refs[var]

    for n, node in enumerate(_toposort(fgraph.inputs, fgraph.outputs)):
        entry = [keyer.state(node.op), *map(ref, node.inputs)]
        for k, out in enumerate(node.outputs):
            refs[out] = f"n{n}.{k}"
            entry.append(f"{keyer.state(out.type)}:{out.name!r}")
        parts.append(" ".join(entry))
    parts.append(" ".join(map(ref, fgraph.outputs)))
    return _digest(*(p.encode() for p in parts))


def _output_nodes(fgraph) -> dict:
    nodes = {}
    for var in fgraph.outputs:
        for node, _ in fgraph.clients[var]:
            if isinstance(node.op, Output):
                nodes[node.op.idx] = node
    return nodes


def _set_outputs(fgraph, outputs, reason: str) -> None:
    nodes = _output_nodes(fgraph)
    for idx, var in enumerate(outputs):
        fgraph.change_node_input(nodes[idx], 0, var, reason=reason)


def _install(fgraph, entry) -> None:
    """Put the stored graph ``entry`` (its own inputs, its outputs, whether rewriting attached a
    `DestroyHandler`) in place of ``fgraph``'s, on ``fgraph``'s inputs, attaching a `DestroyHandler` anew
    if so: what follows rewriting asks it which inputs are destroyed, and orders each in-place node after
    the other readers of what it destroys. When that fails, ``fgraph``'s outputs are put back."""
    inputs, outputs, destroy_handler = entry
    if len(inputs) != len(fgraph.inputs) or len(outputs) != len(fgraph.outputs):
        raise ValueError("the stored graph has other inputs or outputs")
    to_fgraph = dict(zip(inputs, fgraph.inputs, strict=True))
    for stored, var in to_fgraph.items():
        if stored.type != var.type:
            raise ValueError(f"stored input {stored} is {stored.type}, not {var.type}")
    for node in _toposort(inputs, outputs):
        node.inputs = [to_fgraph.get(var, var) for var in node.inputs]
    outputs = [to_fgraph.get(var, var) for var in outputs]
    before = list(fgraph.outputs)
    attached = DestroyHandler() if destroy_handler and not hasattr(fgraph, "destroy_handler") else None
    try:
        _set_outputs(fgraph, outputs, "llvm_backend rewrite cache")
        if attached is not None:
            fgraph.attach_feature(attached)
        if hasattr(fgraph, "validate"):
            fgraph.validate()
    except Exception:
        # A DestroyHandler attached stays: it follows the undo, and rewriting attaches one anyway when
        # in-place rewrites run.
        _set_outputs(fgraph, before, "llvm_backend rewrite cache: undo")
        raise


class RewriteCache:
    """Rewritten graphs on disk, one file per key, in ``directory`` (by default PyTensor's compiledir's
    ``llvm_backend_rewrites``)."""

    def __init__(
        self,
        directory: str | os.PathLike | None = None,
        max_entries: int = MAX_ENTRIES,
        max_bytes: int = MAX_BYTES,
    ):
        self._directory = None if directory is None else Path(directory)
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    @property
    def directory(self) -> Path:
        return self._directory or Path(config.compiledir) / "llvm_backend_rewrites"

    def _path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def entries(self) -> list[Path]:
        return sorted(self.directory.glob("*.pkl")) if self.directory.is_dir() else []

    def load(self, key: str):
        """The stored (inputs, outputs) of ``key``, or None. An entry that cannot be read is removed."""
        path = self._path(key)
        try:
            with path.open("rb") as f:
                entry = pickle.load(f)
        except FileNotFoundError:
            return None
        except Exception as error:
            _logger.warning("llvm_backend: removing unreadable rewrite cache entry %s: %s", path, error)
            path.unlink(missing_ok=True)
            return None
        os.utime(path)
        return entry

    def store(self, key: str, fgraph) -> None:
        """Write ``fgraph``'s inputs and outputs, and whether it has a `DestroyHandler`, under ``key``
        (atomically)."""
        entry = (list(fgraph.inputs), list(fgraph.outputs), hasattr(fgraph, "destroy_handler"))
        blob = pickle.dumps(entry, protocol=4)
        if len(blob) > self.max_bytes:
            raise ValueError(f"the rewritten graph takes {len(blob)} bytes, over the cache's {self.max_bytes}")
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
            Path(tmp).replace(self._path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self._evict()

    def remove(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def _evict(self) -> None:
        sized = []
        for path in self.entries():
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            sized.append((stat.st_mtime, stat.st_size, path))
        sized.sort()
        count, total = len(sized), sum(size for _, size, _ in sized)
        for _, size, path in sized:
            if count <= self.max_entries and total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            count, total = count - 1, total - size

    def clear(self) -> int:
        """Remove every entry; returns how many."""
        entries = self.entries()
        for path in entries:
            path.unlink(missing_ok=True)
        return len(entries)


outcomes: Counter = Counter()
"""How many graphs this process's `CachedRewriter`s found in their cache ("hit"), rewrote and stored
("stored"), rewrote without storing ("not stored": the rewritten graph could not be pickled or put back) or
could not key ("uncacheable")."""

DEFAULT = RewriteCache()
"""The cache the LLVM mode uses."""


def enabled() -> bool:
    return os.environ.get("LLVM_BACKEND_REWRITE_CACHE", "1").strip().lower() not in ("0", "false", "off", "no")


def cached_sequence(rewriters, **kwargs) -> GraphRewriter:
    """``optdb``'s ``seq_rewriter_type``: the `SequentialGraphRewriter` a query of PyTensor's ``optdb`` resolves
    to, wrapped in a `CachedRewriter` when the query includes the LLVM linker's rewrites (its rewriters hold
    `use_indexed_supervisor`, registered under our tag alone) and the cache is `enabled`. Every other query
    gets PyTensor's own sequence, unchanged."""
    sequence = SequentialGraphRewriter(rewriters, **kwargs)
    if use_indexed_supervisor in rewriters and enabled():
        return CachedRewriter(sequence, DEFAULT)
    return sequence


class CachedRewriter(GraphRewriter):
    """``rewriter``, skipped when ``cache`` holds the rewritten graph; what it returns is a
    ``(outcome, profile)`` pair, outcome one of "hit", "stored", "uncacheable", "not stored"."""

    def __init__(self, rewriter: GraphRewriter, cache: RewriteCache):
        self.rewriter = rewriter
        self.cache = cache
        self.name = getattr(rewriter, "name", None)
        self.supervises = use_indexed_supervisor in getattr(rewriter, "data", ())

    def add_requirements(self, fgraph):
        """Nothing: the wrapped rewriter adds its own when it runs."""

    def apply(self, fgraph):
        outcome, profile = self._apply(fgraph)
        outcomes[outcome] += 1
        return outcome, profile

    def key(self, fgraph) -> str:
        """``fgraph``'s key under this rewriter and the linker of the mode compiling it, which PyTensor stamps
        on the graph while its rewriters run (inner graphs, Scan's and OpFromGraph's, are rewritten for it)."""
        mode = getattr(fgraph, "_compile_mode", None)
        linker = "no mode" if mode is None else _class_identity(type(mode.linker))
        return graph_key(fgraph, _digest(rewriter_fingerprint(self.rewriter).encode(), linker.encode()))

    def _apply(self, fgraph):
        if self.supervises:
            # The query's own first rewrite, run here so that a hit ends with the features a miss does.
            use_indexed_supervisor.apply(fgraph)
        try:
            key = self.key(fgraph)
        except Uncacheable as reason:
            _logger.debug("llvm_backend: graph not cached: %s", reason)
            return "uncacheable", self.rewriter.rewrite(fgraph)
        entry = self.cache.load(key)
        if entry is not None:
            try:
                _install(fgraph, entry)
                return "hit", None
            except Exception as error:
                _logger.warning("llvm_backend: rewrite cache entry %s not used: %s", key, error)
                self.cache.remove(key)
        profile = self.rewriter.rewrite(fgraph)
        try:
            self.cache.store(key, fgraph)
        except Exception as error:
            _logger.debug("llvm_backend: rewritten graph not stored: %s", error)
            self.cache.remove(key)
            return "not stored", profile
        return "stored", profile

    def print_summary(self, stream=sys.stdout, level=0, depth=-1):
        print(f"{' ' * level}{type(self).__name__} id={id(self)}", file=stream)
        self.rewriter.print_summary(stream, level + 2, depth)

    def print_profile(self, stream, prof, level=0):
        outcome, profile = prof
        print(f"{' ' * level}llvm_backend rewrite cache: {outcome}", file=stream)
        if profile is not None:
            self.rewriter.print_profile(stream, profile, level + 2)
