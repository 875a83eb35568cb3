"""Long messages on a real kube-apiserver (issue 23): a binding that 1,000 Clusters with distinct
taints reject, and one that an extender rejects with huge reasons, both get their Scheduled
condition (message within the CRD's 32768, cut at a reason boundary with a count) and their
Event (within kube's 1024-byte note). Before, the status write was refused (422/413) and retried
forever: no condition, no Event.

The extender is a plain HTTP server in this process (the scheduler is a real process beside it);
the Clusters are written straight to the API, a few requests at a time."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.api.text import CONDITION_MESSAGE_LIMIT, EVENT_MESSAGE_LIMIT
from tests.support.controlplane import APIServer, wait_until
from tests.support.extenders import rejecting_extender
from tests.support.karmada import (
    create_objects,
    divided_binding,
    get_json,
    ready_cluster,
    scheduled_condition,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "long-messages"
CLUSTERS = 1000
REASON_BYTES = 2000  # per cluster: about 2 MB of reasons in one extender answer


def tainted_cluster(i: int) -> dict[str, Any]:
    cluster = ready_cluster(f"member-{i:04d}", 10)
    cluster["spec"]["taints"] = [
        {"key": f"team.example.com/dedicated-{i:04d}", "value": f"tenant-{i:04d}", "effect": "NoSchedule"}
    ]
    return cluster


def _create(server: APIServer, cluster: dict[str, Any]) -> None:
    create_objects(server, [cluster])
    server.request(
        "PATCH",
        f"/apis/cluster.karmada.io/v1alpha1/clusters/{cluster['metadata']['name']}/status",
        {"status": cluster["status"]},
        content_type="application/merge-patch+json",
    )


@pytest.fixture(scope="module")
def fleet(isolated_apiserver: APIServer) -> APIServer:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda i: _create(server, tainted_cluster(i)), range(CLUSTERS)))
    return server


@pytest.fixture
def extender_url() -> Iterator[str]:
    """An extender that rejects every candidate with a distinct reason of REASON_BYTES."""
    with rejecting_extender(
        lambda names: {name: f"{name}: " + "over budget " * (REASON_BYTES // 12) for name in names},
        path="/huge",
    ) as url:
        yield url


def binding(name: str, *, tolerate: bool) -> dict[str, Any]:
    obj = divided_binding(name, NAMESPACE, 2, [f"member-{i:04d}" for i in range(CLUSTERS)])
    if tolerate:
        obj["spec"]["placement"]["clusterTolerations"] = [{"operator": "Exists"}]
    return obj


def failed_event(server: APIServer, name: str) -> dict[str, Any] | None:
    events = server.request("GET", f"/api/v1/namespaces/{NAMESPACE}/events")["items"]
    for event in events:  # type: ignore[union-attr]
        if event["involvedObject"]["name"] == name and event["reason"] == "ScheduleBindingFailed":
            return dict(event)
    return None


def test_long_messages_are_written_cut_with_a_count(
    fleet: APIServer, extender_url: str, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    config = tmp_path / "scheduler-config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "config.fleetsched.io/v1alpha1",
                "kind": "SchedulerConfiguration",
                "leaderElection": {"leaderElect": False},
                "extenders": [{"urlPrefix": extender_url, "filterVerb": "filter", "httpTimeout": "60s"}],
            }
        )
    )
    scheduler = start_scheduler(fleet, "--config", str(config), "--leader-elect=false")
    create_objects(fleet, [binding("tainted", tolerate=False), binding("extended", tolerate=True)])
    longest = 0
    for name, head in (
        (
            "tainted",
            f"0/{CLUSTERS} clusters are available: 1 cluster(s) had untolerated taint {{team.example.com/",
        ),
        ("extended", f"0/{CLUSTERS} clusters are available: 1 member-0000: over budget"),
    ):
        condition = wait_until(
            lambda name=name: scheduled_condition(get_json(fleet, "rb", "-n", NAMESPACE, name)),
            timeout=120,
            message=lambda: scheduler.log_tail(),
        )
        message = condition["message"]
        assert (condition["status"], condition["reason"]) == ("False", "NoClusterFit")
        assert message.startswith(head), message[:200]
        assert len(message.encode()) <= CONDITION_MESSAGE_LIMIT
        kept = message.split(", ")[:-1]
        left_out = int(message.rsplit("… and ", 1)[1].split()[0])
        assert message.endswith(f"… and {left_out} more reasons")
        assert len(kept) + left_out == CLUSTERS  # every reason is distinct: one per cluster
        longest = max(longest, len(message.encode()))
        event = wait_until(
            lambda name=name: failed_event(fleet, name), timeout=60, message=scheduler.log_tail
        )
        assert len(event["message"].encode()) <= EVENT_MESSAGE_LIMIT
        assert event["message"].startswith(head) and event["message"].endswith("more reasons")
    assert scheduler.alive()
    print(f"longest Scheduled message written: {longest} bytes")
