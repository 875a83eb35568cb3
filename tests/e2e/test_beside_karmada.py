"""The beside-Karmada and instead-of-karmada-scheduler installs, run as the identity they document.

For each overlay: its karmada-apiserver RBAC (``overlays/<name>/karmada-apiserver``) is applied to
a real kube-apiserver standing in for karmada-apiserver, a token is issued to its ServiceAccount
``karmada-system/fleetsched-scheduler``, and the scheduler runs with the overlay's own rendered
arguments (only the kubeconfig path and the listen addresses changed) as that identity. It becomes
ready, holds the Lease the overlay names and schedules the bindings the overlay says it schedules,
and only those:

- beside Karmada: ``spec.schedulerName: fleetsched-scheduler``; a binding with none (or
  ``default-scheduler``) is karmada-scheduler's and stays untouched;
- instead of karmada-scheduler: bindings with no ``schedulerName`` or ``default-scheduler``. It
  competes for karmada-scheduler's own Lease: while "karmada-scheduler" (this test) renews it,
  fleetsched stands by, unready, and writes nothing; once it stops, fleetsched takes over.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.test_install import MANIFESTS, Component, container_args, override, render
from tests.support.controlplane import APIServer, free_port, wait_until
from tests.support.karmada import (
    apply_with_status,
    binding_state,
    create_objects,
    divided_binding,
    ready_cluster,
)

SYSTEM = "karmada-system"
ACCOUNT = "fleetsched-scheduler"
CLUSTERS = ["m1", "m2"]


def as_account_kubeconfig(server: APIServer, path: Path) -> Path:
    """A kubeconfig with a bound token of ``karmada-system/fleetsched-scheduler`` (no admin rights)."""
    token = server.kubectl("create", "token", ACCOUNT, "-n", SYSTEM, "--duration=1h").strip()
    admin = yaml.safe_load(server.kubeconfig.read_text())
    cluster = admin["clusters"][0]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [cluster],
        "users": [{"name": ACCOUNT, "user": {"token": token}}],
        "contexts": [{"name": ACCOUNT, "context": {"cluster": cluster["name"], "user": ACCOUNT}}],
        "current-context": ACCOUNT,
    }))
    path.chmod(0o600)
    return path


@pytest.fixture
def karmada_apiserver(isolated_apiserver: APIServer) -> Iterator[APIServer]:
    server = isolated_apiserver
    server.kubectl("create", "namespace", SYSTEM, check=False)
    yield server


def run_overlay(server: APIServer, overlay: str, tmp_path: Path) -> Component:
    """Apply the overlay's karmada-apiserver RBAC, then start its scheduler as that identity."""
    server.kubectl("apply", "-k", str(MANIFESTS / "overlays" / overlay / "karmada-apiserver"))
    kubeconfig = as_account_kubeconfig(server, tmp_path / "kubeconfig")
    port = free_port()
    args = override(
        container_args(render(MANIFESTS / "overlays" / overlay, server), "fleetsched-scheduler"),
        kubeconfig=str(kubeconfig),
        metrics_bind_address=f"127.0.0.1:{port}",
        health_probe_bind_address=f"127.0.0.1:{port}",
    )
    proc = Component(kubeconfig=kubeconfig, log_path=tmp_path / f"{overlay}.log", port=port, args=tuple(args))
    return proc


def binding(name: str, namespace: str, scheduler_name: str | None) -> dict[str, Any]:
    doc = divided_binding(name, namespace, 4, CLUSTERS)
    if scheduler_name is not None:
        doc["spec"]["schedulerName"] = scheduler_name
    return doc


def states(server: APIServer, namespace: str) -> dict[str, dict[str, Any]]:
    items = server.request("GET", f"/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings")
    return {b["metadata"]["name"]: binding_state(b) for b in items["items"]}  # type: ignore[index]


def lease_holder(server: APIServer, name: str) -> str:
    lease = json.loads(server.kubectl("get", "lease", name, "-n", SYSTEM, "-o", "json"))
    return str(lease["spec"].get("holderIdentity") or "")


def test_beside_karmada_schedules_its_own_bindings_as_its_karmada_apiserver_identity(
    karmada_apiserver: APIServer, tmp_path: Path
) -> None:
    server = karmada_apiserver
    namespace = "beside"
    server.kubectl("create", "namespace", namespace)
    apply_with_status(server, [ready_cluster(name, 100) for name in CLUSTERS])
    proc = run_overlay(server, "beside-karmada", tmp_path)
    proc.start(wait_ready=False)
    try:
        proc.wait_ready(60)
        create_objects(server, [
            binding("ours", namespace, "fleetsched-scheduler"),
            binding("karmadas", namespace, None),
            binding("karmadas-named", namespace, "default-scheduler"),
        ])
        wait_until(lambda: states(server, namespace)["ours"]["scheduled"], timeout=30, message=proc.log_tail)
        assert lease_holder(server, "fleetsched-scheduler")  # its own Lease, in karmada-system
        found = states(server, namespace)
        assert sum(found["ours"]["clusters"].values()) == 4
        assert found["karmadas"]["clusters"] == {} and not found["karmadas"]["scheduled"]
        assert found["karmadas-named"]["clusters"] == {} and not found["karmadas-named"]["scheduled"]
        assert "forbidden" not in proc.log_path.read_text().lower()
    finally:
        proc.stop()


def test_instead_of_karmada_takes_karmada_schedulers_lease_and_schedules_the_default_bindings(
    karmada_apiserver: APIServer, tmp_path: Path
) -> None:
    server = karmada_apiserver
    namespace = "instead"
    server.kubectl("create", "namespace", namespace)
    apply_with_status(server, [ready_cluster(name, 100) for name in CLUSTERS])
    # karmada-scheduler holds its Lease and keeps renewing it until told to stop
    path = f"/apis/coordination.k8s.io/v1/namespaces/{SYSTEM}/leases"

    def now() -> str:
        return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    server.request("POST", path, {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "karmada-scheduler", "namespace": SYSTEM},
        "spec": {"holderIdentity": "karmada-scheduler-0_abc", "leaseDurationSeconds": 15,
                 "acquireTime": now(), "renewTime": now()},
    })
    stop_renewing = threading.Event()
    renewals: list[str] = []

    def renew() -> None:
        while not stop_renewing.wait(2):
            lease = server.request("GET", f"{path}/karmada-scheduler")
            lease["spec"]["renewTime"] = now()  # type: ignore[index]
            server.request("PUT", f"{path}/karmada-scheduler", lease)
            renewals.append(lease["spec"]["renewTime"])  # type: ignore[index]

    renewer = threading.Thread(target=renew, daemon=True)
    renewer.start()
    proc = run_overlay(server, "instead-of-karmada", tmp_path)
    try:
        proc.start(wait_ready=False)
        create_objects(server, [
            binding("unnamed", namespace, None),
            binding("default-named", namespace, "default-scheduler"),
            binding("someone-elses", namespace, "fleetsched-scheduler"),
        ])
        # caches synced, standing by behind karmada-scheduler's Lease: unready, nothing written
        wait_until(lambda: proc.log_events("new_leader_observed"), timeout=60, message=proc.log_tail)
        assert proc.log_events("new_leader_observed")[0]["holder"] == "karmada-scheduler-0_abc"
        for _ in range(10):  # 20 s of renewals, past the Lease's 15 s: still standing by
            seen = len(renewals)
            wait_until(lambda s=seen: len(renewals) > s, timeout=30, message=proc.log_tail)
            assert not proc.ready()
            assert not any(s["scheduled"] for s in states(server, namespace).values())
        assert lease_holder(server, "karmada-scheduler") == "karmada-scheduler-0_abc"

        stop_renewing.set()  # karmada-scheduler is scaled to 0
        renewer.join()
        proc.wait_ready(60)
        wait_until(
            lambda: states(server, namespace)["unnamed"]["scheduled"]
            and states(server, namespace)["default-named"]["scheduled"],
            timeout=30, message=proc.log_tail,
        )
        assert lease_holder(server, "karmada-scheduler") != "karmada-scheduler-0_abc"
        found = states(server, namespace)
        assert sum(found["unnamed"]["clusters"].values()) == 4
        assert sum(found["default-named"]["clusters"].values()) == 4
        assert found["someone-elses"]["clusters"] == {} and not found["someone-elses"]["scheduled"]
        assert "forbidden" not in proc.log_path.read_text().lower()
    finally:
        stop_renewing.set()
        proc.stop()
