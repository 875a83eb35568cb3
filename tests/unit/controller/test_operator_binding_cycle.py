"""The operator's write step runs the binding cycle: Reserve before the writes, Unreserve when a
write fails, PostBind after both writes, and a Permit denial writes only the condition."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from test_operator_writes import MemoryApi, a_binding, a_cluster

from fleetsched.controller.runtime.queue import Outcome, QueuedBinding, QueueKey
from fleetsched.controller.scheduler.compute import CoreExecutor
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import ApiError, Connection
from fleetsched.plugin import FilterContext, Status, TargetCluster
from fleetsched.scheduler import Scheduler
from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile

WEB = QueueKey("ResourceBinding", "ns", "web")


class Cycle:
    """Reserve, Permit, PreBind and PostBind, recording each call (Permit answers ``permit``)."""

    name = "Cycle"

    def __init__(self, permit: Status) -> None:
        self.answer = permit
        self.calls: list[str] = []

    def reserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self.calls.append(f"reserve {[(t.name, t.replicas) for t in targets]}")
        return Status.success()

    def unreserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        self.calls.append("unreserve")

    def permit(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self.calls.append("permit")
        return self.answer

    def pre_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self.calls.append("prebind")
        return Status.success()

    def post_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        self.calls.append("postbind")


class FailingApi(MemoryApi):
    def __init__(self, binding: dict[str, Any], fail: str) -> None:
        super().__init__(binding)
        self.fail = fail

    async def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        part = "status" if path.endswith("/status") else "spec"
        if part == self.fail:
            raise ApiError(500, "InternalError", "etcd is unhappy")
        return await super().merge_patch(path, patch)


def _operator(api: MemoryApi, plugin: Cycle, compute: CoreExecutor | None = None) -> SchedulerOperator:
    base = defaults.default_profile()
    plugins = dict(base.plugins)
    cycle_points = (
        ExtensionPoint.RESERVE,
        ExtensionPoint.PERMIT,
        ExtensionPoint.PRE_BIND,
        ExtensionPoint.POST_BIND,
    )
    for point in cycle_points:
        plugins[point] = (PluginEntry("Cycle"),)
    registry = defaults.in_tree_registry()
    registry.register("Cycle", lambda args, handle: plugin)
    operator = SchedulerOperator(
        client=api,
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=Scheduler(profile=Profile(plugins=plugins), registry=registry),
        config=OperatorConfig(),
        compute=compute,
    )
    operator.on_cluster_event(None, a_cluster("m1"))
    operator.on_binding_event(RB, None, api.binding)
    return operator


async def test_reserve_then_permit_prebind_write_and_postbind() -> None:
    plugin = Cycle(Status.success())
    api = MemoryApi(a_binding())
    assert await _operator(api, plugin).process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
    assert plugin.calls == ["reserve [('m1', 3)]", "permit", "prebind", "postbind"]
    assert api.writes == ["spec", "status"]


async def test_a_failed_write_unreserves() -> None:
    for failing in ("spec", "status"):
        plugin = Cycle(Status.success())
        api = FailingApi(a_binding(), fail=failing)
        assert await _operator(api, plugin).process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.ERROR
        assert plugin.calls == ["reserve [('m1', 3)]", "permit", "prebind", "unreserve"], failing


async def test_a_permit_denial_writes_only_the_condition_naming_the_plugin() -> None:
    plugin = Cycle(Status.unschedulable("tenant over quota"))
    api = MemoryApi(a_binding())
    outcome = await _operator(api, plugin).process(QueuedBinding(WEB, 0, 0.0, 1))
    assert outcome is Outcome.UNSCHEDULABLE
    assert plugin.calls == ["reserve [('m1', 3)]", "permit", "unreserve"]
    # Nothing of the placement is written (the explanation annotation may be).
    assert "clusters" not in api.binding["spec"]
    assert "policy.karmada.io/applied-placement" not in api.binding["metadata"].get("annotations", {})
    condition = api.binding["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"] == "Cycle: tenant over quota"


async def test_the_binding_cycle_is_the_bindings_profiles() -> None:
    """With several profiles, Reserve/Permit/PreBind/PostBind come from the profile that scheduled
    the binding (its spec.schedulerName), not from the operator's first Scheduler."""
    plugin = Cycle(Status.success())
    tenant_binding = a_binding()
    tenant_binding["spec"]["schedulerName"] = "tenant"
    api = MemoryApi(tenant_binding)
    cycled = _operator(api, plugin).scheduler
    plain = Scheduler()
    operator = SchedulerOperator(
        client=api,
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=plain,
        profiles={"default-scheduler": plain, "tenant": cycled},
        config=OperatorConfig(scheduler_names=frozenset({"default-scheduler", "tenant"})),
    )
    operator.on_cluster_event(None, a_cluster("m1"))
    operator.on_binding_event(RB, None, api.binding)
    assert await operator.process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
    assert plugin.calls == ["reserve [('m1', 3)]", "permit", "prebind", "postbind"]


class Held(Cycle):
    """Cycle whose Permit holds the binding (``Status.wait``), counting how often the operator asks
    the framework for the decision."""

    def __init__(self, timeout_seconds: float) -> None:
        super().__init__(Status.wait(timeout_seconds))
        self.asked = 0

    def watch(self, operator: SchedulerOperator) -> None:
        framework = operator.scheduler.framework
        ask = framework.wait_on_permit

        def counted(key: str) -> Status | None:
            self.asked += 1
            return ask(key)

        framework.wait_on_permit = counted  # type: ignore[method-assign]


async def _held_at_permit(operator: SchedulerOperator, plugin: Held) -> asyncio.Task[Outcome]:
    """Start processing WEB and return once its Permit has answered WAIT (the operator then waits)."""
    task = asyncio.create_task(operator.process(QueuedBinding(WEB, 0, 0.0, 1)))

    async def permitted() -> None:
        while "permit" not in plugin.calls:  # the attempt itself runs on a worker thread
            await asyncio.sleep(0.01)

    await asyncio.wait_for(permitted(), 60)  # a guard against a hang, not a measurement
    return task


def _held(operator: SchedulerOperator) -> Any:
    held = operator.scheduler.framework.waiting_binding("ns/web")
    assert held is not None and held.pending_plugins() == ("Cycle",)
    return held


async def test_an_allow_wakes_the_binding_held_at_permit_without_polling() -> None:
    plugin = Held(timeout_seconds=3600)
    api = MemoryApi(a_binding())
    operator = _operator(api, plugin)
    plugin.watch(operator)
    task = await _held_at_permit(operator, plugin)
    await asyncio.sleep(0.3)  # time passes while held: a poll would have asked again meanwhile
    assert not task.done() and plugin.asked == 1  # asked once, then waiting on the signal
    _held(operator).allow("Cycle")
    # Woken by the allow, not by its one-hour timeout; PreBind and PostBind then run in the
    # profile's core thread, so the rest takes a thread's turn, not a timer's.
    assert await asyncio.wait_for(task, 10) is Outcome.DONE
    assert plugin.asked == 2  # once more, when woken: no polling
    assert plugin.calls == ["reserve [('m1', 3)]", "permit", "prebind", "postbind"]
    assert api.writes == ["spec", "status"]


async def test_a_reject_of_the_held_binding_writes_only_the_condition() -> None:
    plugin = Held(timeout_seconds=3600)
    api = MemoryApi(a_binding())
    operator = _operator(api, plugin)
    task = await _held_at_permit(operator, plugin)
    _held(operator).reject("Cycle", "change ticket not approved")
    steps = 0
    while not task.done():
        await asyncio.sleep(0)
        steps += 1
        assert steps < 100, plugin.calls
    assert task.result() is Outcome.UNSCHEDULABLE
    assert plugin.calls == ["reserve [('m1', 3)]", "permit", "unreserve"]
    assert "clusters" not in api.binding["spec"]
    condition = api.binding["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"] == "Cycle: change ticket not approved"


async def test_the_permit_timeout_rejects_the_held_binding() -> None:
    plugin = Held(timeout_seconds=0.05)
    api = MemoryApi(a_binding())
    operator = _operator(api, plugin)
    outcome = await asyncio.wait_for(operator.process(QueuedBinding(WEB, 0, 0.0, 1)), 60)
    assert outcome is Outcome.UNSCHEDULABLE
    assert plugin.calls == ["reserve [('m1', 3)]", "permit", "unreserve"]
    assert "clusters" not in api.binding["spec"]
    condition = api.binding["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "Unschedulable")
    assert condition["message"] == "Cycle: rejected due to timeout after waiting at Permit for Cycle"


class HangsAt(Cycle):
    """Cycle whose ``point`` does not return until ``release`` is set (a plugin stuck on I/O)."""

    def __init__(self, point: str) -> None:
        super().__init__(Status.success())
        self.point = point
        self.release = threading.Event()

    def _maybe_hang(self, point: str) -> None:
        if point == self.point:
            self.release.wait(30)

    def reserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self._maybe_hang("reserve")
        return super().reserve(ctx, targets)

    def permit(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self._maybe_hang("permit")
        return super().permit(ctx, targets)

    def pre_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self._maybe_hang("prebind")
        return super().pre_bind(ctx, targets)


@pytest.mark.parametrize("point", ["reserve", "permit", "prebind"])
async def test_a_plugin_hanging_in_the_binding_cycle_holds_a_thread_not_the_event_loop(point: str) -> None:
    plugin = HangsAt(point)
    api = MemoryApi(a_binding())
    operator = _operator(api, plugin, CoreExecutor(threads=2, budget=0.3))
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticking = asyncio.create_task(tick())
    try:
        outcome = await asyncio.wait_for(operator.process(QueuedBinding(WEB, 0, 0.0, 1)), 10)
    finally:
        ticking.cancel()
        plugin.release.set()
    assert ticks >= 10, "the event loop was blocked while the plugin hung"
    assert outcome is not Outcome.DONE
    assert "clusters" not in api.binding["spec"], "nothing of the placement is written"
    condition = api.binding["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
    assert "budget of 0.3s" in condition["message"]
    assert "Cycle" in condition["message"], condition["message"]
