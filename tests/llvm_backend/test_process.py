"""``llvm_backend.process``: every process-wide change of the import is a named, documented `Change`, and
reverting them all leaves PyTensor, numba and Python as a process that never imported the package."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import get_mode, optdb, predefined_modes

import llvm_backend
from llvm_backend import process
from llvm_backend.adapters.pytensor import NUMBA_IS_LLVM
from llvm_backend.linker import LLVMLinker
from llvm_backend.nutpie import numba_is_llvm

SNAPSHOT = textwrap.dedent(
    """
    import copyreg, io, json, re, sys
    import llvmlite.binding as llvm
    import numpy as np, pytensor, pytensor.tensor as pt
    from numba.core.typing.typeof import typeof_impl
    from pytensor.compile.mode import get_mode, optdb, predefined_linkers, predefined_modes
    from pytensor.link.numba.dispatch import basic

    def snapshot():
        tables = (basic.numba_funcify, basic.numba_funcify_and_cache_key, basic.numba_funcify_default_op_cache_key)
        return {
            "optdb": {key: [id(r) for r in rewriters] for key, rewriters in optdb.__db__.items()},
            "optdb names": sorted(optdb._names),
            "optdb positions": dict(optdb.__position__),
            "optdb attributes": {name: id(value) for name, value in vars(optdb).items()},
            "linkers": {name: id(linker) for name, linker in predefined_linkers.items()},
            "modes": {name: id(mode) for name, mode in predefined_modes.items()},
            "dispatch": [{str(cls): id(f) for cls, f in table.registry.items()} for table in tables],
            "copyreg": {repr(cls): id(f) for cls, f in copyreg.dispatch_table.items()},
            "powi": [llvm.address_of_symbol(name) or 0 for name in ("__powidf2", "__powisf2")],
            "typeof": {f"{cls.__module__}.{cls.__qualname__}": id(f) for cls, f in typeof_impl.registry.items()},
            "meta_path": [id(finder) for finder in sys.meta_path],
        }

    def compiled():
        x, y = pt.dvector("x"), pt.dscalar("y")
        outputs = [pt.concatenate([x, x]) * y, x.sum(), pt.exp(x * y + 1) * x, pt.sigmoid(x) ** 2 + y]
        fn = pytensor.function([x, y], outputs, mode="NUMBA")
        stream = io.StringIO()
        get_mode("NUMBA").optimizer.print_summary(stream=stream)
        return {
            "values": [v.tolist() for v in fn(np.arange(3.0), 2.0)],
            "jit_fn": [np.asarray(v).tolist() for v in fn.vm.jit_fn(np.arange(3.0), np.array(2.0))],
            "graph": re.sub(r"0x[0-9a-f]+", "", pytensor.dprint(fn, file="str", print_type=True)),
            "rewriter": type(get_mode("NUMBA").optimizer._rewriter).__name__,
            "rewrites": re.sub(r"id=\\d+|0x[0-9a-f]+", "", stream.getvalue()),
            "function": type(fn).__name__,
        }

    # what llvm_backend's import loads of PyTensor and numba, loaded first, so the snapshots differ by its changes
    compiled()
    before = snapshot()
    if sys.argv[1] == "reverted":
        import llvm_backend
        from llvm_backend import process
        imported = snapshot()
        process.revert_all()
        after = snapshot()
        ours = ("llvm_backend_intrinsics.", "llvm_backend.")
        # numba types of classes of our own: the one documented exception, which numba cannot take back
        added = {k: v for k, v in after.pop("typeof").items() if k not in before["typeof"]}
        assert all(k.startswith(ours) for k in added), added
        before.pop("typeof")
        for part in before:
            assert after[part] == before[part], part
        assert imported["optdb"] != before["optdb"] and imported["modes"] != before["modes"]
    print(json.dumps(compiled()))
    """
)


def _run(which: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SNAPSHOT, which], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_reverting_every_change_leaves_the_process_as_one_that_never_imported_the_package():
    assert _run("reverted") == _run("never")


def test_every_change_is_named_documented_and_applied_by_the_import():
    names = [change.name for change in process.CHANGES]
    assert len(set(names)) == len(names)
    not_on_import = (NUMBA_IS_LLVM,)
    for change in (*process.CHANGES, *not_on_import):
        assert change.__doc__ and change.__doc__.strip() != type(change).__doc__.strip(), change
    assert all(change.applied and change.disabled is None for change in process.CHANGES)
    assert not any(change.applied for change in not_on_import)


def _state():
    return (
        {key: list(rewriters) for key, rewriters in optdb.__db__.items()},
        dict(optdb.__position__),
        dict(vars(optdb)),
        dict(predefined_modes),
    )


def test_applying_again_changes_nothing_and_reverting_then_applying_restores_the_mode():
    applied = _state()
    for change in process.CHANGES:
        assert not change.apply()
    llvm_backend.register()
    assert _state() == applied
    try:
        process.revert_all()
        assert "LLVM" not in predefined_modes
        assert "query" not in vars(optdb)
        for change in process.CHANGES:
            assert not change.revert()
    finally:
        llvm_backend.register()
    assert _state() == applied
    x = pt.dvector("x")
    fn = pytensor.function([x], [pt.exp(x).sum(), pt.concatenate([x, 2 * x])], mode="LLVM")
    assert isinstance(fn.maker.linker, LLVMLinker)
    total, joined = fn(np.arange(3.0))
    np.testing.assert_allclose(total, np.exp(np.arange(3.0)).sum())
    np.testing.assert_array_equal(joined, [0.0, 1.0, 2.0, 0.0, 2.0, 4.0])


def test_numba_is_llvm_applies_its_change_while_any_block_is_open():
    numba = predefined_modes["NUMBA"]
    with numba_is_llvm():
        assert NUMBA_IS_LLVM.applied
        with numba_is_llvm():
            assert get_mode("NUMBA") is llvm_backend.LLVM
        assert get_mode("NUMBA") is llvm_backend.LLVM
    assert predefined_modes["NUMBA"] is numba
    assert not NUMBA_IS_LLVM.applied
