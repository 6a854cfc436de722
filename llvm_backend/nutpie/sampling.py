"""``pm.sample`` and nutpie's own ``compile_pymc_model`` on the LLVM mode: the wrappers the subpackage's changes
put over PyMC's and nutpie's functions, and `numba_is_llvm`."""

import contextvars
import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pytensor.compile.mode import get_mode

from llvm_backend.adapters.pytensor import NUMBA_IS_LLVM
from llvm_backend.changes import Change
from llvm_backend.linker import LLVMLinker
from llvm_backend.nutpie.compile_model import compile_pymc_model

__all__ = ["SAMPLING_ON_LLVM", "numba_is_llvm", "nutpie_compile", "sample_external_nuts"]

SAMPLING_ON_LLVM = contextvars.ContextVar("llvm_backend_sampling_on_llvm", default=False)
"""True within a ``pm.sample`` call that asked for a mode on our linker and picked nutpie (`sample_external_nuts`),
in the thread (the context) making it."""

_lock = threading.Lock()
_open: dict[Change, int] = {}
"""How many blocks of each change `_held` holds open, in every thread."""


@contextmanager
def _held(change: Change) -> Iterator[None]:
    """``change`` (a process-wide `Change`) applied while any block holding it is open, in any thread: the first
    to enter applies it, the last to exit reverts it, also when an exception leaves. Blocks may nest and overlap
    across threads."""
    with _lock:
        _open[change] = _open.get(change, 0) + 1
        change.apply()
    try:
        yield
    finally:
        with _lock:
            _open[change] -= 1
            if not _open[change]:
                change.revert()


@contextmanager
def numba_is_llvm() -> Iterator[None]:
    """Within, PyTensor's mode "NUMBA" (``mode="NUMBA"``, ``get_mode("NUMBA")``) is the LLVM mode, for every
    thread of the process; the previous "NUMBA" is put back when the last block open exits, also when an exception
    leaves. Blocks may nest and overlap across threads."""
    with _held(NUMBA_IS_LLVM):
        yield


def _asks_for_llvm(arguments: dict) -> bool:
    """Whether PyMC's nutpie call was given a mode on our linker: ``compile_kwargs["mode"]`` (where
    ``pm.sample(backend=...)`` puts it too), or the deprecated ``nuts={"backend": ...}``, which PyMC prefers."""
    nuts_kwargs, compile_kwargs = arguments["nuts_kwargs"] or {}, arguments["compile_kwargs"] or {}
    mode = nuts_kwargs["backend"] if "backend" in nuts_kwargs else compile_kwargs.get("mode")
    return isinstance(get_mode(mode).linker, LLVMLinker)


def sample_external_nuts(original: Callable) -> Callable:
    """PyMC's ``_sample_external_nuts`` (``pm.sample`` with an external NUTS), a call that picked nutpie and asked
    for a mode on our linker marked in the calling context (`SAMPLING_ON_LLVM`), so nutpie's compile within it is
    ours (`nutpie_compile`): PyMC drops the mode, and nutpie compiles under "NUMBA" by name. Every other call is
    PyMC's as it is. `pymc_adapter.PYMC_NUTPIE_ON_LLVM` checks PyMC's function before wrapping it."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def sample(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        if arguments["sampler"] != "nutpie" or not _asks_for_llvm(arguments):
            return original(*args, **kwargs)
        marked = SAMPLING_ON_LLVM.set(True)
        try:
            return original(*args, **kwargs)
        finally:
            SAMPLING_ON_LLVM.reset(marked)

    return sample


def nutpie_compile(original: Callable) -> Callable:
    """nutpie's ``compile_pymc_model``, which is `compile_pymc_model` when called within a ``pm.sample`` call
    that asked for LLVM (`SAMPLING_ON_LLVM`). Such a call passing nutpie's ``numba.cfunc`` options, which ours does
    not take, is nutpie's own, on stock kernels, with a warning saying so; any other call is nutpie's own."""
    ours = inspect.signature(compile_pymc_model).parameters

    @functools.wraps(original)
    def compile(model, **kwargs):
        if not SAMPLING_ON_LLVM.get():
            return original(model, **kwargs)
        if kwargs.keys() <= ours.keys():
            return compile_pymc_model(model, **kwargs)
        warnings.warn(
            f"llvm_backend: nutpie's numba.cfunc options {sorted(kwargs.keys() - ours.keys())} are nutpie's own "
            "compile's: this pm.sample samples on stock NUMBA kernels",
            RuntimeWarning,
            stacklevel=2,
        )
        return original(model, **kwargs)

    return compile
