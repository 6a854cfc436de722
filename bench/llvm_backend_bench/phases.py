"""A phase timer for a benchmark process: exclusive ("self") wall time per phase of one measured span.

Within `PhaseTimer.span`, every moment is charged to exactly one phase: the innermost phase open then, or `OTHER`
when none is. Entering a phase pauses the one it is nested in; leaving it resumes that one. The phases' seconds
therefore sum to the span's wall time, whatever nests in what::

    timer = PhaseTimer()
    with timer.span():
        with timer.phase("compile"):
            with timer.phase("llvm"):
                ...  # charged to "llvm" alone
            ...  # "compile" again
    timer.seconds()  # {"compile": ..., "llvm": ..., "other": ...}

Time is attributed three ways, all undone when the measurement ends: functions wrapped for its duration
(`wrapped_functions`: ``owner.attribute`` runs as a phase); numba's compiler events (`numba_events`, e.g.
``"numba:llvm_lock"``, the time spent holding LLVM's lock, i.e. inside LLVM); and JAX's compile events
(`jax_events`: JAX reports the start of each of its compile stages as a scalar and its end as a duration).

Phases may be entered from any thread: one thread's phase nests in whatever is open, and leaving removes that
thread's innermost entry of the phase, so a compile in a sampler's thread is charged to the compile while the
main thread waits in the sampler.
"""

import importlib
import inspect
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from functools import wraps
from unittest import mock

from numba.core import event

__all__ = ["OTHER", "JaxCompileEvents", "PhaseTimer", "jax_events", "numba_events", "resolve", "wrapped_functions"]

OTHER = "other"
"""The phase of the span's time that no phase claims."""


class PhaseTimer:
    """Exclusive wall time per phase within a span, read from ``clock`` (``time.perf_counter``)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter):
        self._clock = clock
        self._lock = threading.Lock()
        self._open: list[tuple[str, int]] = []
        self._seconds: dict[str, float] = defaultdict(float)
        self._since: float | None = None

    def enter(self, phase: str) -> None:
        """Open ``phase`` in the calling thread: from now on the span's time is ``phase``'s until it is left
        or another phase is entered."""
        with self._lock:
            self._charge()
            self._open.append((phase, threading.get_ident()))

    def exit(self, phase: str) -> None:
        """Close the calling thread's innermost open ``phase``. An exit without its entry (a phase entered
        before the span began) is ignored."""
        entry = (phase, threading.get_ident())
        with self._lock:
            self._charge()
            if entry in self._open:
                del self._open[len(self._open) - 1 - self._open[::-1].index(entry)]

    @contextmanager
    def phase(self, phase: str) -> Iterator[None]:
        """``phase`` open for the duration of the block, also when an exception leaves it."""
        self.enter(phase)
        try:
            yield
        finally:
            self.exit(phase)

    def timed(self, phase: str, function: Callable) -> Callable:
        """``function``, each of whose calls runs as ``phase``."""

        @wraps(function)
        def timed(*args, **kwargs):
            with self.phase(phase):
                return function(*args, **kwargs)

        return timed

    @contextmanager
    def span(self) -> Iterator[None]:
        """Measure the block: the seconds of an earlier span are dropped, and after the block `seconds` holds
        this one's, summing to its wall time."""
        with self._lock:
            self._open.clear()
            self._seconds.clear()
            self._since = self._clock()
        try:
            yield
        finally:
            with self._lock:
                self._charge()
                self._since = None

    def seconds(self) -> dict[str, float]:
        """Seconds per phase of the last span (of the span so far, within one), `OTHER` included."""
        with self._lock:
            self._charge()
            return dict(self._seconds)

    def _charge(self) -> None:
        """Charge the time since the last change to the phase open then (the caller holds the lock); a phase
        charged nothing is left out of `seconds`."""
        if self._since is None:
            return
        now = self._clock()
        if now != self._since:
            self._seconds[self._open[-1][0] if self._open else OTHER] += now - self._since
        self._since = now


def resolve(owner: str) -> object:
    """The object named ``"module"`` or ``"module:Class"``, importing the module."""
    module, _, name = owner.partition(":")
    found = importlib.import_module(module)
    return getattr(found, name) if name else found


def _timed_attribute(timer: PhaseTimer, phase: str, original: object) -> object:
    """A timed replacement of an attribute as it is stored (a static or class method stays one)."""
    if isinstance(original, staticmethod | classmethod):
        return type(original)(timer.timed(phase, original.__func__))
    return timer.timed(phase, original)


@contextmanager
def wrapped_functions(timer: PhaseTimer, attributions: Iterable[tuple[object, str, str]]) -> Iterator[None]:
    """Within, each ``(owner, attribute, phase)``'s ``owner.attribute`` is a function whose calls run as ``phase``;
    each is put back as it was (an inherited attribute removed again) when the block exits."""
    with ExitStack() as stack:
        for owner, attribute, phase in attributions:
            original = inspect.getattr_static(owner, attribute)
            stack.enter_context(mock.patch.object(owner, attribute, _timed_attribute(timer, phase, original)))
        yield


class _EventPhase(event.Listener):
    """A numba event listener that holds ``phase`` open from each event's start to its end."""

    def __init__(self, timer: PhaseTimer, phase: str):
        self.timer, self.phase = timer, phase

    def on_start(self, ev: event.Event) -> None:
        self.timer.enter(self.phase)

    def on_end(self, ev: event.Event) -> None:
        self.timer.exit(self.phase)


@contextmanager
def numba_events(timer: PhaseTimer, phases: dict[str, str]) -> Iterator[None]:
    """Within, each numba event of a kind in ``phases`` (``{"numba:llvm_lock": "llvm"}``) runs as its phase."""
    with ExitStack() as stack:
        for kind, phase in phases.items():
            stack.enter_context(event.install_listener(kind, _EventPhase(timer, phase)))
        yield


class JaxCompileEvents:
    """JAX's compile stages as phases: each stage records a scalar (its start time) as it starts and a duration
    as it ends, under one event name (``jax._src.dispatch.log_elapsed_time``); ``phases`` maps event names to
    phases, and other events pass by."""

    def __init__(self, timer: PhaseTimer, phases: dict[str, str]):
        self.timer, self.phases = timer, phases

    def started(self, name: str, value: float, **kwargs) -> None:
        if name in self.phases:
            self.timer.enter(self.phases[name])

    def ended(self, name: str, duration: float, **kwargs) -> None:
        if name in self.phases:
            self.timer.exit(self.phases[name])


@contextmanager
def jax_events(timer: PhaseTimer, phases: dict[str, str]) -> Iterator[None]:
    """Within, JAX's compile stages named in ``phases`` run as their phases (`JaxCompileEvents`)."""
    from jax import monitoring

    listener = JaxCompileEvents(timer, phases)
    monitoring.register_scalar_listener(listener.started)
    monitoring.register_event_duration_secs_listener(listener.ended)
    try:
        yield
    finally:
        monitoring.unregister_scalar_listener(listener.started)
        monitoring.unregister_event_duration_listener(listener.ended)
