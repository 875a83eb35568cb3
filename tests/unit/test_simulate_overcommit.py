"""``fleetsched simulate --feature-gates SchedulingOvercommitProtection=true``: the bindings in queue
order, each against the capacity assumed for those before it (issue 20, item 4)."""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
GATE = "SchedulingOvercommitProtection"
ON = ("--feature-gates", f"{GATE}=true")
NAMED = (
    "; capacity assumed for in-flight bindings (SchedulingOvercommitProtection) holds cpu 1000 cores, "
    "pods 1000 on 10 cluster(s)"
)


def cluster(name: str, cpu: int) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {},
        "status": {
            "apiEnablements": [
                {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
                {"groupVersion": "v1", "resources": [{"name": "configmaps", "kind": "ConfigMap"}]},
            ],
            "resourceSummary": {"allocatable": {"cpu": str(cpu), "pods": "1000"}},
        },
    }


def binding(
    name: str, replicas: int, *, kind: str = "ResourceBinding", priority: int | None = None
) -> dict[str, Any]:
    """``replicas`` x 1 cpu, Divided by available replicas over every cluster (the issue's burst)."""
    namespaced = kind == "ResourceBinding"
    resource: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}
    metadata: dict[str, Any] = {"name": name}
    if namespaced:
        resource["namespace"] = metadata["namespace"] = "default"
    spec: dict[str, Any] = {
        "resource": resource,
        "replicas": replicas,
        "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
        "placement": {
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            }
        },
    }
    if priority is not None:
        spec["schedulePriority"] = {"priority": priority}
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": kind, "metadata": metadata, "spec": spec}


def configmap_binding(name: str) -> dict[str, Any]:
    """A non-workload: no replicas, no requirements, Duplicated onto every cluster."""
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": name},
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
        },
    }


def write(tmp_path: Path, docs: list[dict[str, Any]], name: str = "input.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


@pytest.fixture
def burst(tmp_path: Path) -> str:
    """10 clusters x 100 cpu; 150 bindings x 10 replicas x 1 cpu: 1,500 cpu asked of 1,000."""
    clusters = [cluster(f"m{i}", 100) for i in range(10)]
    return write(tmp_path, [*clusters, *(binding(f"b{j:03d}", 10) for j in range(150))])


def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def items(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    code, out, err = simulate(capsys, *argv, "-o", "json")
    assert code == 0, err
    return list(json.loads(out)["items"])


def condition(item: dict[str, Any]) -> dict[str, Any]:
    [scheduled] = item["status"]["conditions"]
    return dict(scheduled)


def cpu_per_cluster(scheduled: list[dict[str, Any]]) -> dict[str, int]:
    totals: collections.Counter[str] = collections.Counter()
    for item in scheduled:
        for target in item["spec"].get("clusters") or []:
            totals[target["name"]] += target["replicas"]  # 1 cpu per replica
    return dict(totals)


def test_the_burst_fits_the_capacity_with_the_gate(burst: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = items(capsys, burst, *ON)
    ok = [i for i in result if condition(i)["status"] == "True"]
    failed = [i for i in result if condition(i)["status"] == "False"]
    assert (len(ok), len(failed)) == (100, 50)
    assert cpu_per_cluster(result) == {f"m{i}": 100 for i in range(10)}  # exactly full, never over
    # Input order is queue order here: the first 100 took the capacity, the last 50 found none.
    assert [i["metadata"]["name"] for i in failed] == [f"b{j:03d}" for j in range(100, 150)]
    for item in failed:
        assert condition(item)["reason"] == "Unschedulable"
        assert condition(item)["message"].endswith(NAMED)
        assert "clusters" not in item["spec"]
    assert all(GATE not in condition(i)["message"] for i in ok)


def test_without_the_gate_the_burst_overcommits(burst: str, capsys: pytest.CaptureFixture[str]) -> None:
    result = items(capsys, burst)
    assert all(condition(i)["status"] == "True" for i in result) and len(result) == 150
    assert cpu_per_cluster(result) == {f"m{i}": 150 for i in range(10)}  # 1,500 cpu on 1,000
    _, out, _ = simulate(capsys, burst, "--explain")
    assert "assumed:" not in out and "queue position" not in out


def test_the_table_counts_the_same(burst: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = simulate(capsys, burst, *ON)
    reasons = collections.Counter(line.split()[4] for line in out.splitlines()[1:])
    assert code == 0 and reasons == {"Success": 100, "Unschedulable": 50}


def test_explain_shows_the_capacity_deducted_per_cluster(
    burst: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = simulate(capsys, burst, *ON, "--explain")
    assert code == 0
    blocks = {block.split("\n", 1)[0]: block for block in out.split("\n\n")}
    first = blocks["ResourceBinding default/b000"]
    assert "queue position: 1 of 150 (SchedulingOvercommitProtection: 0 bindings before it hold capacity)" \
        in first
    assert "assumed:" not in first
    fourth = blocks["ResourceBinding default/b003"].splitlines()
    assert "  queue position: 4 of 150 (SchedulingOvercommitProtection: 3 bindings before it hold capacity)" \
        in fourth
    # Each binding before it put 1 replica (1 cpu) on every cluster: 97 of 100 left.
    at = fourth.index("      m0: score=0 (ClusterAffinity=0, ClusterLocality=0) allocatable=97 available=97")
    assert fourth[at + 1] == "        assumed: cpu 3 cores, pods 3 (3 bindings)"
    assert sum(line.startswith("        assumed: cpu 3 cores, pods 3 (3 bindings)") for line in fourth) == 10
    second = blocks["ResourceBinding default/b001"]
    assert "        assumed: cpu 1 core, pods 1 (1 binding)" in second.splitlines()
    last = blocks["ResourceBinding default/b149"]
    assert "        assumed: cpu 100 cores, pods 100 (100 bindings)" in last.splitlines()
    assert "available=0" in last and last.rstrip().endswith("=> spec.clusters: <none>")
    assert NAMED in last


def test_the_shortfall_names_human_units_on_the_clusters_the_binding_could_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's burst: 16 clusters, a binding whose affinity allows 10 of them. Its message counts
    what the bindings before it hold on those 10 only, in cores and binary units."""
    clusters = [cluster(f"m{i:02d}", 100) for i in range(16)]
    for c in clusters:
        c["status"]["resourceSummary"]["allocatable"]["memory"] = "16Gi"
    allowed = [f"m{i:02d}" for i in range(10)]

    def limited(name: str, replicas: int) -> dict[str, Any]:
        b = binding(name, replicas)
        b["spec"]["replicaRequirements"]["resourceRequest"] = {"cpu": "250m", "memory": "1536Mi"}
        b["spec"]["placement"]["clusterAffinity"] = {"clusterNames": allowed}
        return b

    everywhere = binding("everywhere", 160)  # 10 cpu and 10 GiB on each of the 16 clusters
    everywhere["spec"]["replicaRequirements"]["resourceRequest"] = {"cpu": "1", "memory": "1Gi"}
    # 6 GiB left on each allowed cluster: room for 40 replicas of 1.5 GiB; b0 takes 39, b1 asks 2.
    docs = [*clusters, everywhere, limited("b0", 39), limited("b1", 2)]
    result = {i["metadata"]["name"]: i for i in items(capsys, write(tmp_path, docs), *ON)}
    assert condition(result["b0"])["status"] == "True"
    assert condition(result["b1"])["reason"] == "Unschedulable"
    message = condition(result["b1"])["message"]
    # On the 10 allowed clusters: everywhere's 100 x (1 cpu, 1 GiB), b0's 39 x (250m, 1.5 GiB); not
    # what everywhere holds on the 6 others (169.75 cores, 218.5 GiB, 199 pods on 16 clusters).
    assert message.endswith(
        "holds cpu 109.75 cores, memory 158.5 GiB, pods 139 on 10 cluster(s)"
    ), message


def test_human_units() -> None:
    from fractions import Fraction

    from fleetsched.scheduler.assume import human_amount

    assert human_amount("cpu", Fraction(1305250, 1000)) == "1305.25 cores"
    assert human_amount("cpu", Fraction(1)) == "1 core"
    assert human_amount("memory", Fraction(1746441076736)) == "1.59 TiB"
    assert human_amount("memory", Fraction(512)) == "512 B"
    assert human_amount("ephemeral-storage", Fraction(3 << 29)) == "1.5 GiB"
    assert human_amount("pods", Fraction(1155)) == "1155"
    assert human_amount("nvidia.com/gpu", Fraction(3, 2)) == "1500m"


def test_non_workloads_and_cluster_bindings_are_never_assumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [
        cluster("m0", 10),
        cluster("m1", 10),
        configmap_binding("settings"),
        binding("everywhere", 10, kind="ClusterResourceBinding"),  # Karmada tracks ResourceBindings only
        binding("web", 20),
    ]
    path = write(tmp_path, docs)
    result = {i["metadata"]["name"]: i for i in items(capsys, path, *ON)}
    assert [condition(i)["status"] for i in result.values()] == ["True", "True", "True"]
    assert result["settings"]["spec"]["clusters"] == [{"name": "m0"}, {"name": "m1"}]
    # The whole 20 cpu are still free for web: neither binding before it holds any.
    assert result["web"]["spec"]["clusters"] == [
        {"name": "m0", "replicas": 10},
        {"name": "m1", "replicas": 10},
    ]
    _, out, _ = simulate(capsys, path, *ON, "--explain")
    assert "assumed:" not in out
    assert "queue position: 3 of 3 (SchedulingOvercommitProtection: 0 bindings before it hold capacity)" \
        in out


def test_queue_order_is_priority_then_input_order_and_the_output_keeps_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = [
        cluster("m0", 10),
        cluster("m1", 10),
        binding("first", 10),
        binding("second", 10),
        binding("urgent", 10, priority=5),
    ]
    path = write(tmp_path, docs)
    result = items(capsys, path, *ON)
    assert [i["metadata"]["name"] for i in result] == ["first", "second", "urgent"]
    assert [condition(i)["status"] for i in result] == ["True", "False", "True"]
    _, out, _ = simulate(capsys, path, *ON, "--explain")
    assert "ResourceBinding default/urgent\n  replicas: 10   strategy: DynamicWeight   mode: Steady\n" \
        "  queue position: 1 of 3" in out
    assert "ResourceBinding default/second\n  replicas: 10   strategy: DynamicWeight   mode: Steady\n" \
        "  queue position: 3 of 3" in out
    # Without the gate every binding sees the whole fleet: all three fit, in input order.
    assert [condition(i)["status"] for i in items(capsys, path)] == ["True", "True", "True"]


def test_jobs_are_ignored_for_scheduling_with_a_note(burst: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, serial, _ = simulate(capsys, burst, *ON, "-o", "json")
    code, parallel, err = simulate(capsys, burst, *ON, "-o", "json", "--jobs", "3")
    assert code == 0
    strip = [{k: v for k, v in i.items() if k != "status"} for i in json.loads(parallel)["items"]]
    assert strip == [{k: v for k, v in i.items() if k != "status"} for i in json.loads(serial)["items"]]
    assert err == (
        f"fleetsched simulate: note: --jobs ignored for scheduling: with {GATE} each binding is "
        "scheduled against the assumptions of those before it, one at a time\n"
    )
    _, _, quiet = simulate(capsys, burst, *ON, "-o", "json", "--jobs", "1")
    assert quiet == ""


def test_the_gate_in_the_config_file_does_the_same(
    burst: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.fleetsched.io/v1alpha1\nkind: SchedulerConfiguration\n"
        f"featureGates: {{{GATE}: true}}\n"
    )
    result = items(capsys, burst, "--config", str(config))
    assert collections.Counter(condition(i)["status"] for i in result) == {"True": 100, "False": 50}
    assert cpu_per_cluster(result) == {f"m{i}": 100 for i in range(10)}


def test_the_readme_example_is_what_explain_prints(burst: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "simulate.md").read_text()
    start = text.index("## A burst without overcommit")
    shown = text[start:].split("```\n", 2)[1]
    _, out, _ = simulate(capsys, burst, *ON, "--explain")
    [block] = [b for b in out.split("\n\n") if b.startswith("ResourceBinding default/b003\n")]
    assert shown == "\n".join(block.splitlines()[: len(shown.splitlines())]) + "\n"
    assert shown.count("\n") == 11
