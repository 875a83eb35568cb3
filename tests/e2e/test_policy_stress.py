"""Many templates and policies at once, through a real kube-apiserver, while the workers run.

The policy controller's kopf handlers feed its queue from watch events of every kind at the same
time; they run on the event loop (tests/unit/controller/test_policy_handlers.py). Here 200
Deployments in ten shards, 100 ConfigMaps, ten PropagationPolicies (one per shard) and one
ClusterPropagationPolicy (the ConfigMaps) are applied by five concurrent ``kubectl apply`` runs
against a running controller, so template and policy events interleave while workers reconcile.
Every template must end up claimed by its policy with exactly one binding carrying that claim,
no template may be left unmatched, and the controller logs no worker error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.controlplane import APIServer, wait_until
from tests.support.processes import SchedulerProcess

NAMESPACE = "stress"
SHARDS = 10
DEPLOYMENTS_PER_SHARD = 20
CONFIGMAPS = 100
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
CPP_ID = "c0000000-0000-4000-8000-000000000000"


def shard_id(shard: int) -> str:
    return f"00000000-0000-4000-8000-{shard:012d}"


class ControllerProcess(SchedulerProcess):
    def argv(self) -> list[str]:
        return [sys.executable, "-m", "fleetsched", "controller", f"--kubeconfig={self.kubeconfig}",
                f"--health-probe-bind-address=127.0.0.1:{self.port}",
                f"--metrics-bind-address=127.0.0.1:{self.port}", *self.extra_args]


@pytest.fixture
def controller(isolated_apiserver: APIServer, tmp_path: Path) -> Iterator[ControllerProcess]:
    isolated_apiserver.kubectl("create", "namespace", NAMESPACE)
    process = ControllerProcess(kubeconfig=isolated_apiserver.kubeconfig,
                                log_path=tmp_path / "controller.log",
                                extra_args=("--leader-elect=false", "--workers=4"))
    process.start(timeout=90)
    try:
        yield process
    finally:
        process.stop()


def deployment(shard: int, index: int) -> dict[str, Any]:
    labels = {"app": f"web-{shard}-{index}", "shard": f"s{shard}"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": f"web-{shard}-{index}", "namespace": NAMESPACE, "labels": labels},
        "spec": {"replicas": 1 + index % 3, "selector": {"matchLabels": {"app": labels["app"]}},
                 "template": {"metadata": {"labels": {"app": labels["app"]}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }


def configmap(index: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"conf-{index}", "namespace": NAMESPACE, "labels": {"stress": "conf"}},
            "data": {"index": str(index)}}


def policies() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
         "metadata": {"name": f"shard-{shard}", "namespace": NAMESPACE,
                      "labels": {PP_LABEL: shard_id(shard)}},
         "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                         "labelSelector": {"matchLabels": {"shard": f"s{shard}"}}}],
                  "placement": {"clusterAffinity": {"clusterNames": ["m1", "m2"]}}}}
        for shard in range(SHARDS)
    ]
    out.append({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
                "metadata": {"name": "stress-conf", "labels": {CPP_LABEL: CPP_ID}},
                "spec": {"resourceSelectors": [{
                    "apiVersion": "v1", "kind": "ConfigMap", "namespace": NAMESPACE,
                    "labelSelector": {"matchLabels": {"stress": "conf"}}}]}})
    return out


def listed(server: APIServer, kind: str) -> list[dict[str, Any]]:
    return list(json.loads(server.kubectl("get", kind, "-n", NAMESPACE, "-o", "json"))["items"])


def test_every_template_gets_its_binding_when_everything_arrives_at_once(
    isolated_apiserver: APIServer, controller: ControllerProcess
) -> None:
    server = isolated_apiserver
    deployments = [deployment(s, i) for s in range(SHARDS) for i in range(DEPLOYMENTS_PER_SHARD)]
    configmaps = [configmap(i) for i in range(CONFIGMAPS)]
    templates = [*deployments, *configmaps]
    # four batches of templates, interleaving kinds and shards, and the policies, all at once
    batches = [templates[i::4] for i in range(4)] + [policies()]
    with ThreadPoolExecutor(len(batches)) as pool:
        for done in pool.map(lambda docs: server.apply(yaml.safe_dump_all(docs)), batches):
            assert "created" in done

    expected: dict[str, tuple[str, str]] = {}  # binding name -> (claim label, policy id)
    for doc in deployments:
        shard = int(doc["metadata"]["labels"]["shard"][1:])
        expected[f"{doc['metadata']['name']}-deployment"] = (PP_LABEL, shard_id(shard))
    for doc in configmaps:
        expected[f"{doc['metadata']['name']}-configmap"] = (CPP_LABEL, CPP_ID)
    assert len(expected) == len(templates) == 300

    def bindings() -> dict[str, dict[str, Any]]:
        return {b["metadata"]["name"]: b for b in listed(server, "resourcebindings.work.karmada.io")}

    seen: dict[str, dict[str, Any]] = {}

    def all_bound() -> bool:
        seen.clear()
        seen.update(bindings())
        return set(seen) >= set(expected)

    wait_until(all_bound, timeout=240, interval=2, message=lambda: (
        f"{len(set(expected) - set(seen))} of {len(expected)} templates have no binding, e.g. "
        f"{sorted(set(expected) - set(seen))[:5]}:\n{controller.log_tail(60)}"))
    assert set(seen) == set(expected), "no binding for anything else"
    for name, (label, policy_id) in expected.items():
        assert seen[name]["metadata"]["labels"][label] == policy_id, name
        assert seen[name]["spec"]["resource"]["name"] == name.rsplit("-", 1)[0]
    # nothing left unmatched: every template carries its policy's claim
    for kind, label in (("deployments", PP_LABEL), ("configmaps", CPP_LABEL)):
        items = listed(server, kind)
        unclaimed = [t["metadata"]["name"] for t in items if label not in (t["metadata"].get("labels") or {})]
        assert not unclaimed, f"{len(unclaimed)} {kind} unclaimed, e.g. {unclaimed[:5]}"
    for doc in deployments:
        binding = seen[f"{doc['metadata']['name']}-deployment"]
        assert binding["spec"]["replicas"] == doc["spec"]["replicas"]
    log = controller.log_path.read_text()
    assert '"worker_error"' not in log and "Traceback" not in log, controller.log_tail(60)
    assert controller.alive() and controller._get("/readyz")[0] == 200
