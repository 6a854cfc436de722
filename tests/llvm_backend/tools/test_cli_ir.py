import pytest

from llvm_backend.tools.cli import main

USER_FILE = """
import pytensor.tensor as pt


def shifted_exp():
    x = pt.dvector("x")
    return [x], [pt.exp(x) + 1.0]
"""

# Text every stage's output holds; the graph stage names the graph's (fused) node.
STAGE_MARKS = {"py": "def ", "llvm": "ModuleID", "llvm-opt": "define", "asm": ".cfi_startproc"}


@pytest.fixture(scope="module")
def user_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("target") / "model.py"
    path.write_text(USER_FILE)
    return f"{path}:shifted_exp"


def run(capsys, *argv):
    code = main(["ir", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("stage", ["graph", *STAGE_MARKS])
def test_every_stage_of_a_user_file(capsys, user_file, stage):
    code, out, err = run(capsys, user_file, "--stage", stage)
    assert code == 0
    assert STAGE_MARKS.get(stage, "Composite") in out
    assert ("numba cache off" in err) == (stage != "graph")


@pytest.mark.parametrize("stage", ["graph", *STAGE_MARKS])
def test_every_stage_of_a_builtin_graph(capsys, stage):
    code, out, _ = run(capsys, "full_reduction", "--stage", stage, "--mode", "NUMBA")
    assert code == 0
    assert STAGE_MARKS.get(stage, "Sum") in out


def test_kernel_only_drops_numba_wrappers(capsys, user_file):
    _, whole, _ = run(capsys, user_file)
    _, kernel, _ = run(capsys, user_file, "--kernel-only")
    assert "cpython" in whole
    assert "cpython" not in kernel and kernel.count("define ") == 1


def test_stats_show_the_allocation_of_a_new_array_under_numba(capsys, user_file):
    code, out, _ = run(capsys, user_file, "--stats", "--mode", "NUMBA")
    assert code == 0
    rows = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in out.splitlines()[2:]}
    assert int(rows["NRT allocation sites"]) >= 1
    assert int(rows["calls to NRT_MemInfo_alloc_aligned"]) >= 1
    assert int(rows["instructions"]) > 0


def test_diff_names_both_modes(capsys, user_file):
    code, out, _ = run(capsys, user_file, "--kernel-only", "--diff", "NUMBA")
    assert code == 0
    header = out.splitlines()[:2]
    assert header[0].startswith("---") and "[LLVM]" in header[0]
    assert header[1].startswith("+++") and "[NUMBA]" in header[1]


def test_diff_with_stats_puts_modes_side_by_side(capsys):
    code, out, _ = run(capsys, "llvm_backend.tools.graphs:scalar_index", "--stats", "--kernel-only", "--diff", "NUMBA")
    assert code == 0
    assert out.splitlines()[0] == "| llvm-opt IR, kernel function | LLVM | NUMBA |"


def test_errors_exit_with_a_message(capsys, user_file):
    code, _, err = run(capsys, user_file, "--stage", "llvm", "--mode", "CVM")
    assert code == 2 and "not a Numba linker" in err
    code, _, err = run(capsys, "no_such_graph")
    assert code == 2 and "none of" in err
    code, _, err = run(capsys, user_file, "--stage", "asm", "--stats")
    assert code == 2 and "stats count LLVM IR" in err
    code, _, err = run(capsys, user_file, "--diff", "LLVM")
    assert code == 2 and "with itself" in err
