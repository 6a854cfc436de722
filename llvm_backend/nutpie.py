"""nutpie with the LLVM mode's kernels.

nutpie compiles a PyMC model's log-density and gradient with PyTensor's mode "NUMBA", which it names itself
and offers no argument to change; it then calls the function's ``vm.jit_fn`` from a ``numba.cfunc``. Two
entry points make that compile use the LLVM mode::

    import llvm_backend.nutpie

    compiled = llvm_backend.nutpie.compile_pymc_model(model)  # nutpie.compile_pymc_model's arguments
    trace = nutpie.sample(compiled, draws=1000)

    with llvm_backend.nutpie.numba_is_llvm():  # any code that compiles under "NUMBA"
        idata = pm.sample(nuts_sampler="nutpie", model=model)

`numba_is_llvm` is process-global while it is open (``NUMBA_IS_LLVM`` in ``llvm_backend.process``): every
compile that asks for "NUMBA" by name, in any thread, gets the LLVM mode. When the last one open, in any thread,
exits, "NUMBA" is PyTensor's own mode again.

``pm.sample(model=model, compile_kwargs={"mode": "LLVM"})`` (or ``backend="LLVM"``) needs neither: when PyMC
picks nutpie for it, `sample_external_nuts` opens `numba_is_llvm` around PyMC's nutpie call
(``pymc_nutpie_on_llvm`` in ``llvm_backend.process``).
"""

import functools
import inspect
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pytensor.compile.mode import get_mode

from llvm_backend.linker import LLVMLinker
from llvm_backend.process import NUMBA_IS_LLVM

__all__ = ["compile_pymc_model", "numba_is_llvm", "sample_external_nuts"]

SAMPLE_PARAMETERS = ("sampler", "compile_kwargs", "nuts_kwargs")
"""The parameters of PyMC's ``_sample_external_nuts`` that `sample_external_nuts` reads (PyMC 6.4's)."""

_lock = threading.Lock()
_open = 0
"""How many `numba_is_llvm` blocks are open, in every thread: the first applies `NUMBA_IS_LLVM`, the last to
exit reverts it."""


@contextmanager
def numba_is_llvm() -> Iterator[None]:
    """Within, PyTensor's mode "NUMBA" (``mode="NUMBA"``, ``get_mode("NUMBA")``) is the LLVM mode, for every
    thread of the process; the previous "NUMBA" is put back when the last block open exits, also when an exception
    leaves. Blocks may nest and overlap across threads."""
    global _open
    with _lock:
        _open += 1
        NUMBA_IS_LLVM.apply()
    try:
        yield
    finally:
        with _lock:
            _open -= 1
            if not _open:
                NUMBA_IS_LLVM.revert()


def compile_pymc_model(model, **kwargs):
    """``nutpie.compile_pymc_model(model, backend="numba", **kwargs)`` with the LLVM mode's kernels.

    Raises ``RuntimeError`` naming the installed nutpie when its compile did not go through our linker (a nutpie
    that no longer compiles under PyTensor's "NUMBA" mode by name).
    """
    import nutpie

    if kwargs.setdefault("backend", "numba") != "numba":
        raise ValueError(f"llvm_backend.nutpie compiles with nutpie's numba backend, not {kwargs['backend']!r}")
    with numba_is_llvm():
        compiled = nutpie.compile_pymc_model(model, **kwargs)
    linker = getattr(getattr(getattr(compiled, "logp_func", None), "maker", None), "linker", None)
    if not isinstance(linker, LLVMLinker):
        raise RuntimeError(
            f"nutpie {nutpie.__version__} did not compile the model under PyTensor's 'NUMBA' mode by name "
            f"(its logp function's linker is {type(linker).__name__}), so llvm_backend cannot give it the LLVM "
            "mode; use nutpie.compile_pymc_model directly"
        )
    return compiled


def _asks_for_llvm(arguments: dict) -> bool:
    """Whether PyMC's nutpie call was given a mode on our linker: ``compile_kwargs["mode"]`` (where
    ``pm.sample(backend=...)`` puts it too), or the deprecated ``nuts={"backend": ...}``, which PyMC prefers."""
    nuts_kwargs, compile_kwargs = arguments["nuts_kwargs"] or {}, arguments["compile_kwargs"] or {}
    mode = nuts_kwargs["backend"] if "backend" in nuts_kwargs else compile_kwargs.get("mode")
    return isinstance(get_mode(mode).linker, LLVMLinker)


def sample_external_nuts(original: Callable) -> Callable:
    """PyMC's ``_sample_external_nuts`` (``pm.sample`` with an external NUTS), compiling nutpie's model on the
    LLVM mode's kernels when the mode asked for is on our linker, for which PyMC has no way of its own: it drops
    the mode, and nutpie compiles under "NUMBA" by name. Every other call is PyMC's as it is.

    The one seam on PyMC's internals: a function without the parameters `SAMPLE_PARAMETERS` (another PyMC) is
    given back as it is, with a warning, once, that such ``pm.sample`` calls sample on stock kernels.
    """
    signature = inspect.signature(original)
    missing = [name for name in SAMPLE_PARAMETERS if name not in signature.parameters]
    if missing:
        import pymc

        warnings.warn(
            f"llvm_backend cannot read the mode pm.sample was given under PyMC {pymc.__version__} (its nutpie "
            f"call has no parameter {', '.join(missing)}): with nutpie, pm.sample(compile_kwargs={{'mode': "
            "'LLVM'}) samples on stock NUMBA kernels. Use llvm_backend.nutpie.compile_pymc_model(model) and "
            "nutpie.sample, or pm.sample(nuts_sampler='pymc', ...)",
            RuntimeWarning,
            stacklevel=2,
        )
        return original

    @functools.wraps(original)
    def sample(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        if arguments["sampler"] == "nutpie" and _asks_for_llvm(arguments):
            with numba_is_llvm():
                return original(*args, **kwargs)
        return original(*args, **kwargs)

    return sample
