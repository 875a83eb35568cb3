"""``fleetsched scheduler --config``: several profiles in one process on a real kube-apiserver;
bindings are routed by ``spec.schedulerName``, a name no profile serves is left alone, and a flag
that contradicts the file stops the scheduler at start-up with a reason."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

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

NAMESPACE = "profiles"
CONFIGURATION = {
    "apiVersion": "config.fleetsched.io/v1alpha1",
    "kind": "SchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "parallelism": 4,
    "profiles": [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "batch", "plugins": {"filter": {"disabled": [{"name": "TaintToleration"}]}}},
    ],
}


def write_configuration(directory: Path) -> Path:
    path = directory / "scheduler-config.yaml"
    path.write_text(yaml.safe_dump(CONFIGURATION, sort_keys=False))
    return path


def named(name: str, scheduler_name: str | None) -> dict[str, Any]:
    binding = divided_binding(name, NAMESPACE, 4, ["m1", "m2"])
    if scheduler_name is not None:
        binding["spec"]["schedulerName"] = scheduler_name
    return binding


def placed(server: APIServer, name: str) -> dict[str, int] | None:
    obj = get_json(server, "rb", "-n", NAMESPACE, name)
    if scheduled_condition(obj) is None:
        return None
    return {t["name"]: t.get("replicas", 0) for t in obj["spec"].get("clusters") or []}


def test_each_profile_schedules_the_bindings_of_its_name(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    tainted = ready_cluster("m1", 10)
    tainted["spec"]["taints"] = [{"key": "maintenance", "effect": "NoSchedule"}]
    apply_with_status(server, [tainted, ready_cluster("m2", 10)])
    config = write_configuration(tmp_path)
    scheduler = start_scheduler(server, "--config", str(config), "--leader-elect=false")

    create_objects(server, [named("parked", "someone-else"), named("web", None), named("job", "batch")])

    def both() -> tuple[dict[str, int], dict[str, int]] | None:
        web, job = placed(server, "web"), placed(server, "job")
        return (web, job) if web is not None and job is not None else None

    web, job = wait_until(both, timeout=60, message=lambda: f"not scheduled:\n{scheduler.log_tail()}")
    assert web == {"m2": 4}  # the default profile keeps the taint filter
    assert job == {"m1": 2, "m2": 2}  # batch runs without it
    # "parked" was created first, so its add event was handled before the others were scheduled:
    # two bindings were queued, and it was not one of them.
    assert scheduler.metric("karmada_scheduler_queue_incoming_bindings_total", event="BindingAdd") == 2
    parked = get_json(server, "rb", "-n", NAMESPACE, "parked")
    assert scheduled_condition(parked) is None and "clusters" not in parked["spec"]
    assert "scheduler_starting" in scheduler.log_tail() and scheduler.alive()


def test_a_flag_that_contradicts_the_file_stops_the_scheduler(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    config = write_configuration(tmp_path)
    scheduler = start_scheduler(
        isolated_apiserver, "--config", str(config), "--leader-elect=false", "--workers", "8",
        wait_ready=False,
    )
    assert scheduler.process is not None
    assert scheduler.process.wait(timeout=60) == 2
    assert f"--workers=8 contradicts {config} (parallelism: 4); set it in one place" in scheduler.log_tail()
