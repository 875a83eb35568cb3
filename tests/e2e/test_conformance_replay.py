"""The recorded conformance cases, replayed through the live operator.

For each case: Clusters (with status, and a deletion in progress where the case has one) and
bindings (with status) go into a real kube-apiserver while the bindings are parked under another
scheduler name; the objects as the apiserver stores them (CRD defaults applied) are given to
``fleetsched simulate -o json``; then the bindings are handed to the running operator. What the
operator writes must be what simulate prints: ``spec.clusters`` in order, the Scheduled
condition's status, reason and message, the observed affinity name and the applied placement.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import recorded
from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    BINDING_KINDS,
    as_applied,
    collection_path,
    load_documents,
    scheduled_condition,
)
from tests.support.processes import SchedulerProcess

CASES_DIR = recorded.suite("conformance") / "cases"
CASES = sorted(p.name.removesuffix(".input.yaml") for p in CASES_DIR.glob("*.input.yaml"))
PARKED = "parked-for-replay"
HOLD_FINALIZER = "e2e.fleetsched.io/hold"
EXPLANATION = "scheduler.fleetsched.io/explanation"
APPLIED = "policy.karmada.io/applied-placement"


@pytest.fixture(scope="module")
def operator(
    isolated_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SchedulerProcess]:
    log = tmp_path_factory.mktemp("replay") / "scheduler.log"
    proc = SchedulerProcess(
        kubeconfig=isolated_apiserver.kubeconfig, log_path=log, extra_args=("--leader-elect=false",)
    )
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()


def _path(doc: dict[str, Any]) -> str:
    return f"{collection_path(doc)}/{doc['metadata']['name']}"


def _clean(server: APIServer) -> None:
    for namespace in ("default", "ml-jobs", "shop", "team-a"):
        server.request("DELETE", f"/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/resourcebindings")
    server.request("DELETE", "/apis/work.karmada.io/v1alpha2/clusterresourcebindings")
    clusters = server.request("GET", "/apis/cluster.karmada.io/v1alpha1/clusters")["items"]
    for cluster in clusters:  # type: ignore[union-attr]
        if cluster["metadata"].get("finalizers"):
            server.request(
                "PATCH",
                f"/apis/cluster.karmada.io/v1alpha1/clusters/{cluster['metadata']['name']}",
                {"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json",
            )
    server.request("DELETE", "/apis/cluster.karmada.io/v1alpha1/clusters")
    wait_until(
        lambda: not server.request("GET", "/apis/cluster.karmada.io/v1alpha1/clusters")["items"],
        timeout=30,
        message="clusters of the previous case not gone",
    )


def _create(server: APIServer, doc: dict[str, Any]) -> None:
    meta = doc["metadata"]
    deleting = bool(meta.pop("deletionTimestamp", None))
    if deleting:
        meta["finalizers"] = [*meta.get("finalizers", []), HOLD_FINALIZER]
    server.request("POST", collection_path(doc), {k: v for k, v in doc.items() if k != "status"})
    if doc.get("status"):
        server.request(
            "PATCH",
            _path(doc) + "/status",
            {"status": doc["status"]},
            content_type="application/merge-patch+json",
        )
    if deleting:
        server.request("DELETE", _path(doc))  # held by the finalizer: deletionTimestamp set


def _simulate(objects: list[dict[str, Any]], workdir: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    path = workdir / "stored.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    out = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", str(path), "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {_key(b): b for b in json.loads(out.stdout)["items"]}


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def _stored(server: APIServer, doc: dict[str, Any]) -> dict[str, Any]:
    obj = server.request("GET", _path(doc))
    obj.setdefault("apiVersion", doc["apiVersion"])
    obj.setdefault("kind", doc["kind"])
    obj["metadata"].pop("managedFields", None)
    return obj


def _view(binding: dict[str, Any]) -> dict[str, Any]:
    condition = scheduled_condition(binding) or {}
    return {
        "clusters": [(c["name"], int(c.get("replicas") or 0)) for c in binding["spec"].get("clusters") or ()],
        "condition": (condition.get("status"), condition.get("reason"), condition.get("message")),
        "affinityName": (binding.get("status") or {}).get("schedulerObservingAffinityName", ""),
        "appliedPlacement": (binding["metadata"].get("annotations") or {}).get(APPLIED),
    }


@pytest.mark.recorded("conformance")
@pytest.mark.parametrize("case", CASES)
def test_operator_writes_what_simulate_prints(
    case: str, isolated_apiserver: APIServer, operator: SchedulerProcess, tmp_path: Path
) -> None:
    server = isolated_apiserver
    _clean(server)
    docs = [
        as_applied(d, scheduler_name=PARKED)
        for d in load_documents((CASES_DIR / f"{case}.input.yaml").read_text())
    ]
    for namespace in sorted({d["metadata"].get("namespace") for d in docs} - {None}):
        server.kubectl("create", "namespace", namespace, check=False)
    clusters = [d for d in docs if d["kind"] == "Cluster"]
    bindings = [d for d in docs if d["kind"] in BINDING_KINDS]
    for doc in [*clusters, *bindings]:
        _create(server, doc)

    expected = _simulate([_stored(server, d) for d in [*clusters, *bindings]], tmp_path)
    assert len(expected) == len(bindings)
    for doc in bindings:  # hand them to the operator: an update that makes them pass its filter
        server.request(
            "PATCH",
            _path(doc),
            {"spec": {"schedulerName": None}},
            content_type="application/merge-patch+json",
        )

    def written() -> dict[tuple[str, str, str], dict[str, Any]] | None:
        live = {_key(d): _stored(server, d) for d in bindings}
        done = all(
            scheduled_condition(b) and EXPLANATION in (b["metadata"].get("annotations") or {})
            for b in live.values()
        )
        return live if done else None

    live = wait_until(
        written, timeout=60, message=lambda: f"{case}: not all bindings scheduled\n{operator.log_tail()}"
    )
    for key, simulated in expected.items():
        assert _view(live[key]) == _view(simulated), f"{case}: {key}"
    # And what Karmada itself recorded for the case (cluster order aside, as check.py compares).
    recorded = yaml.safe_load((CASES_DIR / f"{case}.expect.yaml").read_text())
    if recorded.get("deterministic", True):
        for want in recorded["bindings"]:
            kind = "ResourceBinding" if want.get("namespace") else "ClusterResourceBinding"
            view = _view(live[(kind, want.get("namespace", ""), want["name"])])
            got = (
                view["condition"][0] == "True",
                view["condition"][1],
                view["affinityName"],
                dict(view["clusters"]),
            )
            assert got == (
                want["scheduled"],
                want["reason"],
                want.get("affinityName", ""),
                {k: int(v or 0) for k, v in (want.get("clusters") or {}).items()},
            ), f"{case}: {want['name']}"
