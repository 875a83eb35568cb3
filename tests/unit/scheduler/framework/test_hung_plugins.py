"""A plugin that hangs holds its own profile's core threads, never another profile's (issue 23).

Before: one pool of ``--workers`` threads served every profile, so bindings stuck in one profile's
Filter took every thread and the default profile's bindings waited behind them; the budget freed
the binding but not the thread, and nothing said which plugin it was. Real threads and a real
Framework here; budgets are small and every wait is bounded, nothing asserts a time.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

from fleetsched.controller.runtime import metrics
from fleetsched.controller.scheduler.compute import BudgetExceeded, CoreExecutor, CoreRaised, CoreSaturated
from fleetsched.plugin import ClusterInfo, FilterContext, Status
from fleetsched.scheduler.framework.profile import ExtensionPoint
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot

from ..builders import a_binding
from .test_runtime import FLEET, profile_with, registry_of


class Hanging:
    name = "Hanging"

    def __init__(self) -> None:
        self.release = threading.Event()

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        self.release.wait(30)
        return Status.success()


def sample(name: str, **labels: str) -> float:
    value = metrics.REGISTRY.get_sample_value(name, labels or None)
    return 0.0 if value is None else value


def _args(scheduler: Scheduler, name: str) -> tuple[object, ...]:
    binding = a_binding(name).replicas(1)
    return (scheduler.schedule, binding.build(), binding.status(), Snapshot(FLEET))


async def test_a_hung_plugin_holds_only_its_own_profiles_threads_and_is_named() -> None:
    hanging = Hanging()
    hostile = Scheduler(
        profile=profile_with({ExtensionPoint.FILTER: ["Hanging"]}, scheduler_name="hostile"),
        registry=registry_of(hanging),
    )
    healthy = Scheduler()
    executor = CoreExecutor(threads=2, budget=0.2, grace=0.1)
    labels = {"profile": "hostile", "plugin": "Hanging", "extension_point": "Filter"}
    abandoned = sample("fleetsched_scheduler_abandoned_computations")
    overruns = sample("fleetsched_scheduler_plugin_overruns_total", **labels)
    try:
        stuck = await asyncio.gather(
            *(executor.run(*_args(hostile, f"h{i}"), key=f"h{i}", pool="hostile") for i in range(2)),
            return_exceptions=True,
        )
        for error in stuck:
            assert isinstance(error, BudgetExceeded)
            assert str(error).endswith("and was stopped: plugin Hanging did not return from Filter")
        # Both threads of the hostile profile are held; its next binding fails at once, naming why ...
        with pytest.raises(CoreSaturated, match=r"every core thread of profile hostile \(2\) is held .*"
                           r"plugin Hanging did not return from Filter"):
            await asyncio.wait_for(executor.run(*_args(hostile, "h3"), key="h3", pool="hostile"), 5)
        # ... while the default profile's bindings are scheduled in threads of their own.
        done = await asyncio.wait_for(
            asyncio.gather(
                *(
                    executor.run(*_args(healthy, f"d{i}"), key=f"d{i}", pool="default-scheduler")
                    for i in range(5)
                )
            ),
            20,
        )
        assert all(result.scheduled for result in done)
        assert sample("fleetsched_scheduler_plugin_overruns_total", **labels) == overruns + 2
        assert hostile.framework.health.broken() == frozenset()  # two overruns: not yet broken (three)
        assert sample("fleetsched_scheduler_core_saturated_total", profile="hostile") >= 1
    finally:
        hanging.release.set()
        # the stuck computations end (and log late_result_discarded) before the test does
        for _ in range(100):
            if sample("fleetsched_scheduler_abandoned_computations") <= abandoned:
                break
            await asyncio.sleep(0.1)
        executor.close()


async def test_a_system_exit_out_of_the_core_is_that_bindings_error() -> None:
    def exits() -> None:
        raise SystemExit(3)

    executor = CoreExecutor(threads=1, budget=5)
    try:
        with pytest.raises(CoreRaised, match="scheduling raised SystemExit: 3"):
            await executor.run(exits, key="b")
        with pytest.raises(CoreRaised, match="KeyboardInterrupt"):
            await executor.run(lambda: (_ for _ in ()).throw(KeyboardInterrupt), key="b", inline=True)
    finally:
        executor.close()
