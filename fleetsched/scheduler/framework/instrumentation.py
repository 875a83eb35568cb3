"""Instrumentation of the framework runtime: the names of the steps and extension points as Karmada's
metrics label them, the observer callbacks the edge injects (no metrics import here), and how one
plugin call is timed, attributed and contained (``Instrumented._call``).

Budgets: after each extension point the runtime calls ``checkpoint()`` (never inside a plugin's try
block), so a caller that bounds one binding's time (the operator's ``compute.observe_step`` budget)
can stop the attempt there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleetsched.scheduler.framework.checkpoint import checkpoint
from fleetsched.scheduler.framework.containment import (
    Call,
    PluginError,
    PluginHealth,
    describe,
    entering,
    escapes,
    leaving,
)
from fleetsched.scheduler.framework.interface import Code
from fleetsched.scheduler.framework.profile import ExtensionPoint
from fleetsched.scheduler.outcome import SkippedPlugin

# The generic scheduler's steps, under Karmada's names (the ``schedule_step`` label of
# karmada_scheduler_scheduling_algorithm_duration_seconds).
STEP_FILTER = "Filter"
STEP_SCORE = "Score"
STEP_SELECT = "Select"
STEP_ASSIGN_REPLICAS = "AssignReplicas"
STEPS: tuple[str, ...] = (STEP_FILTER, STEP_SCORE, STEP_SELECT, STEP_ASSIGN_REPLICAS)

# Karmada's extension point labels (karmada_scheduler_framework_extension_point_duration_seconds).
POINT_NAMES: dict[ExtensionPoint, str] = {
    ExtensionPoint.QUEUE_SORT: "QueueSort",
    ExtensionPoint.PRE_FILTER: "PreFilter",
    ExtensionPoint.FILTER: "Filter",
    ExtensionPoint.POST_FILTER: "PostFilter",
    ExtensionPoint.PRE_SCORE: "PreScore",
    ExtensionPoint.SCORE: "Score",
    ExtensionPoint.RESERVE: "Reserve",
    ExtensionPoint.PERMIT: "Permit",
    ExtensionPoint.PRE_BIND: "PreBind",
    ExtensionPoint.POST_BIND: "PostBind",
}
NORMALIZE_SCORE = "NormalizeScore"
UNRESERVE = "Unreserve"

# Called with (plugin, extension point, result, seconds) once per plugin and point per attempt;
# the operator exports it as karmada_scheduler_plugin_execution_duration_seconds. ``result`` is a
# ``Code`` value ("Success", "Unschedulable", "Error", ...).
Observer = Callable[[str, str, str, float], None]
# Called with (extension point, result, seconds) once per point per attempt; the operator exports it as
# karmada_scheduler_framework_extension_point_duration_seconds.
PointObserver = Callable[[str, str, float], None]
# Called with (extender name, verb "filter"/"prioritize", the exception raised or what was wrong with
# the answer) when an ignorable extender failed and was skipped; the scheduler process counts it as
# fleetsched_scheduler_extender_ignored_failures_total.
ExtenderSkipObserver = Callable[[str, str, "BaseException | str"], None]


class Instrumented:
    """Timing, observation and failure attribution of plugin calls, shared by the runtime's parts.
    The Framework sets these attributes in its constructor."""

    observer: Observer | None
    point_observer: PointObserver | None
    ignorable: frozenset[str]
    budget: float | None
    health: PluginHealth
    _timer: Callable[[], float]

    def _point(self, point: str, code: Code, started: float) -> float:
        """Report one extension point's duration since ``started``; returns now. Then a budget
        checkpoint (``groups.checkpoint``): a budgeted caller may stop the attempt between points."""
        now = self._timer()
        if self.point_observer is not None:
            self.point_observer(point, code.value, now - started)
        checkpoint()
        return now

    def _observe(self, plugin: str, point: str, code: Code, seconds: float) -> None:
        if self.observer is not None:
            self.observer(plugin, point, code.value, seconds)

    def _overran(self, seconds: float) -> bool:
        return self.budget is not None and seconds > self.budget

    def _failed(self, plugin: str, point: str, message: str, skipped: list[SkippedPlugin]) -> None:
        """A plugin raised or overran: skip it (ignorable) or fail the binding naming it."""
        if plugin in self.ignorable:
            skipped.append(SkippedPlugin(plugin, point, message))
            return
        raise PluginError.failed(plugin, point, message)

    def _skip_or_raise(self, error: PluginError, skipped: list[SkippedPlugin]) -> None:
        """``_failed`` for an error already made: skip the plugin (ignorable) or raise it."""
        if error.plugin in self.ignorable:
            skipped.append(SkippedPlugin(error.plugin, error.point, error.detail))
            return
        raise error

    def _call(self, name: str, point: str, fn: Callable[[], Any]) -> tuple[Any, float]:
        """One call into a plugin: refused at once while the plugin is marked broken, recorded as
        this thread's current call (the edge names it when it gives up on the binding), timed and
        counted against the plugin's budget. Whatever it raises but the process's own shutdown comes
        back as a ``PluginError`` naming the plugin and the point. Returns (value, seconds)."""
        call: Call = self.health.admit(name, point)
        ident = entering(call)
        t0 = self._timer()
        try:
            value = fn()
        except BaseException as e:
            seconds = self._timer() - t0
            leaving(ident)
            if escapes(e):
                raise
            self.health.returned(call, overran=self._overran(seconds))
            self._observe(name, point, Code.ERROR, seconds)
            raise PluginError.failed(name, point, describe(e)) from None
        seconds = self._timer() - t0
        leaving(ident)
        self.health.returned(call, overran=self._overran(seconds))
        return value, seconds

    def _budget_message(self, seconds: float) -> str:
        return f"took {seconds:.3f}s, over its time budget of {self.budget:g}s"
