import importlib
import subprocess
import sys
import textwrap

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode, get_mode, optdb
from pytensor.link.numba.linker import NumbaLinker

import llvm_backend
from llvm_backend.linker import LLVMLinker
from llvm_backend.mode import REWRITES_NAME, SUPERVISOR_NAME
from llvm_backend.rewrites.registry import REWRITE_TAG
from llvm_backend.rewrites.supervisor import use_indexed_supervisor
from llvm_backend.tools.testing import compare_llvm_numba_and_py


def test_mode_is_registered_under_any_case():
    assert get_mode("LLVM") is llvm_backend.LLVM
    assert get_mode("llvm") is llvm_backend.LLVM
    assert isinstance(llvm_backend.LLVM.linker, LLVMLinker)
    assert isinstance(llvm_backend.LLVM.linker, NumbaLinker)


def test_mode_requires_our_rewrite_tag():
    assert REWRITE_TAG in LLVMLinker.required_rewrites
    assert REWRITES_NAME in optdb
    assert llvm_backend.llvm_rewrites in optdb.__db__[REWRITE_TAG]
    assert use_indexed_supervisor in optdb.__db__[REWRITE_TAG]
    # before the first rewrites that replace nodes (each replacement is validated)
    assert (
        optdb.__position__[SUPERVISOR_NAME] < optdb.__position__["inline_ofg_expansion"] < optdb.__position__["merge1"]
    )


def test_mode_by_linker_name_uses_our_linker():
    x = pt.dvector("x")
    fn = pytensor.function([x], x * 2, mode=Mode(linker="llvm", optimizer="fast_run"))
    assert isinstance(fn.maker.linker, LLVMLinker)
    np.testing.assert_array_equal(fn(np.arange(3.0)), [0.0, 2.0, 4.0])


def test_llvm_mode_matches_numba_and_py():
    x, y = pt.dvector("x"), pt.dscalar("y")
    outputs = [x.sum() * y + pt.exp(y), x * 2, pt.concatenate([x, x[::-1]])]
    fn, (total, _, _) = compare_llvm_numba_and_py([x, y], outputs, [np.arange(4.0), 2.0])
    assert isinstance(fn.maker.linker, LLVMLinker)
    assert total == 12.0 + np.exp(2.0)


def test_reimport_is_harmless():
    before = (len(optdb.__db__[REWRITE_TAG]), get_mode("LLVM"))
    importlib.reload(llvm_backend)
    llvm_backend.register()
    assert (len(optdb.__db__[REWRITE_TAG]), get_mode("LLVM")) == before


OTHER_MODES_SNAPSHOT = textwrap.dedent(
    """
    import io, re, sys
    import numpy as np, pytensor, pytensor.scalar as ps, pytensor.tensor as pt
    import pytensor.link.numba.dispatch as dispatch
    from pytensor.compile.mode import get_mode, predefined_linkers, predefined_modes
    from pytensor.link.numba.dispatch.basic import numba_funcify, numba_funcify_and_cache_key

    def rewrites(name):
        stream = io.StringIO()
        get_mode(name).optimizer.print_summary(stream=stream)
        return re.sub(r"id=\\d+|0x[0-9a-f]+", "", stream.getvalue())

    def compiled(name):
        x, y = pt.dvector("x"), pt.dscalar("y")
        fn = pytensor.function([x, y], [pt.concatenate([x, x]) * y, x.sum(), pt.exp(x * y + 1) * x], mode=name)
        values = fn(np.arange(3.0), 2.0)
        graph = pytensor.dprint(fn, file="str", print_type=True)
        return re.sub(r"0x[0-9a-f]+", "", graph), [v.tolist() for v in values]

    def composite_lowering():
        # what a stock compile gets for a Composite: the function's name and the cache key
        a, b = ps.float64("a"), ps.float64("b")
        op = ps.Composite([a, b], [ps.exp(a * b + a) * b])
        fn, key = numba_funcify_and_cache_key(op, node=op.make_node(ps.float64(), ps.float64()))
        return fn.py_func.__name__, key

    def registry(table):
        # every entry but Composite's, which llvm_backend replaces by one that hands stock compiles to stock's
        # (composite_lowering checks what they get)
        return sorted((str(op), id(f)) for op, f in table.registry.items() if op is not ps.Composite)

    def snapshot():
        modes = ("NUMBA", "FAST_RUN", "CVM")
        return (
            {name: rewrites(name) for name in modes},
            {name: type(get_mode(name).optimizer._rewriter) for name in (*modes, "FAST_COMPILE")},
            {name: compiled(name) for name in modes},
            {name: id(get_mode(name)) for name in modes},
            registry(numba_funcify),
            registry(numba_funcify_and_cache_key),
            composite_lowering(),
            {name: id(predefined_linkers[name]) for name in ("py", "c", "cvm", "vm", "numba")},
        )

    assert "LLVM" not in predefined_modes
    before = snapshot()
    import llvm_backend
    after = snapshot()
    for part, (b, a) in enumerate(zip(before, after, strict=True)):
        assert a == b, f"part {part} changed on import"
    assert "LLVM" in predefined_modes
    print("unchanged")
    """
)


@pytest.mark.slow
def test_import_changes_nothing_for_other_modes():
    done = subprocess.run([sys.executable, "-c", OTHER_MODES_SNAPSHOT], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("unchanged")
