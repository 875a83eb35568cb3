"""Issue 27 items 1 on the real kube-apiserver: an unschedulable binding goes back on the event that
can help it (queueing hints, KEP-4247), not after the five-minute flush, and only then.

- 20 bindings unschedulable for lack of cpu are all scheduled within 5 s of one Cluster's status
  reporting 1,000 cpu free (the flush would take 300 s);
- with gate SchedulingOvercommitProtection, deleting scheduled bindings gives their assumed room
  back: exactly the failed bindings that now fit are scheduled, within 5 s;
- 100 Cluster heartbeats that change nothing a plugin reads cause no scheduling attempt and no hint.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from tests.support.controlplane import APIServer, wait_until
from tests.support.overcommit import CLUSTERS, GATE, MERGE, RB_NS, cpu_binding, cpu_cluster, create_all, tally
from tests.support.processes import SchedulerProcess

ARGS = ("--leader-elect=false", "--workers=8", "--kube-api-qps=0")
HINTS = "fleetsched_scheduler_queueing_hints_total"
ATTEMPTS = "karmada_scheduler_schedule_attempts_total"
WITHIN = 5.0  # the brief's bound; the unschedulable flush would take 300 s


def add_cluster(server: APIServer, name: str, cpu: int) -> None:
    doc = cpu_cluster(name, cpu)
    server.request("POST", CLUSTERS, {k: v for k, v in doc.items() if k != "status"})
    server.request("PATCH", f"{CLUSTERS}/{name}/status", {"status": doc["status"]}, content_type=MERGE)


@pytest.fixture
def namespace(isolated_apiserver: APIServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own; its bindings are deleted afterwards (schedulers stopped first)."""
    name = f"qh-{request.node.name.removeprefix('test_')[:30]}".replace("_", "-").rstrip("-")
    isolated_apiserver.kubectl("create", "namespace", name)
    yield name
    isolated_apiserver.request("DELETE", RB_NS.format(ns=name))


def bindings(server: APIServer, namespace: str) -> list[dict[str, object]]:
    return list(server.request("GET", RB_NS.format(ns=namespace))["items"])  # type: ignore[arg-type]


def test_room_reported_by_a_cluster_schedules_the_waiting_bindings_at_once(
    isolated_apiserver: APIServer, namespace: str, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    clusters = ["qh-a1", "qh-a2"]
    for name in clusters:
        add_cluster(server, name, 1)  # room for 1 replica each: 10 never fit
    proc = start_scheduler(server, *ARGS, name="room")
    docs = [cpu_binding(f"r-{i}", namespace, 10, 1, clusters) for i in range(20)]
    names = {d["metadata"]["name"] for d in docs}
    create_all(str(server.kubeconfig), docs)
    wait_until(
        lambda: len(tally(bindings(server, namespace), names).failed) == 20,
        timeout=60, message=proc.log_tail,
    )
    # one Cluster's status reports 1,000 cpu free
    status = {"status": {"resourceSummary": {"allocatable": {"cpu": "1000", "pods": "1000"}}}}
    server.request("PATCH", f"{CLUSTERS}/{clusters[0]}/status", status, content_type=MERGE)
    reported = time.monotonic()
    wait_until(
        lambda: len(tally(bindings(server, namespace), names).scheduled) == 20,
        timeout=60, message=proc.log_tail,
    )
    took = time.monotonic() - reported
    assert took <= WITHIN, f"scheduled {took:.1f}s after the report"
    assert proc.metric(HINTS, event="AllocatableUp", hint="Queue") >= 20


def test_with_the_gate_a_deleted_binding_lets_exactly_the_failed_ones_that_fit_in(
    isolated_apiserver: APIServer, namespace: str, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    clusters = ["qh-g1", "qh-g2"]
    for name in clusters:
        add_cluster(server, name, 50)  # 100 cpu: ten 10-cpu bindings
    proc = start_scheduler(server, *ARGS, GATE, name="gate")
    first = [cpu_binding(f"g-{i}", namespace, 10, 1, clusters) for i in range(10)]
    create_all(str(server.kubeconfig), first)
    first_names = {d["metadata"]["name"] for d in first}
    wait_until(
        lambda: len(tally(bindings(server, namespace), first_names).scheduled) == 10,
        timeout=60, message=proc.log_tail,
    )
    late = [cpu_binding(f"late-{i}", namespace, 10, 1, clusters) for i in range(5)]
    late_names = {d["metadata"]["name"] for d in late}
    create_all(str(server.kubeconfig), late)
    wait_until(
        lambda: len(tally(bindings(server, namespace), late_names).failed) == 5,
        timeout=60, message=proc.log_tail,
    )
    for name in ("g-0", "g-1", "g-2"):  # 30 cpu back
        server.request("DELETE", f"{RB_NS.format(ns=namespace)}/{name}")
    deleted = time.monotonic()
    wait_until(
        lambda: len(tally(bindings(server, namespace), late_names).scheduled) == 3,
        timeout=60, message=proc.log_tail,
    )
    took = time.monotonic() - deleted
    assert took <= WITHIN, f"scheduled {took:.1f}s after the deletes"
    time.sleep(2.0)  # the two that do not fit were tried again: they stay failed, nothing more lands
    final = tally(bindings(server, namespace))
    assert len(final.scheduled) == 10 and len(final.failed) == 2, final.summary({})
    assert all(final.assigned.get(c, 0) <= 50 for c in clusters), final.assigned


def test_heartbeats_that_change_nothing_read_cause_no_attempt(
    isolated_apiserver: APIServer, namespace: str, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    name = "qh-h1"
    add_cluster(server, name, 1)
    proc = start_scheduler(server, *ARGS, name="heartbeats")
    docs = [cpu_binding(f"h-{i}", namespace, 10, 1, [name]) for i in range(5)]
    names = {d["metadata"]["name"] for d in docs}
    create_all(str(server.kubeconfig), docs)
    wait_until(
        lambda: len(tally(bindings(server, namespace), names).failed) == 5, timeout=60, message=proc.log_tail
    )
    time.sleep(1.0)  # the failed attempts' counters are all in
    attempts = proc.metric(ATTEMPTS)
    for beat in range(100):
        condition = {
            "type": "Ready", "status": "True", "reason": "ClusterReady",
            "message": f"heartbeat {beat}", "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
        server.request("PATCH", f"{CLUSTERS}/{name}/status", {"status": {"conditions": [condition]}},
                       content_type=MERGE)
    time.sleep(2.0)
    assert proc.metric(ATTEMPTS) == attempts
    assert proc.metric(HINTS) == 0
    assert len(tally(bindings(server, namespace), names).failed) == 5
