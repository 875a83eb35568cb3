"""The estimator's member watches are the scheduler's reflector (kube/watch.py) in its replace mode:
a Node and a Pod deleted while the estimator's apiserver is down are gone from its answers once the
apiserver is back, because the watch LISTs again (the restarted apiserver's watch cache no longer
holds the old resourceVersion: 410 Gone) and the LIST replaces what the estimator knew.

The deletions go through a second kube-apiserver on the same etcd keyspace, so that the estimator's
own apiserver is down the whole time they happen and no watch of it can see them as events.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fleetsched.estimator.client import AccurateEstimatorClient, EstimatorClientConfig
from tests.e2e.test_estimator_stories import (  # noqa: F401  (estimators: the fixture)
    EstimatorProcess,
    _answer,
    _create_nodes,
    _pod,
    estimators,
)
from tests.support.controlplane import APIServer, wait_until

NODES = [f"relist-{i}" for i in range(4)]


def _node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"node": name}},
            "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def _on(node: str) -> dict[str, Any]:
    """12 cpu on ``node`` only: 1 when the estimator knows it and no pod takes its cpu, else 0."""
    return {"resourceRequest": {"cpu": "12"}, "nodeClaim": {"nodeSelector": {"node": node}}}


def _log_events(path: Any, event: str) -> list[dict[str, Any]]:
    found = []
    for line in path.read_text().splitlines():
        if f'"{event}"' in line:
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def test_what_was_deleted_while_the_watch_was_down_is_gone_after_the_relist(
        add_apiserver: Callable[..., APIServer],
        estimators: Callable[[str, APIServer], EstimatorProcess]) -> None:  # noqa: F811
    member = add_apiserver("relist-member")
    _create_nodes(member, [_node(name) for name in NODES])
    member.request("POST", "/api/v1/namespaces/default/pods", _pod("busy", "relist-1", "10"))
    process = estimators("member-a", member)
    client = AccurateEstimatorClient(EstimatorClientConfig(addresses={"member-a": process.address}))
    twin = APIServer(name="relist-twin", binaries=member.binaries, pki=member.pki,
                     workdir=member.workdir.parent / f"{member.workdir.name}-twin",
                     etcd_url=member.etcd_url, etcd_prefix=member.etcd_prefix)
    try:
        assert _answer(client, "member-a", {"resourceRequest": {"cpu": "12"}}) == 3  # relist-1 is busy
        assert _answer(client, "member-a", _on("relist-3")) == 1
        assert _answer(client, "member-a", _on("relist-1")) == 0
        twin.start()
        member.stop()
        wait_until(lambda: "last synced state" in process.probe("/readyz")[1], timeout=60, interval=0.5,
                   message="the estimator never reported the lost apiserver")
        twin.request("DELETE", "/api/v1/nodes/relist-3")
        twin.request("DELETE", "/api/v1/namespaces/default/pods/busy?gracePeriodSeconds=0")
        twin.stop()
        assert _answer(client, "member-a", _on("relist-3")) == 1  # the last synced state, while down

        member.restart()
        wait_until(lambda: _answer(client, "member-a", _on("relist-3")) == 0, timeout=60, interval=0.5,
                   message="the Node deleted while the watch was down is still known")
        wait_until(lambda: _answer(client, "member-a", _on("relist-1")) == 1, timeout=60, interval=0.5,
                   message="the Pod deleted while the watch was down still takes its node's cpu")
        assert _answer(client, "member-a", {"resourceRequest": {"cpu": "12"}}) == 3  # relist-0, 1, 2
        wait_until(lambda: process.probe("/readyz") == (200, "ok"), timeout=30, interval=0.5,
                   message="readiness never recovered")
        relisted = {event.get("resource") for event in _log_events(process.log_path, "watch_relist")}
        assert {"/api/v1/nodes", "/api/v1/pods"} <= relisted, process.log_path.read_text()[-3000:]
    finally:
        client.close()
        twin.stop()
