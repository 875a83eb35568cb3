"""Issue 27 item 5 on the real kube-apiserver: a reschedule that moves 40 of 100 running replicas
with ``scheduler.fleetsched.io/max-unavailable: "10"`` is written in steps.

Two Divided bindings of 100 replicas land 40/60 on m1/m2 (dynamic weight by available replicas,
400 and 600 pods free). The test acts as the members: it writes each cluster's ready count into the
binding's ``status.aggregatedStatus``. Both placements then change from [m1, m2] to [m2, m3], which
takes m1's 40 running replicas away. The binding without a budget gets Karmada's placement at once
(one write); the one with the budget goes there in steps, each an Event on the binding, never
taking away a ready replica while that would leave fewer than 90 ready, and not before the
replicas added by the step before are reported ready. Midway the scheduler is replaced by a new
process, which continues the move from the target kept on the binding.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import apply_with_status, create_objects, divided_binding, ready_cluster
from tests.support.processes import SchedulerProcess

NAMESPACE = "move-budget"
RB = f"/apis/work.karmada.io/v1alpha2/namespaces/{NAMESPACE}/resourcebindings"
MERGE = "application/merge-patch+json"
TARGET = "scheduler.fleetsched.io/move-target"
FLOOR = 90


def clusters_of(binding: Mapping[str, Any]) -> dict[str, int]:
    return {c["name"]: int(c.get("replicas") or 0) for c in (binding.get("spec") or {}).get("clusters") or ()}


def get(server: APIServer, name: str) -> dict[str, Any]:
    return server.request("GET", f"{RB}/{name}")  # type: ignore[return-value]


def report_ready(server: APIServer, name: str, ready: Mapping[str, int]) -> None:
    """What the members would say: ready replicas per cluster in ``status.aggregatedStatus``."""
    items = [
        {"clusterName": c, "applied": True, "health": "Healthy",
         "status": {"replicas": n, "readyReplicas": n, "availableReplicas": n}}
        for c, n in sorted(ready.items())
    ]
    body = {"status": {"aggregatedStatus": items}}
    server.request("PATCH", f"{RB}/{name}/status", body, content_type=MERGE)


def move_to(server: APIServer, name: str, clusters: list[str]) -> None:
    body = {"spec": {"placement": {"clusterAffinity": {"clusterNames": clusters}}}}
    server.request("PATCH", f"{RB}/{name}", body, content_type=MERGE)


def counted_ready(placement: Mapping[str, int], ready: Mapping[str, int]) -> int:
    return sum(min(n, ready.get(c, 0)) for c, n in placement.items())


def test_a_move_of_40_of_100_within_max_unavailable_10(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster("m1", 400), ready_cluster("m2", 600), ready_cluster("m3", 1000)])
    paced = divided_binding("paced", NAMESPACE, 100, ["m1", "m2"])
    paced["metadata"]["annotations"] = {"scheduler.fleetsched.io/max-unavailable": "10"}
    plain = divided_binding("plain", NAMESPACE, 100, ["m1", "m2"])
    proc = start_scheduler(server, "--leader-elect=false", name="first")
    create_objects(server, [paced, plain])
    start = {"m1": 40, "m2": 60}
    for name in ("paced", "plain"):
        wait_until(lambda n=name: clusters_of(get(server, n)) == start, timeout=30, message=proc.log_tail)
        report_ready(server, name, start)  # everything runs

    generation = get(server, "plain")["metadata"]["generation"]
    move_to(server, "plain", ["m2", "m3"])
    move_to(server, "paced", ["m2", "m3"])

    # Without a budget: Karmada's placement, written at once (one spec write).
    wait_until(lambda: "m1" not in clusters_of(get(server, "plain")), timeout=30, message=proc.log_tail)
    plain_now = get(server, "plain")
    final = clusters_of(plain_now)
    assert sum(final.values()) == 100 and final["m2"] >= 60
    assert plain_now["metadata"]["generation"] == generation + 2  # the user's change, then one write
    assert TARGET not in (plain_now["metadata"].get("annotations") or {})

    # With the budget: steps, the test acting as the members between them.
    ready = dict(start)
    seen = [start]
    procs = [proc]
    restarted = False
    while seen[-1] != final:
        wait_until(lambda: clusters_of(get(server, "paced")) != seen[-1], timeout=30,
                   message=lambda: f"no step after {seen}:\n{procs[-1].log_tail()}")
        step = clusters_of(get(server, "paced"))
        # removed replicas stop at once; the ones added are not ready yet
        ready = {c: min(ready.get(c, 0), n) for c, n in step.items()}
        assert counted_ready(step, ready) >= FLOOR, (seen, step)
        assert sum(step.values()) <= 100  # maxSurge 0
        seen.append(step)
        report_ready(server, "paced", ready)
        if len(seen) == 2:
            # the final target is kept on the binding; nothing more goes while the replicas added
            # are not reported ready (the scheduler looks again every second)
            pending = json.loads(get(server, "paced")["metadata"]["annotations"][TARGET])
            assert {c["name"]: c["replicas"] for c in pending["clusters"]} == final
            time.sleep(3)
            assert clusters_of(get(server, "paced")) == step
        if len(seen) == 3 and not restarted:
            # a new scheduler process continues from the target kept on the binding
            procs[-1].stop()
            procs.append(start_scheduler(server, "--leader-elect=false", name="second"))
            restarted = True
        ready = dict(step)  # the added replicas come up
        report_ready(server, "paced", ready)
    assert restarted and len(seen) >= 5  # 40 moved 10 at a time
    assert seen[-1] == final
    wait_until(lambda: TARGET not in (get(server, "paced")["metadata"].get("annotations") or {}), timeout=30)
    last = "last step: spec.clusters " + ",".join(f"{c}:{n}" for c, n in sorted(final.items()))

    def step_events() -> list[str]:
        out = server.kubectl(
            "get", "events", "-n", NAMESPACE,
            "--field-selector", "involvedObject.name=paced,reason=ScheduleBindingStep",
            "-o", "jsonpath={range .items[*]}{.message}{'\\n'}{end}",
        )
        return out.strip().splitlines()

    wait_until(lambda: any(e.startswith(last) for e in step_events()), timeout=30,
               message=lambda: f"no event {last!r} in {step_events()}")
    events = step_events()
    for step in seen[1:]:  # one Event per step, the first process's too
        text = "spec.clusters " + ",".join(f"{c}:{n}" for c, n in sorted(step.items())) + " toward"
        assert sum(text in e for e in events) == 1, (text, events)
