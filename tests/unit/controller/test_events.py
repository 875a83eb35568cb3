"""Event texts (spec/scheduler.md §3.8) and the recorder's dedupe and deferral."""

from __future__ import annotations

import asyncio
from typing import Any

from fleetsched.controller.runtime.events import (
    EventRecorder,
    InvolvedObject,
    event_body,
    group_failure_message,
    success_message,
)


def test_success_messages_differ_by_kind_like_karmada() -> None:
    clusters = [{"name": "c1", "replicas": 2}, {"name": "c2", "replicas": 3}]
    assert (
        success_message("ResourceBinding", clusters)
        == "Binding has been scheduled successfully. Result: {c1:2, c2:3}"
    )
    assert (
        success_message("ClusterResourceBinding", clusters)
        == "Binding has been scheduled successfully. Result {c1:2, c2:3}"
    )
    assert (
        group_failure_message("ResourceBinding", "ns/b", 0, "boom")
        == "failed to schedule ResourceBinding(ns/b) with clusterAffiliates index(0): boom"
    )


def test_cluster_scoped_objects_get_events_in_default() -> None:
    binding = {
        "kind": "ClusterResourceBinding",
        "metadata": {"name": "crb", "uid": "u"},
        "spec": {"resource": {"apiVersion": "v1", "kind": "Namespace", "name": "team"}},
    }
    import datetime as dt

    from fleetsched.controller.runtime.events import PendingEvent

    target = InvolvedObject.of_binding(binding)
    body = event_body(
        PendingEvent(target, "Normal", "ScheduleBindingSucceed", "ok"),
        now=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        host="h",
    )
    assert body["metadata"]["namespace"] == "default"
    assert body["involvedObject"]["kind"] == "ClusterResourceBinding"
    template = InvolvedObject.of_template(binding)
    assert template is not None and (template.kind, template.name) == ("Namespace", "team")


class FakeClient:
    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def create(self, path: str, body: dict[str, Any], *, decode: bool = True) -> dict[str, Any]:
        self.created.append(body)
        return body if decode else {}


async def test_repeats_are_sent_once_and_busy_defers_sending() -> None:
    client = FakeClient()
    busy = True
    recorder = EventRecorder(client, busy=lambda: busy, max_deferral=30)  # type: ignore[arg-type]
    recorder.start()
    target = InvolvedObject("work.karmada.io/v1alpha2", "ResourceBinding", "b", "ns", "uid-1")
    for _ in range(3):
        recorder.record(target, "Normal", "ScheduleBindingSucceed", "same")
    recorder.record(target, "Warning", "ScheduleBindingFailed", "other")
    await asyncio.sleep(0.2)
    assert client.created == []  # held back while the scheduler is busy
    busy = False
    await recorder.flush(2)
    assert [e["reason"] for e in client.created] == ["ScheduleBindingSucceed", "ScheduleBindingFailed"]
    await recorder.stop()


async def test_the_source_is_the_programs_agent_name_whatever_the_scheduler_name() -> None:
    """As karmada-scheduler's Events say ``karmada-scheduler``: the program, from its field manager
    (``<agent>`` or ``<agent>/<member>`` in shard mode), never a scheduler name."""
    cases = {
        "fleetsched-scheduler": "fleetsched-scheduler",
        "fleetsched-scheduler/fleetsched-scheduler-r0": "fleetsched-scheduler",
        "fleetsched-controller": "fleetsched-controller",
    }
    target = InvolvedObject("apps/v1", "Deployment", "web", "ns", "u")
    for manager, component in cases.items():
        client = FakeClient()
        client.field_manager = manager  # type: ignore[attr-defined]
        recorder = EventRecorder(client)  # type: ignore[arg-type]
        recorder.start()
        recorder.record(target, "Warning", "ScheduleBindingFailed", "no fit")
        await recorder.flush(2)
        await recorder.stop()
        body = client.created[0]
        assert body["source"]["component"] == component
        assert body["reportingComponent"] == component
        assert body["source"]["host"] == body["reportingInstance"]
