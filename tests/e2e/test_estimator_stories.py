"""The accurate estimator end to end: member kube-apiservers holding Node objects, one
``fleetsched estimator`` process watching each, and the scheduling core calling them over gRPC as an
extra estimator. Shows both user stories of the estimator proposal changing where the replica goes,
the watch following label changes, and an estimator that keeps answering while its apiserver is down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetsched.estimator.client import AccurateEstimatorClient, EstimatorClientConfig
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.simulate import simulate_objects
from tests.component.estimator.stories import CLUSTERS, placed, story_binding, story_clusters, story_nodes
from tests.support.controlplane import APIServer, free_port, wait_until

ROOT = Path(__file__).resolve().parents[2]


class EstimatorProcess:
    def __init__(self, cluster: str, member: APIServer, log_path: Path) -> None:
        self.cluster = cluster
        self.port = free_port()
        self.health_port = free_port()
        self.log_path = log_path
        fleetsched = ROOT / ".venv" / "bin" / "fleetsched"
        command = [str(fleetsched)] if fleetsched.exists() else [sys.executable, "-m", "fleetsched"]
        self.argv = [*command, "estimator", "--cluster-name", cluster, "--kubeconfig", str(member.kubeconfig),
                     "--server-port", str(self.port), "--server-bind-address", "127.0.0.1",
                     "--health-probe-bind-address", f"127.0.0.1:{self.health_port}",
                     "--metrics-bind-address", f"127.0.0.1:{self.health_port}"]
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def probe(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}{path}", timeout=5) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode()
        except OSError as exc:
            return 0, str(exc)

    def start(self) -> None:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        wait_until(lambda: self._alive() and self.probe("/readyz")[0] == 200, timeout=60, interval=0.2,
                   message=f"estimator for {self.cluster} never became ready; see {self.log_path}")

    def _alive(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"estimator exited with {self.process.returncode}:\n"
                               f"{self.log_path.read_text()}")
        return True

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


@pytest.fixture
def estimators(tmp_path: Path) -> Iterator[Callable[[str, APIServer], EstimatorProcess]]:
    started: list[EstimatorProcess] = []

    def start(cluster: str, member: APIServer) -> EstimatorProcess:
        process = EstimatorProcess(cluster, member, tmp_path / f"estimator-{cluster}.log")
        started.append(process)
        process.start()
        return process

    yield start
    for process in started:
        process.stop()


def _create_nodes(member: APIServer, nodes: list[dict[str, Any]]) -> None:
    for node in nodes:
        member.request("POST", "/api/v1/nodes", node)
        # The apiserver's TaintNodesByCondition admission taints a new Node not-ready:NoSchedule, and no
        # node lifecycle controller runs here to lift it once the node is Ready; lift it as that would.
        member.request("PATCH", f"/api/v1/nodes/{node['metadata']['name']}", {"spec": {"taints": None}},
                       content_type="application/merge-patch+json")


def _pod(name: str, node: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [
                {"name": "app", "image": "registry.example/app:1", "resources": {"requests": {"cpu": cpu}}}]}}


def _schedule(story: int, client: AccurateEstimatorClient | None) -> dict[str, int]:
    scheduler = Scheduler(estimators=[client]) if client is not None else Scheduler()
    result = simulate_objects(story_clusters(story), [story_binding(story)], scheduler)
    return placed(result[0][0])


def _answer(client: AccurateEstimatorClient, cluster: str, requirements: dict[str, Any]) -> int:
    return client.max_available_replicas([cluster], requirements)[0]


@pytest.mark.parametrize("story", [1, 2])
def test_user_story_changes_where_the_replica_goes(
        add_apiserver: Callable[..., APIServer], estimators: Callable[[str, APIServer], EstimatorProcess],
        story: int) -> None:
    addresses = {}
    for cluster in CLUSTERS:
        member = add_apiserver(f"s{story}-{cluster}")
        _create_nodes(member, story_nodes(story, cluster))
        addresses[cluster] = estimators(cluster, member).address
    client = AccurateEstimatorClient(EstimatorClientConfig(addresses=addresses))
    try:
        requirements = story_binding(story)["spec"]["replicaRequirements"]
        assert client.max_available_replicas(list(CLUSTERS), requirements) == [0, 2]
        assert _schedule(story, None) == {"member-a": 1}
        assert _schedule(story, client) == {"member-b": 1}
    finally:
        client.close()


def test_watch_follows_changes_and_survives_an_apiserver_outage(
        add_apiserver: Callable[..., APIServer],
        estimators: Callable[[str, APIServer], EstimatorProcess]) -> None:
    member = add_apiserver("watch-member")
    _create_nodes(member, story_nodes(2, "member-a"))
    member.request("POST", "/api/v1/namespaces/default/pods", _pod("early", "member-a-node-0", "10"))
    process = estimators("member-a", member)
    client = AccurateEstimatorClient(EstimatorClientConfig(addresses={"member-a": process.address}))
    selector = story_binding(2)["spec"]["replicaRequirements"]
    try:
        # 10 nodes with 16 CPUs fit one 12-CPU replica each, except the one running the listed pod
        assert _answer(client, "member-a", {"resourceRequest": {"cpu": "12"}}) == 9
        assert _answer(client, "member-a", selector) == 0
        member.request("PATCH", "/api/v1/nodes/member-a-node-3", {"metadata": {"labels": {"key": "value"}}},
                       content_type="application/merge-patch+json")
        wait_until(lambda: _answer(client, "member-a", selector) == 1, timeout=30, interval=0.2,
                   message="the label change never reached the estimator")
        member.request("POST", "/api/v1/namespaces/default/pods", _pod("late", "member-a-node-3", "8"))
        wait_until(lambda: _answer(client, "member-a", selector) == 0, timeout=30, interval=0.2,
                   message="the new pod never reached the estimator")
        member.request("DELETE", "/api/v1/namespaces/default/pods/late?gracePeriodSeconds=0")
        wait_until(lambda: _answer(client, "member-a", selector) == 1, timeout=30, interval=0.2,
                   message="the pod deletion never reached the estimator")

        member.stop()
        wait_until(lambda: "last synced state" in process.probe("/readyz")[1], timeout=60, interval=0.5,
                   message="the estimator never reported the lost apiserver")
        assert _answer(client, "member-a", selector) == 1  # still answering from the last synced state

        member.restart()
        member.request("DELETE", "/api/v1/nodes/member-a-node-3")
        wait_until(lambda: _answer(client, "member-a", selector) == 0, timeout=60, interval=0.5,
                   message="the estimator never resynced after the apiserver came back")
        wait_until(lambda: process.probe("/readyz") == (200, "ok"), timeout=30, interval=0.5,
                   message="readiness never recovered")
        status, metrics = process.probe("/metrics")
        assert status == 200
        counter = "karmada_scheduler_estimator_estimating_request_total"
        assert f'{counter}{{result="success",type="MaxAvailableReplicas"}}' in metrics
    finally:
        client.close()
