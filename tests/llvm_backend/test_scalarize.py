import llvmlite.binding as llvm
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pytensor.compile.mode import Mode
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.math import Sum

import llvm_backend  # noqa: F401
from llvm_backend.graphs import logp_grad
from llvm_backend.measure import allocations_per_call, uncached_kernel
from llvm_backend.scalar_ops import JoinScalars, ScalarCAReduce, ScalarizedElemwise, ScalarSubtensor
from llvm_backend.testing import PY_MODE, assert_same_result, compare_llvm_numba_and_py

OUR_OPS = (ScalarCAReduce, ScalarSubtensor, JoinScalars, ScalarizedElemwise)

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


@pytest.mark.parametrize("reduction", list(REDUCTIONS))
@pytest.mark.parametrize("dtype", ["int8", "int64", "float32", "float64"])
def test_full_reduction_consumed_by_scalar_math(reduction, dtype):
    x = pt.vector("x", dtype=dtype)
    out = REDUCTIONS[reduction](x) * 2 + 1
    values = [np.array([3, -1, 2, 5], dtype=dtype)]
    fn, _ = compare_llvm_numba_and_py([x], out, values)
    assert ScalarCAReduce in _ops(fn)
    net = _net_allocations([x], out, values)
    assert net["LLVM"] <= net["NUMBA"]
    # The returned 0-d output, plus any vector PyTensor's own rewrites put before the reduction
    # (an integer min(x) becomes -max(-x); all(x) of ints becomes all(neq(x, 0))).
    vectors = [o for n in fn.maker.fgraph.apply_nodes for o in n.outputs if isinstance(n.op, Elemwise)]
    assert all(v.ndim == 1 for v in vectors)
    assert net["LLVM"] == 1 + len(vectors)


@pytest.mark.parametrize("reduction", ["sum", "prod", "max", "min"])
def test_reductions_with_nan_and_inf(reduction):
    # Against the py linker only: stock NUMBA's max/min skip a NaN (max([1, nan, 2]) is 2 there).
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


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_empty_max_and_min_match_stock_numba(reduction):
    # numpy (the py linker) raises on an empty max; stock numba returns the reduction's start value.
    x = pt.dvector("x")
    out = REDUCTIONS[reduction](x) + 1
    results = [pytensor.function([x], out, mode=mode)(np.array([])) for mode in ("NUMBA", "LLVM")]
    assert_same_result(results[1], results[0], "empty reduction")


def test_accumulator_dtype_is_honoured():
    x = pt.bvector("x")
    fn, total = compare_llvm_numba_and_py([x], pt.sum(x, acc_dtype="int64") * 1, [np.full(100, 100, dtype="int8")])
    assert total == 10000


@settings(max_examples=20, deadline=None)
@given(
    shape=st.lists(st.integers(0, 4), min_size=1, max_size=3),
    layout=st.sampled_from(["C", "F", "strided", "reversed"]),
    reduction=st.sampled_from(list(REDUCTIONS)),
)
def test_full_reductions_of_any_layout_match_py(shape, layout, reduction):
    if reduction in ("max", "min") and 0 in shape:
        return  # numpy raises on an empty max (see test_empty_max_and_min_match_stock_numba)
    x = pt.tensor("x", dtype="float64", shape=(None,) * len(shape))
    # Positive values: a sum of values of both signs can cancel to ~1e-16, where the order of the additions
    # (ours sequential, numpy's pairwise) decides every digit, and no relative comparison means anything.
    base = np.arange(np.prod(shape) * 2, dtype="float64").reshape([*shape[:-1], shape[-1] * 2]) / 7 + 1
    value = {"C": base[..., ::2].copy(), "F": np.asfortranarray(base[..., ::2]), "strided": base[..., ::2],
             "reversed": base[..., ::-2]}[layout]
    fn = pytensor.function([x], REDUCTIONS[reduction](x) * 3, mode="LLVM")
    want = pytensor.function([x], REDUCTIONS[reduction](x) * 3, mode=PY_MODE)
    assert_same_result(fn(value), want(value), f"{reduction} of {layout} {shape}")


def test_scalar_index_consumed_by_scalar_math():
    x, i = pt.dvector("x"), pt.lscalar("i")
    out = pt.sqrt(x[3] ** 2 + x[i])
    values = [np.arange(5.0), -1]
    fn, _ = compare_llvm_numba_and_py([x, i], out, values)
    assert ScalarSubtensor in _ops(fn)
    assert allocations_per_call(fn, values).net == 1


@pytest.mark.parametrize("mode", ["NUMBA", "LLVM"])
def test_scalar_index_out_of_bounds_raises_index_error(mode):
    x, i = pt.dvector("x"), pt.lscalar("i")
    fn = pytensor.function([x, i], x[i] * 2, mode=mode)
    for bad in (3, -4):
        with pytest.raises(IndexError):
            fn(np.arange(3.0), bad)


def test_logp_grad_allocations_at_least_halved():
    graph = logp_grad()
    fn, _ = compare_llvm_numba_and_py(graph.inputs, graph.outputs, graph.values)
    assert {JoinScalars, ScalarizedElemwise, ScalarCAReduce} <= _ops(fn)
    net = _net_allocations(graph.inputs, graph.outputs, graph.values)
    assert net["LLVM"] <= net["NUMBA"] / 2


@pytest.mark.parametrize(
    "build",
    [
        lambda x: [x.sum(), x.sum() * 2, x * x.sum()],  # a box still read, shared by two consumers
        lambda x: [pt.concatenate([pt.atleast_1d(x.max()), x, pt.atleast_1d(x[0])])],
        lambda x: [pt.stack([x.sum(), x.min(), x[1]]) * x[:3]],  # MakeVector of scalars
        lambda x: [x.sum() + x.max(), pt.exp(x) * x.prod()],
        # stock writes exp(x) * sum in place of exp(x); the sum's box is still read as an output
        lambda x: [pt.exp(x) * pt.exp(x).sum(), pt.exp(x).sum()],
    ],
)
def test_never_more_allocations_than_stock(build):
    x = pt.dvector("x")
    outputs = build(x)
    values = [np.linspace(0.5, 2.0, 5)]
    compare_llvm_numba_and_py([x], outputs, values)
    net = _net_allocations([x], outputs, values)
    assert net["LLVM"] <= net["NUMBA"]


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
    assert sites["NUMBA"] > sites["LLVM"]


def test_rewrites_do_not_fire_in_numba_mode():
    graph = logp_grad()
    fn = pytensor.function(graph.inputs, graph.outputs, mode="NUMBA")
    assert not _ops(fn) & set(OUR_OPS)


@pytest.mark.parametrize("linker", ["py", "cvm"])
def test_rewritten_graph_runs_on_other_linkers(linker):
    graph = logp_grad()
    fgraph = pytensor.function(graph.inputs, graph.outputs, mode="LLVM").maker.fgraph
    assert {type(n.op) for n in fgraph.apply_nodes} & set(OUR_OPS)
    inputs, outputs = fgraph.clone().inputs, None
    clone = fgraph.clone()
    inputs, outputs = clone.inputs, clone.outputs
    fn = pytensor.function(inputs, outputs, mode=Mode(linker=linker, optimizer=None))
    want = pytensor.function(graph.inputs, graph.outputs, mode="NUMBA")(*graph.values)
    for got, expected in zip(fn(*graph.values), want, strict=True):
        assert_same_result(got, expected, f"{linker} on the LLVM-rewritten graph")


def test_complex_accumulator_into_a_real_output_stays_stock():
    x = pt.dvector("x")
    out = Sum(axis=None, dtype="float64", acc_dtype="complex128")(x) * 2
    fn, result = compare_llvm_numba_and_py([x], out, [np.arange(3.0)])
    assert ScalarCAReduce not in _ops(fn) and result == 6.0


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
    assert {ScalarizedElemwise, JoinScalars} <= _ops(fn)
    assert_same_result(fn(value), pytensor.function([x], out, mode=PY_MODE)(value), f"{dtype} step {step}")
