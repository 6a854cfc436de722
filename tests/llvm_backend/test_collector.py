"""The garbage collector while the LLVM mode compiles (`llvm_backend.collector`): paced within, as it was after,
whatever the nesting, the threads and the exceptions; garbage still collected; stock's compiles untouched."""

import gc
import threading
import weakref

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from numba.core import event as numba_event
from pytensor.compile.maker import FunctionMaker

import llvm_backend
from llvm_backend.collector import OLDEST_THRESHOLD, YOUNG_THRESHOLD, paced_collections
from llvm_backend.linker import LLVMLinker

DEFAULT = (700, 10, 10)
PACED = (YOUNG_THRESHOLD, 10, OLDEST_THRESHOLD)


@pytest.fixture(autouse=True)
def python_s_thresholds():
    before, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(*DEFAULT)
    gc.enable()
    yield
    gc.set_threshold(*before)
    (gc.enable if enabled else gc.disable)()


def test_within_the_thresholds_are_raised_and_after_put_back():
    with paced_collections():
        assert gc.get_threshold() == PACED
    assert gc.get_threshold() == DEFAULT


def test_thresholds_already_above_are_kept():
    gc.set_threshold(50_000, 3, 500)
    with paced_collections():
        assert gc.get_threshold() == (50_000, 3, 500)
    gc.set_threshold(50, 3, 5)
    with paced_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 3, OLDEST_THRESHOLD)
    assert gc.get_threshold() == (50, 3, 5)


def test_an_exception_leaving_puts_them_back():
    with pytest.raises(ZeroDivisionError), paced_collections():
        1 / 0
    assert gc.get_threshold() == DEFAULT


def test_nested_blocks_put_them_back_at_the_outermost_exit():
    with paced_collections():
        with paced_collections():
            assert gc.get_threshold() == PACED
        assert gc.get_threshold() == PACED
    assert gc.get_threshold() == DEFAULT


def test_blocks_overlapping_across_threads_put_them_back_when_the_last_exits():
    opened, release, closed = threading.Event(), threading.Event(), threading.Event()

    def other():
        with paced_collections():
            opened.set()
            release.wait(10)
        closed.set()

    thread = threading.Thread(target=other)
    with paced_collections():
        thread.start()
        assert opened.wait(10)
    assert gc.get_threshold() == PACED
    release.set()
    assert closed.wait(10)
    thread.join()
    assert gc.get_threshold() == DEFAULT


def test_thresholds_changed_meanwhile_are_left_as_changed():
    with paced_collections():
        gc.set_threshold(3000, 10, 10)
    assert gc.get_threshold() == (3000, 10, 10)


def test_a_disabled_collector_is_left_alone():
    gc.disable()
    with paced_collections():
        assert gc.get_threshold() == DEFAULT
        assert not gc.isenabled()
    assert gc.get_threshold() == DEFAULT


class Held:
    cycle = None


def test_a_cycle_made_within_is_collected_within():
    gc.collect()
    collected = []
    with paced_collections():
        held = Held()
        held.cycle = [held]
        weakref.finalize(held, collected.append, True)
        del held
        assert collected == []
        kept = [[] for _ in range(3 * YOUNG_THRESHOLD)]
        assert collected == [True]
    assert len(kept) == 3 * YOUNG_THRESHOLD


def _thresholds_while_compiling(monkeypatch, mode):
    seen = {}
    prepare, make_all = FunctionMaker.prepare_fgraph, LLVMLinker.make_all

    def seen_preparing(*args, **kwargs):
        seen["rewriting"] = gc.get_threshold()
        return prepare(*args, **kwargs)

    def seen_linking(self, *args, **kwargs):
        seen["linking"] = gc.get_threshold()
        return make_all(self, *args, **kwargs)

    monkeypatch.setattr(FunctionMaker, "prepare_fgraph", staticmethod(seen_preparing))
    monkeypatch.setattr(LLVMLinker, "make_all", seen_linking)
    x = pt.dvector("x")
    fn = pytensor.function([x], pt.exp(x).sum() + x[0], mode=mode)
    np.testing.assert_allclose(fn(np.arange(3.0)), np.exp(np.arange(3.0)).sum())
    return seen


def test_the_llvm_mode_rewrites_and_links_paced(monkeypatch):
    assert llvm_backend.MODE_NAME == "LLVM"
    assert _thresholds_while_compiling(monkeypatch, "LLVM") == {"rewriting": PACED, "linking": PACED}
    assert gc.get_threshold() == DEFAULT


def test_stock_numba_compiles_with_python_s_thresholds(monkeypatch):
    assert _thresholds_while_compiling(monkeypatch, "NUMBA") == {"rewriting": DEFAULT}


class _CompileThresholds(numba_event.Listener):
    """The collector's thresholds at the start of each numba compile."""

    def __init__(self):
        self.seen = []

    def on_start(self, event):
        self.seen.append(gc.get_threshold())

    def on_end(self, event):
        pass


def _thresholds_while_numba_compiles(call) -> list:
    listener = _CompileThresholds()
    with numba_event.install_listener("numba:compile", listener):
        call()
    return listener.seen


@pytest.fixture
def numba_cache_off():
    """The graph function compiled in the test, not loaded from the cache an earlier test filled."""
    with pytensor.config.change_flags(numba__cache=False):
        yield


@pytest.mark.parametrize("trust_input", [False, True])
@pytest.mark.usefixtures("numba_cache_off")
def test_a_function_s_first_call_compiles_paced_and_later_ones_run_its_lean_call(trust_input):
    x = pt.dvector("x")
    fn = pytensor.function([x], pt.exp(x).sum() * 2, mode="LLVM")
    fn.trust_input = trust_input  # the lean call is written again, and its first call paced too
    kept_from_before = fn.lean_call
    seen = _thresholds_while_numba_compiles(lambda: fn(np.arange(3.0)))
    assert seen and set(seen) == {PACED}  # the graph function's compile
    assert gc.get_threshold() == DEFAULT
    assert fn.lean_call.__func__.__name__ == "lean_call" and fn.lean_call.__self__ is fn
    readonly = np.arange(4.0)
    readonly.flags.writeable = False  # another numba type: the graph function compiled again, not paced
    seen = _thresholds_while_numba_compiles(
        lambda: np.testing.assert_allclose(kept_from_before(readonly), 2 * np.exp(readonly).sum())
    )
    assert seen and set(seen) == {DEFAULT}
    strided = np.arange(6.0)[::2]  # a new layout: the graph function compiled again, by a lean call not paced
    seen = _thresholds_while_numba_compiles(lambda: np.testing.assert_allclose(fn(strided), 2 * np.exp(strided).sum()))
    assert seen and set(seen) == {DEFAULT}


@pytest.mark.usefixtures("numba_cache_off")
def test_a_first_call_that_raises_leaves_the_next_paced():
    x = pt.dvector("x", shape=(3,))
    fn = pytensor.function([x], x * 2, mode="LLVM")
    with pytest.raises(TypeError):
        fn(np.ones(4))
    assert gc.get_threshold() == DEFAULT
    assert fn.lean_call.__func__.__name__ == "first_call"
    seen = _thresholds_while_numba_compiles(lambda: fn(np.ones(3)))
    assert seen and set(seen) == {PACED}
    assert fn.lean_call.__func__.__name__ == "lean_call"
