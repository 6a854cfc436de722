"""The bench's phase timer (``llvm_backend_bench.phases``) on a fake clock, and its attributions: wrapped functions,
numba's events, JAX's compile events; all put back after a measurement."""

import inspect
import sys
import threading
import time
import types

import numba
import pytest
from numba.core import event
from numba.core.dispatcher import Dispatcher

from llvm_backend_bench.phases import (
    OTHER,
    JaxCompileEvents,
    PhaseTimer,
    jax_events,
    numba_events,
    resolve,
    wrapped_functions,
)


class FakeClock:
    """A clock that reads ``now``, which the test moves; whole numbers keep the sums exact."""

    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def test_an_inner_phase_pauses_the_outer_one_and_other_takes_the_rest():
    clock = FakeClock()
    timer = PhaseTimer(clock)
    with timer.span():
        clock.now = 1
        with timer.phase("compile"):
            clock.now = 3
            with timer.phase("llvm"):
                clock.now = 6
            clock.now = 10
        clock.now = 12
    assert timer.seconds() == {OTHER: 3, "compile": 6, "llvm": 3}
    assert sum(timer.seconds().values()) == 12


def test_a_phase_nested_in_itself_is_charged_once_and_left_innermost_first():
    clock = FakeClock()
    timer = PhaseTimer(clock)
    with timer.span():
        timer.enter("codegen")
        clock.now = 2
        timer.enter("codegen")  # a compile that compiles its callee
        clock.now = 5
        timer.exit("codegen")
        clock.now = 7
        timer.exit("codegen")
        clock.now = 8
    assert timer.seconds() == {"codegen": 7, OTHER: 1}


def test_a_phase_is_left_when_an_exception_leaves_its_block():
    clock = FakeClock()
    timer = PhaseTimer(clock)
    with timer.span():
        with pytest.raises(ValueError), timer.phase("graph"):
            clock.now = 2
            raise ValueError
        clock.now = 5
    assert timer.seconds() == {"graph": 2, OTHER: 3}


def test_a_span_drops_the_seconds_of_the_one_before_and_an_exit_without_entry_is_ignored():
    clock = FakeClock()
    timer = PhaseTimer(clock)
    with timer.span():
        timer.enter("before")
        clock.now = 4
    timer.enter("outside")  # no span: nothing is charged
    clock.now = 10
    with timer.span():
        timer.exit("before")
        clock.now = 11
        with timer.phase("inside"):
            clock.now = 13
    assert timer.seconds() == {OTHER: 1, "inside": 2}


def test_a_phase_of_another_thread_nests_in_whatever_is_open_and_each_thread_leaves_its_own():
    clock = FakeClock()
    timer = PhaseTimer(clock)
    entered, release = threading.Event(), threading.Event()

    def compile_in_a_sampler_thread():
        with timer.phase("llvm"):
            entered.set()
            release.wait()

    thread = threading.Thread(target=compile_in_a_sampler_thread)
    with timer.span():
        timer.enter("sampling")
        clock.now = 1
        thread.start()
        entered.wait()
        clock.now = 4
        timer.exit("sampling")  # the main thread leaves while the sampler's thread compiles
        clock.now = 6
        release.set()
        thread.join()
        clock.now = 7
    assert timer.seconds() == {"sampling": 1, "llvm": 5, OTHER: 1}


class Base:
    def method(self, clock):
        clock.now += 2
        return "method"

    @staticmethod
    def static(clock):
        clock.now += 3
        return "static"

    @classmethod
    def klass(cls, clock):
        clock.now += 5
        return cls.__name__


class Child(Base):
    pass


def _module_function(clock):
    clock.now += 7
    return "function"


def test_wrapped_functions_run_as_their_phases_and_are_put_back_as_they_were():
    module = types.ModuleType("module")
    module.function = _module_function
    attributions = [(module, "function", "a"), (Base, "static", "b"), (Base, "klass", "c"), (Child, "method", "d")]
    originals = [inspect.getattr_static(owner, name) for owner, name, _ in attributions]
    clock = FakeClock()
    timer = PhaseTimer(clock)
    with wrapped_functions(timer, attributions), timer.span():
        assert isinstance(inspect.getattr_static(Base, "static"), staticmethod)
        assert isinstance(inspect.getattr_static(Base, "klass"), classmethod)
        results = [module.function(clock), Base.static(clock), Child.klass(clock), Child().method(clock)]
        assert Base().method(clock) == "method"  # the base's own method is not wrapped: other
    assert results == ["function", "static", "Child", "method"]
    assert timer.seconds() == {"a": 7, "b": 3, "c": 5, "d": 2, OTHER: 2}
    assert [inspect.getattr_static(owner, name) for owner, name, _ in attributions] == originals
    assert "method" not in vars(Child)


def test_wrapped_functions_are_put_back_when_the_measurement_raises():
    original = inspect.getattr_static(Base, "static")
    with pytest.raises(RuntimeError), wrapped_functions(PhaseTimer(), [(Base, "static", "b")]):
        raise RuntimeError
    assert inspect.getattr_static(Base, "static") is original


def test_resolve_names_a_module_or_a_class_in_it():
    assert resolve("numba.core.dispatcher") is sys.modules["numba.core.dispatcher"]
    assert resolve("numba.core.dispatcher:Dispatcher") is Dispatcher


def test_numba_compiles_are_codegen_and_their_time_in_llvm_is_llvm():
    @numba.njit
    def affine(x):
        return x * 2.0 + 1.0

    original = Dispatcher.__dict__["compile"]
    timer = PhaseTimer()
    start = time.perf_counter()
    with (
        wrapped_functions(timer, [(Dispatcher, "compile", "codegen")]),
        numba_events(timer, {"numba:llvm_lock": "llvm"}),
        timer.span(),
    ):
        assert affine(1.0) == 3.0
    wall = time.perf_counter() - start
    seconds = timer.seconds()
    assert seconds["codegen"] > 0 and seconds["llvm"] > 0
    assert 0 < sum(seconds.values()) <= wall
    assert Dispatcher.__dict__["compile"] is original
    with timer.span(), event.trigger_event("numba:llvm_lock"):
        pass  # the listener left with its block
    assert set(timer.seconds()) == {OTHER}


TRACE, LOWER, BACKEND = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)
JAX_PHASES = {TRACE: "codegen", LOWER: "codegen", BACKEND: "llvm"}


def test_jax_compile_stages_are_their_phases_and_other_events_pass_by():
    clock = FakeClock()
    timer = PhaseTimer(clock)
    listener = JaxCompileEvents(timer, JAX_PHASES)
    with timer.span(), timer.phase("sampling"):
        clock.now = 1
        listener.started(TRACE, 1.0, fun_name="logp")
        clock.now = 2
        listener.started(TRACE, 2.0, fun_name="inner")  # a jitted function traced inside another
        clock.now = 3
        listener.ended(TRACE, 1.0, fun_name="inner")
        listener.started("/jax/something/else", 3.0)
        clock.now = 4
        listener.ended(TRACE, 3.0, fun_name="logp")
        listener.started(BACKEND, 4.0, fun_name="logp")
        clock.now = 9
        listener.ended(BACKEND, 5.0, fun_name="logp")
        listener.ended("/jax/something/else", 6.0)
        clock.now = 10
    assert timer.seconds() == {"sampling": 2, "codegen": 3, "llvm": 5}


class FakeMonitoring:
    """``jax.monitoring``'s listener registry, for a test run where jax may not be installed."""

    def __init__(self):
        self.scalar, self.duration = [], []

    def register_scalar_listener(self, callback):
        self.scalar.append(callback)

    def register_event_duration_secs_listener(self, callback):
        self.duration.append(callback)

    def unregister_scalar_listener(self, callback):
        self.scalar.remove(callback)

    def unregister_event_duration_listener(self, callback):
        self.duration.remove(callback)


def test_jax_events_listen_for_the_block_only(monkeypatch):
    monitoring = FakeMonitoring()
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(monitoring=monitoring))
    clock = FakeClock()
    timer = PhaseTimer(clock)
    with jax_events(timer, JAX_PHASES), timer.span():
        [started], [ended] = monitoring.scalar, monitoring.duration
        started(BACKEND, 0.0, fun_name="logp")
        clock.now = 2
        ended(BACKEND, 2.0, fun_name="logp")
    assert timer.seconds() == {"llvm": 2}
    assert monitoring.scalar == monitoring.duration == []
