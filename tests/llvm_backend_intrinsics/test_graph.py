import re
import sys

import llvmlite.binding as llvm
import numba
import numpy as np
import pytest
from numba.core import errors
from numba.core.runtime import _nrt_python, rtsys

from llvm_backend.tools.measure import nrt_allocations_per_call
from llvm_backend_intrinsics.argpack import ArrayPack, ArrayPackType, pack_item
from llvm_backend_intrinsics.graph import GraphPlan, PlanCall, PlanItem, graph_intrinsic
from llvm_backend_intrinsics.join import linear_join


@numba.njit
def twice(x):
    return x * 2.0


@numba.njit
def add(x, y):
    return x + y


@numba.njit
def split(x):
    return x + 1.0, x - 1.0, x.sum()


@numba.njit
def total(*xs):
    out = xs[0].copy()
    for x in xs[1:]:
        out += x
    return out


@numba.njit
def scaled(x, factor=3.0):
    return x * factor


@numba.njit
def join_pack(axis, pack):
    return linear_join(axis, (pack,), np.float64)


@numba.njit
def checked(x):
    if x.sum() < 0:
        raise ValueError("negative sum")
    return x.copy()


def pack_of(arrays):
    dtype = arrays[0].dtype
    return ArrayPack(ArrayPackType.of(dtype, arrays[0].ndim, len(arrays)), dtype, list(arrays))


def compiled(plan):
    run = graph_intrinsic(plan)

    @numba.njit
    def graph(arguments):
        return run(arguments)

    return graph


def compiled_with_lists(plan):
    run = graph_intrinsic(plan, lists=True)

    @numba.njit
    def graph(arguments):
        return run(arguments)

    return graph


def allocations_balance(call, n_calls=50):
    call()
    _nrt_python.memsys_enable_stats()
    before = rtsys.get_allocation_stats()
    for _ in range(n_calls):
        call()
    after = rtsys.get_allocation_stats()
    return after.mi_alloc - before.mi_alloc == after.mi_free - before.mi_free


def test_calls_on_pack_items_fill_the_output_list():
    xs = [np.arange(4.0) + i for i in range(5)]
    plan = GraphPlan(
        n_arguments=1,
        items=tuple(PlanItem(1 + k, 0, k) for k in range(5)),
        calls=tuple(PlanCall(twice, (1 + k,), (6 + k,)) for k in range(5)),
        lists=((6, 7, 8, 9, 10),),
    )
    (listed,) = compiled(plan)((pack_of(xs),))
    assert isinstance(listed, list)
    for got, x in zip(listed, xs, strict=True):
        np.testing.assert_array_equal(got, x * 2)


def _listing_plan(n: int) -> GraphPlan:
    """``twice`` of each of a pack's ``n`` arrays, returned in one group, with the pack's first array listed
    twice more (a slot no call makes, and one in two places)."""
    return GraphPlan(
        n_arguments=1,
        items=tuple(PlanItem(1 + k, 0, k) for k in range(n)),
        calls=tuple(PlanCall(twice, (1 + k,), (1 + n + k,)) for k in range(n)),
        lists=((*(1 + n + k for k in range(n)), 1, 1),),
    )


def test_python_lists_are_built_without_a_heap_allocation_of_numbas():
    xs = [np.arange(4.0) + i for i in range(6)]
    pack = pack_of(xs)
    plan = _listing_plan(len(xs))
    as_rows, as_lists = compiled(plan), compiled_with_lists(plan)
    first = as_rows((pack,))[0]
    second = as_rows((pack_of([x + 10 for x in xs]),))[0]
    for got, inputs in ((first, xs), (second, [x + 10 for x in xs])):
        assert isinstance(got, list) and len(got) == len(xs) + 2
        for array, want in zip(got, [*(x * 2 for x in inputs), inputs[0], inputs[0]], strict=True):
            np.testing.assert_array_equal(array, want)
    rows = nrt_allocations_per_call(lambda: as_rows((pack,)))
    assert rows == len(xs) + len(xs)  # the outputs, and one MemInfo per pack item unboxed
    assert nrt_allocations_per_call(lambda: as_lists((pack,))) == rows + 1
    assert allocations_balance(lambda: as_rows((pack,)))
    del first
    assert sys.getrefcount(xs[0]) == sys.getrefcount(xs[1])


def test_numba_lists_are_read_in_compiled_code_and_python_lists_are_not():
    xs = [np.arange(3.0) + i for i in range(5)]
    plan = _listing_plan(len(xs))
    as_lists, as_python = graph_intrinsic(plan, lists=True), graph_intrinsic(plan)

    @numba.njit
    def total_of_lists(arguments):
        listed = as_lists(arguments)[0]
        return sum([x.sum() for x in listed])

    @numba.njit
    def first_of_python_list(arguments):
        return as_python(arguments)[0][0]

    assert total_of_lists((pack_of(xs),)) == sum(x.sum() * 2 for x in xs) + 2 * xs[0].sum()
    with pytest.raises(errors.TypingError, match="BoxedList"):
        first_of_python_list((pack_of(xs),))


def compiled_ir(function, *arguments) -> str:
    """Optimized IR of the njit ``function`` itself, compiled for ``arguments`` (what it calls inlined)."""
    compiled = function.overloads[tuple(numba.typeof(a) for a in arguments)]
    module = llvm.parse_assembly(compiled.library.get_llvm_str())
    return str(module.get_function(compiled.fndesc.mangled_name))


def test_the_caller_holds_no_reference_to_its_arguments_across_the_graph():
    """numba increfs each array it passes the graph and decrefs it after. The graph is a call of its own,
    whose failure is marked a raise, so numba's pruning removes each pair, as it does around stock's calls.
    Emitted inline, with arrays of its own released between, the graph kept 30 increfs and 30 decrefs."""
    n = 30
    doubled = tuple(PlanCall(twice, (k,), (n + k,)) for k in range(n))
    summed = PlanCall(total, tuple(range(n, 2 * n)), (2 * n,))
    plan = GraphPlan(n_arguments=n, calls=(*doubled, summed), outputs=(2 * n,))
    graph = compiled(plan)
    xs = tuple(np.arange(4.0) + k for k in range(n))
    np.testing.assert_array_equal(graph(xs)[0], 2 * sum(xs))
    caller = compiled_ir(graph, xs)
    assert "llvm_graph_body" not in caller  # inlined
    assert caller.count("@NRT_decref(") == n  # the doubled arrays, released after `total`
    assert not re.findall(r"@NRT_(?:inc|dec)ref\(ptr %arg\.", caller)
    assert allocations_balance(lambda: graph(xs))


def test_a_raise_out_of_the_graph_releases_what_the_caller_took():
    """The caller's references to its arguments are pruned on both paths, so an exception leaks none: the
    MemInfo numba makes to unbox the argument was never freed when the graph raised."""
    graph = compiled(GraphPlan(n_arguments=1, calls=(PlanCall(checked, (0,), (1,)),), outputs=(1,)))
    negative = (-np.ones(3),)

    def raising():
        with pytest.raises(ValueError, match="negative sum"):
            graph(negative)

    assert allocations_balance(raising)


@numba.njit
def positive(x):
    return x.sum() > 0


def test_a_boolean_output_returns_through_the_graph_call():
    """A boolean's value (i1) and data (i8) differ: the graph's function returns what numba's return slot
    holds, and its caller reads the value back (found by the fuzzer)."""
    plan = GraphPlan(
        n_arguments=1, calls=(PlanCall(positive, (0,), (1,)), PlanCall(summed, (0,), (2,))), outputs=(1, 2)
    )
    graph = compiled(plan)
    assert graph((np.ones(3),)) == (True, 3.0)
    assert graph((-np.ones(3),)) == (False, -3.0)


def test_values_flow_between_calls_and_returned_inputs_stay_alive():
    x, y = np.arange(3.0), np.ones(3)
    # slot 2 = x + y, slot 3 = 2 * slot 2, slot 4 = slot 3 + x; returns x itself, slot 4, and slot 3 twice
    plan = GraphPlan(
        n_arguments=2,
        calls=(PlanCall(add, (0, 1), (2,)), PlanCall(twice, (2,), (3,)), PlanCall(add, (3, 0), (4,))),
        outputs=(0, 4, 3, 3),
    )
    graph = compiled(plan)
    before = sys.getrefcount(x)
    same, result, doubled, again = graph((x, y))
    np.testing.assert_array_equal(result, (x + y) * 2 + x)
    for got, want in ((same, x), (doubled, (x + y) * 2), (again, (x + y) * 2)):
        np.testing.assert_array_equal(got, want)
    del same
    assert sys.getrefcount(x) == before
    assert allocations_balance(lambda: graph((x, y)))


def test_multiple_outputs_unused_ones_released():
    x = np.arange(5.0)
    plan = GraphPlan(n_arguments=1, calls=(PlanCall(split, (0,), (1, 2, 3)),), outputs=(2, 3))
    graph = compiled(plan)
    minus, summed = graph((x,))
    np.testing.assert_array_equal(minus, x - 1)
    assert summed == x.sum()
    assert allocations_balance(lambda: graph((x,)))


def test_star_arguments_and_defaults_fold_as_numba_calls_do():
    xs = [np.arange(3.0) * i for i in range(4)]
    plan = GraphPlan(
        n_arguments=4,
        calls=(PlanCall(total, (0, 1, 2, 3), (4,)), PlanCall(scaled, (4,), (5,))),
        outputs=(5,),
    )
    (result,) = compiled(plan)(tuple(xs))
    np.testing.assert_array_equal(result, sum(xs) * 3)


@pytest.mark.parametrize("borrowed", [True, False])
def test_packed_arguments_from_a_pack_slice_or_a_frame_table(borrowed):
    xs = [np.arange(3.0) + 10 * i for i in range(4)]
    items = tuple(PlanItem(2 + k, 1, k) for k in range(4))
    if borrowed:
        # items 1..3 of the argument pack, in order: the call gets a view of the pack's table
        calls = (PlanCall(join_pack, (0, 3, 4, 5), (6,), pack_from=1),)
        want = np.concatenate(xs[1:])
    else:
        # a computed value and pack items out of order: the call gets a table built in the frame
        calls = (PlanCall(twice, (2,), (6,)), PlanCall(join_pack, (0, 5, 6, 3), (7,), pack_from=1))
        want = np.concatenate([xs[3], xs[0] * 2, xs[1]])
    plan = GraphPlan(n_arguments=2, items=items, calls=calls, outputs=(calls[-1].outputs[0],))
    graph = compiled(plan)
    (joined,) = graph((0, pack_of(xs)))
    np.testing.assert_array_equal(joined, want)
    assert allocations_balance(lambda: graph((0, pack_of(xs))))


def test_an_exception_in_a_call_propagates():
    plan = GraphPlan(n_arguments=1, calls=(PlanCall(twice, (0,), (1,)), PlanCall(checked, (1,), (2,))), outputs=(2,))
    graph = compiled(plan)
    np.testing.assert_array_equal(graph((np.ones(2),))[0], np.full(2, 2.0))
    with pytest.raises(ValueError, match="negative sum"):
        graph((-np.ones(2),))


def test_a_call_that_cannot_be_typed_names_its_label():
    plan = GraphPlan(n_arguments=1, calls=(PlanCall(add, (0,), (1,), label="the add node"),), outputs=(1,))
    with pytest.raises(errors.TypingError, match="the add node"):
        compiled(plan)((np.ones(2),))


@numba.njit
def summed(x):
    return x.sum()


def test_several_outputs_need_a_tuple_or_an_iterable():
    plan = GraphPlan(n_arguments=1, calls=(PlanCall(summed, (0,), (1, 2), label="two from one"),), outputs=(1,))
    with pytest.raises(errors.TypingError, match="two from one"):
        compiled(plan)((np.ones(2),))


def test_pack_item_still_reads_packs_in_python_code():
    @numba.njit
    def second(pack):
        return pack_item(pack, 1).sum()

    assert second(pack_of([np.ones(2), np.arange(4.0)])) == 6.0


def test_the_tuple_may_be_built_in_compiled_code_with_constants():
    plan = GraphPlan(n_arguments=2, calls=(PlanCall(scaled, (0, 1), (2,)),), outputs=(2,))
    run = graph_intrinsic(plan)

    @numba.njit
    def graph(x):
        return run((x, 3))

    np.testing.assert_array_equal(graph(np.arange(3.0))[0], np.arange(3.0) * 3)


@numba.njit
def halves(x):
    return [x[i : i + 2] for i in range(0, len(x), 2)]


@numba.njit
def rows(x):
    return x + 0.0


@pytest.mark.parametrize("function", [halves, rows])
def test_iterable_results_unpack_like_numba_assignments(function):
    """A node function may return its outputs as a list (stock's Split) or an array's rows (UnravelIndex)."""
    x = np.arange(4.0)
    plan = GraphPlan(n_arguments=1, calls=(PlanCall(function, (0,), (1, 2), label="two of them"),), outputs=(1, 2))
    graph = compiled(plan)
    first, second = graph((x if function is halves else x.reshape(2, 2),))
    np.testing.assert_array_equal(first, x[:2])
    np.testing.assert_array_equal(second, x[2:])
    assert allocations_balance(lambda: graph((x if function is halves else x.reshape(2, 2),)))
    with pytest.raises(ValueError, match="two of them: expected 2 outputs"):
        graph((np.arange(6.0),) if function is halves else (np.arange(6.0).reshape(3, 2),))


def test_arguments_that_are_not_a_tuple_of_n_values_are_a_typing_error_naming_them():
    graph = compiled(GraphPlan(n_arguments=2, calls=(PlanCall(add, (0, 1), (2,)),), outputs=(2,)))
    with pytest.raises(errors.TypingError, match=r"run_graph: expected a tuple of 2 arguments, got array\(float64"):
        graph(np.ones(2))
    with pytest.raises(errors.TypingError, match=r"run_graph: expected a tuple of 2 arguments, got UniTuple\(array"):
        graph((np.ones(2),))


@pytest.mark.parametrize(
    "argument, message",
    [
        (np.ones(2), r"run_graph: slot 0 is array\(float64, 1d, C\), which has no item 1"),
        (pack_of([np.ones(2)]), r"run_graph: slot 0 is ArrayPack\(array\(float64, 1d, A\), 1\), which has no item 1"),
    ],
    ids=["array", "short pack"],
)
def test_an_item_of_what_is_not_a_pack_of_enough_arrays_is_a_typing_error(argument, message):
    plan = GraphPlan(n_arguments=1, items=(PlanItem(1, 0, 1),), calls=(PlanCall(twice, (1,), (2,)),), outputs=(2,))
    with pytest.raises(errors.TypingError, match=message):
        compiled(plan)((argument,))


def test_packed_arguments_of_mixed_dtypes_are_a_typing_error_naming_the_call():
    plan = GraphPlan(n_arguments=3, calls=(PlanCall(join_pack, (0, 1, 2), (3,), pack_from=1, label="the join"),))
    message = r"the join: packed arguments .* got array\(float64, 1d, C\), array\(int64, 1d, C\)"
    with pytest.raises(errors.TypingError, match=message):
        compiled(plan)((0, np.ones(2), np.arange(2)))


def _run_plan(n, backward):
    """``c = twice(x)``, then ``y_k = add(pack[k], c)`` for every item (in reverse order if ``backward``),
    the ``y_k`` returned in one list in item order."""
    order = range(n - 1, -1, -1) if backward else range(n)
    items = tuple(PlanItem(3 + k, 1, k) for k in range(n))
    calls = (PlanCall(twice, (0,), (2,)), *(PlanCall(add, (3 + k, 2), (3 + n + k,)) for k in order))
    return GraphPlan(n_arguments=2, items=items, calls=calls, lists=(tuple(3 + n + k for k in range(n)),))


@pytest.mark.parametrize("backward", [False, True], ids=["forward", "backward"])
def test_a_run_of_like_calls_is_one_loop_with_its_invariant_released_after_it(backward):
    from llvm_backend.tools.measure import recording_ir_modules

    x = np.arange(3.0)
    xs = [np.arange(3.0) + 10 * k for k in range(7)]
    graph = compiled(_run_plan(7, backward))
    with recording_ir_modules() as modules:
        (listed,) = graph((x, pack_of(xs)))
    for got, item in zip(listed, xs, strict=True):
        np.testing.assert_array_equal(got, item + 2 * x)
    # the module defining the graph function (not its CPython or C wrappers), before LLVM optimizes it
    [module] = [str(m) for m in modules if re.search(r"define [^@]*@\"_ZN5tests\S*5graph", str(m))]
    calls = re.findall(r" call [^@]*@\"?(_ZN\S*test_graph(?:3add|5twice))", module)
    assert [name.endswith("3add") for name in calls] == [False, True]
    assert allocations_balance(lambda: graph((x, pack_of(xs))))


def test_runs_are_found_from_min_run_calls_and_broken_by_any_difference():
    from llvm_backend_intrinsics.graph import MIN_RUN, _runs

    def runs(plan, typed=None):
        found = _runs(plan, typed or [("typed",)] * len(plan.calls))
        return {start: (run.length, run.step) for start, run in found.items()}

    n = MIN_RUN + 2
    assert runs(_run_plan(n, backward=False)) == {1: (n, 1)}
    assert runs(_run_plan(n, backward=True)) == {1: (n, -1)}
    assert runs(_run_plan(MIN_RUN - 1, backward=False)) == {}
    plan = _run_plan(n, backward=False)
    retyped = [("typed",)] * 3 + [("other",)] * (len(plan.calls) - 3)
    assert runs(plan, retyped) == {3: (n - 2, 1)}
    # an output read by a later call cannot be stored in the list and forgotten
    read_later = GraphPlan(
        plan.n_arguments,
        plan.items,
        (*plan.calls, PlanCall(twice, (plan.calls[3].outputs[0],), (99,))),
        (99,),
        plan.lists,
    )
    assert runs(read_later) == {}
    # items out of step
    shuffled = GraphPlan(plan.n_arguments, plan.items, (plan.calls[0], *plan.calls[2:], plan.calls[1]), (), plan.lists)
    assert runs(shuffled) == {1: (n - 1, 1)}


def test_an_exception_inside_a_run_propagates():
    n = 6
    items = tuple(PlanItem(1 + k, 0, k) for k in range(n))
    calls = tuple(PlanCall(checked, (1 + k,), (1 + n + k,)) for k in range(n))
    graph = compiled(GraphPlan(1, items, calls, lists=(tuple(1 + n + k for k in range(n)),)))
    xs = [np.ones(2) * k for k in range(n)]
    assert len(graph((pack_of(xs),))[0]) == n
    xs[4] = -np.ones(2)
    with pytest.raises(ValueError, match="negative sum"):
        graph((pack_of(xs),))
