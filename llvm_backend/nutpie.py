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
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from llvm_backend.linker import LLVMLinker
from llvm_backend.process import NUMBA_IS_LLVM

__all__ = ["compile_pymc_model", "numba_is_llvm"]

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
