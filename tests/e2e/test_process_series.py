"""Each fleetsched process serves only its own series (issue 29), as live processes on the real
kube-apiserver: the policy controller's /metrics has its own and the common ones (build info,
work queue, REST client, process) and none of the scheduler's (it served 14 of them at 0 before),
and the scheduler's has none of the policy controller's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_policy_controller import ControllerProcess
from tests.support.controlplane import APIServer
from tests.support.processes import SchedulerProcess

SCHEDULER_OWN = ("fleetsched_scheduler_", "karmada_scheduler_", "scheduler_")
CONTROLLER_OWN = ("fleetsched_policy_controller_",)
COMMON = {"karmada_build_info", "workqueue_adds", "rest_client_requests", "process_cpu_seconds"}


def families(text: str) -> set[str]:
    return {family.name for family in text_string_to_metric_families(text)}


def test_the_scheduler_and_the_policy_controller_serve_their_own_series(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    scheduler = families(start_scheduler(isolated_apiserver, "--leader-elect=false", name="own").metrics())
    controller_process = ControllerProcess(kubeconfig=isolated_apiserver.kubeconfig,
                                           log_path=tmp_path / "controller.log",
                                           extra_args=("--leader-elect=false",))
    controller_process.start(timeout=90)
    try:
        controller = families(controller_process.metrics())
    finally:
        controller_process.stop()
    assert not {name for name in controller if name.startswith(SCHEDULER_OWN)}, sorted(controller)
    assert {"fleetsched_policy_controller_is_leader", "fleetsched_policy_controller_applies"} <= controller
    assert controller >= COMMON
    assert not {name for name in scheduler if name.startswith(CONTROLLER_OWN)}, sorted(scheduler)
    assert {"fleetsched_scheduler_unscheduled_bindings", "fleetsched_scheduler_is_leader"} <= scheduler
    assert scheduler >= COMMON
