"""A real HTTPS test extender on loopback (``fleetsched.testing.extender``) with a throwaway PKI."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fleetsched.extender.client import EdgeLoop, HTTPExtender
from fleetsched.extender.metrics import count_ignored_failure
from fleetsched.scheduler.framework.interface import Extender
from fleetsched.scheduler.framework.profile import ExtenderConfig, ExtenderTLS
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import (
    BindingStatus,
    ClusterInfo,
    ObjectReference,
    Placement,
    ReplicaScheduling,
    SchedulingBinding,
)
from fleetsched.testing.extender import FILTER_LABEL, SCORE_LABEL, ExtenderServer
from fleetsched.testing.pki import CertificateAuthority, write_private


@dataclass(frozen=True)
class Pki:
    ca_file: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca_file: Path


@pytest.fixture(scope="package")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("extender-pki")
    ca, other = CertificateAuthority.create("extender-ca"), CertificateAuthority.create("stranger-ca")
    (d / "ca.crt").write_bytes(ca.cert_pem)
    (d / "other-ca.crt").write_bytes(other.cert_pem)
    cert, key = ca.issue("extender", dns_names=("localhost", "extender.test"), ip_addresses=("127.0.0.1",),
                         server=True)
    (d / "tls.crt").write_bytes(cert)
    write_private(d / "tls.key", key)
    cert, key = ca.issue("fleetsched-scheduler")
    (d / "client.crt").write_bytes(cert)
    write_private(d / "client.key", key)
    return Pki(d / "ca.crt", d / "tls.crt", d / "tls.key", d / "client.crt", d / "client.key",
               d / "other-ca.crt")


@pytest.fixture(scope="package")
def server(pki: Pki) -> Iterator[ExtenderServer]:
    with ExtenderServer(cert_file=pki.server_cert, key_file=pki.server_key, slow_seconds=1.0) as s:
        yield s


@pytest.fixture
def edge() -> Iterator[EdgeLoop]:
    """A loop of the test's own, so no test shares pooled connections with another."""
    loop = EdgeLoop("test-extender-edge")
    yield loop
    loop.close()


class Extenders:
    """Builds extenders on the test's edge loop and closes their connections afterwards."""

    def __init__(self, edge: EdgeLoop) -> None:
        self.edge = edge
        self.built: list[HTTPExtender] = []

    def __call__(self, cfg: ExtenderConfig, **kwargs: Any) -> HTTPExtender:
        ext = HTTPExtender(cfg, loop=self.edge.loop, **kwargs)
        self.built.append(ext)
        return ext


@pytest.fixture
def make(edge: EdgeLoop) -> Iterator[Extenders]:
    extenders = Extenders(edge)
    yield extenders
    for ext in extenders.built:
        ext.close()


def config(url: str, pki: Pki, *, ignorable: bool = False, weight: int = 1, timeout: float = 0.3,
           client_cert: bool = False, **tls: object) -> ExtenderConfig:
    return ExtenderConfig(
        url_prefix=url, filter_verb="filter", prioritize_verb="prioritize", weight=weight,
        http_timeout_seconds=timeout, ignorable=ignorable,
        tls=ExtenderTLS(ca_file=str(pki.ca_file),
                        cert_file=str(pki.client_cert) if client_cert else None,
                        key_file=str(pki.client_key) if client_cert else None, **tls),  # type: ignore[arg-type]
    )


def a_cluster(name: str, *, filter: str = "", score: int | None = None) -> ClusterInfo:
    labels = {"region": "eu"}
    if filter:
        labels[FILTER_LABEL] = filter
    if score is not None:
        labels[SCORE_LABEL] = str(score)
    return ClusterInfo(name=name, labels=labels, region="eu", api_enablements=DEPLOYMENT_API)


DEPLOYMENT_API = frozenset({("apps/v1", "Deployment")})
# Duplicated: every cluster the plugins and the extenders keep is selected.
BINDING = SchedulingBinding(
    kind="ResourceBinding", name="web-deployment", namespace="shop", replicas=3,
    resource=ObjectReference("apps/v1", "Deployment", "shop", "web", ""),
    placement=Placement(replica_scheduling=ReplicaScheduling("Duplicated")),
)
CLUSTERS = (
    a_cluster("m1", score=7),
    a_cluster("m2", filter="reject", score=9),
    a_cluster("m3", filter="unresolvable"),
    a_cluster("m4", score=2),
)


def scheduler(extenders: Sequence[Extender]) -> Scheduler:
    """The real path: the framework runtime with these extenders and the scheduler process's
    counter of skipped failures."""
    return Scheduler(extenders=extenders, extender_skipped=count_ignored_failure)


def schedule(extenders: Sequence[Extender]) -> ScheduleResult:
    """``BINDING`` scheduled over ``CLUSTERS`` with ``extenders``."""
    return scheduler(extenders).schedule(BINDING, BindingStatus(), Snapshot(CLUSTERS))


def extender_scores(result: ScheduleResult) -> dict[str, int]:
    """Per selected cluster, the extenders' weighted part of its total."""
    return {n.cluster: sum(p.weighted for p in n.parts if p.extender) for n in result.attempts[0].numbers}
