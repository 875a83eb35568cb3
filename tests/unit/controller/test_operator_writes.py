"""The operator's write path against an in-memory API: 409 retries from a fresh read, two writes
per binding, no second pass from our own writes, and no writes without leadership."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from fleetsched.controller.runtime.queue import Outcome, QueuedBinding, QueueKey
from fleetsched.controller.scheduler.operator import NotLeader, OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import ApiError, Connection
from fleetsched.scheduler import Scheduler

WEB = QueueKey("ResourceBinding", "ns", "web")


class MemoryApi:
    """Just enough of the API server: GET and merge-PATCH with resourceVersion preconditions."""

    def __init__(self, binding: dict[str, Any]) -> None:
        self.binding = copy.deepcopy(binding)
        self.version = 10
        self.binding["metadata"]["resourceVersion"] = str(self.version)
        self.writes: list[str] = []
        self.conflicts_to_inject = 0

    async def get(self, path: str, params: Any = None) -> dict[str, Any]:
        return copy.deepcopy(self.binding)

    async def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if self.conflicts_to_inject or (wanted and wanted != self.binding["metadata"]["resourceVersion"]):
            self.conflicts_to_inject = max(self.conflicts_to_inject - 1, 0)
            self.concurrent_change()
            raise ApiError(409, "Conflict", "the object has been modified")
        part = "status" if path.endswith("/status") else "spec"
        body = copy.deepcopy(patch)
        body.get("metadata", {}).pop("resourceVersion", None)
        if part == "spec":
            if "spec" in body:
                self.binding["metadata"]["generation"] += 1
                for key, value in body["spec"].items():
                    if value is None:
                        self.binding["spec"].pop(key, None)
                    else:
                        self.binding["spec"][key] = value
            annotations = self.binding["metadata"].setdefault("annotations", {})
            annotations.update(body.get("metadata", {}).get("annotations", {}))
        else:
            self.binding.setdefault("status", {}).update(body["status"])
        self.writes.append(part)
        self.bump()
        return copy.deepcopy(self.binding)

    def concurrent_change(self) -> None:
        """Someone else (e.g. a label update) changed the binding since we read it."""
        self.binding["metadata"].setdefault("labels", {})["touched"] = str(self.version)
        self.bump()

    def bump(self) -> None:
        self.version += 1
        self.binding["metadata"]["resourceVersion"] = str(self.version)


def a_binding() -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": "web",
            "namespace": "ns",
            "generation": 1,
            "labels": {"propagationpolicy.karmada.io/permanent-id": "p"},
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"},
            "replicas": 3,
            "placement": {
                "clusterAffinity": {"clusterNames": ["m1"]},
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                },
            },
        },
    }


def a_cluster(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "resourceVersion": "1", "generation": 1},
        "spec": {"syncMode": "Push"},
        "status": {
            "apiEnablements": [
                {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
            ],
            "resourceSummary": {"allocatable": {"pods": "100"}},
        },
    }


def operator_for(api: MemoryApi) -> SchedulerOperator:
    operator = SchedulerOperator(
        client=api,
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=Scheduler(),
        config=OperatorConfig(),
    )
    operator.on_cluster_event(None, a_cluster("m1"))
    operator.on_binding_event(RB, None, copy.deepcopy(api.binding))
    return operator


async def test_conflict_is_retried_from_a_fresh_read_with_two_writes() -> None:
    api = MemoryApi(a_binding())
    operator = operator_for(api)
    api.conflicts_to_inject = 1  # the first spec patch meets a concurrent change
    outcome = await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
    assert outcome is Outcome.DONE
    assert api.writes == ["spec", "status"]
    assert api.binding["spec"]["clusters"] == [{"name": "m1", "replicas": 3}]
    assert api.binding["metadata"]["labels"]["touched"]  # the concurrent change survived
    status = api.binding["status"]
    assert status["schedulerObservedGeneration"] == api.binding["metadata"]["generation"] == 2
    assert status["conditions"][0]["reason"] == "Success"
    annotation = json.loads(api.binding["metadata"]["annotations"]["policy.karmada.io/applied-placement"])
    assert annotation["clusterAffinity"] == {"clusterNames": ["m1"]}


async def test_our_own_writes_do_not_queue_the_binding_again() -> None:
    api = MemoryApi(a_binding())
    operator = operator_for(api)
    operator.queue.pop_nowait()  # the add event queued it; a worker takes it
    await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
    before_watch = operator.queue.sizes()
    operator.on_binding_event(RB, "MODIFIED", copy.deepcopy(api.binding))  # the watch echoes our writes
    assert operator.queue.sizes() == before_watch
    # and processing it again (e.g. after a cluster event) changes nothing
    writes = list(api.writes)
    assert await operator.process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
    assert api.writes == writes


async def test_no_write_without_leadership() -> None:
    api = MemoryApi(a_binding())
    operator = operator_for(api)

    class NeverLeader:
        is_leader = False

    operator.runtime.elector = NeverLeader()  # type: ignore[assignment]
    with pytest.raises(NotLeader):
        await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
    assert api.writes == []


async def test_an_unreadable_binding_gets_a_scheduler_error_naming_the_field_and_no_retry() -> None:
    binding = a_binding()
    binding["spec"]["rescheduleTriggeredAt"] = "yesterday"
    api = MemoryApi(binding)
    operator = operator_for(api)
    assert await operator.process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
    assert api.writes == ["status"]  # no placement is written for a binding the core cannot read
    (condition,) = api.binding["status"]["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
    assert condition["message"].startswith("spec.rescheduleTriggeredAt: must be an RFC 3339 time")
    assert "clusters" not in api.binding["spec"]


async def test_the_echo_of_our_own_write_is_skipped_before_any_filtering() -> None:
    api = MemoryApi(a_binding())
    operator = operator_for(api)
    await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
    cached = operator.bindings[RB].get("ns/web")
    assert cached is not None
    assert cached["metadata"]["resourceVersion"] == api.binding["metadata"]["resourceVersion"]
    operator.on_binding_event(RB, "MODIFIED", copy.deepcopy(api.binding))  # same resourceVersion
    assert operator.bindings[RB].get("ns/web") is cached  # the write response stays; nothing re-read
    api.concurrent_change()  # a newer version from someone else is taken in
    operator.on_binding_event(RB, "MODIFIED", copy.deepcopy(api.binding))
    assert operator.bindings[RB].get("ns/web") is not cached


async def test_the_status_records_the_generation_the_spec_writes_answer_gave() -> None:
    """The status patch is computed from the spec write's answer, not from a prediction: when the
    apiserver gives the binding another generation than one more than read (here a mutating step
    bumps it twice), that generation is the one recorded as observed."""
    api = MemoryApi(a_binding())
    operator = operator_for(api)
    patch = api.merge_patch

    async def bumps_twice(path: str, body: dict[str, Any]) -> dict[str, Any]:
        if not path.endswith("/status") and "spec" in body:
            api.binding["metadata"]["generation"] += 1
        return await patch(path, body)

    api.merge_patch = bumps_twice  # type: ignore[method-assign]
    outcome = await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
    assert outcome is Outcome.DONE
    assert api.writes == ["spec", "status"]
    assert api.binding["metadata"]["generation"] == 3
    assert api.binding["status"]["schedulerObservedGeneration"] == 3
