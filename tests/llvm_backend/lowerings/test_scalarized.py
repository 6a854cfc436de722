"""The LLVM mode on PyTensor's own scalarization (``pytensor.tensor.rewriting.scalarize``) and reduction fusion
(``FusedElemwise``): the same ops as stock NUMBA, the py linker's values, never more allocations than stock."""

import warnings

import llvmlite.binding as llvm
import numpy as np
import pytensor
import pytensor.scalar as ps
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba.core.errors import NumbaWarning
from pytensor.compile.builders import OpFromGraph
from pytensor.compile.mode import Mode
from pytensor.tensor.elemwise import CAReduce
from pytensor.tensor.math import Sum
from pytensor.tensor.rewriting.fused_elemwise import FusedElemwise
from pytensor.tensor.rewriting.scalarize import (
    ScalarCAReduce,
    ScalarizedElemwise,
    ScalarizedJoin,
    ScalarSubtensor,
)

import llvm_backend  # noqa: F401
from llvm_backend.lowerings.reduction import uses_full_reduce
from llvm_backend.tools.graphs import logp_grad
from llvm_backend.tools.measure import allocations_per_call, uncached_kernel
from llvm_backend.tools.testing import PY_MODE, assert_same_result, compare_llvm_numba_and_py

SCALARIZE_OPS = (ScalarCAReduce, ScalarSubtensor, ScalarizedJoin, ScalarizedElemwise)

REDUCTIONS = {
    "sum": pt.sum,
    "prod": pt.prod,
    "max": pt.max,
    "min": pt.min,
    "all": pt.all,
    "any": pt.any,
}


def _ops(fn):
    return {type(node.op) for node in fn.maker.fgraph.apply_nodes}


def _net_allocations(inputs, outputs, values):
    return {
        mode: allocations_per_call(pytensor.function(inputs, outputs, mode=mode), values).net
        for mode in ("NUMBA", "LLVM")
    }


@pytest.mark.slow
@pytest.mark.parametrize("reduction", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", ["int8", "int64", "float32", "float64"])
def test_full_reduction_consumed_by_scalar_math(reduction, dtype):
    x = pt.vector("x", dtype=dtype)
    out = REDUCTIONS[reduction](x) * 2 + 1
    values = [np.array([3, -1, 2, 5], dtype=dtype)]
    fn, _ = compare_llvm_numba_and_py([x], out, values)
    assert _ops(fn) == _ops(pytensor.function([x], out, mode="NUMBA"))
    # Stock fuses min (as -max(-x)), all and any with the Elemwise before them; the others stay reductions.
    reductions = [n for n in fn.maker.fgraph.apply_nodes if isinstance(n.op, ScalarCAReduce)]
    assert all(map(uses_full_reduce, reductions))
    assert bool(reductions) == (reduction in ("sum", "prod", "max"))
    net = _net_allocations([x], out, values)
    assert net["LLVM"] <= net["NUMBA"]


@pytest.mark.slow
@pytest.mark.parametrize("reduction", ["all", "any", "max", "min"])
@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
def test_unsigned_reductions_match_numpy(reduction, dtype):
    x = pt.vector("x", dtype=dtype)
    info = np.iinfo(dtype)
    value = np.array([info.max, 3, 0, info.max - 1], dtype=dtype)
    out = REDUCTIONS[reduction](x)
    _, result = compare_llvm_numba_and_py([x], [out, out * 1], [value])
    expected = {"all": np.all, "any": np.any, "max": np.max, "min": np.min}[reduction](value)
    assert result[0] == expected


@pytest.mark.slow
@pytest.mark.parametrize("name", ["and_", "or_", "xor"])
@pytest.mark.parametrize("dtype", ["uint8", "uint64", "int16"])
def test_bitwise_reductions_match_numpy(name, dtype):
    x = pt.vector("x", dtype=dtype)
    out = CAReduce(getattr(ps, name))(x)
    value = np.array([0b1011, 0b0110, np.iinfo(dtype).max, 0b1001], dtype=dtype)
    _, result = compare_llvm_numba_and_py([x], [out, out + 1], [value])
    numpy_reduce = {"and_": np.bitwise_and, "or_": np.bitwise_or, "xor": np.bitwise_xor}[name]
    assert result[0] == numpy_reduce.reduce(value)


@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min"])
def test_reductions_with_nan_and_inf(reduction):
    x = pt.dvector("x")
    out = pt.exp(-REDUCTIONS[reduction](x))
    fn = pytensor.function([x], out, mode="LLVM")
    reference = pytensor.function([x], out, mode=PY_MODE)
    for value in (np.array([1.0, np.nan, 2.0]), np.array([np.inf, -1.0]), np.array([-np.inf, 3.0])):
        assert_same_result(fn(value), reference(value), f"{reduction} of {value}")


@pytest.mark.parametrize("reduction", ["sum", "prod", "all", "any"])
def test_empty_reductions_give_the_identity(reduction):
    x = pt.dvector("x")
    compare_llvm_numba_and_py([x], REDUCTIONS[reduction](x) + 1, [np.array([])])


def test_accumulator_dtype_is_honoured():
    x = pt.bvector("x")
    _, total = compare_llvm_numba_and_py([x], pt.sum(x, acc_dtype="int64") * 1, [np.full(100, 100, dtype="int8")])
    assert total == 10000


def test_complex_accumulator_into_a_real_output_keeps_stock():
    x = pt.dvector("x")
    out = Sum(axis=None, dtype="float64", acc_dtype="complex128")(x) * 2
    fn, result = compare_llvm_numba_and_py([x], out, [np.arange(3.0)])
    assert result == 6.0
    assert not any(uses_full_reduce(n) for n in fn.maker.fgraph.apply_nodes if isinstance(n.op, ScalarCAReduce))


@settings(max_examples=20, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    layout=st.sampled_from(["C", "F", "strided", "reversed"]),
    reduction=st.sampled_from(list(REDUCTIONS)),
)
def test_full_reductions_of_any_layout_match_py(shape, layout, reduction):
    if reduction in ("max", "min") and 0 in shape:
        return  # numpy raises on an empty max; numba returns the start value
    x = pt.tensor("x", dtype="float64", shape=(None,) * len(shape))
    # Positive values: a sum of values of both signs can cancel to ~1e-16, where the order of the additions
    # decides every digit, and no relative comparison means anything.
    base = np.arange(np.prod(shape) * 2, dtype="float64").reshape([*shape[:-1], shape[-1] * 2]) / 7 + 1
    value = {
        "C": base[..., ::2].copy(),
        "F": np.asfortranarray(base[..., ::2]),
        "strided": base[..., ::2],
        "reversed": base[..., ::-2],
    }[layout]
    fn = pytensor.function([x], REDUCTIONS[reduction](x) * 3, mode="LLVM")
    want = pytensor.function([x], REDUCTIONS[reduction](x) * 3, mode=PY_MODE)
    assert_same_result(fn(value), want(value), f"{reduction} of {layout} {shape}")


def test_scalar_index_consumed_by_scalar_math():
    x, i = pt.dvector("x"), pt.lscalar("i")
    out = pt.sqrt(x[3] ** 2 + x[i])
    values = [np.arange(5.0), -1]
    fn, _ = compare_llvm_numba_and_py([x, i], out, values)
    assert ScalarSubtensor in _ops(fn)
    net = _net_allocations([x, i], out, values)
    assert net["LLVM"] <= net["NUMBA"]


@pytest.mark.parametrize("mode", ["NUMBA", "LLVM"])
def test_scalar_index_out_of_bounds_raises_index_error(mode):
    x, i = pt.dvector("x"), pt.lscalar("i")
    fn = pytensor.function([x, i], x[i] * 2, mode=mode)
    for bad in (3, -4):
        with pytest.raises(IndexError):
            fn(np.arange(3.0), bad)


def test_logp_grad_uses_scalarization_and_allocates_no_more_than_stock():
    graph = logp_grad()
    fn, _ = compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)
    assert _ops(fn) & set(SCALARIZE_OPS)
    net = _net_allocations(graph.inputs, graph.outputs, graph.values)
    assert net["LLVM"] <= net["NUMBA"]


@pytest.mark.slow
@pytest.mark.parametrize(
    "build",
    [
        lambda x: [x.sum(), x.sum() * 2, x * x.sum()],
        lambda x: [pt.concatenate([pt.atleast_1d(x.max()), x, pt.atleast_1d(x[0])])],
        lambda x: [pt.stack([x.sum(), x.min(), x[1]]) * x[:3]],
        lambda x: [x.sum() + x.max(), pt.exp(x) * x.prod()],
        lambda x: [pt.exp(x) * pt.exp(x).sum(), pt.exp(x).sum()],
        lambda x: [(x * 2 + 1).sum()],
    ],
)
def test_never_more_allocations_than_stock(build):
    x = pt.dvector("x")
    outputs = build(x)
    values = [np.linspace(0.5, 2.0, 5)]
    compare_llvm_numba_and_py([x], outputs, values)
    net = _net_allocations([x], outputs, values)
    assert net["LLVM"] <= net["NUMBA"]


def test_a_reduction_stock_fuses_stays_fused():
    # Stock 3.3 computes (x * 2 + 1).sum() in one loop (a FusedElemwise with a reduced output): no vector.
    x = pt.dvector("x")
    out = (x * 2 + 1).sum()
    fn, _ = compare_llvm_numba_and_py([x], out, [np.linspace(0, 1, 1000)])
    [fused] = [node.op for node in fn.maker.fgraph.apply_nodes if isinstance(node.op, FusedElemwise)]
    assert any(spec is not None for spec in fused.reduced_outputs)
    assert allocations_per_call(fn, [np.linspace(0, 1, 1000)]).net <= 1


def _nrt_allocation_sites(fn) -> int:
    kernel = uncached_kernel(fn)
    module = llvm.parse_assembly(kernel.optimized_ir)
    return sum(
        1
        for function in module.functions
        if not function.is_declaration and not function.name.startswith("_ZN7cpython")
        for block in function.blocks
        for instruction in block.instructions
        if instruction.opcode == "call" and "NRT_MemInfo_alloc" in str(instruction)
    )


def test_scalar_graph_ir_allocates_only_its_output():
    x = pt.dvector("x")
    out = pt.sqrt(x.sum() ** 2 + 1) + pt.exp(-x.max()) * x[2]
    sites = {mode: _nrt_allocation_sites(pytensor.function([x], out, mode=mode)) for mode in ("NUMBA", "LLVM")}
    assert sites["LLVM"] == 1  # the 0-d array returned to Python
    assert sites["LLVM"] <= sites["NUMBA"]


@pytest.mark.slow
@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_rewritten_graph_runs_on_other_linkers(linker):
    graph = logp_grad()
    clone = pytensor.function(graph.inputs, graph.outputs, mode="LLVM").maker.fgraph.clone()
    assert {type(n.op) for n in clone.apply_nodes} & set(SCALARIZE_OPS)
    fn = pytensor.function(clone.inputs, clone.outputs, mode=Mode(linker=linker, optimizer=None))
    want = pytensor.function(graph.inputs, graph.outputs, mode="NUMBA")(*graph.values)
    for got, expected in zip(fn(*graph.values), want, strict=True):
        assert_same_result(got, expected, f"{linker} on the LLVM-rewritten graph")


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 6),
    dtype=st.sampled_from(["float64", "float32", "int32", "int8"]),
    step=st.sampled_from([1, 2, -1, -2]),
)
def test_mixed_elemwise_taking_scalars_matches_py(n, dtype, step):
    x = pt.vector("x", dtype=dtype)
    out = pt.concatenate([x * x.sum() + x.max() - x[0], pt.atleast_1d(x.min())])
    value = (np.arange(n * 2, dtype=dtype) - 3)[::step]
    fn = pytensor.function([x], out, mode="LLVM")
    assert_same_result(fn(value), pytensor.function([x], out, mode=PY_MODE)(value), f"{dtype} step {step}")


def _no_numba_warnings(compile_and_call):
    with warnings.catch_warnings():
        warnings.simplefilter("error", NumbaWarning)
        return compile_and_call()


@pytest.mark.slow
def test_scan_with_a_full_reduction_and_a_scalar_index_inside():
    # PyTensor runs the active mode's rewrites inside inner graphs, which stock numba code compiles.
    x = pt.dvector("x")
    acc0 = pt.dscalar("acc0")

    def step(k, acc, x):
        return acc + (x * k).sum() + x[k] * x.max()

    result = pytensor.scan(step, sequences=[pt.arange(3)], outputs_info=[acc0], non_sequences=[x], return_updates=False)
    values = [np.linspace(0.5, 2.0, 4), 0.25]
    _no_numba_warnings(lambda: compare_llvm_numba_and_py([x, acc0], result, values))


@pytest.mark.slow
def test_op_from_graph_with_a_full_reduction_and_a_scalar_index_inside():
    a, b = pt.dvector("a"), pt.dvector("b")
    inner = OpFromGraph([a, b], [(a * b).sum() + a[1] * b.min()])
    x, y = pt.dvector("x"), pt.dvector("y")
    out = inner(x, y) * 2 + inner(y, x)
    values = [np.linspace(0.5, 2.0, 4), np.arange(4.0)]
    _no_numba_warnings(lambda: compare_llvm_numba_and_py([x, y], out, values))
