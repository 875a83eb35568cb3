"""Two scheduler replicas behind a coordination.k8s.io Lease.

Only the holder schedules; the standby is alive but not ready. When the leader is killed (no
chance to release the Lease) the standby takes it once the lease duration has passed by its own
clock, schedules the new bindings, and writes none of the bindings the old leader already
scheduled.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    binding_state,
    create_objects,
    divided_binding,
    list_bindings,
    ready_cluster,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "failover"
LEASE_DURATION = 15.0
RETRY_PERIOD = 2.0
CLUSTERS = ["m1", "m2", "m3"]


def all_scheduled(server: APIServer, names: set[str]) -> dict[str, dict[str, object]] | None:
    found = {
        b["metadata"]["name"]: b for b in list_bindings(server, NAMESPACE) if b["metadata"]["name"] in names
    }
    if len(found) != len(names) or not all(binding_state(b)["scheduled"] for b in found.values()):
        return None
    return found


def test_standby_takes_over_and_never_rewrites_the_leaders_bindings(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(name, 50) for name in CLUSTERS])
    leader = start_scheduler(server, "--leader-elect=true", name="a")
    standby = start_scheduler(server, "--leader-elect=true", name="b", wait_ready=False)
    wait_until(lambda: standby._get("/healthz")[0] == 200, timeout=30, message="standby never alive")
    # Alive before its caches are synced; then a synced standby: never ready while the other leads.
    seen: list[tuple[int, str]] = []

    def synced_standby() -> bool:
        seen.append(standby._get("/readyz"))
        return seen[-1] == (503, "not the leader")

    wait_until(synced_standby, timeout=30, message=lambda: f"standby's /readyz: {seen[-3:]}")
    assert set(seen) <= {(503, "caches not synced"), (503, "not the leader")}, seen
    holder = json.loads(
        server.kubectl("get", "lease", "-n", "karmada-system", "fleetsched-scheduler", "-o", "json")
    )
    assert holder["spec"]["leaseDurationSeconds"] == 15

    before = {f"old-{i}" for i in range(20)}
    create_objects(server, [divided_binding(n, NAMESPACE, 6, CLUSTERS) for n in sorted(before)])
    scheduled = wait_until(
        lambda: all_scheduled(server, before), timeout=60, message="leader did not schedule"
    )
    versions = {name: b["metadata"]["resourceVersion"] for name, b in scheduled.items()}
    assert leader.metric("fleetsched_scheduler_binding_writes_total", part="spec") == 20
    assert standby.metric("fleetsched_scheduler_binding_writes_total") == 0

    leader.kill()
    after = {f"new-{i}" for i in range(10)}
    create_objects(server, [divided_binding(n, NAMESPACE, 6, CLUSTERS) for n in sorted(after)])
    # The standby may take the Lease once the record it saw is a lease duration old (it polls
    # every retry period with 1.2 jitter), then schedules the waiting bindings.
    takeover_bound = LEASE_DURATION + 2 * RETRY_PERIOD * 1.2 + 10
    wait_until(
        lambda: all_scheduled(server, after),
        timeout=takeover_bound,
        message=lambda: f"standby did not take over:\n{standby.log_tail()}",
    )
    assert standby.ready()

    lease = json.loads(
        server.kubectl("get", "lease", "-n", "karmada-system", "fleetsched-scheduler", "-o", "json")
    )
    assert lease["spec"]["holderIdentity"] != holder["spec"]["holderIdentity"]
    assert lease["spec"]["leaseTransitions"] == holder["spec"].get("leaseTransitions", 0) + 1
    # No binding written by both: the old ones are untouched, the new leader wrote exactly the new ones.
    current = {b["metadata"]["name"]: b for b in list_bindings(server, NAMESPACE)}
    assert {name: current[name]["metadata"]["resourceVersion"] for name in before} == versions
    assert standby.metric("fleetsched_scheduler_binding_writes_total", part="spec") == len(after)
    assert standby.metric("fleetsched_scheduler_binding_writes_total", part="status") == len(after)
    for name in after:
        meta, status = current[name]["metadata"], current[name]["status"]
        assert (meta["generation"], status["schedulerObservedGeneration"]) == (2, 2)
