"""Every process-wide change `llvm_backend` makes to PyTensor, numba or Python, in one list.

`CHANGES` is what ``import llvm_backend`` does, applied in that order by `register` (which the import calls);
`NUMBA_IS_LLVM` is what ``llvm_backend.nutpie.numba_is_llvm()`` does while it is open, and
`COMPILE_PYMC_MODEL_CHANGES` what ``llvm_backend.nutpie.compile_pymc_model`` does while it runs. Each is a `Change`
named here, whose docstring says what it changes, why, and who sees it. ``apply()`` makes it and ``revert()`` puts
back exactly what was there before; both are idempotent (each says whether it did anything), so importing twice or
calling `register` again changes nothing more, and `revert_all` undoes the import's changes in the reverse order.

One more is made only while the LLVM mode compiles, and put back when the last compile ends, so it is no
`Change`: Python's garbage collection thresholds (``llvm_backend.collector.paced_collections``).

Left out, because nothing else sees them and numba cannot take them back: the numba types, data models and
``typeof`` entries of ``intrinsics/``, keyed by classes of our own (``ArrayPack``, ``ScalarPack``, ...), and the
compiled code numba keeps. Everything else the package does is confined to its own objects and to the modes
using its linker.
"""

import importlib.abc
import sys
from collections.abc import Callable

import llvmlite.binding as llvm
import pytensor.compile.mode
from pytensor.compile.mode import Mode, optdb, predefined_linkers, predefined_modes
from pytensor.link.numba.dispatch.basic import numba_funcify, numba_funcify_and_cache_key
from pytensor.scalar.basic import Composite

from llvm_backend import rewrite_cache
from llvm_backend.builtins import powi_symbols
from llvm_backend.function import function_maker
from llvm_backend.linker import REWRITE_TAG
from llvm_backend.lowerings.composite import numba_funcify_Composite, numba_funcify_Composite_without_key
from llvm_backend.mode import (
    EXPOSE_SCALARS_NAME,
    LINKER_NAME,
    LLVM,
    MODE_NAME,
    PRE_FUSION_NAME,
    REWRITES_NAME,
    SUPERVISOR_NAME,
    llvm_rewrites,
    llvm_rewrites_before_fusion,
)
from llvm_backend.rewrites.scalar_inputs import ExposeScalarInputs
from llvm_backend.rewrites.supervisor import use_indexed_supervisor

__all__ = [
    "CHANGES",
    "COMPILE_PYMC_MODEL_CHANGES",
    "FAST_COMPILE_ON_PY_LINKER",
    "GRAD_THROUGH_CACHE",
    "NUMBA_IS_LLVM",
    "REWRITE_GRAPH_THROUGH_CACHE",
    "TRACEBACKS_OF_COMPILE",
    "AttributeChange",
    "Change",
    "ConfigChange",
    "DispatchOverride",
    "EntryChange",
    "ImportedAttributeChange",
    "OptdbRegistration",
    "PowiSymbols",
    "Together",
    "register",
    "revert_all",
]


class Change:
    """One process-wide change. Subclasses make it in ``_apply`` and undo it in ``_revert``."""

    def __init__(self, name: str, doc: str):
        self.name = name
        self.__doc__ = doc
        self.applied = False

    def apply(self) -> bool:
        """Make the change unless it is made already; whether it was made now."""
        if self.applied:
            return False
        self._apply()
        self.applied = True
        return True

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


_ABSENT = object()


class AttributeChange(Change):
    """``target.attribute`` set to ``value``; reverting puts back the attribute's own value, or deletes it
    when ``target`` had none of its own (its class's then shows again)."""

    def __init__(self, name: str, doc: str, target, attribute: str, value):
        super().__init__(name, doc)
        self.target, self.attribute, self.value = target, attribute, value
        self._previous = _ABSENT

    def _apply(self) -> None:
        self._previous = vars(self.target).get(self.attribute, _ABSENT)
        setattr(self.target, self.attribute, self.value)

    def _revert(self) -> None:
        if self._previous is _ABSENT:
            delattr(self.target, self.attribute)
        else:
            setattr(self.target, self.attribute, self._previous)


class EntryChange(Change):
    """``table[key]`` set to ``value`` (a dict of PyTensor's or Python's); reverting puts back the entry that
    was there, or removes the key."""

    def __init__(self, name: str, doc: str, table: dict, key, value):
        super().__init__(name, doc)
        self.table, self.key, self.value = table, key, value
        self._previous = _ABSENT

    def _apply(self) -> None:
        self._previous = self.table.get(self.key, _ABSENT)
        self.table[self.key] = self.value

    def _revert(self) -> None:
        if self._previous is _ABSENT:
            del self.table[self.key]
        else:
            self.table[self.key] = self._previous


class Together(Change):
    """Several changes made as one: applied in their order, reverted in the reverse order."""

    def __init__(self, name: str, doc: str, *changes: Change):
        super().__init__(name, doc)
        self.changes = changes

    def _apply(self) -> None:
        for change in self.changes:
            change.apply()

    def _revert(self) -> None:
        for change in self.changes[::-1]:
            change.revert()


class ConfigChange(Change):
    """PyTensor's config flag ``flag`` set to ``value()`` (read when applied); reverting sets the value it had.
    PyTensor's config is one for the process: every thread sees the flag."""

    def __init__(self, name: str, doc: str, flag: str, value: Callable):
        super().__init__(name, doc)
        self.flag, self.value = flag, value
        self._previous = _ABSENT

    def _apply(self) -> None:
        self._previous = getattr(pytensor.config, self.flag)
        setattr(pytensor.config, self.flag, self.value())

    def _revert(self) -> None:
        setattr(pytensor.config, self.flag, self._previous)


class DispatchOverride(Change):
    """Each ``singledispatch`` function of ``overrides`` given its function for ``cls`` in place of the one
    registered (which must exist: a singledispatch registry cannot drop an entry); reverting registers those
    again."""

    def __init__(self, name: str, doc: str, cls: type, overrides: list[tuple[Callable, Callable]]):
        super().__init__(name, doc)
        self.cls, self.overrides = cls, overrides
        self._previous: list[Callable] = []

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
    later sees the change, and the package never imports the module itself). Reverting removes the finder and
    puts the original back."""

    def __init__(self, name: str, doc: str, module: str, attribute: str, wrap: Callable):
        super().__init__(name, doc)
        self.module, self.attribute, self.wrap = module, attribute, wrap
        self._finder = _OnImport(module, self._patch)
        self._patched = None

    def _patch(self, module) -> None:
        original = getattr(module, self.attribute)
        setattr(module, self.attribute, self.wrap(original))
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


def _nutpie_sampling_on_llvm(original: Callable) -> Callable:
    """`llvm_backend.nutpie.sample_external_nuts` (imported here, on first use: that module imports this one)."""
    from llvm_backend.nutpie import sample_external_nuts

    return sample_external_nuts(original)


def _nutpie_compile_on_llvm(original: Callable) -> Callable:
    """`llvm_backend.nutpie.nutpie_compile` (imported on first use, as `_nutpie_sampling_on_llvm`)."""
    from llvm_backend.nutpie import nutpie_compile

    return nutpie_compile(original)


class PowiSymbols(Change):
    """LLVM's process symbol table given the powi builtins the C runtime has and it cannot resolve
    (`llvm_backend.builtins`). LLVM cannot remove a symbol: reverting sets each one added to address 0, which
    its lookup answers as it did before, not found. Code already compiled against them keeps their address."""

    def __init__(self, name: str, doc: str):
        super().__init__(name, doc)
        self.added: dict[str, int] = {}

    def _apply(self) -> None:
        self.added = powi_symbols()
        for symbol, address in self.added.items():
            llvm.add_symbol(symbol, address)

    def _revert(self) -> None:
        for symbol in self.added:
            llvm.add_symbol(symbol, 0)


CHANGES: tuple[Change, ...] = (
    PowiSymbols(
        "powi_builtins",
        """numba's JIT resolves ``__powidf2``/``__powisf2`` (from libgcc), which LLVM calls for ``pow(x, (double) i)``
        under fast-math: without them a process compiling such a Composite aborts, under stock NUMBA as under
        ours. Every numba compile of the process sees them, stock NUMBA's too (which then computes there).""",
    ),
    OptdbRegistration(
        SUPERVISOR_NAME,
        """`use_indexed_supervisor` in ``optdb`` under our tag at -0.5, before every rewrite that validates: the
        LLVM mode's graphs get an `IndexedSupervisor`. Only queries including our tag (the LLVM linker's) see it.""",
        use_indexed_supervisor,
        REWRITE_TAG,
        position=-0.5,
    ),
    OptdbRegistration(
        PRE_FUSION_NAME,
        """`llvm_rewrites_before_fusion` (products of constant data matrices by vectors as suits their width, sums
        gated by one condition as its switch of the sum, elementwise ops and joins of made vectors item by item) in
        ``optdb`` under our tag at 48.5: after ``add_mul_fusion`` (48) has flattened a linear predictor's sum into
        one ``Add``, before elemwise fusion (49), which folds what they leave into its loops. Only queries including
        our tag see it.""",
        llvm_rewrites_before_fusion,
        REWRITE_TAG,
        position=48.5,
    ),
    OptdbRegistration(
        REWRITES_NAME,
        """`llvm_rewrites` (loop-invariant hoisting) in ``optdb`` under our tag at 49.4: after elemwise fusion (49),
        so they see fused nodes, before the destroy handler (49.5) and the inplace rewrites, so what they produce
        can still be made inplace. Only queries including our tag see it.""",
        llvm_rewrites,
        REWRITE_TAG,
        position=49.4,
    ),
    OptdbRegistration(
        EXPOSE_SCALARS_NAME,
        """`ExposeScalarInputs` in ``optdb`` under our tag at 99.9, just before PyTensor's numba fusion and
        scalarization (100): 0-d inputs reach those as scalars. Only queries including our tag see it.""",
        ExposeScalarInputs(),
        REWRITE_TAG,
        position=99.9,
    ),
    AttributeChange(
        "rewrite_cache_query",
        """``optdb.query`` is `rewrite_cache.cached_query` (an attribute of the ``optdb`` object, over
        `SequenceDB.query`): a query that is ours (`rewrite_cache.is_ours`: it includes our tag) resolves to its
        rewriters in a `CachedRewriter`, whatever Mode carries the LLVM linker (PyMC's rebuilt Mode too); every
        other query gets exactly what PyTensor's ``optdb.query`` returns.""",
        optdb,
        "query",
        rewrite_cache.cached_query,
    ),
    EntryChange(
        "llvm_linker",
        """``predefined_linkers["llvm"]`` is the LLVM mode's linker, so ``Mode(linker="llvm")`` finds it. Seen by
        whoever asks for that name.""",
        predefined_linkers,
        LINKER_NAME,
        LLVM.linker,
    ),
    EntryChange(
        "llvm_mode",
        """``predefined_modes["LLVM"]`` is the LLVM mode, so ``mode="LLVM"`` (any case) finds it. Seen by whoever
        asks for that name.""",
        predefined_modes,
        MODE_NAME,
        LLVM,
    ),
    DispatchOverride(
        "composite_funcify",
        """PyTensor's ``numba_funcify_and_cache_key`` and ``numba_funcify`` give a `Composite` our function
        (`llvm_backend.lowerings.composite`): a Composite inside a node stock lowers during the LLVM linker's
        conversion (an Elemwise our loops do not take, a Blockwise, an inner graph) is typed a node at a time.
        Every other call, stock NUMBA's included, gets stock's function and key: ours hands it on unless the
        calling context (a `ContextVar`, set by `lowering_composites`; each thread starts without it) is inside
        our conversion. Whoever reads those two registries for Composite sees our function.""",
        Composite,
        [
            (numba_funcify_and_cache_key, numba_funcify_Composite),
            (numba_funcify, numba_funcify_Composite_without_key),
        ],
    ),
    AttributeChange(
        "llvm_functions",
        """``Mode.function_maker`` is `llvm_backend.function.function_maker`: a mode whose linker is ours makes
        `LLVMFunction`\\ s (safe to call from several threads), whatever Mode carries the linker (PyMC's
        ``compile`` rebuilds a plain one on it). Every other mode gets PyTensor's `FunctionMaker`, as before.""",
        Mode,
        "function_maker",
        property(function_maker),
    ),
    ImportedAttributeChange(
        "pymc_nutpie_on_llvm",
        """PyMC's ``pymc.sampling.mcmc._sample_external_nuts``, which ``pm.sample`` calls when it picks nutpie (the
        default once nutpie is installed), is `llvm_backend.nutpie.sample_external_nuts` over it: PyMC drops the
        mode before nutpie compiles under "NUMBA" by name, so without it ``pm.sample(compile_kwargs={"mode":
        "LLVM"})`` would sample on stock kernels. When the mode asked for is on our linker, nutpie's compile runs
        with ``numba_is_llvm()`` open; any other call goes to PyMC's function as it is. Made when PyMC's module
        is imported; the package does not import PyMC.""",
        "pymc.sampling.mcmc",
        "_sample_external_nuts",
        _nutpie_sampling_on_llvm,
    ),
    ImportedAttributeChange(
        "nutpie_compile_on_llvm",
        """nutpie's ``nutpie.compile_pymc_model`` is `llvm_backend.nutpie.nutpie_compile` over it: within a
        ``pm.sample`` call that asked for LLVM (marked by ``pymc_nutpie_on_llvm``, in the calling thread's
        context), PyMC's call of it compiles with `llvm_backend.nutpie.compile_pymc_model`, whose entry points
        are ours, not two ``numba.cfunc`` functions compiled in every process. Every other call is nutpie's own. Made
        when nutpie is imported; the package does not import nutpie.""",
        "nutpie",
        "compile_pymc_model",
        _nutpie_compile_on_llvm,
    ),
)
"""What ``import llvm_backend`` changes, in the order `register` applies them."""

NUMBA_IS_LLVM = EntryChange(
    "numba_is_llvm",
    """``predefined_modes["NUMBA"]`` is the LLVM mode while ``llvm_backend.nutpie.numba_is_llvm()`` is open (nutpie
    compiles under "NUMBA" by name): every compile of the process asking for "NUMBA", in any thread, gets "LLVM".
    Not applied on import.""",
    predefined_modes,
    "NUMBA",
    LLVM,
)


_FAST_COMPILE_ON_PY = Mode(
    linker=rewrite_cache.CachedPerformLinker(), optimizer=predefined_modes["FAST_COMPILE"].provided_optimizer
)
_FAST_COMPILE_DOC = """FAST_COMPILE is FAST_COMPILE's rewrites on PyTensor's py linker, by name
(``mode="FAST_COMPILE"``) and as ``pytensor.compile.mode.FAST_COMPILE``, while `llvm_backend.nutpie.compile_pymc_model`
runs, the rewritten graphs cached (``rewrite_cache.CachedPerformLinker``). There PyMC compiles its initial-point
function twice and nutpie a shape function, each in FAST_COMPILE and called once or twice. FAST_COMPILE's VM runs the
ops' Python implementations (it has ``c_thunks=False``), as the py linker does, but building any VM imports
PyTensor's C lazylinker, which it does not use and which a process with an empty compiledir compiles with g++ first
(0.6 s on eight schools, cold). FAST_COMPILE's rewrites of the jittered initial point of the 65-parameter regression
(its random variables made in place, each validated over the whole graph) took 0.17 s of its warm compile. Under the
py linker an ``IfElse`` computes both branches. Every compile of the process asking for FAST_COMPILE, in any thread,
gets it while it is applied. Not applied on import."""

FAST_COMPILE_ON_PY_LINKER = Together(
    "fast_compile_on_py_linker",
    _FAST_COMPILE_DOC,
    EntryChange(
        "fast_compile_by_name",
        """``predefined_modes["FAST_COMPILE"]``, which ``get_mode`` answers for the name in any case.""",
        predefined_modes,
        "FAST_COMPILE",
        _FAST_COMPILE_ON_PY,
    ),
    AttributeChange(
        "fast_compile_attribute",
        """``pytensor.compile.mode.FAST_COMPILE``, which PyMC's initial-point function is compiled with.""",
        pytensor.compile.mode,
        "FAST_COMPILE",
        _FAST_COMPILE_ON_PY,
    ),
)


TRACEBACKS_OF_COMPILE = ConfigChange(
    "tracebacks_of_compile",
    """``config.traceback__limit`` is ``config.traceback__compile_limit`` (0 unless the user set it) while
    `llvm_backend.nutpie.compile_pymc_model` runs, as PyTensor's own ``FunctionMaker`` sets it while it rewrites.
    There PyMC builds the log density, nutpie rewrites it and PyTensor builds its gradient: each of their 13,000
    nodes and variables (the 65-parameter regression) would keep the 8 frames that called it, which took 0.4 s of
    its 2.2 s warm compile. Those frames are PyMC's and nutpie's, which PyTensor's error messages show as where a
    node was made; the model's own variables, made before, keep theirs. Every graph the process builds
    meanwhile, in any thread, keeps as many frames as PyTensor's rewrites do. Not applied on import.""",
    "traceback__limit",
    lambda: pytensor.config.traceback__compile_limit,
)


REWRITE_GRAPH_THROUGH_CACHE = ImportedAttributeChange(
    "rewrite_graph_through_cache",
    """``pytensor.graph.rewrite_graph`` is itself through the rewrite cache
    (``rewrite_cache.rewrite_graph_through_cache``) while `llvm_backend.nutpie.compile_pymc_model` runs: nutpie reads
    it there to canonicalize and stabilize the log density before the gradient (0.24 s of the 65-parameter
    regression's warm compile), which is then loaded from the cache. Code reading the attribute meanwhile, in any
    thread, gets the same graphs, through the cache; code that imported the function before (PyMC's
    ``rewrite_pregrad``) is not affected. Not applied on import.""",
    "pytensor.graph",
    "rewrite_graph",
    rewrite_cache.rewrite_graph_through_cache,
)


GRAD_THROUGH_CACHE = ImportedAttributeChange(
    "grad_through_cache",
    """``pytensor.tensor.grad`` is itself through the rewrite cache (``rewrite_cache.grad_through_cache``) while
    `llvm_backend.nutpie.compile_pymc_model` runs: nutpie reads it there to build the gradient of the log density
    (0.19 s of the 65-parameter regression's warm compile), which is then built on the log density's graph from
    the cache. Code reading the attribute meanwhile, in any thread, gets the same graphs, through the cache; code
    that imported the function before is not affected. Not applied on import.""",
    "pytensor.tensor",
    "grad",
    rewrite_cache.grad_through_cache,
)


COMPILE_PYMC_MODEL_CHANGES = (
    FAST_COMPILE_ON_PY_LINKER,
    TRACEBACKS_OF_COMPILE,
    REWRITE_GRAPH_THROUGH_CACHE,
    GRAD_THROUGH_CACHE,
)
"""What `llvm_backend.nutpie.compile_pymc_model` changes while it runs, applied in this order."""


def register() -> None:
    """Apply every change of `CHANGES`, in order: "LLVM" (any case) a PyTensor mode, "llvm" a linker. Idempotent."""
    for change in CHANGES:
        change.apply()


def revert_all() -> None:
    """Revert `NUMBA_IS_LLVM`, `COMPILE_PYMC_MODEL_CHANGES` and every change of `CHANGES`, in reverse order: the
    process is as it was before ``import llvm_backend``, but for what the module docstring leaves out."""
    for change in (*CHANGES, *COMPILE_PYMC_MODEL_CHANGES, NUMBA_IS_LLVM)[::-1]:
        change.revert()
