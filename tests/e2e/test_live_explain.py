"""``fleetsched explain`` / ``what-if`` (and ``kubectl fleetsched …``) against a real kube-apiserver:
explain tells the story ``simulate --explain`` tells on the same objects; a what-if that moves a
binding prints it before and after and exits 0; one that leaves a binding nowhere to go exits 3;
``simulate -o yaml`` of bindings derived from files is accepted by ``kubectl apply``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.controlplane import APIServer
from tests.support.karmada import apply_with_status, create_objects, divided_binding, ready_cluster

REPO = Path(__file__).resolve().parents[2]
NAMESPACE = "live"

POLICY: dict[str, Any] = {
    "apiVersion": "policy.karmada.io/v1alpha1",
    "kind": "PropagationPolicy",
    "metadata": {"name": "web", "namespace": NAMESPACE},
    "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
        "placement": {
            "clusterAffinity": {"clusterNames": ["m1", "m2"]},
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            },
        },
    },
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": NAMESPACE},
    "spec": {
        "replicas": 4,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "example.com/web:1"}]},
        },
    },
}


def env(server: APIServer, **extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO) + os.pathsep + out.get("PYTHONPATH", "")
    out["KUBECONFIG"] = str(server.kubeconfig)
    out.update(extra)
    return out


def fleetsched(server: APIServer, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fleetsched", *args], capture_output=True, text=True, timeout=180,
        env=env(server), input=stdin, cwd=REPO,
    )


def same_story(server: APIServer, tmp_path: Path, name: str) -> subprocess.CompletedProcess[str]:
    """``explain rb/NAMESPACE/name``, checked to print what ``simulate --explain`` prints on the same
    objects as kubectl reads them (the Clusters and that binding)."""
    live = fleetsched(server, "explain", f"rb/{NAMESPACE}/{name}")
    assert live.returncode == 0, live.stderr
    state = tmp_path / "state.yaml"
    state.write_text(server.kubectl("get", "clusters.cluster.karmada.io", "-o", "yaml") + "\n---\n"
                     + server.kubectl("get", "rb", "-n", NAMESPACE, name, "-o", "yaml"))
    offline = fleetsched(server, "simulate", str(state), "--explain")
    assert offline.returncode == 0, offline.stderr
    assert live.stdout == offline.stdout
    return live


@pytest.fixture(scope="module")
def server(isolated_apiserver: APIServer) -> APIServer:
    """Two Clusters with room for 10 pods each, a policy and its Deployment, and a binding given
    directly (``api``). No scheduler runs: the commands only read."""
    apply_with_status(isolated_apiserver, [ready_cluster("m1", 10), ready_cluster("m2", 10)])
    isolated_apiserver.kubectl("create", "namespace", NAMESPACE)
    create_objects(isolated_apiserver, [divided_binding("api", NAMESPACE, 3, ["m1", "m2"])])
    isolated_apiserver.apply(yaml.safe_dump_all([POLICY, DEPLOYMENT], sort_keys=False))
    return isolated_apiserver


def test_explain_tells_the_story_simulate_tells_on_the_same_state(server: APIServer, tmp_path: Path) -> None:
    live = same_story(server, tmp_path, "api")
    assert f"{NAMESPACE}/api" in live.stdout and "m1" in live.stdout and "m2" in live.stdout
    # nothing was written: the binding is as created, unscheduled
    binding = json.loads(server.kubectl("get", "rb", "-n", NAMESPACE, "api", "-o", "json"))
    assert "clusters" not in binding["spec"] and not (binding.get("status") or {}).get("conditions")


def test_explain_tells_every_affinity_group_as_simulate_does(server: APIServer, tmp_path: Path) -> None:
    # 15 replicas: the first group (m1, room for 10) cannot hold them, the second (m1 and m2) can. Live
    # explain tries the groups in order and shows both, with the same scores as simulate --explain.
    binding = divided_binding("grouped", NAMESPACE, 15, ["m1"])
    placement = binding["spec"]["placement"]
    del placement["clusterAffinity"]
    placement["clusterAffinities"] = [
        {"affinityName": "first", "clusterNames": ["m1"]},
        {"affinityName": "wider", "clusterNames": ["m1", "m2"]},
    ]
    create_objects(server, [binding])
    try:
        live = same_story(server, tmp_path, "grouped")
        groups = [live.stdout.index(f"affinity group {name!r}") for name in ("first", "wider")]
        assert groups == sorted(groups)
        assert "(allocatable: more replicas the estimators say fit there" in live.stdout
        assert "schedulerObservingAffinityName: wider" in live.stdout
    finally:
        server.kubectl("delete", "rb", "-n", NAMESPACE, "grouped", "--wait=false")


def test_explain_of_a_missing_binding_is_one_line_exit_2(server: APIServer) -> None:
    done = fleetsched(server, "explain", f"rb/{NAMESPACE}/nothing")
    assert done.returncode == 2
    assert done.stderr.strip() == f"fleetsched explain: ResourceBinding {NAMESPACE}/nothing not found"


def test_kubectl_plugin_runs_explain(server: APIServer, tmp_path: Path) -> None:
    # The pip-installed `kubectl-fleetsched` runs fleetsched.cli:main; here an executable of that
    # name on PATH does the same with this tree, and the test's own kubectl finds it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    plugin = bin_dir / "kubectl-fleetsched"
    plugin.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from fleetsched.cli import main; "
                      "sys.exit(main())' \"$@\"\n")
    plugin.chmod(0o755)
    kubectl = str(server.binaries / "kubectl")
    done = subprocess.run(
        [kubectl, "fleetsched", "explain", f"rb/{NAMESPACE}/api"], capture_output=True, text=True,
        timeout=180, env=env(server, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"), cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    direct = fleetsched(server, "explain", f"rb/{NAMESPACE}/api")
    assert done.stdout == direct.stdout and f"{NAMESPACE}/api" in done.stdout
    listed = subprocess.run([kubectl, "plugin", "list"], capture_output=True, text=True, timeout=60,
                            env=env(server, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"))
    assert "kubectl-fleetsched" in listed.stdout


def moved_policy(cluster_names: list[str]) -> str:
    policy = json.loads(json.dumps(POLICY))
    policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] = cluster_names
    return yaml.safe_dump(policy, sort_keys=False)


def test_what_if_that_moves_a_binding_prints_before_and_after(server: APIServer, tmp_path: Path) -> None:
    change = tmp_path / "policy.yaml"
    change.write_text(moved_policy(["m2"]))
    done = fleetsched(server, "what-if", "-f", str(change), "-o", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["becomeUnschedulable"] == []
    changed = {c["name"]: c for c in report["changed"]}
    assert set(changed) == {"web-deployment"}  # the binding given directly (api) does not move
    web = changed["web-deployment"]
    assert web["before"]["clusters"] == [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 2}]
    assert web["after"]["clusters"] == [{"name": "m2", "replicas": 4}]
    totals = {c["name"]: (c["before"], c["after"]) for c in report["clusters"]}
    assert totals["m1"][0] - totals["m1"][1] == 2 and totals["m2"][1] - totals["m2"][0] == 2
    text = fleetsched(server, "what-if", "-f", str(change))
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "1 of 2 bindings would change."
    assert any("web-deployment" in line and line.split()[-1] == "m2:4" for line in lines)
    assert any(line.split() == ["m1", str(totals["m1"][0]), str(totals["m1"][1]), "-2"] for line in lines)
    # nothing written: the live policy still names both clusters
    live = json.loads(server.kubectl("get", "pp", "-n", NAMESPACE, "web", "-o", "json"))
    assert live["spec"]["placement"]["clusterAffinity"]["clusterNames"] == ["m1", "m2"]


def test_what_if_that_leaves_a_binding_nowhere_exits_3(server: APIServer, tmp_path: Path) -> None:
    change = tmp_path / "policy.yaml"
    change.write_text(moved_policy(["m9"]))
    done = fleetsched(server, "what-if", "-f", str(change))
    assert done.returncode == 3, done.stderr
    assert "1 would become unschedulable" in done.stdout.splitlines()[0]
    assert any("web-deployment" in line and "unschedulable" in line for line in done.stdout.splitlines())
    # a new Cluster from a file makes room again
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump(ready_cluster("m9", 10), sort_keys=False))
    done = fleetsched(server, "what-if", "-f", str(change), "-f", str(cluster), "-o", "json")
    assert done.returncode == 0, done.stderr
    web = next(c for c in json.loads(done.stdout)["changed"] if c["name"] == "web-deployment")
    assert web["after"]["clusters"] == [{"name": "m9", "replicas": 4}]


EXEC_PLUGIN = """\
import json, os, sys
info = json.loads(os.environ["KUBERNETES_EXEC_INFO"])
status = {"clientCertificateData": open(sys.argv[1]).read(), "clientKeyData": open(sys.argv[2]).read()}
print(json.dumps({"apiVersion": info["apiVersion"], "kind": "ExecCredential", "status": status}))
"""


def test_what_if_json_is_alone_on_stdout_while_the_client_logs(server: APIServer, tmp_path: Path) -> None:
    """With a credential plugin (logged when it runs: ``exec_plugin_ran``), ``-o json`` stays one JSON
    document on stdout and the log line goes to stderr; it came first on stdout before."""
    plugin = tmp_path / "plugin.py"
    plugin.write_text(EXEC_PLUGIN)
    admin = yaml.safe_load(server.kubeconfig.read_text())
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "clusters": admin["clusters"],
        "users": [{"name": "plugin", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1", "command": sys.executable,
            "args": [str(plugin), str(server.pki.admin_cert), str(server.pki.admin_key)],
            "interactiveMode": "Never"}}}],
        "contexts": [{"name": "c", "context": {"cluster": admin["clusters"][0]["name"], "user": "plugin"}}],
        "current-context": "c",
    }))
    change = tmp_path / "policy.yaml"
    change.write_text(moved_policy(["m2"]))
    done = subprocess.run(
        [sys.executable, "-m", "fleetsched", "what-if", "--kubeconfig", str(kubeconfig), "-f", str(change),
         "-o", "json"],
        capture_output=True, text=True, timeout=180, env=env(server), cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # the whole of stdout is the report
    assert {c["name"] for c in report["changed"]} == {"web-deployment"}
    logged = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    assert any(entry["event"] == "exec_plugin_ran" for entry in logged), done.stderr


def test_simulate_yaml_of_derived_bindings_is_accepted_by_kubectl_apply(server: APIServer) -> None:
    out = fleetsched(server, "simulate", "examples/fleet.yaml", "examples/policies.yaml", "-o", "yaml")
    assert out.returncode == 0, out.stderr
    items = yaml.safe_load(out.stdout)["items"]
    assert items and all("ownerReferences" not in i["metadata"] for i in items)
    for namespace in sorted({i["metadata"]["namespace"] for i in items if i["metadata"].get("namespace")}):
        server.kubectl("create", "namespace", namespace, check=False)
    applied = server.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=out.stdout)
    assert applied.count("serverside-applied (server dry run)") == len(items)
