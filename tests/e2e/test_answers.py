"""Issue 29's first table, the rows a live control plane answers (real kube-apiserver, the real
scheduler): a ``clusterNames`` entry that names no Cluster and a Cluster that never reported its
status get Karmada's condition message, unchanged, and beside it a Warning Event on the binding
that names the mistake; live ``explain`` and ``what-if`` name it too. (The policy controller's
rows, a kind not served and a policy that selects nothing, are in test_policy_controller.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    as_applied,
    create_objects,
    divided_binding,
    ready_cluster,
    scheduled_condition,
)

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "answers"


def fleetsched(server: APIServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(server.kubeconfig),
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "fleetsched", *args], capture_output=True, text=True,
                          timeout=180, env=env, cwd=REPO)


def events(server: APIServer, name: str, reason: str) -> list[dict[str, Any]]:
    out = server.kubectl("get", "events", "-n", NAMESPACE, "-o", "json",
                         f"--field-selector=involvedObject.name={name},reason={reason}")
    return list(json.loads(out)["items"])


def condition(server: APIServer, name: str) -> dict[str, Any]:
    binding = json.loads(server.kubectl("get", "rb", "-n", NAMESPACE, name, "-o", "json"))
    return dict(scheduled_condition(binding) or {})


@pytest.fixture(scope="module")
def server(isolated_apiserver: APIServer) -> APIServer:
    """m1 and m2 report their status; ``silent`` was applied without one (no agent ever wrote it)."""
    apply_with_status(isolated_apiserver, [ready_cluster("m1", 10), ready_cluster("m2", 10)])
    silent = as_applied({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                         "metadata": {"name": "silent"}, "spec": {}})
    create_objects(isolated_apiserver, [silent])
    isolated_apiserver.kubectl("create", "namespace", NAMESPACE)
    create_objects(isolated_apiserver, [
        divided_binding("typo", NAMESPACE, 2, ["m-1"]),
        divided_binding("quiet", NAMESPACE, 2, ["silent"]),
        divided_binding("good", NAMESPACE, 2, ["m1", "m2"]),
    ])
    return isolated_apiserver


def test_the_scheduler_names_the_mistake_beside_karmadas_message(
    server: APIServer, start_scheduler: Callable[..., Any]
) -> None:
    scheduler = start_scheduler(server)
    for name, reason in (("typo", "ClusterNameUnknown"), ("quiet", "ClusterStatusNeverReported")):
        wait_until(lambda n=name, r=reason: events(server, n, r), timeout=90, interval=1,
                   message=scheduler.log_tail)
    # Karmada's conditions, word for word: the same message for two different mistakes
    karmada = ("0/3 clusters are available: 1 cluster(s) did not have the API resource, 2 cluster(s) did "
               "not match the placement cluster affinity constraint.")
    for name in ("typo", "quiet"):
        got = condition(server, name)
        assert (got["status"], got["reason"], got["message"]) == ("False", "NoClusterFit", karmada)
    # beside them, the mistake by name, as a Warning Event on the binding
    (typo,) = events(server, "typo", "ClusterNameUnknown")
    assert typo["type"] == "Warning" and typo["involvedObject"]["kind"] == "ResourceBinding"
    assert typo["message"] == ('spec.placement.clusterAffinity.clusterNames[0]: "m-1" names no Cluster '
                               '(did you mean "m1"?)')
    (never,) = events(server, "quiet", "ClusterStatusNeverReported")
    assert never["type"] == "Warning"
    assert never["message"].startswith('Cluster "silent" has never reported a status')
    assert condition(server, "good")["status"] == "True"
    for reason in ("ClusterNameUnknown", "ClusterStatusNeverReported"):
        assert not events(server, "good", reason)
    assert not events(server, "typo", "ClusterStatusNeverReported")  # silent is no candidate of typo


def test_live_explain_names_the_mistake(server: APIServer) -> None:
    done = fleetsched(server, "explain", f"rb/{NAMESPACE}/typo")
    assert done.returncode == 0, done.stderr
    assert ('  hint: spec.placement.clusterAffinity.clusterNames[0]: "m-1" names no Cluster '
            '(did you mean "m1"?)') in done.stdout.splitlines()
    done = fleetsched(server, "explain", f"rb/{NAMESPACE}/quiet")
    assert done.returncode == 0, done.stderr
    assert any(line.startswith('  hint: Cluster "silent" has never reported a status')
               for line in done.stdout.splitlines())


def test_what_if_names_the_mistake(server: APIServer, tmp_path: Path) -> None:
    changed = divided_binding("good", NAMESPACE, 2, ["m2", "aws-us-east1"])
    changed["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["m-2"]
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(changed))
    done = fleetsched(server, "what-if", "-f", str(path))
    assert done.returncode == 3, done.stderr  # good would become unschedulable
    lines = done.stdout.splitlines()
    at = lines.index("WHY (beside the reason: what the placement names that is not there)")
    assert lines[at + 1] == (f'RB {NAMESPACE}/good: spec.placement.clusterAffinity.clusterNames[0]: "m-2" '
                             'names no Cluster (did you mean "m2"?)')


def test_what_if_names_kinds_not_served_and_policies_that_select_nothing(
    server: APIServer, tmp_path: Path
) -> None:
    def policy(name: str, selector: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"resourceSelectors": [selector],
                         "placement": {"clusterAffinity": {"clusterNames": ["m1"]}}}}

    container = {"name": "web", "image": "example.com/web:1"}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": NAMESPACE},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [container]}}}}
    docs = [policy("typo-kind", {"apiVersion": "apps/v1", "kind": "Deploymnet", "name": "web"}),
            policy("nothing", {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nothing-here"}),
            deployment]
    path = tmp_path / "policies.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    done = fleetsched(server, "what-if", "-f", str(path))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("NOTES (the files' policies)")
    assert lines[at + 1:at + 3] == [
        f"PropagationPolicy {NAMESPACE}/typo-kind: resourceSelectors[0]: apps/v1 Deploymnet: the API server "
        "serves no kind 'Deploymnet' in apps/v1 (did you mean \"Deployment\"?)",
        f"PropagationPolicy {NAMESPACE}/nothing selects nothing: no template of the input matches its "
        "resourceSelectors, so it derives no binding",
    ]
