"""Bindings the scheduler cannot place get Scheduled=False with Karmada's reason and message, and
the operator keeps scheduling the others (spec/scheduler.md §3.5, §4.2, §4.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    create_objects,
    divided_binding,
    get_json,
    ready_cluster,
    scheduled_condition,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "bad-input"
CLUSTERS = ["m1", "m2"]


def condition_of(server: APIServer, name: str) -> dict[str, Any] | None:
    return scheduled_condition(get_json(server, "rb", "-n", NAMESPACE, name))  # type: ignore[return-value]


def test_unplaceable_bindings_report_why_and_the_rest_are_scheduled(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(name, 10) for name in CLUSTERS])
    scheduler = start_scheduler(server, "--leader-elect=false")

    nowhere = divided_binding("nowhere", NAMESPACE, 2, ["gone"])
    unsupported = divided_binding("unsupported", NAMESPACE, 2, CLUSTERS)
    del unsupported["spec"]["placement"]["replicaScheduling"]["replicaDivisionPreference"]
    del unsupported["spec"]["placement"]["replicaScheduling"]["weightPreference"]
    too_big = divided_binding("too-big", NAMESPACE, 50, CLUSTERS)
    fine = divided_binding("fine", NAMESPACE, 4, CLUSTERS)
    create_objects(server, [nowhere, unsupported, too_big, fine])

    names = ("nowhere", "unsupported", "too-big", "fine")

    def all_conditions() -> dict[str, dict[str, Any]] | None:
        found = {name: condition_of(server, name) for name in names}
        return found if all(found.values()) else None  # type: ignore[return-value]

    by_name = wait_until(
        all_conditions,
        timeout=60,
        message=lambda: f"not every binding got a Scheduled condition:\n{scheduler.log_tail()}",
    )
    assert by_name["fine"] is not None and by_name["fine"]["status"] == "True"
    assert by_name["nowhere"] == {
        **by_name["nowhere"],
        "status": "False",
        "reason": "NoClusterFit",
        "message": "0/2 clusters are available: "
        "2 cluster(s) did not match the placement cluster affinity constraint.",
    }
    assert by_name["unsupported"] == {
        **by_name["unsupported"],
        "status": "False",
        "reason": "SchedulerError",
        "message": "failed to assign replicas: unsupported replica scheduling strategy, "
        "replicaSchedulingType: Divided, replicaDivisionPreference: , please try another scheduling strategy",
    }
    assert by_name["too-big"] == {
        **by_name["too-big"],
        "status": "False",
        "reason": "Unschedulable",
        "message": "failed to assign replicas: failed to scale up: "
        "Clusters available replicas 20 are not enough to schedule.",
    }
    # Karmada leaves spec.clusters alone on errors other than a FitError, and clears it on a FitError.
    assert "clusters" not in get_json(server, "rb", "-n", NAMESPACE, "too-big")["spec"]
    assert scheduler.alive()


def test_a_gate_karmada_does_not_have_stops_it_with_a_reason(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    # Every Karmada gate is accepted now (WorkloadAffinity and SchedulingOvercommitProtection work
    # live); a name Karmada does not have is refused in one line naming the flag, as Kubernetes does.
    scheduler = start_scheduler(
        isolated_apiserver, "--leader-elect=false", "--feature-gates=Failover=true,NoSuchGate=true",
        wait_ready=False,
    )
    assert scheduler.process is not None
    assert scheduler.process.wait(timeout=60) == 2
    log = scheduler.log_tail()
    assert "--feature-gates" in log and "unrecognized feature gate: NoSuchGate" in log
