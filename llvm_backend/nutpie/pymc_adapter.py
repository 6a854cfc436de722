"""What `llvm_backend` changes in PyMC (6.4.x), checked before it is made: ``pm.sample`` asked for the LLVM mode
samples with nutpie on the LLVM mode's kernels.

PyMC drops the mode before it calls ``nutpie.compile_pymc_model``, which compiles under "NUMBA" by name, and
offers no argument of its own to pass one: its private ``_sample_external_nuts`` is wrapped
(`llvm_backend.nutpie.sample_external_nuts`) to mark, in the calling context, a call that asked for LLVM.
"""

from llvm_backend.changes import ImportedAttributeChange, Seam, takes_parameters

__all__ = ["PYMC_NUTPIE_ON_LLVM", "SAMPLE_PARAMETERS"]

SAMPLE_PARAMETERS = ("sampler", "compile_kwargs", "nuts_kwargs")
"""The parameters of PyMC's ``_sample_external_nuts`` that `llvm_backend.nutpie.sample_external_nuts` reads."""


PYMC_NUTPIE_ON_LLVM = ImportedAttributeChange(
    "pymc_nutpie_on_llvm",
    """PyMC's ``pymc.sampling.mcmc._sample_external_nuts``, which ``pm.sample`` calls when it picks nutpie (the
    default once nutpie is installed), is `llvm_backend.nutpie.sample_external_nuts` over it: a call asking for a
    mode on our linker is marked in the calling context (`llvm_backend.nutpie.SAMPLING_ON_LLVM`), which nutpie's
    compile then reads (``nutpie_compile_on_llvm``); any other call goes to PyMC's function as it is. Made when
    PyMC's module is imported; the package does not import PyMC. Without it, ``pm.sample(compile_kwargs={"mode":
    "LLVM"})`` samples on stock NUMBA kernels.""",
    "pymc.sampling.mcmc",
    "_sample_external_nuts",
    "llvm_backend.nutpie.sampling:sample_external_nuts",
    seam=Seam("pymc", "6.4", takes_parameters("_sample_external_nuts", SAMPLE_PARAMETERS)),
)
