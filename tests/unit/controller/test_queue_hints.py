"""Queueing hints in the scheduling queue (KEP-4247): only the event that can help moves a parked
binding, through backoff; in-flight events count; the flush stays the backstop; debounced updates."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import pytest

from fleetsched.api.quantity import Quantity
from fleetsched.controller.runtime.queue import Outcome, SchedulingQueue
from fleetsched.controller.scheduler import decision
from fleetsched.scheduler.framework import hints
from fleetsched.scheduler.framework.hints import (
    ClusterEvent,
    ClusterEventWithHint,
    QueueEvent,
    QueueingHint,
    Rejection,
)
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.types import ClusterInfo, ResourceSummary, Taint
from tests.support.clock import FakeClock


class HintLog:
    def __init__(self) -> None:
        self.hints: list[tuple[str, QueueingHint]] = []
        self.decisions: list[tuple[str, float]] = []

    def hinted(self, event: str, hint: QueueingHint) -> None:
        self.hints.append((event, hint))

    def decided(self, event: str, seconds: float) -> None:
        self.decisions.append((event, seconds))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def log() -> HintLog:
    return HintLog()


@pytest.fixture
def queue(clock: FakeClock, log: HintLog) -> SchedulingQueue:
    return SchedulingQueue(clock=clock, hint_observer=log)


def no_registrations(plugin: str) -> None:
    return None


def park(
    queue: SchedulingQueue, key: str, rejections: Sequence[Rejection], registrations=no_registrations
) -> None:
    """Push, pop and fail ``key`` as unschedulable with ``rejections`` (it lands in the set)."""
    queue.push(key)
    entry = queue.pop_nowait()
    assert entry is not None and entry.key == key
    queue.note_rejection(
        key, functools.partial(hints.requeue_hint, tuple(rejections), registrations=registrations)
    )
    queue.done(entry, Outcome.UNSCHEDULABLE)
    assert queue.hint_pending(key)


def short_on(*clusters: str) -> Rejection:
    return Rejection(hints.ESTIMATOR, frozenset(clusters))


def test_room_on_a_short_cluster_moves_only_the_bindings_short_there(
    queue: SchedulingQueue, clock: FakeClock, log: HintLog
) -> None:
    park(queue, "a", [short_on("m1")])
    park(queue, "b", [short_on("m2")])
    clock.advance(5)  # past the first backoff (1 s)
    moved = queue.on_event(QueueEvent(ClusterEvent.ALLOCATABLE_UP, "m1"))
    assert moved == 1
    assert queue.sizes().unschedulable == 1 and queue.sizes().active == 1
    entry = queue.pop_nowait()
    assert entry is not None and entry.key == "a" and entry.attempts == 2
    assert ("AllocatableUp", QueueingHint.QUEUE) in log.hints
    assert ("AllocatableUp", QueueingHint.SKIP) in log.hints
    clock.advance(0.25)
    queue.done(entry, Outcome.DONE)
    assert log.decisions == [("AllocatableUp", 0.25)]


def test_a_moved_binding_still_backing_off_waits_in_backoff(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "a", [short_on("m1")])
    clock.advance(0.2)
    assert queue.on_event(QueueEvent(ClusterEvent.ALLOCATED_DOWN, "m1")) == 1
    assert queue.sizes().backoff == 1 and queue.sizes().active == 0
    clock.advance(0.5)
    assert queue.flush_backoff() == 0
    clock.advance(0.5)
    assert queue.flush_backoff() == 1
    assert queue.sizes().active == 1


def test_an_event_no_rejector_registered_moves_nothing(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "a", [short_on("m1")])
    clock.advance(5)
    for kind in (ClusterEvent.LABELS_CHANGED, ClusterEvent.TAINT_REMOVED, ClusterEvent.BINDING_DELETED):
        assert queue.on_event(QueueEvent(kind, "m1")) == 0
    assert queue.sizes().unschedulable == 1


def test_the_assume_record_is_helped_by_a_release(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "a", [short_on("m1"), Rejection(hints.ASSUME_RECORD, frozenset({"m1"}))])
    clock.advance(5)
    assert queue.on_event(QueueEvent(ClusterEvent.BINDING_DELETED, "m2")) == 0
    assert queue.on_event(QueueEvent(ClusterEvent.BINDING_DELETED, "m1")) == 1


def test_a_plugin_without_registrations_is_helped_by_every_event(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "a", [Rejection("OutOfTree", frozenset({"m1"}))])
    clock.advance(5)
    assert queue.on_event(QueueEvent(ClusterEvent.BINDING_SCALED_DOWN, "elsewhere")) == 1


def test_a_plugin_that_registered_nothing_waits_for_the_flush(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    park(queue, "a", [Rejection("ClusterEviction", frozenset({"m1"}))], lambda plugin: ())
    clock.advance(5)
    for kind in hints.split(hints.ALL_EVENTS):
        assert queue.on_event(QueueEvent(kind, "m1")) == 0
    clock.advance(300)
    assert queue.flush_unschedulable() == 1


def test_a_plugin_hint_decides(queue: SchedulingQueue, clock: FakeClock) -> None:
    asked: list[tuple[Rejection, QueueEvent]] = []

    def only_gpu_clusters(rejection: Rejection, event: QueueEvent) -> QueueingHint:
        asked.append((rejection, event))
        return QueueingHint.QUEUE if event.cluster.startswith("gpu") else QueueingHint.SKIP

    registered = (ClusterEventWithHint(ClusterEvent.LABELS_CHANGED, only_gpu_clusters),)
    park(queue, "a", [Rejection("Mine", frozenset({"m1"}))], lambda plugin: registered)
    clock.advance(5)
    assert queue.on_event(QueueEvent(ClusterEvent.LABELS_CHANGED, "m1")) == 0
    assert queue.on_event(QueueEvent(ClusterEvent.ALLOCATABLE_UP, "gpu-1")) == 0  # not registered
    assert queue.on_event(QueueEvent(ClusterEvent.LABELS_CHANGED, "gpu-1")) == 1
    assert [e.cluster for _, e in asked] == ["m1", "gpu-1"]


def test_a_raising_hint_requeues(queue: SchedulingQueue, clock: FakeClock) -> None:
    def broken(rejection: Rejection, event: QueueEvent) -> QueueingHint:
        raise RuntimeError("bug")

    registered = (ClusterEventWithHint(ClusterEvent.LABELS_CHANGED, broken),)
    park(queue, "a", [Rejection("Mine", frozenset({"m1"}))], lambda plugin: registered)
    clock.advance(5)
    assert queue.on_event(QueueEvent(ClusterEvent.LABELS_CHANGED, "m1")) == 1


def test_unknown_rejectors_are_helped_by_any_event(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "a", [])
    clock.advance(5)
    assert queue.on_event(QueueEvent(ClusterEvent.ASSUMPTION_RELEASED, "m9")) == 1


def test_an_event_during_the_attempt_counts_when_it_fails(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.push("a")
    entry = queue.pop_nowait()
    assert entry is not None
    assert queue.on_event(QueueEvent(ClusterEvent.ALLOCATABLE_UP, "m1")) == 0  # being processed
    queue.note_rejection(
        "a", functools.partial(hints.requeue_hint, (short_on("m1"),), registrations=no_registrations)
    )
    queue.done(entry, Outcome.UNSCHEDULABLE)
    assert queue.sizes().unschedulable == 0
    assert queue.sizes().backoff == 1


def test_an_unhelpful_event_during_the_attempt_leaves_it_parked(queue: SchedulingQueue) -> None:
    queue.push("a")
    entry = queue.pop_nowait()
    assert entry is not None
    queue.on_event(QueueEvent(ClusterEvent.ALLOCATABLE_UP, "m2"))
    queue.note_rejection(
        "a", functools.partial(hints.requeue_hint, (short_on("m1"),), registrations=no_registrations)
    )
    queue.done(entry, Outcome.UNSCHEDULABLE)
    assert queue.sizes().unschedulable == 1


def test_a_push_and_a_forget_drop_the_hint(queue: SchedulingQueue, clock: FakeClock) -> None:
    park(queue, "a", [short_on("m1")])
    queue.push("a")
    assert not queue.hint_pending("a") and queue.sizes().active == 1
    drained = queue.pop_nowait()
    assert drained is not None
    queue.done(drained, Outcome.DONE)
    park(queue, "b", [short_on("m1")])
    queue.forget("b")
    assert not queue.hint_pending("b")
    assert queue.on_event(QueueEvent(ClusterEvent.ALLOCATABLE_UP, "m1")) == 0


def test_debounced_updates_are_pushed_once_when_the_window_ends(
    queue: SchedulingQueue, clock: FakeClock
) -> None:
    queue.push_debounced("a", 0, 2.0)
    clock.advance(1)
    queue.push_debounced("a", 5, 2.0)
    assert queue.flush_debounced() == 0 and queue.sizes().active == 0
    clock.advance(1)
    assert queue.flush_debounced() == 1
    entry = queue.pop_nowait()
    assert entry is not None and entry.key == "a" and entry.priority == 5
    assert queue.pop_nowait() is None
    queue.push_debounced("b", 0, 0)  # off: at once
    assert queue.sizes().active == 1


def _cluster(name: str, **kw: object) -> ClusterInfo:
    return ClusterInfo(name, **kw)  # type: ignore[arg-type]


def _summary(allocatable: int, allocated: int) -> ResourceSummary:
    return ResourceSummary({"cpu": Quantity(allocatable)}, {"cpu": Quantity(allocated)}, {})


def test_cluster_events_read_only_what_plugins_read() -> None:
    base = _cluster(
        "m1", labels={"a": "1"}, taints=(Taint("t", "", "NoSchedule"),), resource_summary=_summary(10, 5)
    )
    same = _cluster(
        "m1", labels={"a": "1"}, taints=(Taint("t", "", "NoSchedule"),), resource_summary=_summary(10, 5)
    )
    assert hints.cluster_events(base, same) == ClusterEvent.NONE
    assert hints.cluster_events(None, base) == ClusterEvent.CLUSTER_ADDED
    freed = _cluster("m1", labels={"a": "2"}, resource_summary=_summary(20, 1))
    assert list(hints.split(hints.cluster_events(base, freed))) == [
        ClusterEvent.ALLOCATABLE_UP,
        ClusterEvent.ALLOCATED_DOWN,
        ClusterEvent.TAINT_REMOVED,
        ClusterEvent.LABELS_CHANGED,
    ]
    busier = _cluster("m1", labels={"a": "1"}, taints=base.taints, resource_summary=_summary(10, 9))
    assert hints.cluster_events(base, busier) == ClusterEvent.NONE


def test_a_heartbeat_changes_nothing_read() -> None:
    old = {
        "metadata": {"labels": {"x": "1"}},
        "spec": {},
        "status": {
            "resourceSummary": {"allocatable": {"cpu": "1"}},
            "conditions": [{"type": "Ready", "lastTransitionTime": "t0"}],
        },
    }
    new = {**old, "status": {**old["status"], "conditions": [{"type": "Ready", "lastTransitionTime": "t1"}]}}
    assert not decision.cluster_reads_changed(old, new)
    moved = {**old, "status": {"resourceSummary": {"allocatable": {"cpu": "2"}}}}
    assert decision.cluster_reads_changed(old, moved)


def test_binding_freed() -> None:
    old = {"spec": {"clusters": [{"name": "m1", "replicas": 3}, {"name": "m2", "replicas": 2}]}}
    new = {"spec": {"clusters": [{"name": "m1", "replicas": 1}, {"name": "m3", "replicas": 4}]}}
    assert decision.binding_freed(old, new) == [
        (ClusterEvent.BINDING_SCALED_DOWN, "m1"),
        (ClusterEvent.BINDING_RESCHEDULED, "m2"),
    ]
    assert decision.binding_freed(old, None) == [
        (ClusterEvent.BINDING_DELETED, "m1"),
        (ClusterEvent.BINDING_DELETED, "m2"),
    ]


def test_in_tree_registrations() -> None:
    framework = Scheduler().framework
    taint = framework.events_to_register("TaintToleration")
    assert taint is not None and taint[0].events == ClusterEvent.TAINT_REMOVED | ClusterEvent.CLUSTER_ADDED
    assert framework.events_to_register("ClusterEviction") == ()
    assert framework.events_to_register("an-extender") is None


def test_the_plugin_api_example_hint() -> None:
    """docs/plugin-api.md's GpuPool: queued by a cluster gaining its pool label, not by another."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[3] / "docs" / "plugin-api.md").read_text()
    block = re.findall(r"```python\n(.*?)```", page, re.S)[-1]
    namespace: dict[str, object] = {}
    exec(block, namespace)
    plugin = namespace["GpuPool"]()  # type: ignore[operator]
    registrations = plugin.events_to_register()
    rejection = Rejection("GpuPool", frozenset({"m1"}))

    def hint(labels: dict[str, str]) -> QueueingHint:
        new = _cluster("m1", labels=labels)
        event = QueueEvent(ClusterEvent.LABELS_CHANGED, "m1", _cluster("m1"), new)
        return hints.requeue_hint((rejection,), event, lambda name: registrations)

    assert hint({"example.com/gpu-pool": "a"}) is QueueingHint.QUEUE
    assert hint({"other": "a"}) is QueueingHint.SKIP
