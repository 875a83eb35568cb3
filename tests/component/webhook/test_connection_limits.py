"""The webhook's limits on open connections, over real TCP and TLS on loopback (issue 30).

Every connection used to cost a 256 KiB TLS buffer from its accept, with no limit on how many: 2,000
slow clients took the RSS to 593 MB (the Deployment's limit is 192Mi). Now connections are counted
from the TCP accept: past ``--max-connections-per-client`` or ``--max-connections`` a new one is
closed before any TLS work, unless another gives way (a heavier client's oldest idle one, or one
older than ``--slow-body-evict-after``). No timing is asserted: whether the server closed a socket,
answers, log events. The RSS under 2,000 slow clients is printed by
``bench/webhook.py --only connections``.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetsched.webhook.testing import (
    SlowClients,
    WebhookProcess,
    a_policy,
    a_review,
    free_port,
    make_certificates,
)
from tests.component.webhook.test_hostile_peers import PATH, log_events


def _webhook(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> Iterator[WebhookProcess]:
    cert_dir: Path = tmp_path_factory.mktemp(name)
    make_certificates(cert_dir)
    with WebhookProcess(cert_dir, probe_port=free_port(), extra_args=args) as process:
        yield process


@pytest.fixture
def tight(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    """Four connections, three per client, no eviction by age within a test, a slow handshake allowed."""
    yield from _webhook(tmp_path_factory, "conn-tight", "--max-connections", "4",
                        "--max-connections-per-client", "3", "--slow-body-evict-after", "600",
                        "--header-timeout", "60")


def raw_from(webhook: WebhookProcess, source: str) -> socket.socket:
    """A TCP connection that has not started TLS."""
    return socket.create_connection(("127.0.0.1", webhook.port), timeout=10, source_address=(source, 0))


def waiting_for_hello(sock: socket.socket, within: float = 1.0) -> bool:
    """True while the server keeps the connection open waiting for our ClientHello; False when it
    has closed it (EOF or reset) without a byte of TLS."""
    sock.settimeout(within)
    try:
        data = sock.recv(1)
    except TimeoutError:
        return True
    except OSError:
        return False
    assert data == b"", f"the server sent {data!r} before our ClientHello"
    return False


def review_from(webhook: WebhookProcess, uid: str, source: str) -> dict[str, Any]:
    conn = http.client.HTTPSConnection("127.0.0.1", webhook.port, context=webhook.client_context(),
                                       timeout=30, source_address=(source, 0))
    try:
        conn.request("POST", PATH, body=json.dumps(a_review(a_policy({}), uid=uid)).encode(),
                     headers={"Content-Type": "application/json"})
        return dict(json.loads(conn.getresponse().read())["response"])
    finally:
        conn.close()


def refusals(webhook: WebhookProcess, reason: str, within: float = 10) -> list[dict[str, Any]]:
    deadline = time.monotonic() + within
    while True:
        events = [e for e in log_events(webhook)[0]
                  if e.get("event") == "connection_refused" and e.get("reason") == reason]
        if events or time.monotonic() > deadline:
            return events
        time.sleep(0.1)


def test_past_its_share_a_clients_connection_is_closed_before_the_handshake(tight: WebhookProcess) -> None:
    held = [raw_from(tight, "127.0.0.2") for _ in range(3)]
    try:
        assert all(waiting_for_hello(s) for s in held)  # admitted: the server waits for TLS
        with raw_from(tight, "127.0.0.2") as fourth:
            assert not waiting_for_hello(fourth)  # closed without a byte of TLS
        assert all(waiting_for_hello(s, 0.2) for s in held), "a held connection was closed instead"
        # another address still gets in (the total, 4, has room for one more)
        got = review_from(tight, "other", "127.0.0.3")
        assert got["allowed"] is True and got["uid"] == "other"
    finally:
        for s in held:
            s.close()
    events = refusals(tight, "too_many_connections_from_client")
    assert events and "--max-connections-per-client" in events[0]["message"]
    assert events[0]["client"] == "127.0.0.2"


def test_past_the_total_the_heaviest_client_gives_its_oldest_connection_up(tight: WebhookProcess) -> None:
    heavy = [raw_from(tight, "127.0.0.2") for _ in range(3)]
    light = raw_from(tight, "127.0.0.3")
    try:
        assert all(waiting_for_hello(s) for s in (*heavy, light))  # all four slots taken
        got = review_from(tight, "newcomer", "127.0.0.4")  # holds none: it takes the heaviest's oldest
        assert got["allowed"] is True and got["uid"] == "newcomer"
        assert not waiting_for_hello(heavy[0], 5)
        assert all(waiting_for_hello(s, 0.2) for s in (*heavy[1:], light))
        # full again; the heaviest client (two) finds no heavier one and nothing past the eviction
        # age: its new connection is refused, and nobody else's is closed for it
        with raw_from(tight, "127.0.0.5") as filler, raw_from(tight, "127.0.0.2") as third:
            assert not waiting_for_hello(third)
            assert all(waiting_for_hello(s, 0.2) for s in (*heavy[1:], light, filler))
    finally:
        for s in (*heavy, light):
            s.close()
    assert refusals(tight, "too_many_connections")


def test_a_connection_older_than_the_eviction_age_gives_way_to_its_own_client(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    for webhook in _webhook(tmp_path_factory, "conn-age", "--max-connections-per-client", "2",
                            "--slow-body-evict-after", "0.2", "--header-timeout", "60"):
        held = [raw_from(webhook, "127.0.0.2") for _ in range(2)]
        try:
            assert all(waiting_for_hello(s, 0.5) for s in held)  # and now older than 0.2 s
            got = review_from(webhook, "same-client", "127.0.0.2")
            assert got["allowed"] is True
            assert not waiting_for_hello(held[0], 5)
        finally:
            for s in held:
                s.close()


def test_valid_reviews_are_answered_under_more_slow_clients_than_connections(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    for webhook in _webhook(tmp_path_factory, "conn-flood", "--max-connections", "16",
                            "--max-connections-per-client", "8"):
        crowds = [SlowClients(webhook.port, webhook.client_context(), 12, slow=slow, source=source, retry=0.2)
                  for slow, source in (("headers", "127.0.1.1"), ("handshake", "127.0.1.2"),
                                       ("body", "127.0.1.3"))]
        for crowd in crowds:
            crowd.__enter__()
        try:
            time.sleep(1.5)  # 36 slow clients for 16 connections: refusals and evictions under way
            answers = [review_from(webhook, f"flood-{i}", "127.0.0.1") for i in range(10)]
        finally:
            for crowd in crowds:
                crowd.__exit__(None, None, None)
        assert [a["allowed"] for a in answers] == [True] * 10
        # 12 from each address for 8 a client: some were closed before their handshake
        assert refusals(webhook, "too_many_connections_from_client")
