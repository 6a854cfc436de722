"""Test helpers: check a graph under LLVM against stock NUMBA and the ``py`` linker, and see the graph a mode
compiles (`rewritten_graph`) without compiling it."""

import numpy as np
import pytensor
from pytensor.compile.mode import Mode, get_mode
from pytensor.compile.rebuild import construct_function_ins_and_outs
from pytensor.graph.fg import FunctionGraph
from pytensor.graph.rewriting.db import RewriteDatabaseQuery
from pytensor.graph.traversal import explicit_graph_inputs

__all__ = ["PY_MODE", "assert_same_result", "compare_llvm_numba_and_py", "rewritten_graph", "value_kind"]

PY_MODE = Mode(
    linker="py",
    optimizer=RewriteDatabaseQuery(include=["minimum_compile"], exclude=["cxx_only", "BlasOpt"]),
)
"""The reference: each op's ``perform``, on the graph as written (minimal rewrites)."""


def value_kind(value) -> str:
    """ "ndarray", "numpy scalar" or the Python type's name: what a backend returned, beyond its dtype."""
    if isinstance(value, np.ndarray):
        return "ndarray"
    if isinstance(value, np.generic):
        return "numpy scalar"
    return type(value).__name__


def assert_same_result(actual, expected, label: str, rtol: float | None = None, atol: float = 0.0) -> None:
    """``actual`` equals ``expected`` in kind (ndarray vs scalar), dtype, shape and value (NaN == NaN).

    ``rtol`` defaults by precision: 1e-2 for float16, 1e-4 for float32/complex64, else 1e-7.
    """
    assert value_kind(actual) == value_kind(expected), (
        f"{label}: {value_kind(actual)} instead of {value_kind(expected)}"
    )
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{label}: dtype {actual.dtype} instead of {expected.dtype}"
    assert actual.shape == expected.shape, f"{label}: shape {actual.shape} instead of {expected.shape}"
    if actual.dtype.kind in "fc":
        if rtol is None:
            rtol = {16: 1e-2, 32: 1e-4}.get(np.finfo(actual.dtype).bits, 1e-7)
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=label)
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=label)


def compare_llvm_numba_and_py(inputs, outputs, values, *, rtol=None, atol=0.0, llvm_mode="LLVM"):
    """Compile ``outputs`` under LLVM, stock NUMBA and the py linker; check all three agree.

    Returns ``(llvm_function, llvm_results)`` for further checks. Inputs are copied per mode, so
    an in-place bug in one mode cannot hide behind another's.
    """
    single = not isinstance(outputs, list | tuple)
    results = {}
    for mode in (PY_MODE, "NUMBA", llvm_mode):
        fn = pytensor.function(inputs, outputs, mode=mode)
        result = fn(*(np.copy(v) if isinstance(v, np.ndarray) else v for v in values))
        results[mode] = [result] if single else result
        if mode == llvm_mode:
            llvm_fn = fn
    reference = results.pop(PY_MODE)
    for mode, result in results.items():
        assert len(result) == len(reference)
        for i, (got, want) in enumerate(zip(result, reference, strict=True)):
            assert_same_result(got, want, f"output {i} under {mode} vs py", rtol=rtol, atol=atol)
    llvm_results = results[llvm_mode]
    return llvm_fn, llvm_results[0] if single else llvm_results


def rewritten_graph(outputs, inputs=None, *, mode="LLVM") -> FunctionGraph:
    """The graph ``pytensor.function(inputs, outputs, mode=mode)`` would link, rewritten but not compiled.

    It takes ``pytensor.function``'s own steps but the last: the graph cloned
    (``construct_function_ins_and_outs``), then ``mode.function_maker`` builds the `FunctionGraph` (with the
    Supervisor protecting the inputs), runs ``mode.optimizer`` on it (under the LLVM mode, through the rewrite
    cache) and inserts deep copies; ``create()``, where the linker compiles, is never called. So what it returns
    is ``fn.maker.fgraph`` of the function compiled, nodes, order and features alike. ``inputs`` (variables or
    ``In``) default to the outputs' root variables that are neither constants nor shared.
    """
    if inputs is None:
        inputs = list(explicit_graph_inputs(outputs))
    mode = get_mode(mode)
    inputs, cloned_outputs = construct_function_ins_and_outs(list(inputs), outputs)
    return mode.function_maker(inputs, cloned_outputs, mode).fgraph
