import llvmlite.binding as llvm
import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.tools.measure import (
    allocations_per_call,
    function_and_locals,
    function_instruction_count,
    kernel_instruction_count,
    kernel_ir,
    numba_dispatcher,
    prepare_inputs,
    time_per_call,
    times_per_call,
    uncached_kernel,
    unoptimized_ir_size,
)

MODES = ["NUMBA", "LLVM"]


@pytest.fixture(scope="module")
def doubled():
    x = pt.dvector("x")
    return {mode: pytensor.function([x], x * 2, mode=mode) for mode in MODES}


def test_dispatcher_is_what_the_function_calls(doubled):
    for mode, fn in doubled.items():
        fn(np.ones(3))
        # under LLVM, jit_fn is an entry calling the graph function (`llvm_backend.linker.graph_entry`)
        assert numba_dispatcher(fn) is (fn.vm.jit_fn if mode == "NUMBA" else fn.vm.graph_fn)
        assert numba_dispatcher(fn).signatures


def test_dispatcher_rejects_non_numba_functions():
    x = pt.dvector("x")
    with pytest.raises(TypeError, match="not compiled by a Numba linker"):
        numba_dispatcher(pytensor.function([x], x * 2, mode="FAST_COMPILE"))


def test_prepare_inputs_converts_like_the_function(doubled):
    [arg] = prepare_inputs(doubled["LLVM"], [[1, 2, 3]])
    assert isinstance(arg, np.ndarray) and arg.dtype == np.float64
    with pytest.raises(ValueError, match="takes 1 inputs, got 2"):
        prepare_inputs(doubled["LLVM"], [[1.0], [2.0]])


@pytest.mark.parametrize("mode", MODES)
def test_allocations_of_an_elementwise_graph(doubled, mode):
    # One MemInfo to unbox x, one for the output buffer.
    allocations = allocations_per_call(doubled[mode], [np.ones(8)])
    assert allocations.total == 2
    assert allocations.unboxing == 1
    assert allocations.net == 1


def test_allocations_count_every_intermediate_buffer():
    x = pt.dvector("x")
    # Two outputs that cannot share a buffer: two allocations beyond unboxing.
    fn = pytensor.function([x], [x * 2, pt.exp(x)], mode="NUMBA")
    assert allocations_per_call(fn, [np.ones(4)]).net == 2


@pytest.mark.parametrize(
    "mode, graph_fn, work",
    [
        ("NUMBA", "numba_funcified_fgraph", "fmul"),  # the graph's own x * 2, inlined into the kernel
        ("LLVM", "llvm_graph_fn", "fmul"),  # our loop's x * 2, emitted in the graph function
    ],
)
def test_kernel_ir_is_the_real_kernel_not_the_cache_stub(doubled, mode, graph_fn, work):
    # Under the default cache stock's dispatcher is a `*args` wrapper; the kernel is recompiled uncached.
    assert pytensor.config.numba__cache
    text = kernel_ir(doubled[mode])
    assert text.lstrip().startswith("define")
    assert graph_fn in text.split("{", 1)[0]
    assert work in text
    assert "PyObject" not in text and "cpython" not in text.split("{", 1)[0]


def test_instruction_counts_grow_with_the_graph():
    x = pt.dvector("x")
    small = pytensor.function([x], x * 2, mode="LLVM")
    large = pytensor.function([x], [x * i for i in range(2, 12)], mode="LLVM")
    assert kernel_instruction_count(large) > kernel_instruction_count(small) > 0
    small_ir, large_ir = unoptimized_ir_size(small), unoptimized_ir_size(large)
    assert large_ir.kernel > small_ir.kernel > 0
    assert small_ir.total >= small_ir.kernel


def test_uncached_kernel_records_unoptimized_modules(doubled):
    kernel = uncached_kernel(doubled["LLVM"])
    assert any(kernel.name in text for text in kernel.unoptimized_modules)
    assert kernel.dispatcher.overloads[kernel.signature].library is not None


@pytest.mark.slow
def test_times_per_call_are_positive_and_labelled(doubled):
    times = times_per_call({mode: (fn, [np.ones(8)]) for mode, fn in doubled.items()}, rounds=3)
    assert set(times) == set(MODES)
    assert all(0 < t < 1 for t in times.values())
    assert 0 < time_per_call(doubled["LLVM"], [np.ones(8)], rounds=3) < 1


@pytest.mark.parametrize("mode", MODES)
def test_shared_variables_and_constant_arguments_are_passed(mode):
    x = pt.dvector("x")
    w = pytensor.shared(np.full(3, 2.0), name="w")
    # A non-contiguous constant: stock embeds it as a dynamic global, LLVM passes it as an argument.
    strided = pt.constant(np.arange(12.0).reshape(3, 4)[:, 1])
    fn = pytensor.function([x], x * w + strided, mode=mode)
    args = prepare_inputs(fn, [np.ones(3)])
    np.testing.assert_array_equal(numba_dispatcher(fn)(*args)[0], fn(np.ones(3)))
    assert allocations_per_call(fn, [np.ones(3)]).net == 1
    assert kernel_instruction_count(fn) > 0


def test_the_call_floor_unboxes_each_input_and_does_nothing_else():
    """The floor of a 5-scalar logp+grad takes its 6 inputs as jit_fn does (5 0-d arrays and a vector): one
    allocation per array and nothing else, where LLVM's jit_fn of the same graph also allocates its outputs."""
    from llvm_backend.tools.graphs import logp_grad
    from llvm_backend.tools.measure import nrt_allocations_per_call
    from llvm_backend.tools.measurements import call_floor_runner

    graph = logp_grad(n_scalars=5)
    floor = call_floor_runner("floor", graph)
    assert floor.call() is None
    assert floor.unboxed_arrays == len(graph.inputs) == 6
    assert nrt_allocations_per_call(floor.call) == 6
    fn = pytensor.function(graph.inputs, graph.outputs, mode="LLVM")
    values = [var.type.filter(v) for var, v in zip(graph.inputs, graph.values, strict=True)]
    assert nrt_allocations_per_call(lambda: fn.vm.jit_fn(*values)) > 6


LOCAL_CALLS_IR = """
declare void @external()

define internal void @inner() {
entry:
  ret void
}

define private void @middle() {
entry:
  call void @inner()
  ret void
}

define void @other() {
entry:
  ret void
}

define void @kernel() {
entry:
  call void @middle()
  call void @other()
  call void @external()
  call void @middle()
  ret void
}
"""


def test_a_function_counts_with_the_module_local_functions_it_calls():
    """What LLVM left uninlined of a kernel's own code is the module's internal and private functions it calls
    (transitively); functions others may call, and declarations, are not its code."""
    module = llvm.parse_assembly(LOCAL_CALLS_IR)
    assert [f.name for f in function_and_locals(module, "kernel")] == ["kernel", "middle", "inner"]
    assert function_instruction_count(LOCAL_CALLS_IR, "kernel") == 5 + 2 + 1
    assert function_instruction_count(LOCAL_CALLS_IR, "other") == 1
