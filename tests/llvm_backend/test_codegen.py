import ast
import operator
import re
from functools import reduce

import llvmlite.binding as llvm
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.codegen import tuple_source
from llvm_backend.dispatch import MAX_ITEMS
from llvm_backend.tools.measure import allocations_per_call, kernel_ir, uncached_kernel, unoptimized_ir_size
from llvm_backend.tools.testing import compare_llvm_numba_and_py


def _widest_display(source: str) -> int:
    widths = [0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Tuple | ast.List):
            widths.append(len(node.elts))
        elif isinstance(node, ast.Call):
            widths.append(len(node.args))
    return max(widths)


@pytest.mark.parametrize("n", [1, 30, 31, 61, 901, 1000])
def test_tuple_sources_stay_narrow_and_keep_order(n):
    names = [f"x{i}" for i in range(n)]
    source = tuple_source(names)
    assert _widest_display(source) <= MAX_ITEMS
    assert [node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name) and node.id[0] == "x"]
    env = {f"x{i}": i for i in range(n)} | {"flatten_tuple": lambda t: tuple(x for g in t for x in g)}
    assert eval(source, env) == tuple(range(n))


def _vectors(n):
    return [pt.dvector(f"x{i}") for i in range(n)], [np.full(4, float(i)) for i in range(n)]


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 30, 31, 32, 100])
def test_many_inputs_and_outputs(n):
    xs, values = _vectors(n)
    compare_llvm_numba_and_py(xs, [x * 2 for x in xs], values)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 30, 31, 32, 100])
def test_many_inputs_one_output(n):
    # A chain of binary adds: fusion makes it one n-input Add under NUMBA and LLVM, while the py
    # reference (minimal rewrites) keeps the chain, since numpy ufuncs take at most 32 operands.
    xs, values = _vectors(n)
    compare_llvm_numba_and_py(xs, reduce(operator.add, (x.sum() for x in xs)), values)


@pytest.mark.slow
@pytest.mark.parametrize("n", [31, 60])
def test_wide_concatenate(n):
    xs, values = _vectors(n)
    compare_llvm_numba_and_py(xs, pt.concatenate(xs), values)


def test_graph_function_ir_grows_linearly_with_width():
    def graph_ir(n):
        xs, _ = _vectors(n)
        fn = pytensor.function(xs, [x * 2 for x in xs] + [pt.concatenate(xs)], mode="LLVM")
        return unoptimized_ir_size(fn).kernel

    small, large = graph_ir(32), graph_ir(64)
    assert small > 0
    assert large < 2.2 * small


@pytest.mark.parametrize("rewrite_cache", ["0", "1"], ids=["rewritten", "through-the-rewrite-cache"])
def test_constants_numba_cannot_embed_become_arguments(monkeypatch, rewrite_cache):
    # Strided constants (a design matrix's columns) are embedded: PyTensor types a contiguous copy of one
    # up to 1 MB. An array over 1 MB would be a dynamic global, which makes the function uncacheable.
    monkeypatch.setenv("LLVM_BACKEND_REWRITE_CACHE", rewrite_cache)
    x = pt.dvector("x")
    design = np.arange(40.0).reshape(10, 4)
    columns = [pt.constant(design[:, i]) for i in range(4)]
    large = np.linspace(0.0, 1.0, 200_000)
    out = sum(c * x[i] for i, c in enumerate(columns)), pt.exp(pt.constant(large) * x[0]).sum()
    fn, result = compare_llvm_numba_and_py([x], list(out), [np.arange(4.0)])
    np.testing.assert_allclose(result[0], design @ np.arange(4.0))
    [(_, value)] = fn.vm.graph_source.constant_params
    assert value.nbytes == large.nbytes


def _mixed_inputs(n):
    """``n`` inputs cycling through float64 vectors (C, strided, reversed), int32 vectors, float64
    matrices (Fortran) and 0-d float64, with values."""
    kinds = [
        (pt.dvector, lambda i: np.arange(5.0) + i),
        (pt.dvector, lambda i: (np.arange(10.0) - i)[::2]),
        (pt.ivector, lambda i: (np.arange(5) * i).astype("int32")),
        (pt.dmatrix, lambda i: np.asfortranarray(np.arange(6.0).reshape(2, 3) * i)),
        (pt.dscalar, lambda i: np.array(0.5 * i)),
        (pt.dvector, lambda i: (np.arange(5.0) * i)[::-1]),
    ]
    variables, values = [], []
    for i in range(n):
        make, value = kinds[i % len(kinds)]
        variables.append(make(f"v{i}"))
        values.append(value(i))
    return variables, values


@pytest.mark.slow
@pytest.mark.parametrize("n", [31, 45])
def test_wide_graphs_with_mixed_inputs_and_outputs_pack_and_list_them(n):
    vs, values = _mixed_inputs(n)
    outs = [v * 2 for v in vs] + [vs[0], vs[3], vs[0] * 2]
    fn, _ = compare_llvm_numba_and_py(vs, outs, values)
    graph = fn.vm.graph_source
    assert {str(p.numba_type.item_type) for p in graph.packs} >= {"array(float64, 1d, A)", "array(int32, 1d, A)"}
    assert len(graph.output_lists) >= 3
    assert sorted(graph.direct_outputs + [i for listed in graph.output_lists for i in listed]) == list(range(len(outs)))


def test_outputs_returned_in_rows_allocate_no_more_than_stock():
    xs, values = _vectors(MAX_ITEMS + 10)
    outputs = [x * 2 for x in xs]
    fn, _ = compare_llvm_numba_and_py(xs, outputs, values)
    assert fn.vm.graph_source.output_lists
    stock = pytensor.function(xs, outputs, mode="NUMBA")
    assert allocations_per_call(fn, values).total <= allocations_per_call(stock, values).total


@pytest.mark.slow
@pytest.mark.parametrize("n", [30, MAX_ITEMS + 10])
def test_the_kernel_makes_no_reference_counts_on_its_inputs_as_stock_makes_none(n):
    """The sum of each input's sum, the inputs taken one by one (30) or in a pack (40): no incref or decref of
    an input is left in the kernel, as in stock's. It kept one pair per input, 0.25 µs per call at 30."""
    xs, values = _vectors(n)
    out = pt.stack([x.sum() for x in xs]).sum()
    fn, _ = compare_llvm_numba_and_py(xs, [out], values)
    stock = pytensor.function(xs, out, mode="NUMBA")
    for compiled in (fn, stock):
        assert not re.findall(r"@NRT_(?:inc|dec)ref\(ptr %arg\.", kernel_ir(compiled))
    assert allocations_per_call(fn, values).total == allocations_per_call(stock, values).total


@pytest.mark.slow
def test_joins_of_input_slices_and_of_intermediates():
    xs, values = _vectors(70)
    outs = [
        pt.concatenate(xs[5:45]),
        pt.join(-1, *[x * (i + 1) for i, x in enumerate(xs[:40])]),
        pt.concatenate(xs[::-1][:35]),
    ]
    fn, results = compare_llvm_numba_and_py(xs, outs, values)
    # All three take their arrays as one pack: the first items 5..44 of the input pack (a view of its
    # table), the others a table built in the frame, of intermediates and of pack items in reverse order.
    joins = [call for call in fn.vm.graph_source.plan.calls if call.pack_from is not None]
    assert sorted(len(call.arguments) - call.pack_from for call in joins) == [35, 40, 40]
    np.testing.assert_array_equal(results[0], np.concatenate(values[5:45]))


def test_a_wrong_input_to_a_packed_graph_is_a_type_error_even_when_trusted():
    xs, values = _vectors(40)
    fn = pytensor.function(xs, pt.concatenate(xs), mode="LLVM", trust_input=True)
    np.testing.assert_array_equal(fn(*values), np.concatenate(values))
    for bad in (np.zeros((2, 2)), np.zeros(4, "float32"), [1.0] * 4):
        with pytest.raises(TypeError, match="array pack item 7"):
            fn(*values[:7], bad, *values[8:])
    untrusted = pytensor.function(xs, pt.concatenate(xs), mode="LLVM")
    with pytest.raises(TypeError):
        untrusted(*values[:7], np.zeros((2, 2)), *values[8:])


def test_wrapper_and_signatures_do_not_grow_with_packed_inputs():
    """With packed inputs and listed outputs, numba's CPython wrapper of the graph function is the same
    size at 64 and 128 vectors, and no function it emits takes more than a few dozen parameters (a
    function of 128 arrays passed one by one takes 7 per array)."""

    def shape(n):
        xs, _ = _vectors(n)
        fn = pytensor.function(xs, [x * 2 for x in xs] + [pt.concatenate(xs)], mode="LLVM")
        module = llvm.parse_assembly(uncached_kernel(fn).optimized_ir)
        defined = [f for f in module.functions if not f.is_declaration]
        wrapper = [f for f in defined if f.name.startswith("_ZN7cpython")]
        assert len(wrapper) == 1
        return sum(1 for b in wrapper[0].blocks for _ in b.instructions), max(len(list(f.arguments)) for f in defined)

    (wrapper_64, widest_64), (wrapper_128, widest_128) = shape(64), shape(128)
    assert wrapper_64 == wrapper_128
    assert widest_64 == widest_128 < 40


def test_nodes_with_one_cache_key_share_one_function():
    xs, values = _vectors(5)
    fn, _ = compare_llvm_numba_and_py(xs, [x * 2 for x in xs], values)
    graph = fn.vm.graph_source
    assert len(graph.plan.calls) == 5
    assert len({call.function for call in graph.plan.calls}) == 1


def test_equal_op_from_graphs_are_converted_once(monkeypatch):
    from pytensor.compile.builders import OpFromGraph
    from pytensor.link.numba.dispatch import compile_ops

    converted = []
    convert = compile_ops.numba_funcify_and_cache_key

    def counting(op, *args, **kwargs):
        converted.append(op)
        return convert(op, *args, **kwargs)

    monkeypatch.setattr(compile_ops, "numba_funcify_and_cache_key", counting)
    x = pt.dvector("x")
    inner = OpFromGraph([x], [pt.exp(x) + 1])
    outer = OpFromGraph([x], [inner(x) * 2])
    y = pt.dvector("y")
    out = outer(inner(y)) + OpFromGraph([x], [pt.exp(x) + 1])(y)
    pytensor.function([y], out, mode="LLVM")
    assert len(converted) == 2  # the inner graphs of `inner` (and its equal) and of `outer`
    compare_llvm_numba_and_py([y], out, [np.array([0.0, 1.0])])


@pytest.mark.parametrize("cache", [True, False], ids=["cache-on", "cache-off"])
def test_node_functions_are_shared_with_the_cache_on_or_off(cache):
    from llvm_backend.tools.graphs import times_two

    graph = times_two(5)
    with pytensor.config.change_flags(numba__cache=cache):
        fn = pytensor.function(graph.inputs, graph.outputs, mode="LLVM")
        results = fn(*graph.values)
    functions = {id(call.function) for call in fn.vm.graph_source.plan.calls}
    assert len(fn.vm.graph_source.plan.calls) == 5 and len(functions) == 1
    for got, value in zip(results, graph.values, strict=True):
        np.testing.assert_array_equal(got, value * 2)


@pytest.mark.slow
def test_like_nodes_on_packed_inputs_are_one_loop_whatever_their_number():
    # y_i = x_i * 2 over n packed vectors, returned in one list: the calls are one run, so the graph
    # function's IR is the same for 40 and 80 of them.
    def kernel_size(n):
        xs, values = _vectors(n)
        fn, results = compare_llvm_numba_and_py(xs, [x * 2 for x in xs], values)
        for result, value in zip(results, values, strict=True):
            np.testing.assert_array_equal(result, value * 2)
        return unoptimized_ir_size(fn).kernel

    assert kernel_size(40) == kernel_size(80)


def test_the_tuple_source_of_nothing_is_the_empty_tuple():
    # the entry of a graph without inputs calls the graph function on it
    assert eval(tuple_source([])) == ()


def test_array_and_number_constants_are_the_plans_not_globals_of_the_function():
    x = pt.dvector("x")
    columns = np.arange(24.0).reshape(4, 6)
    out = sum(x * columns[:, i] for i in range(6)) + np.float64(2.5) * pt.exp(x)
    fn, _ = compare_llvm_numba_and_py([x], out, [np.linspace(-1.0, 1.0, 4)], rtol=1e-12)
    graph = fn.vm.graph_source
    arrays = [value for value in graph.plan.constants if isinstance(value, np.ndarray)]
    assert arrays and not any(isinstance(value, np.ndarray | np.number) for value in graph.global_env.values())
    assert graph.plan.n_passed == len(graph.params) + len(graph.embedded)
    assert all(name not in graph.source for name in graph.slot_names.values() if name.startswith("tensor_constant"))
