"""Loading YAML into typed objects: every shared input loads, bad input gives one precise line."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleetsched.api import (
    Cluster,
    ClusterPropagationPolicy,
    ClusterResourceBinding,
    LoadError,
    PropagationPolicy,
    Quantity,
    ResourceBinding,
    ResourceTemplate,
    load_files,
    load_text,
)
from tests.support import recorded

CONFORMANCE_INPUTS = sorted((recorded.suite("conformance") / "cases").glob("*.input.yaml"))


@pytest.mark.recorded("conformance")
def test_conformance_inputs_exist() -> None:
    assert len(CONFORMANCE_INPUTS) >= 40


@pytest.mark.recorded("conformance")
@pytest.mark.parametrize("path", CONFORMANCE_INPUTS, ids=lambda p: p.name.removesuffix(".input.yaml"))
def test_every_conformance_input_loads(path: Path) -> None:
    result = load_files([path])
    assert result.clusters, "every case has clusters"
    assert result.bindings, "every case has bindings"
    assert all(isinstance(c, Cluster) for c in result.clusters)
    for binding in result.bindings:
        assert binding.spec.resource.name
        assert binding.spec.replicas >= 0


@pytest.mark.recorded("bench")
def test_bench_input_loads_every_document() -> None:
    path = recorded.suite("bench") / "fleet-100x5000.input.yaml"
    result = load_files([path])
    assert len(result.clusters) == 100
    assert len(result.bindings) == 5000
    modelled = [c for c in result.clusters if c.spec.resource_models]
    assert modelled, "the first bench file carries resource models"
    summary = modelled[0].status.resource_summary  # type: ignore[union-attr]
    assert summary is not None and summary.allocatable_modelings


def test_round_trip_keeps_karmada_field_names() -> None:
    text = """
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web-deployment, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: default, uid: u1}
  replicas: 3
  replicaRequirements:
    resourceRequest: {cpu: 1500m, memory: 1Gi}
  placement:
    clusterAffinities:
    - affinityName: primary
      clusterNames: [m1]
      overflowAffinities:
      - affinityName: burst
        exclude: [m9]
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}
  clusters: [{name: m1, replicas: 3}]
status:
  schedulerObservingAffinityName: primary
  lastScheduledTime: "2026-01-01T00:00:00Z"
"""
    (binding,) = load_text(text).bindings
    assert isinstance(binding, ResourceBinding)
    request = binding.spec.replica_requirements.resource_request  # type: ignore[union-attr]
    assert request == {"cpu": Quantity.parse("1.5"), "memory": Quantity.parse("1024Mi")}
    out = binding.to_dict()
    assert out["kind"] == "ResourceBinding"
    assert out["spec"]["replicaRequirements"]["resourceRequest"] == {"cpu": "1500m", "memory": "1Gi"}
    term = out["spec"]["placement"]["clusterAffinities"][0]
    assert term["overflowAffinities"] == [{"affinityName": "burst", "exclude": ["m9"]}]
    assert "labelSelector" not in term, "absent fields stay absent"
    assert out["status"] == {
        "schedulerObservingAffinityName": "primary",
        "lastScheduledTime": "2026-01-01T00:00:00Z",
    }


def test_explicit_empty_list_is_kept_apart_from_absent() -> None:
    text = """
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: p}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
  placement: {clusterAffinities: []}
"""
    (policy,) = load_text(text).policies
    assert isinstance(policy, ClusterPropagationPolicy)
    assert policy.spec.placement is not None
    assert policy.spec.placement.cluster_affinities == []
    assert policy.spec.placement.cluster_affinity is None
    assert policy.metadata.namespace is None


def test_kind_list_and_templates() -> None:
    text = """
apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec: {replicas: 2}
- apiVersion: policy.karmada.io/v1alpha1
  kind: PropagationPolicy
  metadata: {name: p}
  spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]}
- apiVersion: v1
  kind: Node
  metadata: {name: n1}
"""
    result = load_text(text, filename="list.yaml")
    (template,) = result.templates
    assert isinstance(template, ResourceTemplate)
    assert template.namespace == "default", "namespaced objects default to the default namespace"
    assert template.spec["replicas"] == 2
    (policy,) = result.policies
    assert isinstance(policy, PropagationPolicy) and policy.metadata.namespace == "default"
    assert [n["metadata"]["name"] for n in result.nodes] == ["n1"]
    assert result.source_of(policy).describe() == "list.yaml: document 1 (items[1])"  # type: ignore[union-attr]


def test_cluster_resource_binding_and_deletion_timestamp() -> None:
    text = """
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1, deletionTimestamp: 2026-01-01T00:00:00Z}
---
apiVersion: work.karmada.io/v1alpha2
kind: ClusterResourceBinding
metadata: {name: admin-clusterrole}
spec:
  resource: {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: admin}
"""
    result = load_text(text)
    (cluster,) = result.clusters
    assert cluster.metadata.deletion_timestamp is not None
    assert cluster.to_dict()["metadata"]["deletionTimestamp"] == "2026-01-01T00:00:00Z"
    (crb,) = result.bindings
    assert isinstance(crb, ClusterResourceBinding)
    assert crb.key() == "admin-clusterrole"
    assert not crb.spec.is_workload()


BAD_INPUTS = [
    pytest.param("a: [1,\n", "in.yaml: document 1 (line 2, column 1): malformed YAML:", id="malformed yaml"),
    pytest.param(
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n---\nkey: [\n",
        "in.yaml: document 2 (line 6, column 1): malformed YAML:",
        id="malformed second document",
    ),
    pytest.param(
        "apiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w}\n",
        'in.yaml: document 1: kind: Unsupported value: "Widget"',
        id="unknown kind",
    ),
    pytest.param(
        "apiVersion: work.karmada.io/v1alpha1\nkind: ResourceBinding\n",
        'in.yaml: document 1: apiVersion: Unsupported value: "work.karmada.io/v1alpha1"',
        id="unsupported apiVersion",
    ),
    pytest.param(
        "kind: Cluster\n", "in.yaml: document 1: apiVersion: Required value", id="missing apiVersion"
    ),
    pytest.param(
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nspec: {}\n",
        "in.yaml: document 1: metadata.name: Required value",
        id="missing name",
    ),
    pytest.param(
        "apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {name: b}\n"
        "spec:\n  resource: {apiVersion: v1, kind: Pod, name: p}\n  replicas: -1\n",
        "in.yaml: document 1: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        id="negative binding replicas",
    ),
    pytest.param(
        "apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {name: b}\n"
        "spec:\n  resource: {apiVersion: v1, kind: Pod, name: p}\n  clusters: [{name: a, replicas: -3}]\n",
        "in.yaml: document 1: spec.clusters[0].replicas: Invalid value: -3: must be greater than or equal",
        id="negative target replicas",
    ),
    pytest.param(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: -2}\n",
        "in.yaml: document 1: spec.replicas: Invalid value: -2: must be greater than or equal to 0",
        id="negative deployment replicas",
    ),
    pytest.param(
        "apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {name: b}\n"
        "spec:\n  resource: {apiVersion: v1, kind: Pod, name: p}\n  replicas: '3'\n",
        'in.yaml: document 1: spec.replicas: Invalid value: "3": must be an integer',
        id="string replicas",
    ),
    pytest.param(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n"
        "  resourceSelectors: [{apiVersion: v1, kind: Pod}]\n  placement:\n    clusterAffinities:\n"
        "    - affinityName: a\n    - clusterNames: [x]\n",
        "in.yaml: document 1: spec.placement.clusterAffinities[1].affinityName: Required value",
        id="missing affinity name",
    ),
    pytest.param(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n"
        "  resourceSelectors: [{apiVersion: v1, kind: Pod}]\n  preemption: Sometimes\n",
        'in.yaml: document 1: spec.preemption: Unsupported value: "Sometimes": '
        'supported values: "Always", "Never"',
        id="enum",
    ),
    pytest.param(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n"
        "  resourceSelectors: [{apiVersion: v1, kind: Pod}]\n  placement: not-an-object\n",
        'in.yaml: document 1: spec.placement: Invalid value: "not-an-object": must be an object',
        id="wrong type",
    ),
    pytest.param(
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: c, labels: {gpu: true}}\n",
        "in.yaml: document 1: metadata.labels[gpu]: Invalid value: true: must be a string",
        id="label value not a string",
    ),
    pytest.param(
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: c}\n"
        "status: {resourceSummary: {allocatable: {cpu: lots}}}\n",
        'in.yaml: document 1: status.resourceSummary.allocatable[cpu]: Invalid value: "lots": quantities',
        id="bad quantity",
    ),
    pytest.param(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - name: a\n        resources: {limits: {memory: 1Q}}\n",
        "in.yaml: document 1: spec.template.spec.containers[0].resources.limits[memory]: Invalid value",
        id="bad container quantity",
    ),
    pytest.param("- a\n- b\n", "in.yaml: document 1: expected an object", id="not a mapping"),
    pytest.param(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n"
        "  resourceSelectors: [{apiVersion: v1, kind: Pod}]\n  placement:\n    clusterAffinities:\n"
        f"    - affinityName: {'a' * 33}\n",
        "in.yaml: document 1: spec.placement.clusterAffinities[0].affinityName: Invalid value: "
        f'"{"a" * 33}": must be at most 32 characters long',
        id="affinity name too long",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD_INPUTS)
def test_bad_input_is_one_precise_line(text: str, expected: str) -> None:
    with pytest.raises(LoadError) as caught:
        load_text(text, filename="in.yaml")
    message = str(caught.value)
    assert "\n" not in message
    # The field's line and column, where the value is one the YAML holds (not a model-level check).
    position = re.search(r" \(line (\d+), column (\d+)\)", message)
    compared = message if "(line " in expected else re.sub(r" \(line \d+, column \d+\)", "", message)
    assert compared.startswith(expected), message
    if position is not None and "malformed YAML" not in expected:
        field = expected.split(": ")[2].split(".")[-1].split("[")[0]
        assert field in text.splitlines()[int(position[1]) - 1], (message, field)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as caught:
        load_files([tmp_path / "absent.yaml"])
    assert "absent.yaml" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_more_errors_are_counted() -> None:
    text = (
        "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\n"
        "spec:\n  resourceSelectors: []\n  preemption: Sometimes\n"
    )
    with pytest.raises(LoadError) as caught:
        load_text(text, filename="in.yaml")
    assert str(caught.value).endswith("(and 1 more error)")
