"""PyMC and nutpie on the LLVM mode's kernels: everything of the package that knows PyMC or nutpie, and its own
changes to them (`CHANGES`).

nutpie compiles a PyMC model's log-density and gradient with PyTensor's mode "NUMBA", which it names itself
and offers no argument to change; it then calls the function's ``vm.jit_fn`` from a ``numba.cfunc`` compiled in
every process. `compile_pymc_model` compiles the graphs with the LLVM mode and emits the two C entry points
nutpie calls itself (`llvm_backend_intrinsics.nutpie`); `numba_is_llvm` makes any compile under "NUMBA" use the
LLVM mode::

    import llvm_backend.nutpie

    compiled = llvm_backend.nutpie.compile_pymc_model(model)  # nutpie.compile_pymc_model's arguments
    trace = nutpie.sample(compiled, draws=1000)

    with llvm_backend.nutpie.numba_is_llvm():  # any code that compiles under "NUMBA"
        idata = pm.sample(nuts_sampler="nutpie", model=model)

`numba_is_llvm` is process-global while it is open, as the code opening it asks (``NUMBA_IS_LLVM`` in
``llvm_backend.adapters.pytensor``): every compile that asks for "NUMBA" by name, in any thread, gets the LLVM
mode. When the last one open, in any thread, exits, "NUMBA" is PyTensor's own mode again.

``pm.sample(model=model, compile_kwargs={"mode": "LLVM"})`` (or ``backend="LLVM"``) needs neither: when PyMC
picks nutpie for it, `sample_external_nuts` marks the call in the calling context (`SAMPLING_ON_LLVM`), and
nutpie's ``compile_pymc_model``, called by PyMC inside, is `compile_pymc_model` for a call so marked
(`nutpie_compile`; `pymc_adapter.PYMC_NUTPIE_ON_LLVM` and `nutpie_adapter.NUTPIE_COMPILE_ON_LLVM`). No other
thread sees either.
"""

from llvm_backend.changes import Change
from llvm_backend.nutpie.compile_model import compile_pymc_model
from llvm_backend.nutpie.nutpie_adapter import NUTPIE_COMPILE_ON_LLVM
from llvm_backend.nutpie.pymc_adapter import PYMC_NUTPIE_ON_LLVM
from llvm_backend.nutpie.sampling import SAMPLING_ON_LLVM, numba_is_llvm, nutpie_compile, sample_external_nuts

__all__ = [
    "CHANGES",
    "SAMPLING_ON_LLVM",
    "compile_pymc_model",
    "numba_is_llvm",
    "nutpie_compile",
    "sample_external_nuts",
]

CHANGES: tuple[Change, ...] = (PYMC_NUTPIE_ON_LLVM, NUTPIE_COMPILE_ON_LLVM)
"""The subpackage's changes to PyMC and nutpie, each made when that library is imported (``import llvm_backend``
registers them; the package imports neither library)."""
