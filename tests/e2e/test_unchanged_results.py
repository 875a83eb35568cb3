"""A binding whose result did not change is not written again, whatever changed around it.

Duplicated bindings over four clusters are scheduled (one spec and one status write each); then the
clusters change in ways that leave every result as it was: a cluster outside the bindings' affinity
appears, capacities move and labels change. Every binding is scheduled again (Karmada schedules
Duplicated bindings on every cluster change; the attempts counter says so) and the main resource
is not written again: the explanation annotation (which counts the filter verdicts, so the new
cluster changes it) rides along a result write only, and ``spec.clusters`` in a new order is the
same result. (The status subresource may still get Karmada's ``lastScheduledTime`` for a successful
run, as karmada-scheduler's ``patchBindingStatusCondition`` writes it: not counted here.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    as_applied,
    binding_state,
    create_objects,
    list_bindings,
    ready_cluster,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "unchanged"
CLUSTERS = ["m1", "m2", "m3", "m4"]
COUNT = 30
BLUE = {"fleet": "blue"}


def duplicated_binding(name: str) -> dict[str, Any]:
    return as_applied(
        {
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {
                "resource": {
                    "apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE, "name": name
                },
                "replicas": 2,
                "placement": {
                    "clusterAffinity": {"labelSelector": {"matchLabels": {"fleet": "blue"}}},
                    "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
                },
            },
        }
    )


def all_scheduled(server: APIServer) -> bool:
    bindings = list_bindings(server, NAMESPACE)
    return len(bindings) == COUNT and all(binding_state(b)["scheduled"] for b in bindings)


def test_cluster_changes_that_leave_results_alone_cause_no_binding_write(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(n, 100 + 10 * i, BLUE) for i, n in enumerate(CLUSTERS)])
    proc = start_scheduler(server, "--leader-elect=false", name="unchanged")
    create_objects(server, [duplicated_binding(f"d-{i:02d}") for i in range(COUNT)])
    wait_until(lambda: all_scheduled(server), timeout=60, message=proc.log_tail)

    def writes(part: str) -> float:
        return proc.metric("fleetsched_scheduler_binding_writes_total", part=part, result="success")

    def attempts() -> float:
        return proc.metric("karmada_scheduler_schedule_attempts_total")

    def main_resource() -> dict[str, tuple[Any, Any]]:
        """Per binding: its generation and annotations (what a main-resource write changes)."""
        return {
            b["metadata"]["name"]: (b["metadata"]["generation"], b["metadata"].get("annotations"))
            for b in list_bindings(server, NAMESPACE)
        }

    wait_until(
        lambda: writes("spec") == COUNT and writes("status") == COUNT, timeout=30, message=proc.log_tail
    )
    before = main_resource()
    # A cluster outside the affinity appears: it reconciles none of the bindings (Karmada's event
    # filter), but from now on every explanation counts one more rejection.
    apply_with_status(server, [ready_cluster("m5", 50, {"fleet": "red"})])
    changes = [
        # capacities move and a selected cluster gets a label: every binding is scheduled again,
        # the scores change order, the result (every blue cluster) does not
        [ready_cluster(n, 1000 - 10 * i, {**BLUE, "zone": str(i)}) for i, n in enumerate(CLUSTERS)],
        [ready_cluster("m3", 2000, {**BLUE, "zone": "c"})],
    ]
    for docs in changes:
        started = attempts()
        apply_with_status(server, docs)
        wait_until(lambda s=started: attempts() >= s + COUNT, timeout=60, message=proc.log_tail)
    wait_until(lambda: proc.metric("scheduler_pending_bindings") == 0, timeout=30, message=proc.log_tail)
    after = main_resource()
    assert {k: v for k, v in after.items() if before[k] != v} == {}
    assert writes("spec") == COUNT  # none since the first placement
