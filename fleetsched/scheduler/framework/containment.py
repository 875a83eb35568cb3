"""What keeps a plugin inside its binding: whatever it raises, the scores it answers, the time it takes.

* The plugin boundary catches every ``BaseException`` (``SystemExit``, ``KeyboardInterrupt``, a
  ``GeneratorExit`` or ``CancelledError`` of its own), not only ``Exception``: ``escapes(exc)`` says
  which must go through instead, the process's own shutdown. The live scheduler's SIGTERM/SIGINT set
  its loop's stop event and never raise inside a plugin, so there every exception of a plugin call is
  the plugin's; ``fleetsched simulate`` runs plugins in its main thread with Python's Ctrl-C, so it
  runs inside ``interrupts_shut_down()``, whose SIGINT handler marks the shutdown before it raises.
* ``check_scores``: kube-scheduler's rule for scores (an int, not a bool; after NormalizeScore, or
  for a plugin without one, within ``MIN_SCORE..MAX_SCORE``; a raw score within int64), answering
  them as plain ints (an int subclass's methods never run outside the plugin boundary).
* ``PluginHealth`` (one per Framework): a call that overran its time budget (returned late, or was
  stuck when the edge gave up on the binding) is counted; after ``OVERRUNS_TO_BREAK`` in a row the
  plugin is marked broken and its calls fail at once with a message saying so, until it recovers:
  once its stuck calls have returned and ``COOL_DOWN`` seconds have passed, one call is let through
  as a probe, and a probe within budget ends the broken state.
* Which plugin call each thread is in (``current_call``), so the edge that abandons a binding stuck
  in a plugin names the plugin and the point and tells its ``PluginHealth``.

Health changes are told to the listener set with ``listen`` (the live scheduler's metrics and log
lines); the core itself logs nothing. Pure: no I/O, no metrics import.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.scheduler.errors import SchedulingError
from fleetsched.scheduler.framework.interface import MAX_SCORE, MIN_SCORE

__all__ = [
    "COOL_DOWN",
    "OVERRUNS_TO_BREAK",
    "Call",
    "PluginError",
    "PluginHealth",
    "begin_shutdown",
    "check_scores",
    "current_call",
    "describe",
    "escapes",
    "interrupts_shut_down",
    "listen",
    "shutting_down",
]

# Overruns in a row (no call within budget between them) that mark a plugin broken.
OVERRUNS_TO_BREAK = 3
# Seconds a broken plugin stays broken before a probe call is let through (once its stuck calls returned).
COOL_DOWN = 30.0
# kube-scheduler's scores are int64.
MIN_INT64, MAX_INT64 = -(2**63), 2**63 - 1
# At most this many characters of a value a plugin answered are quoted in a message.
QUOTE_LIMIT = 64


class PluginError(SchedulingError):
    """A plugin or an extender raised, answered what it must not, or overran its time budget: the
    binding fails, named."""

    def __init__(self, plugin: str, point: str, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.plugin = plugin
        self.point = point
        # What went wrong without the plugin's name (the explanation of a skipped ignorable plugin).
        self.detail = message if detail is None else detail

    @classmethod
    def failed(cls, plugin: str, point: str, detail: str) -> PluginError:
        return cls(plugin, point, f"plugin {plugin} failed at {point}: {detail}", detail)

    def wrapped(self, prefix: str) -> SchedulingError:
        return PluginError(self.plugin, self.point, f"{prefix}: {self.message}", self.detail)


# ---- the process's own shutdown ------------------------------------------------------------------

_SHUTDOWN = threading.Event()


def begin_shutdown() -> None:
    """The process is stopping: a ``KeyboardInterrupt``/``SystemExit`` now passes the plugin boundary."""
    _SHUTDOWN.set()


def shutting_down() -> bool:
    return _SHUTDOWN.is_set()


def escapes(exc: BaseException) -> bool:
    """True when ``exc``, caught at the plugin boundary, is the process's own shutdown and must go on
    (re-raised); False when it is the plugin's and fails the binding."""
    return _SHUTDOWN.is_set() and isinstance(exc, (KeyboardInterrupt, SystemExit))


@contextlib.contextmanager
def interrupts_shut_down() -> Iterator[None]:
    """Inside this block, in the main thread with Python's default SIGINT handler, Ctrl-C marks the
    shutdown and then raises ``KeyboardInterrupt`` as that handler does, so it is not mistaken for a
    plugin's. Anywhere else it changes nothing. The mark is cleared on the way out (in-process callers)."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def interrupted(signum: int, frame: Any) -> None:
        begin_shutdown()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupted)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _SHUTDOWN.clear()


def describe(exc: BaseException) -> str:
    """``Type: text`` of an exception a plugin raised, even when its ``__str__`` raises in turn."""
    try:
        text = str(exc)
    except BaseException as inner:
        if escapes(inner):
            raise
        text = "<unprintable>"
    return f"{type(exc).__name__}: {quote(text, limit=512, as_repr=False)}"


def quote(value: Any, *, limit: int = QUOTE_LIMIT, as_repr: bool = True) -> str:
    """``repr(value)`` (or the text itself) cut to ``limit`` characters, for messages."""
    try:
        text = repr(value) if as_repr else str(value)
    except BaseException as inner:
        if escapes(inner):
            raise
        text = f"<unprintable {type(value).__name__}>"
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} characters)"
    return text


# ---- scores ---------------------------------------------------------------------------------------


def check_scores(
    plugin: str, point: str, scores: Sequence[Any], name_of: Callable[[int], str], *, bounded: bool
) -> list[int]:
    """The scores as plain ints, or ``PluginError`` unless every score is an int (not a bool) and,
    when ``bounded``, within ``MIN_SCORE..MAX_SCORE`` (kube-scheduler's check after NormalizeScore),
    else within int64. ``name_of(j)`` is the cluster of ``scores[j]``.

    An int subclass is turned into a plain int by ``int``'s own conversion before anything compares
    it, so none of its methods (``__lt__``, ``__hash__``, ``__index__``...) runs outside the plugin
    boundary: a comparison that raised ``SystemExit`` there ended ``simulate`` without a word."""
    low, high = (MIN_SCORE, MAX_SCORE) if bounded else (MIN_INT64, MAX_INT64)
    if not scores:
        return []
    if set(map(type, scores)) == {int}:
        plain = scores if type(scores) is list else list(scores)
        if low <= min(plain) and max(plain) <= high:
            return plain  # the common case, checked in C
    else:
        plain = []
        for j, value in enumerate(scores):
            if type(value) is not int and (not isinstance(value, int) or isinstance(value, bool)):
                raise PluginError.failed(
                    plugin,
                    point,
                    f"returned a score of type {type(value).__name__} ({quote(value)}) for cluster "
                    f"{name_of(j)}, it must be an int",
                )
            plain.append(int.__int__(value))  # int's own conversion: nothing of the subclass runs
    for j, value in enumerate(plain):
        if not low <= value <= high:
            raise PluginError.failed(
                plugin,
                point,
                f"returned an invalid score {quote(value)} for cluster {name_of(j)}, it should be in the "
                f"range of [{low}, {high}]" + (" after normalizing" if bounded else ""),
            )
    return plain


# ---- plugin health: overruns, broken, recovered ------------------------------------------------------

# Told (event, profile, plugin, point, detail) when a plugin overran ("overrun"), was marked broken
# ("broken"), let a probe through ("probe"), recovered ("recovered"), or when a call refused because
# of it failed a binding ("refused").
HealthListener = Callable[[str, str, str, str, str], None]
_LISTENERS: list[HealthListener] = []


def listen(listener: HealthListener | None) -> HealthListener | None:
    """Set the one process-wide listener of health changes (None: none); returns the one before."""
    before = _LISTENERS[0] if _LISTENERS else None
    _LISTENERS[:] = [] if listener is None else [listener]
    return before


def _tell(event: str, profile: str, plugin: str, point: str, detail: str) -> None:
    for listener in tuple(_LISTENERS):
        with contextlib.suppress(Exception):  # a broken listener must not fail the binding
            listener(event, profile, plugin, point, detail)


@dataclass(slots=True)
class _State:
    overruns: int = 0  # in a row
    broken_since: float | None = None
    last_point: str = ""
    stuck: int = 0  # calls the edge gave up on that have not returned
    probing: bool = False


class PluginHealth:
    """Overruns and the broken state of one profile's plugins; safe to share between threads."""

    __slots__ = ("_broken", "_clock", "_lock", "_states", "cool_down", "overruns_to_break", "profile")

    def __init__(
        self,
        profile: str,
        *,
        overruns_to_break: int = OVERRUNS_TO_BREAK,
        cool_down: float = COOL_DOWN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.profile = profile
        self.overruns_to_break = max(1, overruns_to_break)
        self.cool_down = cool_down
        self._clock = clock
        self._lock = threading.Lock()
        self._states: dict[str, _State] = {}
        # The names of the broken plugins: read without the lock on every call (empty: nothing to do).
        self._broken: frozenset[str] = frozenset()

    def broken(self) -> frozenset[str]:
        return self._broken

    def admit(self, plugin: str, point: str) -> Call:
        """Before a call of ``plugin``: its ``Call`` record, or ``PluginError`` when it is broken (a
        probe is let through once the cool-down has passed and no call of it is stuck)."""
        call = Call(self, plugin, point)
        if plugin not in self._broken:
            return call
        with self._lock:
            state = self._states[plugin]
            since = state.broken_since
            if (
                since is not None
                and not state.probing
                and state.stuck == 0
                and self._clock() - since >= self.cool_down
            ):
                state.probing = True
                call.probe = True
                probe = True
            else:
                probe = False
                overruns = state.overruns
        if probe:
            _tell("probe", self.profile, plugin, point, "")
            return call
        _tell("refused", self.profile, plugin, point, "")
        detail = (
            f"marked broken after {overruns} overruns of its time budget (last at "
            f"{state.last_point or point}); its bindings fail at once until it recovers"
        )
        raise PluginError(plugin, point, f"plugin {plugin} is {detail}", detail)

    def returned(self, call: Call, *, overran: bool) -> None:
        """After ``call`` returned (or raised): count an overrun, or a call within budget."""
        if not (overran or call.stuck or call.probe):
            known = self._states.get(call.plugin)
            if known is None or (known.overruns == 0 and known.broken_since is None):
                return  # the common case, without the lock
        with self._lock:
            state = self._states.setdefault(call.plugin, _State())
            if call.stuck:
                state.stuck -= 1
            if call.probe:
                state.probing = False
            if not overran and not call.stuck:
                if state.broken_since is None:
                    state.overruns = 0
                    return
                if not call.probe:
                    return
                state.broken_since = None
                state.overruns = 0
                self._broken = self._broken - {call.plugin}
                event = "recovered"
            elif call.stuck:
                return  # counted when the edge gave up on it
            else:
                event = self._overrun(state, call, "took longer than its time budget")
        self._after(event, call)

    def stuck(self, call: Call) -> None:
        """The edge gave up on the binding while ``call`` was running: an overrun, and a stuck call
        until it returns."""
        with self._lock:
            if call.stuck:
                return
            call.stuck = True
            state = self._states.setdefault(call.plugin, _State())
            state.stuck += 1
            if call.probe:
                state.probing = False
            event = self._overrun(state, call, "did not return within the binding's budget")
        self._after(event, call)

    def _overrun(self, state: _State, call: Call, detail: str) -> str:
        """Under the lock: one more overrun; "broken" when it marks the plugin broken."""
        state.overruns += 1
        state.last_point = call.point
        if state.broken_since is not None:
            if call.probe:
                state.broken_since = self._clock()  # the probe failed: broken for another cool-down
            return "overrun"
        if state.overruns >= self.overruns_to_break:
            state.broken_since = self._clock()
            self._broken = self._broken | {call.plugin}
            return "broken"
        return "overrun"

    def _after(self, event: str, call: Call) -> None:
        if event == "broken":
            _tell("overrun", self.profile, call.plugin, call.point, "")
            _tell("broken", self.profile, call.plugin, call.point, f"after {self.overruns_to_break} overruns")
        else:
            _tell(event, self.profile, call.plugin, call.point, "")


class Call:
    """One call of a plugin in progress: whose, at which point, whether it is a probe of a broken
    plugin, and whether the edge gave up on it."""

    __slots__ = ("health", "plugin", "point", "probe", "stuck")

    def __init__(self, health: PluginHealth, plugin: str, point: str) -> None:
        self.health = health
        self.plugin = plugin
        self.point = point
        self.probe = False
        self.stuck = False


# Thread ident -> the plugin call it is in (set and cleared by the runtime around each call).
_IN_CALL: dict[int, Call] = {}


def current_call(thread: int) -> Call | None:
    """The plugin call thread ``thread`` is in, if any."""
    return _IN_CALL.get(thread)


def entering(call: Call) -> int:
    """Record that this thread is in ``call``; returns the thread's ident for ``leaving``."""
    ident = threading.get_ident()
    _IN_CALL[ident] = call
    return ident


def leaving(ident: int) -> None:
    _IN_CALL.pop(ident, None)
