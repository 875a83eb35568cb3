"""``fleetsched estimate --validate``: a field nobody reads is refused as kubectl refuses it, with where
it is, for the core kinds (Kubernetes' declared fields) and for the estimator's own documents."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from fleetsched import cli
from fleetsched.api import corefields, yamlload
from fleetsched.api.strict import OBJECT_META_FIELDS, render, unknown_fields, unknown_in_table
from fleetsched.estimator.estimate_cmd import OPTIONS_FIELDS, REQUEST_FIELDS, check_fields
from tests.support.recorded import ROOT, suite

INPUT = """\
kind: EstimatorOptions
clusterName: m1
featureGates: {ResourceQuotaEstimate: false}
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {any.example.com/key: v}
spec:
  taints:
  - {key: dedicated, value: gpu, effect: NoSchedule}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110", example.com/anything: "1"}
  conditions:
  - {type: Ready, status: "True"}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status:
  allocatable: {cpu: "4", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  nodeName: n2
  containers:
  - name: c
    resources:
      requests: {cpu: "2"}
status:
  phase: Running
---
kind: MaxAvailableReplicasRequest
cluster: m1
replicaRequirements:
  resourceRequest: {cpu: "1"}
  nodeClaim:
    tolerations: [{key: dedicated, operator: Exists}]
  namespace: ns
"""


def run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    code = cli.main(["estimate", str(path), *flags])
    out = capsys.readouterr()
    return code, out.out, out.err


def line_of(text: str, needle: str) -> int:
    return next(i for i, row in enumerate(text.splitlines(), 1) if needle in row)


def test_the_input_as_written_is_answered(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(tmp_path, INPUT, capsys)
    assert (code, err) == (0, "")
    assert json.loads(out) == [{"maxReplicas": 10}]  # n1's 8 CPUs (tolerated) + n2's 2 left


@pytest.mark.parametrize(("old", "new", "field"), [
    ("  taints:", "  taint:", "spec.taint"),
    ("value: gpu, effect: NoSchedule}", "value: gpu, efect: NoSchedule}", "spec.taints[0].efect"),
    ("{type: Ready, status: \"True\"}", "{type: Ready, stauts: \"True\"}", "status.conditions[0].stauts"),
    ("status:\n  allocatable: {cpu: \"4\"", "satus:\n  allocatable: {cpu: \"4\"", "satus"),
    ("metadata: {name: p, namespace: ns}", "metadata: {name: p, namespce: ns}", "metadata.namespce"),
    ("      requests: {cpu: \"2\"}", "      request: {cpu: \"2\"}", "spec.containers[0].resources.request"),
    ("  nodeName: n2", "  nodename: n2", "spec.nodename"),
    ("  phase: Running", "  phse: Running", "status.phse"),
    ("clusterName: m1", "clustername: m1", "clustername"),
    ("    tolerations:", "    toleration:", "replicaRequirements.nodeClaim.toleration"),
    ("operator: Exists}", "operater: Exists}", "replicaRequirements.nodeClaim.tolerations[0].operater"),
    ("  namespace: ns\n", "  namepsace: ns\n", "replicaRequirements.namepsace"),
    ("cluster: m1\n", "clustr: m1\n", "clustr"),
])
def test_a_misspelled_field_is_refused_with_kubectls_words_and_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str
) -> None:
    assert INPUT.count(old) == 1, old
    text = INPUT.replace(old, new)
    code, out, err = run(tmp_path, text, capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1, err
    document = text[: text.index(new)].count("\n---\n") + 1
    line = line_of(text, new.splitlines()[0])
    key = re.split(r"[.\]]", field)[-1]
    column = text.splitlines()[line - 1].index(key + ":") + 1  # the key's own column
    assert err == (f"fleetsched estimate: {tmp_path / 'in.yaml'}: document {document} (line {line}, column "
                   f'{column}): strict decoding error: unknown field "{field}"\n'), err


def test_every_unknown_field_of_a_document_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = INPUT.replace("  taints:", "  taint:").replace('allocatable: {cpu: "8"', 'alocatable: {cpu: "8"')
    code, _, err = run(tmp_path, text, capsys)
    assert code == 2
    assert err.rstrip().endswith('unknown field "spec.taint", unknown field "status.alocatable"'), err


def test_warn_goes_on_as_if_the_field_were_absent_and_ignore_is_silent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = INPUT.replace("  taints:", "  taint:")  # the taint is gone: n1 takes untolerating work too
    code, out, err = run(tmp_path, text, capsys, "--validate=warn")
    assert code == 0 and json.loads(out) == [{"maxReplicas": 10}]
    assert err == (f"warning: {tmp_path / 'in.yaml'}: document 2: strict decoding error: unknown field "
                   '"spec.taint" (ignored: --validate=warn)\n'), err
    assert run(tmp_path, text, capsys, "--validate=false")[::2] == (0, "")
    assert run(tmp_path, text, capsys, "--validate=ignore")[::2] == (0, "")


def test_a_bad_validate_value_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        run(tmp_path, INPUT, capsys, "--validate=yes")
    assert stopped.value.code == 2
    assert "must be one of strict, warn, ignore" in capsys.readouterr().err


def test_maps_free_form_values_and_unread_kinds_are_not_checked() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "annotations": {"a": "b"}},
            "status": {"allocatable": {"vendor.example/x": "1"}, "nodeInfo": {"anything": "goes"},
                       "images": [{"names": ["a"], "whatever": 1}]}}
    assert unknown_fields(node, None) == []
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "env": [{"any": 1}], "securityContext": {"x": 1}}],
                    "volumes": [{"whatever": {}}], "nodeSelector": {"k": "v"}, "overhead": {"cpu": "1"},
                    "affinity": {"podAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [{"x": 1}]}}}}
    assert unknown_fields(pod, None) == []
    request = {"kind": "MaxAvailableReplicasRequest", "cluster": "m",
               "replicaRequirements": {"resourceRequest": {"example.com/any": "1"},
                                       "nodeClaim": {"nodeSelector": {"any": "label"}}}}
    assert unknown_in_table(request, REQUEST_FIELDS["MaxAvailableReplicasRequest"]) == []
    options = {"kind": "EstimatorOptions", "clusterName": "m", "featureGates": {"AnyGate": True}}
    assert unknown_in_table(options, OPTIONS_FIELDS) == []
    # a kind the estimator does not read is not looked at; apps/v1 workloads at their top level
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "data": {}, "spec": {}}
    check_fields(config_map, yamlload.Source("f", 1), "", "strict")
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                  "spec": {"anything": 1}, "sepc": {}}
    with pytest.raises(yamlload.LoadError, match=r'unknown field "sepc"$'):
        check_fields(deployment, yamlload.Source("f", 1), "", "strict")


def test_a_component_takes_no_namespace_in_its_requirements() -> None:
    # Karmada's ComponentReplicaRequirements has none (the set's namespace is the request's)
    request = {"kind": "MaxAvailableComponentSetsRequest", "cluster": "m", "namespace": "ns",
               "components": [{"name": "a", "replicas": 1,
                               "replicaRequirements": {"resourceRequest": {"cpu": "1"}, "namespace": "ns"}}]}
    locs = unknown_in_table(request, REQUEST_FIELDS["MaxAvailableComponentSetsRequest"])
    assert [render(loc) for loc in locs] == ["components[0].replicaRequirements.namespace"]


# The tables against the Kubernetes client's models (generated from the API's OpenAPI): every field
# the API declares at a checked place is known there, so no valid object is refused.
_REQUIRED = ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
_PREFERRED = ("spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", "[]")
_TERMS = (*_REQUIRED, "nodeSelectorTerms", "[]")
_MODELS: dict[tuple[str, tuple[str, ...]], str] = {
    ("Node", ()): "V1Node", ("Node", ("spec",)): "V1NodeSpec", ("Node", ("spec", "taints", "[]")): "V1Taint",
    ("Node", ("status",)): "V1NodeStatus", ("Node", ("status", "conditions", "[]")): "V1NodeCondition",
    ("Pod", ()): "V1Pod", ("Pod", ("spec",)): "V1PodSpec",
    ("Pod", ("spec", "resources")): "V1ResourceRequirements",
    ("Pod", ("spec", "tolerations", "[]")): "V1Toleration", ("Pod", ("spec", "affinity")): "V1Affinity",
    ("Pod", ("spec", "affinity", "nodeAffinity")): "V1NodeAffinity",
    ("Pod", ("spec", "affinity", "podAffinity")): "V1PodAffinity",
    ("Pod", ("spec", "affinity", "podAntiAffinity")): "V1PodAntiAffinity",
    ("Pod", _REQUIRED): "V1NodeSelector", ("Pod", _TERMS): "V1NodeSelectorTerm",
    ("Pod", (*_TERMS, "matchExpressions", "[]")): "V1NodeSelectorRequirement",
    ("Pod", (*_TERMS, "matchFields", "[]")): "V1NodeSelectorRequirement",
    ("Pod", _PREFERRED): "V1PreferredSchedulingTerm",
    ("Pod", (*_PREFERRED, "preference")): "V1NodeSelectorTerm",
    ("Pod", (*_PREFERRED, "preference", "matchExpressions", "[]")): "V1NodeSelectorRequirement",
    ("Pod", (*_PREFERRED, "preference", "matchFields", "[]")): "V1NodeSelectorRequirement",
    ("Pod", ("status",)): "V1PodStatus", ("Pod", ("status", "conditions", "[]")): "V1PodCondition",
    ("ResourceQuota", ()): "V1ResourceQuota", ("ResourceQuota", ("spec",)): "V1ResourceQuotaSpec",
    ("ResourceQuota", ("status",)): "V1ResourceQuotaStatus",
    ("ResourceQuota", ("spec", "scopeSelector")): "V1ScopeSelector",
    ("ResourceQuota", ("spec", "scopeSelector", "matchExpressions", "[]")):
        "V1ScopedResourceSelectorRequirement",
    **{(kind, ("metadata", "ownerReferences", "[]")): "V1OwnerReference"
       for kind in ("Node", "Pod", "ResourceQuota")},
    **{("Pod", ("spec", field, "[]")): model for field, model in (
        ("containers", "V1Container"), ("initContainers", "V1Container"),
        ("ephemeralContainers", "V1EphemeralContainer"))},
    **{("Pod", ("spec", field, "[]", "resources")): "V1ResourceRequirements"
       for field in ("containers", "initContainers", "ephemeralContainers")},
}


def test_every_checked_place_is_compared_with_the_api() -> None:
    listed = {(kind, path) for (_, kind), table in corefields.CORE_FIELDS.items() for path in table}
    assert listed == set(_MODELS)


@pytest.mark.parametrize(("kind", "path"), [*_MODELS, ("Pod", ("metadata",))])
def test_every_field_the_api_declares_is_known(kind: str, path: tuple[str, ...]) -> None:
    from kubernetes.client import models

    model = _MODELS.get((kind, path), "V1ObjectMeta")
    declared = set(getattr(models, model).attribute_map.values())
    known = OBJECT_META_FIELDS if path == ("metadata",) else corefields.CORE_FIELDS["v1", kind][path]
    assert declared <= known, f"{kind} {'.'.join(path) or '(top level)'}: missing {sorted(declared - known)}"


def _documents(paths: list[Path]) -> Iterator[tuple[Path, int, str, Mapping[str, Any]]]:
    for path in paths:
        text = path.read_text()
        for number, doc in yamlload.iter_documents(text, str(path)):
            if isinstance(doc, Mapping):
                yield path, number, text, doc


def _unknown(paths: list[Path]) -> tuple[int, list[str]]:
    found: list[str] = []
    checked = 0
    for path, number, text, doc in _documents(paths):
        checked += 1
        check_fields(doc, yamlload.Source(str(path), number), text, "warn", found.append)
    return checked, found


def test_no_shipped_example_has_an_unknown_field() -> None:
    paths = sorted(p for p in (ROOT / "examples").rglob("*.yaml") if "config" not in p.name)
    checked, found = _unknown(paths)
    nodes = sum(1 for _, _, _, d in _documents(paths) if d.get("kind") in ("Node", "Pod"))
    assert checked > 50 and nodes > 0 and found == [], found


@pytest.mark.recorded("estimator-conformance")
def test_no_recorded_case_has_an_unknown_field() -> None:
    paths = sorted((suite("estimator-conformance") / "cases").glob("*.input.yaml"))
    checked, found = _unknown(paths)
    assert len(paths) >= 40 and checked > 1000 and found == [], found


def test_the_position_is_the_fields_own() -> None:
    text = INPUT.replace("  phase: Running", "  phse: Running")
    line = line_of(text, "phse")
    doc = [d for _, d in yamlload.iter_documents(text, "x")][3]
    with pytest.raises(yamlload.LoadError) as caught:
        check_fields(doc, yamlload.Source("x", 4), text, "strict")
    assert re.match(rf"^x: document 4 \(line {line}, column 3\): ", str(caught.value)), caught.value
