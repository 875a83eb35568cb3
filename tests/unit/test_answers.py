"""Issue 29's first table, the rows a pure run answers: on the shipped examples with one mistake
laid in, ``simulate --explain`` (and so ``explain``, which prints the same) names the mistake beside
Karmada's condition message, which stays Karmada's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.api.yamlload import iter_documents
from fleetsched.cli import main
from fleetsched.scheduler.diagnosis import hints
from fleetsched.scheduler.types import ClusterAffinity, ClusterInfo, Placement

ROOT = Path(__file__).resolve().parents[2]


def documents(name: str) -> list[dict[str, Any]]:
    path = ROOT / "examples" / name
    return [d for _, d in iter_documents(path.read_text(), str(path)) if d]


def run(capsys: pytest.CaptureFixture[str], tmp_path: Path, docs: list[dict[str, Any]],
        *flags: str) -> tuple[int, str, str]:
    path = tmp_path / "input.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code = main(["simulate", str(path), *flags])
    out, err = capsys.readouterr()
    return code, out, err


def block(out: str, title: str) -> str:
    return next(b for b in out.split("\n\n") if b.startswith(title + "\n"))


def web_with(names: list[str]) -> list[dict[str, Any]]:
    """examples/policies.yaml with web's policy asking for ``names`` by clusterNames."""
    docs = documents("policies.yaml")
    for d in docs:
        if d["kind"] == "PropagationPolicy" and d["metadata"]["name"] == "web":
            d["spec"]["placement"]["clusterAffinity"] = {"clusterNames": names}
    return docs


def test_a_cluster_name_that_names_no_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = documents("fleet.yaml") + web_with(["aws-us-east1"])
    code, out, _ = run(capsys, tmp_path, docs, "--explain")
    assert code == 0
    web = block(out, "ResourceBinding shop/web-deployment").splitlines()
    # Karmada's message, unchanged ...
    [result] = [line for line in web if line.startswith("  => Scheduled=")]
    assert result.startswith("  => Scheduled=False reason=NoClusterFit: 0/10 clusters are available: ")
    assert result.endswith(", 7 cluster(s) did not match the placement cluster affinity constraint.")
    # ... and beside it, the mistake by name, with the nearest Cluster's.
    assert ('  hint: spec.placement.clusterAffinity.clusterNames[0]: "aws-us-east1" names no Cluster '
            '(did you mean "aws-us-east-1"?)') in web
    # The other bindings get no hint.
    assert out.count("hint:") == 1


def test_a_cluster_that_never_reported_status(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    fleet = documents("fleet.yaml")
    for d in fleet:
        if d["kind"] == "Cluster" and d["metadata"]["name"] == "aws-us-east-1":
            del d["status"]
    code, out, _ = run(capsys, tmp_path, fleet + web_with(["aws-us-east-1"]), "--explain")
    assert code == 0
    web = block(out, "ResourceBinding shop/web-deployment").splitlines()
    assert "      x aws-us-east-1: APIEnablement: cluster(s) did not have the API resource" in web
    assert ('  hint: Cluster "aws-us-east-1" has never reported a status (no status.apiEnablements, no '
            'status.resourceSummary): no binding can be placed there until the cluster-status controller '
            "or the member's agent writes it") in web


def test_hints_name_every_mistake_and_nothing_else() -> None:
    reported = ClusterInfo("a", api_enablements=frozenset({("apps/v1", "Deployment")}))
    silent = [ClusterInfo(f"s{i}") for i in range(7)]
    assert hints(None, [reported]) == []
    placement = Placement(cluster_affinity=ClusterAffinity(cluster_names=("a", "zz-unknown")))
    # s0 never reported, but this placement does not select it: not a candidate, not named
    [unknown] = hints(placement, [reported, *silent[:1]])
    assert unknown.message == 'spec.placement.clusterAffinity.clusterNames[1]: "zz-unknown" names no Cluster'
    assert unknown.reason == "ClusterNameUnknown"
    [named] = hints(Placement(cluster_affinity=ClusterAffinity(cluster_names=("s0",))), [reported, silent[0]])
    assert named.reason == "ClusterStatusNeverReported" and named.message.startswith('Cluster "s0" has never')
    [many] = hints(None, [reported, *silent])
    assert many.message.startswith('Clusters "s0", "s1", "s2", "s3", "s4" and 2 more have never reported')


def test_the_cluster_scoped_example_makes_the_clusterresourcebinding_explain_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = documents("fleet.yaml") + documents("cluster-policies.yaml")
    code, out, _ = run(capsys, tmp_path, docs)
    assert code == 0
    [row] = [line.split() for line in out.splitlines() if line.startswith("CRB")]
    assert row[2:5] == ["fleet-reader-clusterrole", "True", "Success"]


@pytest.mark.parametrize(("gate", "placed", "unschedulable"), [(False, 12, 0), (True, 7, 5)])
def test_the_burst_example_overcommits_without_the_gate_only(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, gate: bool, placed: int, unschedulable: int
) -> None:
    flags = ("--feature-gates", "SchedulingOvercommitProtection=true") if gate else ()
    code, out, _ = run(capsys, tmp_path, documents("fleet.yaml") + documents("burst.yaml"), *flags)
    assert code == 0
    reasons = [line.split()[4] for line in out.splitlines()[1:]]
    assert (reasons.count("Success"), reasons.count("Unschedulable")) == (placed, unschedulable)


def test_a_policy_that_selects_nothing_gets_a_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 29: a policy whose selector matches nothing printed an empty table, exit 0, and nothing
    else. Now a note names it (and only it)."""
    docs = documents("policies.yaml")
    for d in docs:
        if d["kind"] == "PropagationPolicy" and d["metadata"]["name"] == "web":
            d["spec"]["resourceSelectors"][0]["name"] = "webb"
    code, out, err = run(capsys, tmp_path, documents("fleet.yaml") + docs)
    assert code == 0 and "web-deployment" not in out
    assert err.splitlines() == [
        "fleetsched simulate: note: PropagationPolicy shop/web selects nothing: no template of the input "
        "matches its resourceSelectors, so it derives no binding"
    ]
    # alone with its (mismatched) template: the same line, and the empty table it printed before
    only = [d for d in docs if d["metadata"]["name"] == "web"]
    code, out, err = run(capsys, tmp_path, documents("fleet.yaml") + only)
    assert code == 0 and out.splitlines()[1:] == []
    assert "PropagationPolicy shop/web selects nothing" in err
    # every shipped policy selects something
    code, _, err = run(capsys, tmp_path, documents("fleet.yaml") + documents("policies.yaml")
                       + documents("cluster-policies.yaml") + documents("burst.yaml"))
    assert code == 0 and "selects nothing" not in err


def test_discovery_answers_name_the_kind_not_served() -> None:
    from fleetsched.controller.policy.selection import discovery_path, not_served_message, served_kinds

    assert discovery_path("v1") == "/api/v1" and discovery_path("apps/v1") == "/apis/apps/v1"
    document = {"resources": [{"name": "deployments", "kind": "Deployment"},
                              {"name": "deployments/scale", "kind": "Scale"},
                              {"name": "statefulsets", "kind": "StatefulSet"}]}
    assert served_kinds(document) == ["Deployment", "StatefulSet"]  # no subresources
    label = "resourceSelectors[0]: apps/v1 Deploymnet"
    assert not_served_message(label, "apps/v1", served_kinds(document), "Deploymnet") == (
        "resourceSelectors[0]: apps/v1 Deploymnet: the API server serves no kind 'Deploymnet' in apps/v1 "
        '(did you mean "Deployment"?)'
    )
    assert not_served_message("s", "example.io/v1", None, "Widget") == (
        "s: the API server serves no example.io/v1, so no such template can exist"
    )


def _dev_up() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("dev_up", ROOT / "hack" / "dev_up.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["dev_up"] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


def test_dev_up_passes_scheduler_flags(capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    dev_up = _dev_up()
    given = "--feature-gates=WorkloadAffinity=true --config='my config.yaml'"
    args = argparse.Namespace(scheduler_args=given, overcommit_protection=True)
    assert dev_up.scheduler_flags(args) == [
        "--feature-gates=WorkloadAffinity=true", "--config=my config.yaml",
        "--feature-gates=SchedulingOvercommitProtection=true",
    ]
    # refused before anything starts or is written
    assert dev_up.main(["--scheduler-args=--config='unclosed"]) == 2
    assert capsys.readouterr().err.strip() == "error: --scheduler-args: No closing quotation"
    # the walk-through's burst lines come with the gate only
    plain = dev_up.walk_through(Path("/k"), None)
    burst = dev_up.walk_through(Path("/k"), None, overcommit_protection=True)
    assert "kubectl apply -f examples/burst.yaml && kubectl get rb -n shop" in set(burst) - set(plain)
