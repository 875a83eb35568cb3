"""The generated CRDs on a real kube-apiserver: accepted, defaulting, rejecting schema-invalid objects,
and printing Karmada's columns. Owner: the API models (crds/ is generated from fleetsched/api)."""

from __future__ import annotations

import json

import pytest

from tests.support import recorded
from tests.support.controlplane import ControlPlane


def test_every_crd_is_established(control_plane: ControlPlane) -> None:
    names = control_plane.kubectl("get", "crd", "-o", "jsonpath={.items[*].metadata.name}").split()
    assert {
        "clusters.cluster.karmada.io",
        "propagationpolicies.policy.karmada.io",
        "clusterpropagationpolicies.policy.karmada.io",
        "resourcebindings.work.karmada.io",
        "clusterresourcebindings.work.karmada.io",
    } <= set(names)


def test_policy_gets_crd_defaults_and_columns(control_plane: ControlPlane) -> None:
    control_plane.kubectl("create", "namespace", "crd-defaults")
    control_plane.apply(
        """apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: crd-defaults}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    replicaScheduling: {replicaDivisionPreference: Weighted}
"""
    )
    stored = json.loads(control_plane.kubectl("get", "pp", "web", "-n", "crd-defaults", "-o", "json"))
    spec = stored["spec"]
    assert spec["placement"]["replicaScheduling"]["replicaSchedulingType"] == "Divided"
    assert (spec["priority"], spec["preemption"], spec["conflictResolution"]) == (0, "Never", "Abort")
    assert spec["schedulerName"] == "default-scheduler"
    table = control_plane.kubectl("get", "pp", "-n", "crd-defaults")
    assert table.split("\n")[0].split() == ["NAME", "CONFLICT-RESOLUTION", "PRIORITY", "AGE"]
    assert table.split("\n")[1].split()[:3] == ["web", "Abort", "0"]


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        pytest.param(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\n"
            "metadata: {name: bad-enum}\nspec:\n  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]\n"
            "  preemption: Sometimes\n",
            'spec.preemption: Unsupported value: "Sometimes"',
            id="enum",
        ),
        pytest.param(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\n"
            "metadata: {name: no-sel}\nspec:\n  resourceSelectors: []\n",
            "spec.resourceSelectors",
            id="minItems",
        ),
        pytest.param(
            "apiVersion: work.karmada.io/v1alpha2\nkind: ClusterResourceBinding\nmetadata: {name: neg}\n"
            "spec:\n  resource: {apiVersion: v1, kind: Namespace, name: x}\n  replicas: -1\n",
            "spec.replicas",
            id="negative replicas",
        ),
        pytest.param(
            "apiVersion: work.karmada.io/v1alpha2\nkind: ClusterResourceBinding\nmetadata: {name: qty}\n"
            "spec:\n  resource: {apiVersion: v1, kind: Namespace, name: x}\n"
            "  replicaRequirements: {resourceRequest: {cpu: lots}}\n",
            "spec.replicaRequirements.resourceRequest.cpu",
            id="quantity pattern",
        ),
    ],
)
def test_schema_invalid_objects_are_rejected(
    control_plane: ControlPlane, manifest: str, message: str
) -> None:
    with pytest.raises(RuntimeError) as caught:
        control_plane.apply(manifest)
    assert message in str(caught.value)


@pytest.mark.recorded("conformance")
def test_conformance_input_applies_and_keeps_status(control_plane: ControlPlane) -> None:
    path = recorded.suite("conformance") / "cases" / "random-000001.input.yaml"
    text = path.read_text(encoding="utf-8")
    for namespace in sorted({line.split(":", 1)[1].strip() for line in text.splitlines()
                             if line.startswith("  namespace:")}):
        control_plane.kubectl("create", "namespace", namespace, check=False)
    control_plane.kubectl("apply", "--server-side", "-f", str(path))
    clusters = json.loads(control_plane.kubectl("get", "clusters", "-o", "json"))["items"]
    assert len(clusters) >= 10
    # The status subresource is written separately, and survives the structural schema untouched.
    name = clusters[0]["metadata"]["name"]
    status = {"status": {"kubernetesVersion": "v1.30.2",
                         "resourceSummary": {"allocatable": {"cpu": "8", "memory": "16Gi"},
                                             "allocatableModelings": [{"grade": 0, "count": 2}]},
                         "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                                         "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    control_plane.kubectl("patch", "cluster", name, "--subresource=status", "--type=merge",
                          "-p", json.dumps(status))
    stored = json.loads(control_plane.kubectl("get", "cluster", name, "-o", "json"))
    assert stored["status"]["resourceSummary"]["allocatable"] == {"cpu": "8", "memory": "16Gi"}
    assert stored["status"]["resourceSummary"]["allocatableModelings"] == [{"grade": 0, "count": 2}]
    row = control_plane.kubectl("get", "cluster", name, "--no-headers").split()
    assert row[1:4] == ["v1.30.2", stored["spec"]["syncMode"], "True"]
