"""What `llvm_backend` uses of nutpie (0.16.x) beyond its public API, checked before use.

nutpie compiles a PyMC model under PyTensor's mode "NUMBA", which it names itself, and samples what its
``CompiledPyMCModel`` holds. `llvm_backend.nutpie.compile_pymc_model` builds that record with entry points of
its own (`INTERNALS` of ``nutpie.compile_pymc``: the record and its user data), and ``nutpie.compile_pymc_model``
is wrapped so that ``pm.sample`` asking for LLVM reaches it (`NUTPIE_COMPILE_ON_LLVM`).
"""

import dataclasses
import importlib.metadata
import inspect

from llvm_backend.changes import ImportedAttributeChange, Seam, takes_parameters

__all__ = ["COMPILE_PARAMETERS", "INTERNALS", "NUTPIE_COMPILE_ON_LLVM", "compile_pymc"]

SERIES = "0.16"
"""The nutpie release series this adapter is written against."""

COMPILE_PARAMETERS = (
    "model",
    "backend",
    "gradient_backend",
    "initial_points",
    "jitter_rvs",
    "default_initialization_strategy",
    "var_names",
    "freeze_model",
)
"""The parameters of ``nutpie.compile_pymc_model`` that `llvm_backend.nutpie.compile_pymc_model` takes too."""

INTERNALS = {
    "make_user_data": ("shared_var_keys", "shared_data"),
    "CompiledPyMCModel": (
        "_n_dim",
        "dims",
        "_coords",
        "_shapes",
        "compiled_logp_func",
        "compiled_expand_func",
        "initial_point_func",
        "shared_data",
        "shared_var_keys",
        "user_data",
        "n_expanded",
        "shape_info",
        "logp_func",
        "expand_func",
        "reparameterized_names",
    ),
}
"""What `llvm_backend.nutpie.compile_pymc_model` uses of ``nutpie.compile_pymc``: the parameters it passes."""


def _parameters(found) -> set[str]:
    if dataclasses.is_dataclass(found):
        return {field.name for field in dataclasses.fields(found)}
    return set(inspect.signature(found).parameters)


def _internals_problem(module) -> str | None:
    for name, parameters in INTERNALS.items():
        found = getattr(module, name, None)
        missing = [] if found is None else sorted(set(parameters) - _parameters(found))
        if found is None or missing:
            return f"its nutpie.compile_pymc.{name} is {'missing' if found is None else f'without {missing}'}"
    return None


def compile_pymc():
    """``nutpie.compile_pymc``, once checked to hold `INTERNALS` in nutpie's series; otherwise a ``RuntimeError``
    naming the installed nutpie."""
    from nutpie import compile_pymc as module

    version = importlib.metadata.version("nutpie")
    problem = _internals_problem(module)
    if version.split(".")[:2] != SERIES.split("."):
        problem = f"it is not {SERIES}.x"
    if problem is not None:
        raise RuntimeError(
            f"llvm_backend.nutpie.compile_pymc_model does not know nutpie {version}: {problem}; use "
            "nutpie.compile_pymc_model inside llvm_backend.nutpie.numba_is_llvm()"
        )
    return module


NUTPIE_COMPILE_ON_LLVM = ImportedAttributeChange(
    "nutpie_compile_on_llvm",
    """nutpie's ``nutpie.compile_pymc_model`` is `llvm_backend.nutpie.nutpie_compile` over it: within a
    ``pm.sample`` call that asked for LLVM (marked by ``pymc_nutpie_on_llvm`` in the calling context), PyMC's call
    of it compiles with `llvm_backend.nutpie.compile_pymc_model`, whose entry points are ours. Every other call
    is nutpie's own. Made when nutpie is imported; the package does not import nutpie.""",
    "nutpie",
    "compile_pymc_model",
    "llvm_backend.nutpie.sampling:nutpie_compile",
    seam=Seam("nutpie", SERIES, takes_parameters("compile_pymc_model", COMPILE_PARAMETERS)),
)
