"""A real estimator server on loopback, run in its own thread and event loop, plus a throwaway PKI."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pytest

from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.limits import DEFAULT_LIMITS, RequestLimits
from fleetsched.estimator.server import (
    Capacity,
    EstimatorMetrics,
    RunningServer,
    ServerTLS,
    SyncState,
    start_server,
)
from fleetsched.estimator.service import FeatureGates
from fleetsched.testing.pki import CertificateAuthority

DEFAULT_CAPACITY = Capacity()


class LoopThread:
    """An asyncio loop in a daemon thread; the sync gRPC client under test runs in the test's thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Any, timeout: float = 30) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture
def loop_thread() -> Iterator[LoopThread]:
    runner = LoopThread()
    yield runner
    runner.close()


@dataclass
class StartedServer:
    running: RunningServer
    inventory: MemberInventory
    state: SyncState
    metrics: EstimatorMetrics

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.running.port}"


@pytest.fixture
def start(loop_thread: LoopThread) -> Iterator[Callable[..., StartedServer]]:
    started: list[StartedServer] = []

    def _start(cluster: str, objects: Sequence[Mapping[str, Any]], *, tls: ServerTLS | None = None,
               synced: bool = True, gates: FeatureGates | None = None,
               address: str = "127.0.0.1:0", limits: RequestLimits = DEFAULT_LIMITS,
               capacity: Capacity = DEFAULT_CAPACITY) -> StartedServer:
        inventory = MemberInventory(cluster, objects, gates)
        state = SyncState(synced=synced, connected=synced)
        metrics = EstimatorMetrics()
        running = loop_thread.run(start_server(inventory.service, address=address, state=state,
                                               metrics=metrics, tls=tls, limits=limits, capacity=capacity))
        server = StartedServer(running, inventory, state, metrics)
        started.append(server)
        return server

    yield _start
    for server in started:
        loop_thread.run(server.running.stop(None))


def node(name: str, cpu: str = "8", *, labels: Mapping[str, str] | None = None, pods: str = "110",
         memory: str = "64Gi") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": dict(labels or {})},
            "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods}}}


# ------------------------------------------------------------------------------------------ PKI
@dataclass(frozen=True)
class Pki:
    ca: bytes
    server_cert: bytes
    server_key: bytes
    client_cert: bytes
    client_key: bytes
    other_ca: bytes
    other_client_cert: bytes
    other_client_key: bytes


_ESTIMATOR_NAMES = ("localhost", "karmada-scheduler-estimator-member1.karmada-system.svc")


@pytest.fixture(scope="session")
def pki() -> Pki:
    ca = CertificateAuthority.create("estimator-test-ca")
    other = CertificateAuthority.create("someone-else")
    server_cert, server_key = ca.issue("estimator", dns_names=_ESTIMATOR_NAMES, ip_addresses=("127.0.0.1",),
                                       server=True)
    client_cert, client_key = ca.issue("karmada-scheduler")
    other_cert, other_key = other.issue("intruder")
    return Pki(ca.cert_pem, server_cert, server_key, client_cert, client_key, other.cert_pem, other_cert,
               other_key)
