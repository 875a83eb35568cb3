"""``fleetsched scheduler --enable-scheduler-estimator``: the operator asks member estimators.

User story 1 of the estimator proposal through the live operator: cluster A has more CPUs in total
but no node with 12 free, B has two nodes with 16. The general estimate (resource summaries) puts
the 12-CPU replica on A; with the accurate estimators, found through Karmada's ExternalName
Services, the operator puts it on B. A scheduler without estimators, sharing the same Clusters
under another scheduler name, still chooses A.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.component.estimator.stories import CLUSTERS, placed, story_binding, story_clusters, story_nodes
from tests.e2e.test_estimator_stories import EstimatorProcess, _create_nodes
from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import apply_with_status, as_applied, get_json, scheduled_condition
from tests.support.processes import SchedulerProcess


@pytest.fixture
def estimator_processes(tmp_path: Path) -> Iterator[list[EstimatorProcess]]:
    started: list[EstimatorProcess] = []
    yield started
    for process in started:
        process.stop()


def estimator_service(cluster: str, port: int) -> str:
    return f"""apiVersion: v1
kind: Service
metadata:
  name: karmada-scheduler-estimator-{cluster}
  namespace: karmada-system
spec:
  type: ExternalName
  externalName: localhost
  ports:
  - port: 10352
    targetPort: {port}
"""


def start_story_members(
    server: APIServer,
    add_apiserver: Callable[..., APIServer],
    processes: list[EstimatorProcess],
    tmp_path: Path,
    *,
    prefix: str,
) -> dict[str, EstimatorProcess]:
    """Story 1's members on ``server``: per member cluster a kube-apiserver (``{prefix}-<cluster>``)
    with its Nodes and a running estimator behind its Karmada ExternalName Service; then the
    Clusters, ready. Returns the estimators by cluster (also appended to ``processes``)."""
    estimators: dict[str, EstimatorProcess] = {}
    for cluster in CLUSTERS:
        member = add_apiserver(f"{prefix}-{cluster}")
        _create_nodes(member, story_nodes(1, cluster))
        process = EstimatorProcess(cluster, member, tmp_path / f"estimator-{cluster}.log")
        processes.append(process)
        process.start()
        estimators[cluster] = process
        server.apply(estimator_service(cluster, process.port))
    clusters = [as_applied(c) for c in story_clusters(1)]
    for cluster in clusters:  # the CRD requires a message on conditions
        for condition in cluster["status"].get("conditions", ()):
            condition.setdefault("message", "cluster is healthy and ready to accept workloads")
    apply_with_status(server, clusters)
    return estimators


def test_accurate_estimators_move_the_replica(
    isolated_apiserver: APIServer,
    add_apiserver: Callable[..., APIServer],
    start_scheduler: Callable[..., SchedulerProcess],
    estimator_processes: list[EstimatorProcess],
    tmp_path: Path,
) -> None:
    server = isolated_apiserver
    start_story_members(server, add_apiserver, estimator_processes, tmp_path, prefix="est")

    accurate = start_scheduler(
        server,
        "--leader-elect=false",
        "--enable-scheduler-estimator",
        "--scheduler-estimator-timeout=5s",
        name="accurate",
    )
    start_scheduler(server, "--leader-elect=false", "--scheduler-name=general-only", name="general")
    with_estimators = as_applied(story_binding(1))
    general = copy.deepcopy(with_estimators)
    general["metadata"]["name"] = "story1-general"
    general["spec"]["schedulerName"] = "general-only"
    apply_with_status(server, [with_estimators, general])

    def result(name: str) -> dict[str, int] | None:
        obj = get_json(server, "rb", "-n", "default", name)
        condition = scheduled_condition(obj)
        return placed(obj) if condition and condition["status"] == "True" else None

    assert wait_until(
        lambda: result("story1"), timeout=60, message=lambda: f"not scheduled:\n{accurate.log_tail()}"
    ) == {"member-b": 1}
    assert wait_until(lambda: result("story1-general"), timeout=60, message="not scheduled") == {
        "member-a": 1
    }
