"""Peers that try to hold the webhook's connections or memory, over real HTTPS (issue 14, item 3).

A slow client is cut off, a client that leaves mid-body costs one JSON log line, an oversized
body is refused unread, and past the reading and large-body limits requests get a 429
AdmissionReview while small reviews keep being answered (more on slow clients: test_slow_clients.py).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetsched.webhook.testing import WebhookProcess, a_policy, a_review, body, free_port, make_certificates

PATH = "/validate-propagationpolicy"


def tls(webhook: WebhookProcess, *, timeout: float = 10) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", webhook.port), timeout=timeout)
    return webhook.client_context().wrap_socket(raw, server_hostname="127.0.0.1")


def headers(length: int, *, path: str = PATH) -> bytes:
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {length}\r\n\r\n").encode()


def closed_by_server(sock: ssl.SSLSocket, within: float) -> bool:
    """True when the server closes (EOF or reset) within ``within`` seconds; what arrives is drained."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            if not sock.recv(65536):
                return True
        except TimeoutError:
            return False
        except (ssl.SSLError, OSError):
            return True
    return False


def read_response(sock: ssl.SSLSocket) -> tuple[int, dict[str, Any]]:
    sock.settimeout(10)
    response = http.client.HTTPResponse(sock)  # type: ignore[arg-type]
    response.begin()
    return response.status, json.loads(response.read())


def log_events(webhook: WebhookProcess) -> tuple[list[dict[str, Any]], list[str]]:
    """(JSON events, lines that are not JSON) of the server's log so far."""
    assert webhook.log_path is not None
    events, other = [], []
    for line in webhook.log_path.read_text().splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            other.append(line)
    return events, other


def wait_for_events(webhook: WebhookProcess, reason: str, count: int,
                    within: float = 10) -> list[dict[str, Any]]:
    deadline = time.monotonic() + within
    while True:
        events = [e for e in log_events(webhook)[0]
                  if e.get("event") == "admission_aborted" and e.get("reason") == reason]
        if len(events) >= count or time.monotonic() > deadline:
            return events
        time.sleep(0.1)


def connect(webhook: WebhookProcess, timeout: float = 10) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection("127.0.0.1", webhook.port, context=webhook.client_context(),
                                       timeout=timeout)


def small_review(webhook: WebhookProcess, uid: str) -> dict[str, Any]:
    conn = connect(webhook)
    try:
        conn.request("POST", PATH, body=body(a_review(a_policy({}), uid=uid)),
                     headers={"Content-Type": "application/json"})
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def late_review(webhook: WebhookProcess, uid: str, *, source: str = "127.0.0.1",
                pause: float = 0.4) -> dict[str, Any]:
    """A valid review whose body ends ``pause`` seconds after its headers: past the server's grace
    (0.1 s), so it needs a reading slot (``small_review``'s body comes at once and does not). Its
    first bytes, up to the uid, come with the headers, so even a refusal can name the uid."""
    sent = body(a_review(a_policy({}), uid=uid))
    cut = sent.index(uid.encode()) + len(uid) + 1
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.settimeout(10)
    raw.bind((source, 0))
    raw.connect(("127.0.0.1", webhook.port))
    with webhook.client_context().wrap_socket(raw, server_hostname="127.0.0.1") as sock:
        sock.sendall(headers(len(sent)) + sent[:cut])
        time.sleep(pause)
        with contextlib.suppress(OSError):  # a refusal may have closed the connection already
            sock.sendall(sent[cut:])
        return read_response(sock)[1]


@pytest.fixture(scope="module")
def defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    """The webhook as installed: default flags (header timeout 5 s, body timeout 10 s)."""
    cert_dir: Path = tmp_path_factory.mktemp("hostile-defaults")
    make_certificates(cert_dir)
    with WebhookProcess(cert_dir) as process:
        yield process


@pytest.fixture(scope="module")
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    """Small limits, so that they are reached with a few sockets."""
    cert_dir: Path = tmp_path_factory.mktemp("hostile-tight")
    make_certificates(cert_dir)
    args = ("--header-timeout", "1", "--body-timeout", "2", "--max-requests-reading", "3",
            "--slow-body-evict-after", "600", "--max-large-requests-in-flight", "1",
            "--large-request-wait", "0.3")
    with WebhookProcess(cert_dir, probe_port=free_port(), extra_args=args) as process:
        yield process


def test_slowloris_connections_are_cut_off_at_the_header_timeout(defaults: WebhookProcess) -> None:
    socks = [tls(defaults) for _ in range(20)]
    stop = threading.Event()

    def dribble() -> None:  # one header byte per 0.3 s on every connection, never the end of the headers
        request = headers(100) * 100
        i = 0
        while not stop.is_set() and i < len(request):
            for s in socks:
                with contextlib.suppress(OSError):
                    s.send(request[i:i + 1])
            i += 1
            stop.wait(0.3)

    sender = threading.Thread(target=dribble, daemon=True)
    sender.start()
    try:
        start = time.monotonic()
        cut = [closed_by_server(s, within=max(0.1, 15 - (time.monotonic() - start))) for s in socks]
    finally:
        stop.set()
        sender.join()
        for s in socks:
            s.close()
    assert all(cut), f"{cut.count(False)} of {len(socks)} slow connections were still open after 15 s"
    assert len(wait_for_events(defaults, "header_timeout", 20)) >= 20
    assert small_review(defaults, "after-slowloris")["response"]["allowed"] is True


def test_a_silent_tls_handshake_is_cut_off(defaults: WebhookProcess) -> None:
    with socket.create_connection(("127.0.0.1", defaults.port), timeout=15) as raw:
        start = time.monotonic()
        with contextlib.suppress(ConnectionResetError):
            assert raw.recv(1) == b""
        assert time.monotonic() - start < 14, "the handshake was never timed out"


def test_a_slow_body_is_answered_408_and_closed(tight: WebhookProcess) -> None:
    with tls(tight) as sock:
        sock.sendall(headers(5000) + b'{"apiVersion":')
        status, got = read_response(sock)
        assert status == 200 and got["response"]["status"]["code"] == 408
        assert got["response"]["allowed"] is False
        assert closed_by_server(sock, within=5)
    assert wait_for_events(tight, "body_timeout", 1)


def test_disconnect_mid_body_is_one_json_line_and_no_traceback(defaults: WebhookProcess) -> None:
    before, _ = log_events(defaults)
    sent = body(a_review(a_policy({}), uid="gone-midway"))
    with tls(defaults) as sock:
        sock.sendall(headers(len(sent) + 50_000) + sent[:200])
        time.sleep(0.3)
    events = wait_for_events(defaults, "client_disconnected", 1)
    time.sleep(0.5)  # anything else the server logs about it has arrived by now
    after, not_json = log_events(defaults)
    new = after[len(before):]
    assert not not_json, "non-JSON log lines:\n" + "\n".join(not_json[:20])
    assert [e["reason"] for e in new if e.get("event") == "admission_aborted"] == ["client_disconnected"]
    assert len(new) == 1, new
    assert events[0]["path"] == PATH and events[0]["bytes"] == 200
    assert not any("Traceback" in json.dumps(e) for e in new)


def test_an_oversized_body_is_refused_from_its_content_length_unread(defaults: WebhookProcess) -> None:
    with tls(defaults) as sock:
        sock.sendall(headers(64 * 1024 * 1024))  # and no body at all
        status, got = read_response(sock)
    assert status == 200 and got["response"]["status"]["code"] == 413
    assert "limit is 7340032 bytes" in got["response"]["status"]["message"]
    assert wait_for_events(defaults, "body_too_large", 1)


def test_a_body_expanding_past_the_memory_budget_is_refused_before_parsing(defaults: WebhookProcess) -> None:
    nodes = b",".join([b"{}"] * 2_000_000)  # 6 MiB that would be about 160 MB of dicts
    payload = (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"bomb",'
               b'"object":{"x":[' + nodes + b"]}}}")
    conn = connect(defaults, timeout=30)
    conn.request("POST", PATH, body=payload, headers={"Content-Type": "application/json"})
    got = json.loads(conn.getresponse().read())
    conn.close()
    assert got["response"]["uid"] == "bomb" and got["response"]["status"]["code"] == 413
    assert "--max-review-memory" in got["response"]["status"]["message"]


def test_past_the_reading_limit_requests_get_429_with_their_uid(tight: WebhookProcess) -> None:
    stalled = [tls(tight) for _ in range(3)]
    try:
        for s in stalled:  # three small requests whose bodies never finish: the limit (3) is reached
            s.sendall(headers(1000) + b"{")
        time.sleep(0.3)
        got = late_review(tight, "one-too-many")
        assert got["response"]["uid"] == "one-too-many"
        assert got["response"]["allowed"] is False and got["response"]["status"]["code"] == 429
        assert "--max-requests-reading)" in got["response"]["status"]["message"]
    finally:
        for s in stalled:
            s.close()
    deadline = time.monotonic() + 10
    while small_review(tight, "again")["response"]["allowed"] is not True:  # the slots are released
        assert time.monotonic() < deadline, "the in-flight slots were never released"
        time.sleep(0.2)


def test_large_bodies_queue_apart_and_small_reviews_pass_beside_them(tight: WebhookProcess) -> None:
    with tls(tight) as holder:
        holder.sendall(headers(1024 * 1024) + b'{"request":{"uid":"holder"')  # a large body, stalled
        time.sleep(0.3)
        big = body(a_review(a_policy({"resourceSelectors": [
            {"apiVersion": "v1", "kind": "ConfigMap", "name": f"c{i}", "namespace": "default"}
            for i in range(6000)]}), uid="second-large"))
        assert len(big) > 256 * 1024
        conn = connect(tight)
        conn.request("POST", PATH, body=big, headers={"Content-Type": "application/json"})
        second = json.loads(conn.getresponse().read())
        conn.close()
        assert second["response"]["uid"] == "second-large"
        assert second["response"]["status"]["code"] == 429
        assert "--max-large-requests-in-flight" in second["response"]["status"]["message"]
        assert small_review(tight, "small-beside")["response"]["allowed"] is True
    assert wait_for_events(tight, "too_many_large_requests", 1)


def test_a_conversion_body_past_the_memory_budget_is_refused(defaults: WebhookProcess) -> None:
    nodes = b",".join([b"{}"] * 2_000_000)
    payload = (b'{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"objects":['
               + nodes + b"]}}")
    conn = connect(defaults, timeout=30)
    conn.request("POST", "/convert", body=payload, headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    text = response.read().decode()
    conn.close()
    assert response.status == 413 and "--max-review-memory" in text


def test_the_header_clock_restarts_for_each_request_on_a_kept_alive_connection(tight: WebhookProcess) -> None:
    sent = body(a_review(a_policy({}), uid="first"))
    with tls(tight) as sock:
        time.sleep(1.5)  # idle past the header timeout before the first byte: idling is not slow headers
        sock.sendall(headers(len(sent)) + sent)
        status, got = read_response(sock)
        assert status == 200 and got["response"]["uid"] == "first"
        time.sleep(1.5)  # idle again between requests: the connection stays
        sock.sendall(headers(len(sent)) + sent)
        assert read_response(sock)[1]["response"]["uid"] == "first"
        for byte in headers(len(sent))[:20]:  # now a second request whose headers dribble in
            with contextlib.suppress(OSError):
                sock.send(bytes([byte]))
            time.sleep(0.2)
        assert closed_by_server(sock, within=5)
