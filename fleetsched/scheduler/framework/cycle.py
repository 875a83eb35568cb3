"""The binding cycle (Reserve -> Permit -> PreBind -> the edge's write -> PostBind, or Unreserve) and
the bindings waiting at Permit, with the ``Handle`` plugins are given to reach them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fleetsched.scheduler.framework.containment import PluginError, quote
from fleetsched.scheduler.framework.instrumentation import UNRESERVE, Instrumented
from fleetsched.scheduler.framework.interface import (
    Code,
    FilterContext,
    PermitPlugin,
    PostBindPlugin,
    PreBindPlugin,
    ReservePlugin,
    Status,
)
from fleetsched.scheduler.framework.listers import Listers
from fleetsched.scheduler.framework.plugin_metrics import PluginMetrics
from fleetsched.scheduler.types import TargetCluster

# ---- waiting at Permit ---------------------------------------------------------------------------


class WaitingAtPermit:
    """A binding held at Permit until every waiting plugin allows it, one rejects it, or time is up.

    Like kube-scheduler's waitingPod, whose channel receives the decision: whoever waits registers a
    callback (``on_decided``) that the last ``allow`` or the first ``reject`` calls, in the thread
    that decided. The timeout calls nothing (the core runs no timers): the waiter waits at most
    until ``deadline`` on the framework's clock, after which ``status`` is the timeout rejection."""

    __slots__ = ("_deadline", "_key", "_listeners", "_lock", "_pending", "_rejected")

    def __init__(self, key: str, pending: dict[str, float], now: float) -> None:
        self._key = key
        self._pending = dict(pending)  # plugin -> timeout
        self._deadline = now + min(pending.values())
        self._rejected: tuple[str, str] | None = None
        self._listeners: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    @property
    def key(self) -> str:
        return self._key

    def pending_plugins(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._pending)

    def allow(self, plugin: str) -> None:
        with self._lock:
            self._pending.pop(plugin, None)
            woken = self._take_listeners() if not self._pending else []
        call_all(woken)

    def reject(self, plugin: str, reason: str) -> None:
        with self._lock:
            if self._rejected is None:
                self._rejected = (plugin, reason)
            woken = self._take_listeners()
        call_all(woken)

    def on_decided(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when every waiting plugin has allowed the binding or one rejected
        it; at once (in this thread) when that has already happened."""
        with self._lock:
            if self._rejected is None and self._pending:
                self._listeners.append(callback)
                return
        call_all([callback])

    def _take_listeners(self) -> list[Callable[[], None]]:
        woken, self._listeners = self._listeners, []
        return woken

    def status(self, now: float) -> Status | None:
        """Success once all allowed, a rejection, or None while still waiting."""
        with self._lock:
            if self._rejected is not None:
                plugin, reason = self._rejected
                return Status(Code.UNSCHEDULABLE, (reason,), plugin)
            if not self._pending:
                return Status.success()
            if now >= self._deadline:
                plugins = ", ".join(sorted(self._pending))
                return Status(
                    Code.UNSCHEDULABLE,
                    (f"rejected due to timeout after waiting at Permit for {plugins}",),
                    next(iter(sorted(self._pending))),
                )
            return None

    @property
    def deadline(self) -> float:
        return self._deadline


def call_all(callbacks: Sequence[Callable[[], None]]) -> None:
    """Wake the waiters; a waiter that is gone (its event loop closed) must not fail the plugin
    that allowed or rejected the binding."""
    for callback in callbacks:
        with contextlib.suppress(Exception):
            callback()


class HandleSource(Protocol):
    """What a ``PluginHandle`` reads of its Framework."""

    @property
    def profile_name(self) -> str: ...

    @property
    def listers(self) -> Listers: ...

    @property
    def plugin_metrics(self) -> PluginMetrics: ...

    def clock(self) -> float: ...

    def waiting_binding(self, key: str) -> WaitingAtPermit | None: ...


class PluginHandle:
    """The ``Handle`` a plugin's factory is given: the profile's name, the clock, the bindings
    waiting at Permit, the read-only listers and the metrics registry, and nothing else of the
    Framework (no way to its plugins, memo or settings)."""

    __slots__ = ("_framework",)

    def __init__(self, framework: HandleSource) -> None:
        self._framework = framework

    @property
    def profile_name(self) -> str:
        return self._framework.profile_name

    def clock(self) -> float:
        return self._framework.clock()

    def waiting_binding(self, key: str) -> WaitingAtPermit | None:
        return self._framework.waiting_binding(key)

    @property
    def listers(self) -> Listers:
        return self._framework.listers

    @property
    def metrics_registry(self) -> PluginMetrics:
        return self._framework.plugin_metrics


class BindingCycleRunner(Instrumented):
    """The Framework's binding-cycle points (set up in its constructor)."""

    reserves: tuple[ReservePlugin, ...]
    permits: tuple[PermitPlugin, ...]
    pre_binds: tuple[PreBindPlugin, ...]
    post_binds: tuple[PostBindPlugin, ...]
    _waiting: dict[str, WaitingAtPermit]
    _waiting_lock: threading.Lock
    _clock: Callable[[], float]

    def clock(self) -> float:
        return self._clock()

    def waiting_binding(self, key: str) -> WaitingAtPermit | None:
        with self._waiting_lock:
            return self._waiting.get(key)

    def run_reserve(
        self, ctx: FilterContext, targets: Sequence[TargetCluster]
    ) -> tuple[Status, Callable[[], None]]:
        """Reserve on every Reserve plugin in order. Returns the status and an ``undo`` that calls
        Unreserve on the plugins that reserved, in reverse order (idempotent). On a failure the
        plugins that had reserved are already unreserved."""
        done: list[ReservePlugin] = []
        undone = False

        def undo() -> None:
            nonlocal undone
            if undone:
                return
            undone = True
            for plugin in reversed(done):
                try:
                    _, seconds = self._call(
                        plugin.name, UNRESERVE, lambda p=plugin: p.unreserve(ctx, targets)
                    )
                except PluginError:  # Unreserve must not raise; one that does cannot stop the others
                    continue
                self._observe(plugin.name, UNRESERVE, Code.SUCCESS, seconds)

        started = self._timer()
        for plugin in self.reserves:
            status = self._binding_call(plugin.name, "Reserve", lambda p=plugin: p.reserve(ctx, targets))
            if not status.is_success:
                undo()
                self._point("Reserve", status.code, started)
                return status, undo
            done.append(plugin)
        if self.reserves:
            self._point("Reserve", Code.SUCCESS, started)
        return Status.success(), undo

    def run_permit(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        """Permit on every Permit plugin: Success, the first denial, or WAIT (then ``wait_on_permit``)."""
        waiting: dict[str, float] = {}
        started = self._timer()
        for plugin in self.permits:
            status = self._binding_call(plugin.name, "Permit", lambda p=plugin: p.permit(ctx, targets))
            if status.code is Code.WAIT:
                waiting[plugin.name] = max(0.0, status.timeout_seconds)
                continue
            if not status.is_success:
                self._point("Permit", status.code, started)
                return status
        if self.permits:
            self._point("Permit", Code.WAIT if waiting else Code.SUCCESS, started)
        if not waiting:
            return Status.success()
        held = WaitingAtPermit(ctx.binding.key, waiting, self._clock())
        with self._waiting_lock:
            self._waiting[ctx.binding.key] = held
        return Status(
            Code.WAIT,
            (f"waiting at Permit for {', '.join(sorted(waiting))}",),
            timeout_seconds=held.deadline - self._clock(),
        )

    def wait_on_permit(self, key: str) -> Status | None:
        """The decision on a binding held at Permit, on the injected clock: Success once every waiting
        plugin allowed it, a denial (rejected, or timed out), or None while still waiting. A decided
        binding is no longer held."""
        with self._waiting_lock:
            held = self._waiting.get(key)
        if held is None:
            return Status.success()
        status = held.status(self._clock())
        if status is not None:
            with self._waiting_lock:
                self._waiting.pop(key, None)
        return status

    def run_pre_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        started = self._timer()
        for plugin in self.pre_binds:
            status = self._binding_call(plugin.name, "PreBind", lambda p=plugin: p.pre_bind(ctx, targets))
            if not status.is_success:
                self._point("PreBind", status.code, started)
                return status
        if self.pre_binds:
            self._point("PreBind", Code.SUCCESS, started)
        return Status.success()

    def run_post_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        started = self._timer()
        for plugin in self.post_binds:
            try:
                _, seconds = self._call(plugin.name, "PostBind", lambda p=plugin: p.post_bind(ctx, targets))
            except PluginError:  # informational: a failure changes nothing that was written
                continue
            self._observe(plugin.name, "PostBind", Code.SUCCESS, seconds)
        if self.post_binds:
            self._point("PostBind", Code.SUCCESS, started)

    def _binding_call(self, name: str, point: str, call: Callable[[], Status]) -> Status:
        """A binding-cycle call; a raise or overrun is an Error naming the plugin (ignorable: Success)."""
        try:
            status, seconds = self._call(name, point, call)
        except PluginError as e:
            if name in self.ignorable:
                return Status.success()
            return Status(Code.ERROR, (e.message,), name)
        if not isinstance(status, Status):
            self._observe(name, point, Code.ERROR, seconds)
            if name in self.ignorable:
                return Status.success()
            message = f"plugin {name} failed at {point}: returned {quote(status)}, not a Status"
            return Status(Code.ERROR, (message,), name)
        self._observe(name, point, status.code, seconds)
        if self._overran(seconds) and status.code is not Code.WAIT:
            if name in self.ignorable:
                return Status.success()
            return Status(
                Code.ERROR, (f"plugin {name} failed at {point}: {self._budget_message(seconds)}",), name
            )
        if status.is_success or status.code is Code.WAIT:
            return status
        return dataclasses.replace(status, plugin=status.plugin or name)

    @property
    def has_binding_cycle(self) -> bool:
        """True when some plugin runs at Reserve, Permit, PreBind or PostBind."""
        return bool(self.reserves or self.permits or self.pre_binds or self.post_binds)

    def binding_cycle(self, cycle_context: Any, targets: Sequence[TargetCluster]) -> BindingCycle:
        return BindingCycle(self, cycle_context, tuple(targets))


@dataclass(slots=True)
class BindingCycle:
    """Reserve -> Permit -> PreBind -> (the edge writes) -> PostBind, or Unreserve when anything
    after Reserve fails (the write included). The edge calls these in that order."""

    framework: BindingCycleRunner
    ctx: FilterContext
    targets: tuple[TargetCluster, ...]
    _undo: Callable[[], None] | None = field(default=None, repr=False)

    def reserve(self) -> Status:
        status, self._undo = self.framework.run_reserve(self.ctx, self.targets)
        return status

    def permit(self) -> Status:
        status = self.framework.run_permit(self.ctx, self.targets)
        if status.is_rejection or status.code is Code.ERROR:
            self.unreserve()
        return status

    def wait_on_permit(self) -> Status | None:
        status = self.framework.wait_on_permit(self.ctx.binding.key)
        if status is not None and not status.is_success:
            self.unreserve()
        return status

    def on_permit_decided(self, callback: Callable[[], None]) -> None:
        """After a WAIT from ``permit``: call ``callback`` once (in the thread that decides, so an
        event loop's waiter passes ``loop.call_soon_threadsafe``) when every waiting plugin has
        allowed the binding or one rejected it; at once when it is no longer held. The timeout calls
        nothing: wait at most ``permit_seconds_left()``, then ask ``wait_on_permit``."""
        held = self.framework.waiting_binding(self.ctx.binding.key)
        if held is None:
            call_all([callback])
        else:
            held.on_decided(callback)

    def permit_seconds_left(self) -> float:
        """Seconds on the framework's clock until the binding's Permit timeout (0 when not held)."""
        held = self.framework.waiting_binding(self.ctx.binding.key)
        return 0.0 if held is None else max(0.0, held.deadline - self.framework.clock())

    def pre_bind(self) -> Status:
        status = self.framework.run_pre_bind(self.ctx, self.targets)
        if not status.is_success:
            self.unreserve()
        return status

    def unreserve(self) -> None:
        if self._undo is not None:
            self._undo()

    def post_bind(self) -> None:
        self.framework.run_post_bind(self.ctx, self.targets)
