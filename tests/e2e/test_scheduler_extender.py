"""``fleetsched scheduler --config`` with an HTTPS extender on a real kube-apiserver: the real test
extender (``fleetsched.testing.extender``) filters by a cluster label, so bindings land only on the
clusters it keeps; once it is down, an ignorable extender is skipped (and counted) and a
non-ignorable one leaves the binding Scheduled=False with a message naming it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.testing.extender import FILTER_LABEL, ExtenderServer, closed_port
from fleetsched.testing.pki import CertificateAuthority, write_private
from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    create_objects,
    divided_binding,
    get_json,
    ready_cluster,
    scheduled_condition,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "extender"
CLUSTERS = ("m1", "m2", "m3")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("extender-pki")
    ca = CertificateAuthority.create("extender-ca")
    (d / "ca.crt").write_bytes(ca.cert_pem)
    cert, key = ca.issue("extender", dns_names=("localhost",), ip_addresses=("127.0.0.1",), server=True)
    (d / "tls.crt").write_bytes(cert)
    write_private(d / "tls.key", key)
    return {"ca": d / "ca.crt", "cert": d / "tls.crt", "key": d / "tls.key"}


@pytest.fixture(scope="module")
def fleet(isolated_apiserver: APIServer) -> APIServer:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    # m1 is the one the extender rejects.
    apply_with_status(
        server,
        [ready_cluster(name, 10, {FILTER_LABEL: "reject" if name == "m1" else "keep"}) for name in CLUSTERS],
    )
    return server


def configuration(directory: Path, url: str, ca: Path, *, ignorable: bool) -> Path:
    doc: dict[str, Any] = {
        "apiVersion": "config.fleetsched.io/v1alpha1",
        "kind": "SchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "extenders": [
            {
                "urlPrefix": url,
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "httpTimeout": "2s",
                "ignorable": ignorable,
                "tlsConfig": {"caFile": str(ca)},
            }
        ],
    }
    path = directory / f"scheduler-config-{'ignorable' if ignorable else 'required'}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def condition_of(server: APIServer, name: str) -> tuple[dict[str, Any], Any] | None:
    obj = get_json(server, "rb", "-n", NAMESPACE, name)
    condition = scheduled_condition(obj)
    return (obj, condition) if condition is not None else None


def test_bindings_land_on_kept_clusters_and_a_down_required_extender_fails_them(
    fleet: APIServer, pki: dict[str, Path], start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    with ExtenderServer(cert_file=pki["cert"], key_file=pki["key"]) as extender:
        url = extender.url("ok")
        config = configuration(tmp_path, url, pki["ca"], ignorable=False)
        scheduler = start_scheduler(fleet, "--config", str(config), "--leader-elect=false")
        create_objects(fleet, [divided_binding("web", NAMESPACE, 6, list(CLUSTERS))])
        obj, condition = wait_until(
            lambda: condition_of(fleet, "web"), timeout=60, message=lambda: scheduler.log_tail()
        )
        assert condition["status"] == "True", condition
        placed = {t["name"]: t["replicas"] for t in obj["spec"]["clusters"]}
        assert set(placed) == {"m2", "m3"} and sum(placed.values()) == 6
        assert extender.stats.requests.get("/ok/filter", 0) >= 1
    # The extender is down now, while the scheduler runs.
    create_objects(fleet, [divided_binding("api", NAMESPACE, 2, list(CLUSTERS))])
    obj, condition = wait_until(
        lambda: condition_of(fleet, "api"), timeout=60, message=lambda: scheduler.log_tail()
    )
    assert condition["status"] == "False"
    assert f"extender {url} failed at Filter" in condition["message"]
    assert condition["message"].count(url) == 1
    assert "clusters" not in obj["spec"]
    assert scheduler.alive()


def test_a_down_ignorable_extender_is_skipped_and_counted(
    fleet: APIServer, pki: dict[str, Path], start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    url = f"https://127.0.0.1:{closed_port()}/ok"
    config = configuration(tmp_path, url, pki["ca"], ignorable=True)
    scheduler = start_scheduler(fleet, "--config", str(config), "--leader-elect=false")
    create_objects(fleet, [divided_binding("batch", NAMESPACE, 3, list(CLUSTERS))])
    obj, condition = wait_until(
        lambda: condition_of(fleet, "batch"), timeout=60, message=lambda: scheduler.log_tail()
    )
    assert condition["status"] == "True", condition
    assert sum(t["replicas"] for t in obj["spec"]["clusters"]) == 3
    ignored = scheduler.metric(
        "fleetsched_scheduler_extender_ignored_failures_total",
        extender=url,
        verb="filter",
        kind="unreachable",
    )
    assert ignored >= 1
