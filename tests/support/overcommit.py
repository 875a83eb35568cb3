"""The overcommit burst of issue 20, shared by ``tests/e2e/test_overcommit.py`` and the burst phase
of ``bench/operator_e2e.py``: Clusters whose status says how much cpu they have, workload bindings
that ask for whole cpus per replica, a concurrent creator, and the tally of what the scheduler
handed out per cluster (from ``spec.clusters`` x ``spec.replicaRequirements``, as the apiserver
holds them).

Nothing here knows whether ``SchedulingOvercommitProtection`` is on: the callers start the
schedulers and say what they expect.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleetsched.kube.client import KubeClient, load_connection
from tests.support.karmada import divided_binding, ready_cluster, scheduled_condition

GATE = "--feature-gates=SchedulingOvercommitProtection=true"
RB_ALL = "/apis/work.karmada.io/v1alpha2/resourcebindings"
RB_NS = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
MERGE = "application/merge-patch+json"

ASSUMED = "fleetsched_scheduler_assumed_resources"
RELEASED = "fleetsched_scheduler_assumptions_released_total"
REDECISIONS = "fleetsched_scheduler_reserve_redecisions_total"


def cpu_cluster(name: str, cpu: int, *, pods: int = 1000, allocated_cpu: int = 0) -> dict[str, Any]:
    """A Cluster that serves Deployments, with ``cpu`` cores and ``pods`` pods allocatable and
    ``allocated_cpu`` cores (and as many pods) allocated, as a member's status would say."""
    allocated = {"cpu": str(allocated_cpu), "pods": str(allocated_cpu)}
    return ready_cluster(name, pods, allocatable={"cpu": str(cpu)}, allocated=allocated)


def cpu_binding(
    name: str, namespace: str, replicas: int, cpu: int, clusters: Sequence[str]
) -> dict[str, Any]:
    """A Deployment's binding: ``replicas`` x ``cpu`` cores, Divided by available replicas over
    ``clusters`` (the burst of issue 20)."""
    return divided_binding(name, namespace, replicas, clusters, cpu=cpu)


def cpu_of(binding: Mapping[str, Any]) -> int:
    """Whole cores per replica (the bindings here ask for whole cores only)."""
    text = str(binding["spec"]["replicaRequirements"]["resourceRequest"]["cpu"])
    if text.endswith("m"):
        millis = int(text[:-1])
        if millis % 1000:
            raise ValueError(f"{text}: not whole cores")
        return millis // 1000
    return int(text)


@dataclass
class Tally:
    """What the scheduler handed out, read from the bindings as the apiserver holds them."""

    assigned: dict[str, int] = field(default_factory=dict)  # cluster -> cores of scheduled bindings
    scheduled: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> {cluster: replicas}
    failed: dict[str, str] = field(default_factory=dict)  # name -> the Scheduled=False message
    undecided: set[str] = field(default_factory=set)

    @property
    def total(self) -> int:
        return sum(self.assigned.values())

    def overcommit(self, free: Mapping[str, int]) -> int:
        """Cores handed out beyond what each cluster had free, added over the clusters."""
        return sum(max(0, self.assigned.get(c, 0) - f) for c, f in free.items())

    def view(self) -> tuple[Any, ...]:
        return (
            tuple(sorted((n, tuple(sorted(c.items()))) for n, c in self.scheduled.items())),
            tuple(sorted(self.failed.items())),
            tuple(sorted(self.undecided)),
        )

    def summary(self, free: Mapping[str, int]) -> str:
        return (
            f"cpu assigned {self.total} / free {sum(free.values())} (overcommit {self.overcommit(free)}),"
            f" scheduled {len(self.scheduled)} / failed {len(self.failed)}"
            + (f" / undecided {len(self.undecided)}" if self.undecided else "")
            + f"; per cluster {dict(sorted(self.assigned.items()))}"
        )


def tally(bindings: Iterable[Mapping[str, Any]], names: Iterable[str] | None = None) -> Tally:
    """Per cluster, the cores that the scheduled bindings (of ``names``, or all) hold there.

    A binding counts as scheduled once its Scheduled condition is True for its current generation
    (``status.schedulerObservedGeneration``), as failed while that condition is False, and as
    undecided otherwise (no condition yet, or a new generation not yet observed)."""
    wanted = None if names is None else set(names)
    out = Tally()
    seen: set[str] = set()
    for binding in bindings:
        name = binding["metadata"]["name"]
        if wanted is not None and name not in wanted:
            continue
        seen.add(name)
        condition = scheduled_condition(binding) or {}
        status = binding.get("status") or {}
        current = status.get("schedulerObservedGeneration") == binding["metadata"].get("generation")
        if condition.get("status") == "True" and current:
            placed = {c["name"]: int(c.get("replicas") or 0) for c in binding["spec"].get("clusters") or ()}
            out.scheduled[name] = placed
            cpu = cpu_of(binding)
            for cluster, replicas in placed.items():
                out.assigned[cluster] = out.assigned.get(cluster, 0) + replicas * cpu
        elif condition.get("status") == "False":
            out.failed[name] = str(condition.get("message", ""))
        else:
            out.undecided.add(name)
    if wanted is not None:
        out.undecided |= wanted - seen
    return out


async def _create_all(kubeconfig: str, docs: Sequence[Mapping[str, Any]], concurrency: int) -> None:
    client = KubeClient(load_connection(kubeconfig), user_agent="overcommit-burst")
    jobs = iter(docs)

    async def worker() -> None:
        for doc in jobs:
            path = RB_NS.format(ns=doc["metadata"]["namespace"])
            await client.create(path, {k: v for k, v in doc.items() if k != "status"}, decode=False)

    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, len(docs)) or 1)))
    finally:
        await client.close()


def create_all(kubeconfig: str, docs: Sequence[Mapping[str, Any]], concurrency: int = 64) -> None:
    """POST every binding, ``concurrency`` requests in flight: the burst, all at once."""
    asyncio.run(_create_all(kubeconfig, docs, concurrency))
