"""The operator serves the schedulerNames of its profiles and schedules each binding with its
profile's scheduler; bindings of a name no profile serves are left alone (in-memory API)."""

from __future__ import annotations

import copy
from typing import Any

from fleetsched.controller.runtime.queue import Outcome, QueuedBinding, QueueKey
from fleetsched.controller.scheduler import decision
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import Connection
from fleetsched.scheduler import Scheduler, Settings

WEB = QueueKey("ResourceBinding", "ns", "web")


class MemoryApi:
    """GET and merge-PATCH of one binding, recording which part each write touched."""

    def __init__(self, binding: dict[str, Any]) -> None:
        self.binding = copy.deepcopy(binding)
        self.writes: list[str] = []

    async def get(self, path: str, params: Any = None) -> dict[str, Any]:
        return copy.deepcopy(self.binding)

    async def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        part = "status" if path.endswith("/status") else "spec"
        if part == "spec":
            self.binding["metadata"]["generation"] += 1
            self.binding["spec"].update({k: v for k, v in (patch.get("spec") or {}).items() if v is not None})
        else:
            self.binding.setdefault("status", {}).update(patch["status"])
        self.writes.append(part)
        return copy.deepcopy(self.binding)


def a_cluster(name: str) -> dict[str, Any]:
    deployments = {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name, "resourceVersion": "1", "generation": 1},
        "spec": {"syncMode": "Push"},
        "status": {"apiEnablements": [deployments], "resourceSummary": {"allocatable": {"pods": "100"}}},
    }


def named(scheduler_name: str | None) -> dict[str, Any]:
    binding: dict[str, Any] = {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "web", "namespace": "ns", "generation": 1, "resourceVersion": "10",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "p"}},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "web"},
            "replicas": 3,
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                "replicaDivisionPreference": "Weighted"}},
        },
    }
    if scheduler_name is not None:
        binding["spec"]["schedulerName"] = scheduler_name
    return binding


def operator_for(api: MemoryApi) -> SchedulerOperator:
    strict = Scheduler()
    lenient = Scheduler(settings=Settings(plugins="*,-TaintToleration"))
    profiles = {"default-scheduler": strict, "lenient": lenient}
    operator = SchedulerOperator(
        client=api,  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=strict,
        profiles=profiles,
        config=OperatorConfig(scheduler_names=frozenset(profiles)),
    )
    tainted = a_cluster("m1")
    tainted["spec"]["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    operator.on_cluster_event(None, tainted)
    operator.on_binding_event(RB, None, copy.deepcopy(api.binding))
    return operator


async def test_each_binding_is_scheduled_by_its_profile() -> None:
    lenient = MemoryApi(named("lenient"))
    assert await operator_for(lenient).process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
    assert lenient.binding["spec"]["clusters"] == [{"name": "m1", "replicas": 3}]

    strict = MemoryApi(named(None))
    assert await operator_for(strict).process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
    assert "clusters" not in strict.binding["spec"]
    assert strict.binding["status"]["conditions"][0]["reason"] == "NoClusterFit"


async def test_a_name_no_profile_serves_is_left_alone() -> None:
    api = MemoryApi(named("someone-else"))
    operator = operator_for(api)
    assert operator.queue.sizes().active == 0  # never queued
    assert await operator.process(QueuedBinding(WEB, 0, 0.0, 1)) is Outcome.DONE
    assert api.writes == []


def test_the_filter_takes_a_set_of_names_and_a_single_name_is_not_a_substring_match() -> None:
    binding = named("lenient")
    assert decision.passes_filter(binding, frozenset({"default-scheduler", "lenient"}))
    assert not decision.passes_filter(binding, frozenset({"default-scheduler"}))
    assert not decision.passes_filter(named("len"), "lenient")
    assert decision.passes_filter(named(None), "default-scheduler")
