"""A real ``fleetsched webhook`` process for tests, benchmarks and local trials (like ``kopf.testing``).

``make_certificates`` writes a throwaway CA and a serving certificate (SANs 127.0.0.1, ::1,
localhost and the in-cluster Service names); ``WebhookProcess`` starts the server on free
loopback ports, waits until ``/readyz`` answers over HTTPS, and stops it; ``SlowClients`` holds
connections that send their bodies a byte at a time. Nothing here is used by the server itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from fleetsched.testing.pki import CertificateAuthority, write_private

__all__ = ["CPP_LABEL", "PP_LABEL", "SlowClients", "WebhookProcess", "a_policy", "a_review", "body",
           "free_port", "make_certificates", "make_client_certificate"]

SERVICE_NAMES = ("fleetsched-webhook.fleetsched-system.svc",
                 "fleetsched-webhook.fleetsched-system.svc.cluster.local")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_client_certificate(directory: Path, common_name: str = "kube-apiserver") -> tuple[Path, Path]:
    """A client CA (client-ca.crt) and a certificate it signed for ``common_name``
    (client.crt, client.key) in ``directory``: what the API server presents with --client-ca-file."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create("fleetsched-webhook-client-ca")
    cert, key = ca.issue(common_name)
    (directory / "client-ca.crt").write_bytes(ca.cert_pem)
    (directory / "client.crt").write_bytes(cert)
    write_private(directory / "client.key", key)
    return directory / "client.crt", directory / "client.key"


def make_certificates(directory: Path, *, dns_names: tuple[str, ...] = ("localhost", *SERVICE_NAMES),
                      ips: tuple[str, ...] = ("127.0.0.1", "::1")) -> Path:
    """Write ca.crt, ca.key, tls.crt and tls.key into ``directory``; return the CA file."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = CertificateAuthority.create("fleetsched-webhook-test-ca")
    cert, key = ca.issue(SERVICE_NAMES[0], dns_names=dns_names, ip_addresses=ips, server=True)
    (directory / "ca.crt").write_bytes(ca.cert_pem)
    write_private(directory / "ca.key", ca.key_pem)
    (directory / "tls.crt").write_bytes(cert)
    write_private(directory / "tls.key", key)
    return directory / "ca.crt"


@dataclass
class WebhookProcess:
    """``fleetsched webhook`` on loopback. Use as a context manager."""

    cert_dir: Path
    port: int = field(default_factory=free_port)
    metrics_port: int | None = None
    probe_port: int | None = None
    extra_args: tuple[str, ...] = ()
    log_path: Path | None = None
    process: subprocess.Popen[bytes] | None = None
    # (certificate, key) this helper presents, for a server started with --client-ca-file
    client_cert: tuple[Path, Path] | None = None

    @property
    def base_url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.cert_dir / "ca.crt"))
        if self.client_cert is not None:
            context.load_cert_chain(str(self.client_cert[0]), str(self.client_cert[1]))
        return context

    def start(self, *, timeout: float = 30.0) -> WebhookProcess:
        args = [sys.executable, "-m", "fleetsched", "webhook", "--bind-address", "127.0.0.1",
                "--port", str(self.port), "--cert-dir", str(self.cert_dir),
                "--metrics-bind-address", f"127.0.0.1:{self.metrics_port}" if self.metrics_port else "0",
                "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}" if self.probe_port else "0",
                *self.extra_args]
        log_path = self.log_path or (self.cert_dir / f"webhook-{self.port}.log")
        self.log_path = log_path
        with open(log_path, "ab") as log_file:
            self.process = subprocess.Popen(args, stdout=log_file, stderr=subprocess.STDOUT,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        deadline = time.monotonic() + timeout
        if (self.cert_dir / "ca.crt").exists():
            context = self.client_context()
        else:  # a certificate made elsewhere: readiness only, not trust, is being checked
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            if self.client_cert is not None:
                context.load_cert_chain(str(self.client_cert[0]), str(self.client_cert[1]))
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"fleetsched webhook exited with {self.process.returncode}: "
                                   f"{log_path.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/readyz", context=context, timeout=2) as resp:
                    if resp.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"fleetsched webhook did not become ready within {timeout}s")

    def stop(self, *, timeout: float = 10.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def __enter__(self) -> WebhookProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


class SlowClients:
    """``count`` HTTPS connections to ``port`` that each send a review's headers (Content-Length
    ``length``) and then one byte of its body every ``interval`` seconds, never finishing; a
    connection the server ends is opened again at once, so the pressure stays. They connect from
    ``source`` (any 127.x.y.z address is loopback on Linux). Use as a context manager; ``held`` is
    how many are connected now, ``opened`` and ``ended`` count connections over the whole run.

    ``slow``: ``"body"`` as above; ``"headers"``: the request line, then one byte of a header every
    ``interval``; ``"handshake"``: a TCP connection that never starts TLS (held until the server
    ends it). A connection that fails is tried again after ``retry`` seconds."""

    def __init__(self, port: int, context: ssl.SSLContext, count: int, *, interval: float = 0.5,
                 source: str = "127.0.0.1", path: str = "/validate-propagationpolicy",
                 length: int = 5000, slow: str = "body", retry: float = 0.05) -> None:
        if slow not in ("body", "headers", "handshake"):
            raise ValueError(f"slow: must be body, headers or handshake, got {slow!r}")
        self.port, self.context, self.count = port, context, count
        self.interval, self.source, self.path, self.length = interval, source, path, length
        self.slow, self.retry = slow, retry
        self.held = 0
        self.opened = 0
        self.ended = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="slow-clients", daemon=True)
        self._tasks: list[asyncio.Future[None]] = []

    async def _one(self) -> None:
        head = (f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                f"Content-Length: {self.length}\r\n\r\n").encode() + b'{"apiVersion":'
        if self.slow == "headers":
            head = f"POST {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ".encode()
        elif self.slow == "handshake":
            head = b""
        while True:
            try:
                tls = self.slow != "handshake"
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", self.port, ssl=self.context if tls else None,
                    server_hostname="127.0.0.1" if tls else None,
                    local_addr=(self.source, 0), ssl_handshake_timeout=30 if tls else None)
            except (OSError, ssl.SSLError, TimeoutError):
                await asyncio.sleep(self.retry)
                continue
            self.opened += 1
            self.held += 1
            try:
                writer.write(head)
                ended = asyncio.ensure_future(reader.read())  # whatever the server answers, to its end
                ended.add_done_callback(lambda f: f.cancelled() or f.exception())  # a reset is expected
                sent = len(head)
                while not ended.done() and sent < self.length - 1:
                    await asyncio.wait([ended], timeout=self.interval)
                    if not ended.done():
                        writer.write(b"" if self.slow == "handshake" else b"a")
                        sent += 1
                ended.cancel()
                with contextlib.suppress(BaseException):
                    await ended
            except (OSError, ssl.SSLError):
                pass
            finally:
                self.held -= 1
                self.ended += 1
                writer.transport.abort()

    def wait_held(self, count: int | None = None, *, timeout: float = 120.0) -> None:
        """Until ``count`` (default: all) connections are open and sending; raises on timeout."""
        want = self.count if count is None else count
        deadline = time.monotonic() + timeout
        while self.held < want:
            if time.monotonic() > deadline:
                raise TimeoutError(f"only {self.held} of {want} slow connections open after {timeout}s")
            time.sleep(0.05)

    def __enter__(self) -> SlowClients:
        self._thread.start()

        def start() -> None:
            self._tasks = [asyncio.ensure_future(self._one()) for _ in range(self.count)]

        self._loop.call_soon_threadsafe(start)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        async def stop() -> None:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=60)
        self._loop.close()


# --- request builders -----------------------------------------------------------------------

PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"


def a_policy(
    spec: dict[str, Any] | None = None,
    *,
    kind: str = "PropagationPolicy",
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    name: str = "p",
) -> dict[str, Any]:
    label = PP_LABEL if kind == "PropagationPolicy" else CPP_LABEL
    metadata: dict[str, Any] = {"name": name, "labels": {label: "id-1"} if labels is None else labels}
    if kind == "PropagationPolicy":
        metadata["namespace"] = namespace
    return {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": kind,
        "metadata": metadata,
        "spec": copy.deepcopy(spec) if spec is not None else {},
    }


def a_review(
    obj: Any,
    *,
    operation: str = "CREATE",
    old: Any = None,
    namespace: str | None = None,
    uid: str | None = None,
    api_version: str = "admission.k8s.io/v1",
) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": uid or str(uuid.uuid4()), "operation": operation, "object": obj}
    if isinstance(obj, dict) and namespace is None:
        namespace = (
            (obj.get("metadata") or {}).get("namespace") if isinstance(obj.get("metadata"), dict) else None
        )
    if namespace:
        request["namespace"] = namespace
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": request}


def body(review: dict[str, Any]) -> bytes:
    return json.dumps(review).encode()
