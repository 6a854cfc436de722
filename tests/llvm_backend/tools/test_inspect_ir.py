import re

import llvmlite.binding as llvm
import pytensor
import pytensor.tensor as pt
import pytest

import llvm_backend  # noqa: F401
from llvm_backend.tools.inspect_ir import (
    Inspection,
    InspectionError,
    IRStats,
    format_diff,
    format_stats,
    ir_stats,
    load_target,
    readable_symbol,
    stage_text,
)

# Hand-counted: @scaled_copy has 2 loops (one vectorized), 1 NRT allocation, 3 calls; @helper 2 instructions.
TINY_IR = """
declare ptr @NRT_MemInfo_alloc_aligned(i64, i32)
declare void @NRT_decref(ptr)

define double @helper(double %x) {
entry:
  %y = fmul double %x, 2.0
  ret double %y
}

define ptr @scaled_copy(ptr %src, i64 %n) {
entry:
  %mi = call ptr @NRT_MemInfo_alloc_aligned(i64 %n, i32 32)
  br label %vector.body

vector.body:
  %i = phi i64 [ 0, %entry ], [ %i.next, %vector.body ]
  %p = getelementptr double, ptr %src, i64 %i
  %v = load <4 x double>, ptr %p
  %w = fmul <4 x double> %v, <double 2.0, double 2.0, double 2.0, double 2.0>
  store <4 x double> %w, ptr %p
  %i.next = add i64 %i, 4
  %more = icmp slt i64 %i.next, %n
  br i1 %more, label %vector.body, label %tail

tail:
  %j = phi i64 [ %i.next, %vector.body ], [ %j.next, %tail.latch ]
  %q = getelementptr double, ptr %src, i64 %j
  %s = load double, ptr %q
  %t = call double @helper(double %s)
  store double %t, ptr %q
  br label %tail.latch

tail.latch:
  %j.next = add i64 %j, 1
  %again = icmp slt i64 %j.next, %n
  br i1 %again, label %tail, label %exit

exit:
  call void @NRT_decref(ptr %mi)
  ret ptr %mi
}
"""


def test_stats_of_one_function_match_the_hand_count():
    stats = ir_stats(TINY_IR, "scaled_copy")
    assert stats.opcodes == {
        "call": 3,
        "br": 4,
        "phi": 2,
        "getelementptr": 2,
        "load": 2,
        "fmul": 1,
        "store": 2,
        "add": 2,
        "icmp": 2,
        "ret": 1,
    }
    assert stats.instructions == 21
    assert stats.functions == 1
    assert stats.calls == {"NRT_MemInfo_alloc_aligned": 1, "helper": 1, "NRT_decref": 1}
    assert stats.nrt_allocation_sites == 1
    assert stats.loops == 2
    assert stats.vectorized_loops == 1


def test_stats_of_a_module_sum_its_defined_functions():
    stats = ir_stats(TINY_IR)
    assert stats.functions == 2
    assert stats.instructions == 23
    assert stats.opcodes["fmul"] == 2 and stats.opcodes["ret"] == 2
    assert stats == ir_stats(TINY_IR, "scaled_copy") + ir_stats(TINY_IR, "helper")


def test_stats_table_puts_modes_side_by_side():
    table = format_stats({"LLVM": ir_stats(TINY_IR, "helper"), "NUMBA": IRStats()}, "tiny")
    lines = table.splitlines()
    assert lines[0] == "| tiny | LLVM | NUMBA |"
    assert "| instructions | 2 | 0 |" in lines
    assert "| opcode fmul | 1 | 0 |" in lines


def test_readable_symbol_reads_numba_mangling():
    mangled = "_ZN8pytensor4link5utils22numba_funcified_fgraphB39v976B100c8tJTIeFIjxE5ArrayIdLi1E1C7mutable7alignedE"
    assert readable_symbol(mangled) == "pytensor.link.utils.numba_funcified_fgraph"
    assert readable_symbol("_ZN4impl12_3clocals_3e4implE5Array") == "impl.<locals>.impl"
    assert readable_symbol("NRT_decref") == "NRT_decref"


def test_diff_names_both_sides_or_says_they_match():
    diff = format_diff("a\nb\n", "a\nc\n", "x [LLVM]", "x [NUMBA]")
    assert diff.splitlines()[:2] == ["--- x [LLVM]", "+++ x [NUMBA]"]
    assert "-b" in diff and "+c" in diff
    assert format_diff("same", "same", "x [LLVM]", "x [NUMBA]") == "no differences between x [LLVM] and x [NUMBA]"


@pytest.fixture(scope="module")
def doubled():
    """x * 2 under stock NUMBA: its elemwise node allocates the output array on the NRT heap."""
    x = pt.dvector("x")
    return Inspection(pytensor.function([x], x * 2, mode="NUMBA"))


def test_a_known_heap_allocation_shows_under_numba(doubled):
    # The linked, optimized module: numba emits its allocation helper once per process, so the `llvm`
    # stage of a later compile may not hold it.
    stats = doubled.stats("llvm-opt")
    assert stats.nrt_allocation_sites >= 1
    assert stats.calls["NRT_MemInfo_alloc_aligned"] == stats.nrt_allocation_sites


def test_kernel_only_ir_is_the_kernel_function(doubled):
    for stage in ("llvm", "llvm-opt"):
        text = doubled.text(stage, kernel_only=True)
        assert text.lstrip().startswith("define")
        assert doubled.kernel.name in text.split("{", 1)[0]
        assert text.count("define ") == 1
        assert doubled.stats(stage, kernel_only=True).functions == 1


def test_kernel_only_ir_of_the_llvm_mode_holds_the_function_of_the_graphs_calls():
    """The graph intrinsic emits the calls in a module-local function, the loop of the Elemwise in another and
    its Composite's body in a third: kernel-only IR shows them beside the kernel until LLVM inlines them."""
    x = pt.dvector("x")
    inspection = Inspection(pytensor.function([x], pt.exp(x) * 2, mode="LLVM"))
    text = inspection.text("llvm", kernel_only=True)
    assert text.count("define ") == 4 and "@llvm_graph_body(" in text and "@llvm_loop(" in text
    assert "@llvm_graph_body.1(" in text
    assert inspection.stats("llvm", kernel_only=True).functions == 4
    assert inspection.stats("llvm-opt", kernel_only=True).functions == 1


def test_whole_module_holds_numba_wrappers_kernel_only_does_not(doubled):
    whole = doubled.text("llvm-opt")
    names = [readable_symbol(f.name) for f in llvm.parse_assembly(whole).functions if not f.is_declaration]
    assert any(name.startswith("cpython.") for name in names)
    assert ir_stats(whole).functions == len(names) > doubled.stats("llvm-opt", kernel_only=True).functions


def test_kernel_only_asm_holds_the_kernel_alone(doubled):
    asm = doubled.text("asm", kernel_only=True)
    assert f"{doubled.kernel.name}:" in asm
    assert "cpython" not in asm
    assert "cpython" in doubled.text("asm")


def test_graph_and_generated_source(doubled):
    assert "Mul" in doubled.text("graph")
    source = doubled.text("py")
    assert source.startswith("def ") and "(x)" in source.splitlines()[0]


def test_llvm_source_lists_the_calls_its_intrinsic_emits():
    x, y = pt.dvector("x"), pt.dvector("y")
    source = Inspection(pytensor.function([x, y], [x * 2, pt.concatenate([x, y])], mode="LLVM")).text("py")
    assert source.startswith("def llvm_graph_fn(x, y):")
    calls = [line for line in source.splitlines() if line.startswith("#   ") and "<-" in line]
    assert len(calls) == 2 and any("Mul" in line for line in calls) and any("Join" in line for line in calls)


def test_stage_text_takes_a_compiled_function():
    x = pt.dvector("x")
    fn = pytensor.function([x], pt.exp(x), mode="LLVM")
    assert "Exp" in stage_text(fn, "graph")
    assert stage_text(fn, "llvm-opt", kernel_only=True).lstrip().startswith("define")


def test_non_numba_modes_have_only_the_graph_stage():
    x = pt.dvector("x")
    inspection = Inspection(pytensor.function([x], x * 2, mode="CVM"))
    assert "Mul" in inspection.text("graph")
    with pytest.raises(InspectionError, match="not a Numba linker"):
        inspection.text("llvm")


def test_stats_need_an_ir_stage(doubled):
    with pytest.raises(InspectionError, match="stats count LLVM IR"):
        doubled.stats("asm")


def test_targets_load_from_names_modules_and_files(tmp_path):
    inputs, outputs = load_target("full_reduction")
    assert [i.name for i in inputs] == ["x"] and len(outputs) == 1
    inputs, _ = load_target("llvm_backend.tools.graphs:scalar_index")
    assert [i.name for i in inputs] == ["x"]
    path = tmp_path / "model.py"
    path.write_text("import pytensor.tensor as pt\n\ndef build():\n    y = pt.dscalar('y')\n    return [y], [y + 1]\n")
    inputs, outputs = load_target(f"{path}:build")
    assert [i.name for i in inputs] == ["y"]
    with pytest.raises(InspectionError, match="none of"):
        load_target("no_such_graph")


def _our_values(ir_text: str) -> list[str]:
    """The names of the values defined in the functions our intrinsics emit (``llvm_graph_body``, ``llvm_loop``) in
    the IR ``ir_text``, as LLVM prints them (an anonymous one as ``%.12`` or ``%12``)."""
    names, ours = [], False
    for line in ir_text.splitlines():
        if line.startswith("define"):
            ours = re.search(r'@"?llvm_(graph_body|loop)', line) is not None
        elif ours and (defined := re.match(r'\s+(%"[^"]*"|%\S+) = ', line)):
            names.append(defined.group(1))
    return names


def test_the_kernel_ir_names_values_after_the_graph_variables():
    """Unoptimized IR (stage ``llvm``): LLVM's optimizer drops or suffixes names as it inlines."""
    mu, sigma = pt.dscalar("mu"), pt.dscalar("sigma")
    x = pt.dvector("x")
    logp = (-(((x - mu) / sigma) ** 2) - pt.log(sigma)).sum()
    fn = pytensor.function([mu, sigma, x], [logp, pt.exp(x) * mu], mode="LLVM")
    text = stage_text(fn, "llvm", kernel_only=True)
    values = _our_values(text)
    for name in ("%mu", "%sigma", "%x", "%x.data", "%x.load", "%x.shape0", "%mu.fenced"):
        assert name in values
    anonymous = [v for v in values if re.fullmatch(r'%("?\.\d+"?|\d+)', v)]
    # Measured on this graph: 319 of its 400 values anonymous (80%) before values were named, 266 (66.5%) once the
    # loops, joins, reductions and graph named theirs, 218 (54.5%) once every intrinsic did (a call's status, a
    # view's pieces), the same 400 instructions. The rest are made inside numba's helpers (its calling convention's
    # argument decoding and return, array structs, the allocation of a new array, tuples), which take no name.
    assert len(anonymous) / len(values) < 0.55
