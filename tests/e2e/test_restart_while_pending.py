"""Kill the scheduler while 500 bindings are pending; after a restart each is scheduled exactly once.

The first run is throttled (``--kube-api-qps``) so the SIGKILL lands in the middle of the work,
possibly between a binding's spec write and its status write. After the restart every binding is
Scheduled=True with its result written once: the generation shows one spec write, and the second
run wrote the spec only of bindings the first run had not reached.
"""

from __future__ import annotations

import time
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

NAMESPACE = "pending"
CLUSTERS = [f"m{i}" for i in range(1, 6)]
COUNT = 500


def test_every_pending_binding_is_scheduled_once_after_a_kill(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(name, 1000) for name in CLUSTERS])
    create_objects(
        server, [divided_binding(f"app-{i:03d}", NAMESPACE, 1 + i % 7, CLUSTERS) for i in range(COUNT)]
    )

    first = start_scheduler(
        server, "--leader-elect=false", "--kube-api-qps=30", "--kube-api-burst=5", name="first"
    )
    wait_until(
        lambda: first.metric("fleetsched_scheduler_binding_writes_total", part="spec") >= 40,
        timeout=60,
        message=lambda: f"first run made no progress:\n{first.log_tail()}",
    )
    first.kill()
    time.sleep(0.5)  # requests already sent may still complete at the apiserver
    at_kill = list_bindings(server, NAMESPACE)
    with_result = sum(1 for b in at_kill if (b.get("spec") or {}).get("clusters"))
    with_status = sum(1 for b in at_kill if binding_state(b)["scheduled"])
    assert 0 < with_result < COUNT, "the kill must land while bindings are pending"

    second = start_scheduler(server, "--leader-elect=false", name="second")
    done = wait_until(
        lambda: (
            (bs := list_bindings(server, NAMESPACE)) and all(binding_state(b)["scheduled"] for b in bs) and bs
        ),
        timeout=120,
        message=lambda: f"not all scheduled after restart:\n{second.log_tail()}",
    )
    assert len(done) == COUNT
    for b in done:
        replicas = b["spec"]["replicas"]
        assert sum(c.get("replicas", 0) for c in b["spec"]["clusters"]) == replicas, b["metadata"]["name"]
        assert b["metadata"]["generation"] == 2, f"{b['metadata']['name']}: spec written more than once"
        assert b["status"]["schedulerObservedGeneration"] == 2
    assert second.metric("fleetsched_scheduler_binding_writes_total", part="spec") == COUNT - with_result
    assert second.metric("fleetsched_scheduler_binding_writes_total", part="status") == COUNT - with_status
