"""Slow clients against the webhook's capacity, over real HTTPS (issue 23, finding 1).

A body arriving a byte at a time used to hold one of the 64 in-flight slots until the body
timeout: with 64 such clients, 39 of 40 valid reviews were refused with 429 while ``/readyz``
said 200. Now a body being received holds a reading slot, the oldest slow body gives its slot
to a new request, one client address cannot take every slot, and ``/readyz`` fails only while
requests are refused and no slot is freed. No timing is asserted: counts of answers, codes and
log events.
"""

from __future__ import annotations

import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetsched.webhook.testing import SlowClients, WebhookProcess, free_port, make_certificates
from tests.component.webhook.test_hostile_peers import (
    closed_by_server,
    headers,
    late_review,
    read_response,
    small_review,
    wait_for_events,
)

VALID_REVIEWS = 40


def _webhook(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str) -> Iterator[WebhookProcess]:
    cert_dir: Path = tmp_path_factory.mktemp(name)
    make_certificates(cert_dir)
    with WebhookProcess(cert_dir, probe_port=free_port(), extra_args=args) as process:
        yield process


@pytest.fixture(scope="module")
def defaults(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    """The webhook as installed: 64 in flight, 128 bodies reading, 64 per client, eviction after 1 s."""
    yield from _webhook(tmp_path_factory, "slow-defaults")


@pytest.fixture
def saturable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookProcess]:
    """Three reading slots, two per client, and no eviction (nor a body timeout) within a test."""
    yield from _webhook(tmp_path_factory, "slow-saturable", "--max-requests-reading", "3",
                        "--max-requests-reading-per-client", "2", "--slow-body-evict-after", "600",
                        "--body-timeout", "600", "--readiness-saturation-window", "0.5")


def tls_from(webhook: WebhookProcess, source: str) -> ssl.SSLSocket:
    raw = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    raw.settimeout(10)
    raw.bind((source, 0))
    raw.connect(("127.0.0.1", webhook.port))
    return webhook.client_context().wrap_socket(raw, server_hostname="127.0.0.1")


def stalled(webhook: WebhookProcess, source: str = "127.0.0.1") -> ssl.SSLSocket:
    """A review whose headers arrived and whose body never will."""
    sock = tls_from(webhook, source)
    sock.sendall(headers(1000) + b'{"request":')
    return sock


def readyz(webhook: WebhookProcess, *, probe: bool) -> tuple[int, str]:
    url = (f"http://127.0.0.1:{webhook.probe_port}/readyz" if probe else f"{webhook.base_url}/readyz")
    context = None if probe else webhook.client_context()
    try:
        with urllib.request.urlopen(url, context=context, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def answered(webhook: WebhookProcess, count: int, tag: str) -> tuple[int, list[dict[str, Any]]]:
    """How many of ``count`` valid reviews (sent one after another, each on a new connection, as an
    API server does when its pool is busy) were allowed, and the answers that were not."""
    allowed, refused = 0, []
    for i in range(count):
        got = small_review(webhook, f"{tag}-{i}")["response"]
        if got["allowed"] is True:
            allowed += 1
        else:
            refused.append(got)
    return allowed, refused


@pytest.mark.parametrize("count", [64, 128])
def test_valid_reviews_are_answered_under_slow_clients(defaults: WebhookProcess, count: int) -> None:
    with SlowClients(defaults.port, defaults.client_context(), count) as slow:
        slow.wait_held()
        # A standing attack: the slow bodies have been arriving for longer than the eviction age
        # (1 s). From the API server's own address they fill that address's share (64), and 128 fill
        # every reading slot: each valid review then takes the slot of the oldest.
        time.sleep(1.5)
        allowed, refused = answered(defaults, VALID_REVIEWS, f"under-{count}")
        still_held = slow.held
        ready = readyz(defaults, probe=True)
    print(f"\nvalid reviews answered under {count} slow clients: {allowed} of {VALID_REVIEWS} "
          f"(slow connections opened {slow.opened}, ended {slow.ended})")
    assert allowed == VALID_REVIEWS, refused[:3]
    assert still_held >= count // 2, "the slow clients were no longer in place"
    assert ready[0] == 200, ready  # serving every valid review: ready, honestly


def test_a_body_past_the_eviction_age_gives_its_slot_to_a_new_request(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    for webhook in _webhook(tmp_path_factory, "slow-evict", "--max-requests-reading", "3",
                            "--slow-body-evict-after", "0.2", "--body-timeout", "600"):
        socks = [stalled(webhook) for _ in range(3)]
        try:
            time.sleep(0.5)  # all three are past the eviction age
            got = late_review(webhook, "newcomer")["response"]  # its body needs a slot too
            assert got["allowed"] is True and got["uid"] == "newcomer"
            cut = [s for s in socks if closed_by_server(s, within=3)]
        finally:
            for s in socks:
                s.close()
        assert len(cut) == 1, "exactly one slow body gave its slot up"
        events = wait_for_events(webhook, "body_evicted", 1)
        assert events and events[0]["code"] == 408 and "--slow-body-evict-after" in events[0]["message"]


def test_one_client_address_cannot_take_every_slot(saturable: WebhookProcess) -> None:
    socks = [stalled(saturable, "127.0.0.2") for _ in range(2)]
    try:
        time.sleep(0.3)
        with tls_from(saturable, "127.0.0.2") as third:
            third.sendall(headers(1000) + b'{"request":{"uid":"third"')
            status, got = read_response(third)
        assert status == 200 and got["response"]["status"]["code"] == 429
        assert "--max-requests-reading-per-client" in got["response"]["status"]["message"]
        # another address still finds the slot the first one may not take
        assert late_review(saturable, "other-client")["response"]["allowed"] is True
    finally:
        for s in socks:
            s.close()
    assert wait_for_events(saturable, "too_many_bodies_from_client", 1)


def test_readyz_fails_only_while_requests_are_refused_and_no_slot_frees(saturable: WebhookProcess) -> None:
    assert readyz(saturable, probe=False)[0] == 200
    socks = [stalled(saturable, source) for source in ("127.0.0.2", "127.0.0.2", "127.0.0.3")]
    try:
        time.sleep(0.3)
        assert readyz(saturable, probe=True)[0] == 200, "full but refusing nothing yet: ready"
        got = late_review(saturable, "refused", source="127.0.0.4")["response"]
        assert got["status"]["code"] == 429 and "--max-requests-reading" in got["status"]["message"]
        deadline = time.monotonic() + 30
        while readyz(saturable, probe=True)[0] == 200:  # the window (0.5 s) passes
            assert time.monotonic() < deadline, "/readyz never reported the saturation"
            time.sleep(0.1)
        for probe in (True, False):
            status, text = readyz(saturable, probe=probe)
            assert status == 503 and "--max-requests-reading" in text, (status, text)
        with urllib.request.urlopen(f"http://127.0.0.1:{saturable.probe_port}/healthz", timeout=10) as live:
            assert live.status == 200, "liveness is not readiness: a saturated server is not restarted"
    finally:
        for s in socks:
            s.close()
    deadline = time.monotonic() + 30
    while readyz(saturable, probe=True)[0] != 200:  # the slots are freed: ready again
        assert time.monotonic() < deadline, "/readyz stayed 503 after the slots were freed"
        time.sleep(0.1)
    assert small_review(saturable, "after")["response"]["allowed"] is True
