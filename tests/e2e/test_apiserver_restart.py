"""The control plane's kube-apiserver restarts under a running scheduler.

The watch drops and the writes fail while it is down; the operator neither exits nor loses work:
once the apiserver is back, bindings created afterwards are scheduled, and so is one whose spec
changed while the operator was reconnecting.
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
    get_json,
    ready_cluster,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "restart"
CLUSTERS = ["m1", "m2"]


def scheduled(server: APIServer, name: str, replicas: int) -> bool:
    state = binding_state(get_json(server, "rb", "-n", NAMESPACE, name))
    return state["scheduled"] and sum(state["clusters"].values()) == replicas


def test_scheduling_resumes_after_the_apiserver_restarts(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(name, 100) for name in CLUSTERS])
    scheduler = start_scheduler(server, "--leader-elect=false")
    create_objects(server, [divided_binding("before", NAMESPACE, 4, CLUSTERS)])
    wait_until(lambda: scheduled(server, "before", 4), timeout=30, message="not scheduled before the restart")

    server.restart()
    assert scheduler.alive()
    # Changes made right after the restart, while the operator may still be reconnecting its watch.
    server.kubectl(
        "patch", "rb", "before", "-n", NAMESPACE, "--type=merge", "-p", json.dumps({"spec": {"replicas": 6}})
    )
    create_objects(server, [divided_binding("after", NAMESPACE, 3, CLUSTERS)])
    wait_until(
        lambda: scheduled(server, "after", 3),
        timeout=120,
        message=lambda: f"not scheduled after the restart:\n{scheduler.log_tail()}",
    )
    wait_until(lambda: scheduled(server, "before", 6), timeout=60, message="the scale-up was lost")
    assert scheduler.alive()
    wait_until(scheduler.ready, timeout=30, message="scheduler not ready again")
