"""A real estimator server on loopback, run in its own thread and event loop, plus a throwaway PKI."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.server import EstimatorMetrics, RunningServer, ServerTLS, SyncState, start_server
from fleetsched.estimator.service import FeatureGates


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
               address: str = "127.0.0.1:0") -> StartedServer:
        inventory = MemberInventory(cluster, objects, gates)
        state = SyncState(synced=synced, connected=synced)
        metrics = EstimatorMetrics()
        running = loop_thread.run(start_server(inventory.service, address=address, state=state,
                                               metrics=metrics, tls=tls))
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


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _ca(name: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, encipher_only=False,
                                         decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def _leaf(ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey], name: str, *,
          server: bool) -> tuple[bytes, bytes]:
    ca_cert, ca_key = ca
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    builder = (x509.CertificateBuilder().subject_name(subject)
               .issuer_name(ca_cert.subject).public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(hours=1))
               .not_valid_after(now + datetime.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server
                                                     else ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    if server:
        builder = builder.add_extension(x509.SubjectAlternativeName([
            x509.DNSName("localhost"),
            x509.DNSName("karmada-scheduler-estimator-member1.karmada-system.svc"),
            x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), _pem_key(key)


@pytest.fixture(scope="session")
def pki() -> Pki:
    ca = _ca("estimator-test-ca")
    other = _ca("someone-else")
    server_cert, server_key = _leaf(ca, "estimator", server=True)
    client_cert, client_key = _leaf(ca, "karmada-scheduler", server=False)
    other_cert, other_key = _leaf(other, "intruder", server=False)
    return Pki(ca[0].public_bytes(serialization.Encoding.PEM), server_cert, server_key, client_cert,
               client_key, other[0].public_bytes(serialization.Encoding.PEM), other_cert, other_key)
