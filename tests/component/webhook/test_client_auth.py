"""``--client-ca-file``: only a client with a certificate from that CA (the API server) is served."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetsched.webhook.testing import (
    WebhookProcess,
    a_policy,
    a_review,
    body,
    make_certificates,
    make_client_certificate,
)


@pytest.fixture(scope="module")
def authenticated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    cert_dir: Path = tmp_path_factory.mktemp("client-auth")
    make_certificates(cert_dir)
    client = make_client_certificate(cert_dir / "apiserver")
    process = WebhookProcess(cert_dir, client_cert=client,
                             extra_args=("--client-ca-file", str(cert_dir / "apiserver" / "client-ca.crt")))
    with process:
        yield process


def review_with(webhook: WebhookProcess, context: ssl.SSLContext) -> dict[str, object]:
    conn = http.client.HTTPSConnection("127.0.0.1", webhook.port, context=context, timeout=10)
    try:
        conn.request("POST", "/validate-propagationpolicy", body=body(a_review(a_policy({}), uid="mtls")),
                     headers={"Content-Type": "application/json"})
        answer: dict[str, object] = json.loads(conn.getresponse().read())
        return answer
    finally:
        conn.close()


def test_a_client_with_a_certificate_from_the_ca_is_served(authenticated: WebhookProcess) -> None:
    got = review_with(authenticated, authenticated.client_context())
    assert got["response"] == {"uid": "mtls", "allowed": True, "status": {"metadata": {}, "code": 200}}


def test_a_client_without_a_certificate_is_refused(authenticated: WebhookProcess) -> None:
    anonymous = ssl.create_default_context(cafile=str(authenticated.cert_dir / "ca.crt"))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        review_with(authenticated, anonymous)


def test_a_certificate_from_another_ca_is_refused(authenticated: WebhookProcess, tmp_path: Path) -> None:
    stranger = make_client_certificate(tmp_path, "kube-apiserver")  # same name, another CA
    context = ssl.create_default_context(cafile=str(authenticated.cert_dir / "ca.crt"))
    context.load_cert_chain(str(stranger[0]), str(stranger[1]))
    with pytest.raises((ssl.SSLError, ConnectionError)):
        review_with(authenticated, context)


def test_without_the_flag_no_certificate_is_asked_for(tmp_path: Path) -> None:
    make_certificates(tmp_path)
    with WebhookProcess(tmp_path) as webhook, socket.create_connection(("127.0.0.1", webhook.port)) as raw:
        context = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert b"200 OK" in tls.recv(4096)


def test_an_unreadable_client_ca_fails_at_start_with_a_message(tmp_path: Path) -> None:
    make_certificates(tmp_path)
    (tmp_path / "bad-ca.crt").write_text("not a certificate\n")
    process = WebhookProcess(tmp_path, extra_args=("--client-ca-file", str(tmp_path / "bad-ca.crt")))
    with pytest.raises(RuntimeError, match="exited with 2"):
        process.start(timeout=10)
    assert process.log_path is not None
    assert f"fleetsched webhook: --client-ca-file {tmp_path / 'bad-ca.crt'}: " in process.log_path.read_text()
