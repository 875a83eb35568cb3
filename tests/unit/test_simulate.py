"""``fleetsched simulate``: output formats, --explain, plugin selection and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleetsched.cli import main
from tests.support import recorded

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CASES = recorded.suite("conformance") / "cases"

FLEET = """
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1}
spec: {region: r1}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: "6"}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m2}
spec:
  taints: [{key: dedicated, value: gpu, effect: NoSchedule}]
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: "12"}}
"""

BINDINGS = """
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, namespace: default, name: web}
  replicas: 4
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
---
apiVersion: work.karmada.io/v1alpha2
kind: ClusterResourceBinding
metadata: {name: nowhere}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, name: nowhere}
  replicas: 1
  placement:
    clusterAffinity: {clusterNames: [m3]}
"""


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "bindings.yaml").write_text(BINDINGS)
    return [str(tmp_path / "fleet.yaml"), str(tmp_path / "bindings.yaml")]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_is_a_list_of_scheduled_bindings(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, *files, "-o", "json")
    assert code == 0 and err == ""
    doc = json.loads(out)
    assert doc["kind"] == "List" and doc["apiVersion"] == "v1"
    web, nowhere = doc["items"]
    assert web["spec"]["clusters"] == [{"name": "m1", "replicas": 4}]
    assert [c["reason"] for c in web["status"]["conditions"]] == ["Success"]
    assert web["metadata"]["annotations"]["policy.karmada.io/applied-placement"].startswith(
        '{"replicaScheduling"'
    )
    assert nowhere["kind"] == "ClusterResourceBinding"
    condition = nowhere["status"]["conditions"][0]
    assert (condition["status"], condition["reason"]) == ("False", "NoClusterFit")
    assert condition["message"] == (
        "0/2 clusters are available: 1 cluster(s) did not match the placement cluster affinity constraint, "
        "1 cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}."
    )


def test_yaml_output(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, *files, "-o", "yaml")
    assert code == 0
    doc = yaml.safe_load(out)
    assert [i["metadata"]["name"] for i in doc["items"]] == ["web", "nowhere"]


def test_table_has_one_row_per_binding(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, *files)
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].split() == ["KIND", "NAMESPACE", "NAME", "SCHEDULED", "REASON", "AFFINITY", "CLUSTERS"]
    assert lines[1].split() == ["RB", "default", "web", "True", "Success", "-", "m1:4"]
    assert lines[2].split() == ["CRB", "-", "nowhere", "False", "NoClusterFit", "-", "<none>"]


def test_explain_names_plugins_reasons_and_numbers(
    files: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, *files, "--explain")
    assert code == 0
    assert "x m2: TaintToleration: cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}" in out
    assert "m1: score=0 (ClusterAffinity=0, ClusterLocality=0) allocatable=6 available=6" in out
    assert "division: m1:4" in out
    assert "failed (NoClusterFit): 0/2 clusters are available" in out


def test_explain_goes_to_stderr_with_json(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, *files, "-o", "json", "--explain")
    assert code == 0
    json.loads(out)
    assert "ResourceBinding default/web" in err


def test_plugins_flag_changes_results(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, *files, "-o", "json", "--plugins", "*,-TaintToleration")
    assert code == 0
    assert json.loads(out)["items"][0]["spec"]["clusters"] == [
        {"name": "m1", "replicas": 1},
        {"name": "m2", "replicas": 3},
    ]


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        pytest.param("kind: [", (), "malformed YAML", id="malformed yaml"),
        pytest.param(BINDINGS.replace("replicas: 4", "replicas: four"), (), "spec.replicas", id="bad field"),
        pytest.param(
            BINDINGS, ("--plugins", "*,-Nope"), "unknown scheduler plugin 'Nope'", id="unknown plugin"
        ),
        pytest.param(
            BINDINGS, ("--feature-gates", "Foo=true"), "--feature-gates: unrecognized feature gate: Foo",
            id="unknown gate",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, extra: tuple[str, ...], message: str
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(content)
    code, out, err = _run(capsys, str(path), *extra)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and message in err
    assert "Traceback" not in err


def test_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, str(tmp_path / "absent.yaml"))
    assert code == 2 and "absent.yaml" in err


def test_policies_and_workloads_are_derived_into_bindings(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, str(EXAMPLES / "fleet.yaml"), str(EXAMPLES / "policies.yaml"), "-o", "json")
    assert code == 0, err
    items = {i["metadata"]["name"]: i for i in json.loads(out)["items"]}
    checkout = items["checkout-deployment"]
    assert checkout["status"]["schedulerObservingAffinityName"] == "us"  # failed over from "eu"
    assert {c["name"] for c in checkout["spec"]["clusters"]} <= {"aws-us-east-1", "gcp-us-central1"}
    batch = items["batch-workers-deployment"]
    assert sum(c["replicas"] for c in batch["spec"]["clusters"]) == 100
    assert {"onprem-dc1-a", "onprem-dc1-b"} <= {c["name"] for c in batch["spec"]["clusters"]}
    web = {c["name"]: c["replicas"] for c in items["web-deployment"]["spec"]["clusters"]}
    aws = sum(v for k, v in web.items() if k.startswith("aws"))
    gcp = sum(v for k, v in web.items() if k.startswith("gcp"))
    assert (aws + gcp, aws > gcp) == (9, True)
    config = items["app-config-configmap"]["spec"]["clusters"]
    assert "edge-tokyo" in {c["name"] for c in config}  # tolerated
    assert "azure-westeurope" not in {c["name"] for c in config}  # maintenance taint


def test_stdin_and_a_real_process(files: list[str]) -> None:
    # Through the installed entry point: no progress noise on a non-TTY stderr, clean JSON on stdout.
    text = Path(files[0]).read_text() + "\n---\n" + Path(files[1]).read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "-", "-o", "json"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert len(json.loads(proc.stdout)["items"]) == 2


@pytest.mark.recorded("conformance")
def test_a_recorded_case_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    case = CASES / "kt-affinities-second"
    code, out, _ = _run(capsys, str(case.with_suffix(".input.yaml")), "-o", "json")
    assert code == 0
    expect = yaml.safe_load(case.with_suffix(".expect.yaml").read_text())
    got = {i["metadata"]["name"]: i for i in json.loads(out)["items"]}
    for b in expect["bindings"]:
        item = got[b["name"]]
        assert {c["name"]: c.get("replicas", 0) for c in item["spec"].get("clusters", [])} == b["clusters"]
        assert item["status"].get("schedulerObservingAffinityName", "") == b["affinityName"]


ANTI = """
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: db-deployment, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, namespace: default, name: db}
  replicas: 1
  clusters: [{name: m1, replicas: 1}]
  workloadAffinityGroups: {antiAffinityGroup: app=shop}
  placement: {clusterTolerations: [{operator: Exists}]}
---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: cache-deployment, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, namespace: default, name: cache}
  replicas: 1
  workloadAffinityGroups: {antiAffinityGroup: app=shop}
  placement: {clusterTolerations: [{operator: Exists}]}
"""


def test_workload_anti_affinity_gate_uses_input_bindings_as_peers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    (tmp_path / "anti.yaml").write_text(ANTI)
    argv = [str(tmp_path / "fleet.yaml"), str(tmp_path / "anti.yaml"), "-o", "json"]
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    cache = json.loads(out)["items"][1]
    assert {c["name"] for c in cache["spec"]["clusters"]} == {"m1", "m2"}
    code, out, _ = _run(capsys, *argv, "--feature-gates", "WorkloadAffinity=true")
    assert code == 0
    cache = json.loads(out)["items"][1]
    assert {c["name"] for c in cache["spec"]["clusters"]} == {"m2"}


def test_a_binding_given_and_also_derived_is_scheduled_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fleet, policies = str(EXAMPLES / "fleet.yaml"), str(EXAMPLES / "policies.yaml")
    code, out, err = _run(capsys, fleet, policies, "-o", "json")
    assert code == 0, err
    derived = {i["metadata"]["name"]: i for i in json.loads(out)["items"]}
    # Give one of them explicitly, marked, and with fewer replicas than its template says.
    given = json.loads(json.dumps(derived["web-deployment"]))
    given["metadata"].setdefault("labels", {})["given"] = "yes"
    given["spec"]["replicas"] = 2
    given["spec"].pop("clusters", None)
    given.pop("status", None)
    path = tmp_path / "given.yaml"
    path.write_text(yaml.safe_dump(given))
    code, out, err = _run(capsys, fleet, policies, str(path), "-o", "json")
    assert code == 0
    items = json.loads(out)["items"]
    names = [i["metadata"]["name"] for i in items]
    assert sorted(names) == sorted(derived)  # nothing twice, nothing lost
    web = next(i for i in items if i["metadata"]["name"] == "web-deployment")
    assert web["metadata"]["labels"]["given"] == "yes"
    assert sum(c.get("replicas", 0) for c in web["spec"]["clusters"]) == 2
    ns = web["metadata"]["namespace"]
    assert err == (
        f"fleetsched simulate: note: ResourceBinding {ns}/web-deployment is given in the input and also "
        "derived from a policy; using the given one\n"
    )


def test_merge_bindings_keys_on_kind_namespace_and_name() -> None:
    from fleetsched.simulate import merge_bindings

    rb = {"kind": "ResourceBinding", "metadata": {"namespace": "a", "name": "x"}, "spec": {"replicas": 1}}
    other_ns = {"kind": "ResourceBinding", "metadata": {"namespace": "b", "name": "x"}}
    crb = {"kind": "ClusterResourceBinding", "metadata": {"name": "x"}}
    dup = {"kind": "ResourceBinding", "metadata": {"namespace": "a", "name": "x"}, "spec": {"replicas": 9}}
    merged, notes = merge_bindings([rb], [other_ns, crb, dup])
    assert merged == [rb, other_ns, crb]
    assert notes == [
        "ResourceBinding a/x is given in the input and also derived from a policy; using the given one"
    ]
    merged, notes = merge_bindings([crb], [dict(crb)])
    assert merged == [crb] and notes == [
        "ClusterResourceBinding x is given in the input and also derived from a policy; using the given one"
    ]


def test_a_previous_target_that_is_no_cluster_is_noted_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    binding = yaml.safe_load(BINDINGS.split("---")[0])
    binding["spec"]["clusters"] = [{"name": "m1", "replicas": 2}, {"name": "gone", "replicas": 2}]
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(binding))
    code, out, err = _run(capsys, str(tmp_path / "fleet.yaml"), str(tmp_path / "b.yaml"), "-o", "json")
    assert code == 0
    assert "ResourceBinding default/web: spec.clusters[1].name: 'gone' is not a Cluster of the input" in err
    placed = {t["name"]: t["replicas"] for t in json.loads(out)["items"][0]["spec"]["clusters"]}
    assert "gone" not in placed and sum(placed.values()) == 4


def test_nodes_of_an_unknown_member_cluster_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fleet.yaml").write_text(FLEET)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n1", "annotations": {"fleetsched.io/member-cluster": "m9"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(node))
    code, out, err = _run(capsys, str(tmp_path / "fleet.yaml"), str(tmp_path / "nodes.yaml"))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "nodes.yaml: document 1" in err and "unknown cluster 'm9'" in err
    assert "metadata.annotations[fleetsched.io/member-cluster]" in err


def test_fail_on_unschedulable_exits_3_after_printing_everything(
    files: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _run(capsys, *files)
    assert code == 0  # by default a binding that cannot be placed is a result
    code, gated, err = _run(capsys, *files, "--fail-on-unschedulable")
    assert code == 3 and gated == out
    assert err.strip() == "fleetsched simulate: 1 binding(s) not scheduled"
    code, _, _ = _run(capsys, files[0], "--fail-on-unschedulable")  # nothing to schedule
    assert code == 0
