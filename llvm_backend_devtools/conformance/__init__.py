"""Conformance: PyTensor's own ``tests/link/numba`` suite run under stock NUMBA and under LLVM.

``python -m llvm_backend_devtools.conformance --pytensor-repo PATH`` extracts the suite from a PyTensor
repository at the installed version's tag (``runner``, ``suite``), runs it twice and compares the
JUnit reports (``junit``). The LLVM run loads the pytest plugin ``llvm_backend_devtools.conformance.plugin``
with ``--llvm-mode``, which puts the LLVM mode wherever the suite uses the stock numba mode.
"""

SUMMARY_PREFIX = "llvm-mode:"
"""Starts the lines the plugin prints at the end of the LLVM run (its compile counts), which the runner reads."""
