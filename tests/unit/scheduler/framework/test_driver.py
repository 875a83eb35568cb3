"""The core states its network calls as requests, one batch per step; a driver performs them."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fleetsched.plugin import EstimateRequest, ExtenderPrioritizeRequest
from fleetsched.scheduler.framework.runtime import ConcurrentDriver, SerialDriver
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo, ReplicaRequirements

from ..builders import a_binding, a_cluster
from .test_runtime import FakeExtender


class Fixed:
    def __init__(self, name: str, answer: int, fail: bool = False) -> None:
        self.name = name
        self.answer = answer
        self.fail = fail

    def max_available_replicas(
        self, clusters: Sequence[ClusterInfo], replica_requirements: ReplicaRequirements | None
    ) -> list[int]:
        if self.fail:
            raise ConnectionError("estimator unreachable")
        return [self.answer] * len(clusters)


class RecordingDriver:
    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.batches: list[list[str]] = []

    def perform(self, requests: Sequence[Any]) -> list[Any]:
        self.batches.append([type(r).__name__ for r in requests])
        return self.inner.perform(requests)  # type: ignore[no-any-return]


FLEET = [a_cluster("m1").free(10).build(), a_cluster("m2").free(10).build()]


def test_all_estimators_of_a_step_are_one_batch_and_failures_are_answers() -> None:
    driver = RecordingDriver(SerialDriver())
    estimators = [Fixed("a", 3), Fixed("b", 0, fail=True)]
    extenders = [FakeExtender("https://x", scores={"m1": 1}), FakeExtender("https://y", scores={"m2": 1})]
    scheduler = Scheduler(estimators=estimators, extenders=extenders, driver=driver)
    binding = a_binding().replicas(4).dynamic()
    result = scheduler.schedule(binding.build(), binding.status(), Snapshot(FLEET))
    assert driver.batches == [
        ["ExtenderPrioritizeRequest", "ExtenderPrioritizeRequest"],
        ["EstimateRequest", "EstimateRequest", "EstimateRequest"],  # general + two
    ]
    assert {n.cluster: n.allocatable for n in result.attempts[0].numbers} == {"m1": 3, "m2": 3}


def test_the_concurrent_driver_answers_as_the_serial_one() -> None:
    requests: list[Any] = [
        EstimateRequest(Fixed("a", 2), tuple(FLEET), None),
        EstimateRequest(Fixed("b", 0, fail=True), tuple(FLEET), None),
        ExtenderPrioritizeRequest(
            FakeExtender("https://x", scores={"m1": 4}), a_binding().build(), tuple(FLEET)
        ),
    ]
    serial = SerialDriver().perform(requests)
    with ThreadPoolExecutor(max_workers=3) as pool:
        concurrent = ConcurrentDriver(pool).perform(requests)
    assert serial[0] == concurrent[0] == [2, 2]
    assert isinstance(serial[1], ConnectionError) and isinstance(concurrent[1], ConnectionError)
    assert serial[2] == concurrent[2] == {"m1": 4}


def test_only_a_profile_of_in_tree_plugins_without_extenders_or_remote_estimators_computes_only() -> None:
    # The operator starts such an attempt on its event loop (scheduler/compute.py): nothing in it waits.
    assert Scheduler().computes_only
    assert not Scheduler(extenders=[FakeExtender("https://x", scores={"m1": 1})]).computes_only
    assert not Scheduler(estimators=[Fixed("accurate", 3)]).computes_only
    with ThreadPoolExecutor(2) as pool:
        assert not Scheduler(driver=ConcurrentDriver(pool)).computes_only
    from .test_runtime import ALL_POINTS, Recorder, profile_with, registry_of

    recorder = Recorder()  # a plugin defined outside fleetsched.scheduler.plugins
    profile = profile_with({p: ["Recorder"] for p in ALL_POINTS})
    out_of_tree = Scheduler(profile=profile, registry=registry_of(recorder))
    assert not out_of_tree.computes_only
