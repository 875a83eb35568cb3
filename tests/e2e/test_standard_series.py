"""The standard series of a live scheduler against a real kube-apiserver: its queue is exported as
client-go's ``workqueue_*{name="scheduler-queue"}``, its API requests as ``rest_client_*`` with the
apiserver's host, and ``karmada_build_info`` carries Karmada's labels (what Karmada's dashboards and
the monitoring component's alerts read)."""

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

NAMESPACE = "series"
COUNT = 12
QUEUE = "scheduler-queue"


def queue_metric(proc: SchedulerProcess, series: str) -> float:
    """The scheduler queue's sample of ``series`` (``SchedulerProcess.metric`` takes no ``name`` label)."""
    prefix = f'{series}{{name="{QUEUE}"}} '
    values = [float(line[len(prefix):]) for line in proc.metrics().splitlines() if line.startswith(prefix)]
    assert len(values) == 1, f"no {series} of {QUEUE} in /metrics"
    return values[0]


def a_binding(name: str) -> dict[str, Any]:
    return as_applied({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NAMESPACE, "name": name},
            "replicas": 2,
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
        },
    })


def test_a_live_scheduler_exports_workqueue_rest_client_and_build_info(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster("m1", 100, {}), ready_cluster("m2", 100, {})])
    proc = start_scheduler(server, "--leader-elect=false", name="series")
    host = f"127.0.0.1:{server.port}"
    lists = proc.metric("rest_client_requests_total", code="200", method="GET", host=host)
    assert lists >= 2  # the initial LISTs of bindings and Clusters, at least
    create_objects(server, [a_binding(f"b-{i:02d}") for i in range(COUNT)])
    wait_until(lambda: len(list_bindings(server, NAMESPACE)) == COUNT
               and all(binding_state(b)["scheduled"] for b in list_bindings(server, NAMESPACE)),
               timeout=60, message=proc.log_tail)
    wait_until(lambda: queue_metric(proc, "workqueue_work_duration_seconds_count") >= COUNT,
               timeout=30, message=proc.log_tail)

    assert queue_metric(proc, "workqueue_adds_total") >= COUNT
    assert queue_metric(proc, "workqueue_queue_duration_seconds_count") >= COUNT
    wait_until(lambda: queue_metric(proc, "workqueue_depth") == 0, timeout=30, message=proc.log_tail)
    assert queue_metric(proc, "workqueue_longest_running_processor_seconds") >= 0
    # every binding got its spec and status written: PATCHes answered 200, counted and timed
    assert proc.metric("rest_client_requests_total", code="200", method="PATCH", host=host) >= 2 * COUNT
    assert proc.metric("rest_client_request_duration_seconds_count", verb="PATCH", host=host) >= 2 * COUNT
    build = [line for line in proc.metrics().splitlines() if line.startswith("karmada_build_info{")]
    assert len(build) == 1 and build[0].endswith(" 1.0")
    for label in ("git_version=\"v", "git_commit=", "build_date=", "go_version=\"python", "platform=\""):
        assert label in build[0], build[0]
