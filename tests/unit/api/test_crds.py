"""CRDs generated from the models: in sync with crds/, structural, with Karmada's names and columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.api.crds import CRD_SPECS, crd_documents, render_crds
from fleetsched.api.defaults import apply_crd_defaults
from fleetsched.api.load import load_text

CRDS_DIR = Path(__file__).resolve().parents[3] / "crds"


def test_crds_directory_matches_the_models() -> None:
    rendered = render_crds()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in CRDS_DIR.glob("*.yaml")}
    assert sorted(on_disk) == sorted(rendered), "crds/ holds exactly the generated files"
    drifted = [name for name, text in rendered.items() if on_disk[name] != text]
    assert not drifted, f"run `.venv/bin/python hack/gen_crds.py`: {drifted} drifted from the models"


def _walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.get("properties", {}).items():
            found += _walk(value, f"{path}.{key}")
        if isinstance(node.get("items"), dict):
            found += _walk(node["items"], f"{path}[]")
        if isinstance(node.get("additionalProperties"), dict):
            found += _walk(node["additionalProperties"], f"{path}[*]")
    return found


@pytest.mark.parametrize("name", sorted(crd_documents()))
def test_schema_is_structural(name: str) -> None:
    crd = crd_documents()[name]
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]
    for path, node in _walk(schema):
        assert "$ref" not in node, path
        assert "title" not in node and "const" not in node, path
        if node.get("x-kubernetes-int-or-string"):
            assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            assert "type" not in node, path
        else:
            assert "anyOf" not in node, path
            assert "type" in node, f"{path} has no type"
            assert node["type"] != "null", path
        assert node.get("default", "x") is not None, path


def _schema(kind: str) -> dict[str, Any]:
    for doc in crd_documents().values():
        if doc["spec"]["names"]["kind"] == kind:
            return doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]
    raise KeyError(kind)


def _at(schema: dict[str, Any], dotted: str) -> dict[str, Any]:
    node = schema
    for part in dotted.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


def test_policy_schema_rules_from_webhook_md_section_7() -> None:
    spec = _at(_schema("PropagationPolicy"), "spec")
    assert spec["required"] == ["resourceSelectors"]
    assert spec["properties"]["resourceSelectors"]["minItems"] == 1
    assert _at(spec, "resourceSelectors.[]")["required"] == ["apiVersion", "kind"]
    assert _at(spec, "preemption") == {"type": "string", "enum": ["Always", "Never"], "default": "Never"}
    assert _at(spec, "conflictResolution")["enum"] == ["Abort", "Overwrite"]
    assert _at(spec, "conflictResolution")["default"] == "Abort"
    assert _at(spec, "activationPreference")["enum"] == ["Lazy"]
    assert _at(spec, "priority") == {"type": "integer", "format": "int32", "default": 0}
    assert _at(spec, "schedulerName")["default"] == "default-scheduler"
    assert _at(spec, "schedulePriority.priorityClassSource")["enum"] == ["KubePriorityClass"]
    assert _at(spec, "schedulePriority")["required"] == ["priorityClassSource", "priorityClassName"]
    term = _at(spec, "placement.clusterAffinities.[]")
    assert term["required"] == ["affinityName"]
    assert (
        term["properties"]["affinityName"]["minLength"],
        term["properties"]["affinityName"]["maxLength"],
    ) == (1, 32)
    assert _at(term, "overflowAffinities.[].affinityName")["maxLength"] == 32
    assert _at(spec, "placement.clusterAffinity.fieldSelector.matchExpressions.[]")["required"] == [
        "key",
        "operator",
    ]
    assert _at(spec, "placement.spreadConstraints.[].spreadByField")["enum"] == [
        "cluster",
        "region",
        "zone",
        "provider",
    ]
    strategy = _at(spec, "placement.replicaScheduling")
    assert strategy["properties"]["replicaSchedulingType"]["default"] == "Divided"
    assert strategy["properties"]["replicaDivisionPreference"]["enum"] == ["Aggregated", "Weighted"]
    assert _at(strategy, "weightPreference.dynamicWeight")["enum"] == ["AvailableReplicas"]
    weight = _at(strategy, "weightPreference.staticWeightList.[]")
    assert weight["required"] == ["targetCluster", "weight"]
    assert weight["properties"]["weight"] == {"type": "integer", "format": "int64", "minimum": 1}
    application = _at(spec, "failover.application")
    assert application["required"] == ["decisionConditions"]
    assert _at(application, "purgeMode")["enum"] == ["Directly", "Gracefully", "Never"]
    assert _at(application, "decisionConditions.tolerationSeconds")["default"] == 300
    assert _at(spec, "failover.cluster.purgeMode")["enum"] == ["Directly", "Gracefully"]
    assert _at(spec, "failover.cluster.statePreservation")["required"] == ["rules"]
    assert _at(spec, "placement.workloadAffinity.affinity")["required"] == ["groupByLabelKey"]


def test_binding_schema_rules() -> None:
    schema = _schema("ResourceBinding")
    assert schema["required"] == ["spec"]
    spec = _at(schema, "spec")
    assert spec["required"] == ["resource"]
    assert _at(spec, "resource")["required"] == ["apiVersion", "kind", "name"]
    assert "default" not in _at(spec, "replicas"), "Karmada's CRD has no default for replicas"
    request = _at(spec, "replicaRequirements.resourceRequest")["additionalProperties"]
    assert request["x-kubernetes-int-or-string"] is True
    task = _at(spec, "gracefulEvictionTasks.[]")
    assert set(task["required"]) == {"fromCluster", "reason", "producer"}
    assert task["properties"]["reason"]["pattern"] == r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    assert task["properties"]["message"]["maxLength"] == 1024
    assert _at(spec, "components.[].name")["maxLength"] == 32
    aggregated = _at(schema, "status.aggregatedStatus.[]")
    assert aggregated["properties"]["status"]["x-kubernetes-preserve-unknown-fields"] is True
    assert aggregated["properties"]["health"]["enum"] == ["Healthy", "Unhealthy", "Unknown"]
    condition = _at(schema, "status.conditions.[]")
    assert condition["required"] == ["type", "status", "reason", "message", "lastTransitionTime"]
    assert "schedulerObservingAffinityName" in _at(schema, "status")["properties"]


def test_crd_envelopes_match_api_md_section_1() -> None:
    by_kind = {doc["spec"]["names"]["kind"]: doc for doc in crd_documents().values()}
    expected = {
        "Cluster": ("clusters.cluster.karmada.io", "Cluster", [], True, ["VERSION", "MODE", "READY", "AGE"]),
        "PropagationPolicy": (
            "propagationpolicies.policy.karmada.io",
            "Namespaced",
            ["pp"],
            False,
            ["CONFLICT-RESOLUTION", "PRIORITY", "AGE"],
        ),
        "ClusterPropagationPolicy": (
            "clusterpropagationpolicies.policy.karmada.io",
            "Cluster",
            ["cpp"],
            False,
            ["CONFLICT-RESOLUTION", "PRIORITY", "AGE"],
        ),
        "ResourceBinding": (
            "resourcebindings.work.karmada.io",
            "Namespaced",
            ["rb"],
            True,
            ["SCHEDULED", "FULLYAPPLIED", "AGE"],
        ),
        "ClusterResourceBinding": (
            "clusterresourcebindings.work.karmada.io",
            "Cluster",
            ["crb"],
            True,
            ["SCHEDULED", "FULLYAPPLIED", "AGE"],
        ),
        # as Karmada's: no printer columns, no short name
        "WorkloadRebalancer": ("workloadrebalancers.apps.karmada.io", "Cluster", [], True, []),
    }
    assert set(by_kind) == set(expected)
    for kind, (name, scope, short, status, columns) in expected.items():
        doc = by_kind[kind]
        assert doc["metadata"]["name"] == name
        assert doc["spec"]["scope"] == scope
        assert doc["spec"]["names"].get("shortNames", []) == short
        (version,) = doc["spec"]["versions"]
        assert version["served"] and version["storage"]
        assert ("status" in version.get("subresources", {})) is status
        shown = [c["name"] for c in version.get("additionalPrinterColumns", []) if not c.get("priority")]
        assert shown == columns
    assert by_kind["ResourceBinding"]["spec"]["names"]["categories"] == ["karmada-io"]
    assert len(CRD_SPECS) == 6


def test_rendered_yaml_has_no_anchors() -> None:
    for text in render_crds().values():
        assert "&id" not in text and "*id" not in text
        assert yaml.safe_load(text)["kind"] == "CustomResourceDefinition"


def test_crd_defaults_fill_what_the_api_server_would() -> None:
    raw = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "p"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"replicaScheduling": {"replicaDivisionPreference": "Weighted"}},
            "failover": {"application": {"decisionConditions": {}}},
        },
    }
    defaulted = apply_crd_defaults(raw)
    spec = defaulted["spec"]
    assert spec["placement"]["replicaScheduling"]["replicaSchedulingType"] == "Divided"
    assert (spec["priority"], spec["preemption"], spec["conflictResolution"]) == (0, "Never", "Abort")
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["failover"]["application"]["decisionConditions"]["tolerationSeconds"] == 300
    assert spec["failover"]["application"]["purgeMode"] == "Gracefully"
    assert "cluster" not in spec["failover"], "defaults never create parent objects"
    assert "replicaScheduling" in raw["spec"]["placement"] and "priority" not in raw["spec"], (
        "input untouched"
    )


def test_loader_can_apply_crd_defaults() -> None:
    text = """
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: b, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: web}
  placement: {replicaScheduling: {}}
"""
    (plain,) = load_text(text).bindings
    assert plain.spec.placement.replica_scheduling.replica_scheduling_type is None  # type: ignore[union-attr]
    (defaulted,) = load_text(text, crd_defaults=True).bindings
    assert defaulted.spec.placement.replica_scheduling.replica_scheduling_type == "Divided"  # type: ignore[union-attr]
    assert defaulted.spec.conflict_resolution == "Abort"
    assert defaulted.spec.replicas == 0
