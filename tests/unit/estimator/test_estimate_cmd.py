"""``fleetsched estimate``: the output format, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleetsched import cli

GOOD = """\
kind: EstimatorOptions
clusterName: m1
featureGates: {ResourceQuotaEstimate: true}
---
{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: "4", pods: "10"}}}
---
{apiVersion: v1, kind: ResourceQuota, metadata: {name: q, namespace: ns},
 status: {hard: {requests.cpu: "2"}, used: {requests.cpu: "0"}}}
---
{kind: MaxAvailableReplicasRequest, cluster: m1,
 replicaRequirements: {resourceRequest: {cpu: "1"}, namespace: ns}}
---
{kind: MaxAvailableComponentSetsRequest, cluster: m1, namespace: ns,
 components: [{name: a, replicas: 1, replicaRequirements: {resourceRequest: {cpu: "1"}}}]}
---
{kind: MaxAvailableReplicasRequest, cluster: m2}
---
{kind: UnschedulableReplicasRequest, cluster: m1}
"""


def run(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    path = tmp_path / "input.yaml"
    path.write_text(text)
    code = cli.main(["estimate", str(path), "-o", "json"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_answers_in_order_with_gates_from_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(tmp_path, GOOD, capsys)
    assert code == 0
    assert json.loads(out) == [
        {"maxReplicas": 2}, {"maxSets": 2},
        {"error": {"code": "Unknown", "message": "cluster name does not match, got: m2, desire: m1"}},
        {"error": {"code": "Unknown", "message": "resource is nil"}},
    ]


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("{kind: Node, metadata: {name: n}}", "no EstimatorOptions document", id="no options"),
    pytest.param("{kind: EstimatorOptions}", "EstimatorOptions.clusterName: required", id="no cluster name"),
    pytest.param("{kind: EstimatorOptions, clusterName: a, featureGates: {X: maybe}}",
                 "EstimatorOptions.featureGates.X: must be true or false", id="gate not a bool"),
    pytest.param("{kind: EstimatorOptions, clusterName: a}\n---\n{metadata: {}}", "document 2: kind: missing",
                 id="document without kind"),
    pytest.param("{kind: EstimatorOptions, clusterName: a}\n---\n"
                 "{apiVersion: v1, kind: Node, metadata: {name: n}, status: {allocatable: {cpu: lots}}}",
                 "quantities must match", id="bad node quantity"),
    pytest.param("kind: [", "", id="not YAML"),
])
def test_bad_input_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                     message: str) -> None:
    code, out, err = run(tmp_path, text, capsys)
    assert code == 2
    assert out == ""
    assert err.startswith("fleetsched estimate: ")
    assert message in err
