"""Memory one request may take (issue 14, item 3): measured with tracemalloc, in-process.

The server runs in this process (its loop on a thread, real HTTPS on loopback), so tracemalloc
sees every allocation the request causes: the read buffer, the text, the tree, the review. The
bodies are built before tracing starts. A maximum-size body, whatever its shape, may peak at
no more than three times its size; a smaller one at no more than the decode budget.
"""

from __future__ import annotations

import asyncio
import functools
import http.client
import json
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from fleetsched.webhook import budget, review, server
from fleetsched.webhook.testing import a_policy, a_review, free_port, make_certificates

MAX = review.MAX_REQUEST_BYTES
_HEAD = (b'{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u",'
         b'"operation":"CREATE","object":{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy",'
         b'"metadata":{"name":"p","namespace":"default"},"spec":{},"x":')


def _array(item: bytes) -> Callable[[int], bytes]:
    return lambda n: _HEAD + b"[" + b",".join([item] * n) + b"]}}}"


def _selectors(n: int) -> bytes:
    spec = {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default",
                                   "name": f"n{i}"} for i in range(n)]}
    return json.dumps(a_review(a_policy(spec), uid="u")).encode()


def _tolerations(n: int) -> bytes:
    spec = {"placement": {"clusterTolerations": [{"key": "k", "operator": "Lt"}] * n}}
    return json.dumps(a_review(a_policy(spec), uid="u")).encode()


SHAPES: dict[str, Callable[[int], bytes]] = {
    "selectors": _selectors,
    "tolerations (denied, a message each)": _tolerations,
    "cluster names": lambda n: json.dumps(a_review(a_policy({"placement": {"clusterAffinity": {
        "clusterNames": [f"m{i}" for i in range(n)]}}}), uid="u")).encode(),
    "empty objects": _array(b"{}"),
    "empty arrays": _array(b"[]"),
    "floats": _array(b"1.5"),
    "exponents": _array(b"1e5"),
    "large ints": _array(b"1000"),
    "short strings": _array(b'"ab"'),
    "unique keys": lambda n: _HEAD + b"{" + b",".join(b'"k%d":0' % i for i in range(n)) + b"}}}}",
    "one long string": lambda n: _HEAD + b'"' + b"a" * n + b'"}}}',
    "one long string, non-BMP": lambda n: _HEAD + b'"\xf0\x9f\x98\x80' + b"a" * n + b'"}}}',
}


def sized(make: Callable[[int], bytes], size: int) -> bytes:
    """A body of this shape of at most ``size`` bytes and within 1% of it."""
    one, hundred = len(make(1)), len(make(100))
    n = max(1, int((size - one) / ((hundred - one) / 99)))
    while len(payload := make(n)) > size:
        n = max(1, int(n * 0.995))
    return payload


def traced_peak(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("shape", SHAPES)
def test_the_estimate_bounds_what_handle_takes(shape: str) -> None:
    payload = sized(SHAPES[shape], 256 * 1024)
    estimate = budget.estimate(payload).peak
    unlimited = review.Settings(max_review_memory=1 << 40)
    for path in ("/validate-propagationpolicy", "/mutate-propagationpolicy"):
        buffer = bytearray(payload)
        peak = traced_peak(functools.partial(review.handle, path, buffer, "application/json",
                                             settings=unlimited))
        assert peak <= estimate, f"{path}: {peak} bytes traced, estimated {estimate}"


class InProcessWebhook:
    """``build_app`` + ``serve_https`` on a loop of its own thread, in this process."""

    def __init__(self, cert_dir: Path) -> None:
        self.port = free_port()
        self.config = server.ServerConfig(cert_file=cert_dir / "tls.crt", key_file=cert_dir / "tls.key")
        self.ca = cert_dir / "ca.crt"
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    async def _start(self) -> None:
        metrics = server.Metrics()
        self.runner = web.AppRunner(server.build_app(self.config, metrics), access_log=None,
                                    handle_signals=False)
        await self.runner.setup()
        self.listener = await server.serve_https(self.runner, "127.0.0.1", self.port,
                                                 server.ssl_context(self.config), self.config, metrics)

    async def _stop(self) -> None:
        self.listener.close()
        await self.runner.cleanup()

    def __enter__(self) -> InProcessWebhook:
        self.thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)
        return self

    def __exit__(self, *_: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def post(self, payload: bytes) -> dict[str, Any]:
        import ssl

        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=60,
                                           context=ssl.create_default_context(cafile=str(self.ca)))
        try:
            conn.request("POST", "/validate-propagationpolicy", body=payload,
                         headers={"Content-Type": "application/json"})
            result: dict[str, Any] = json.loads(conn.getresponse().read())
            return result
        finally:
            conn.close()


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessWebhook]:
    cert_dir = tmp_path_factory.mktemp("memory-certs")
    make_certificates(cert_dir)
    with InProcessWebhook(cert_dir) as webhook:
        webhook.post(json.dumps(a_review(a_policy({}))).encode())  # warm: imports, TLS, first allocations
        yield webhook


@pytest.mark.parametrize("shape", ["selectors", "empty objects", "floats", "short strings", "one long string",
                                   "one long string, non-BMP"])
def test_a_maximum_size_body_peaks_within_three_times_its_size(in_process: InProcessWebhook,
                                                               shape: str) -> None:
    payload = sized(SHAPES[shape], MAX)
    answers: list[dict[str, Any]] = []
    peak = traced_peak(lambda: answers.append(in_process.post(payload)))
    assert answers[0]["response"]["uid"] == "u"
    assert peak <= 3 * len(payload), (f"{shape}: {peak / 2**20:.1f} MiB traced for a "
                                      f"{len(payload) / 2**20:.1f} MiB body "
                                      f"(code {answers[0]['response']['status']['code']})")


def test_an_admitted_body_stays_within_the_budget(in_process: InProcessWebhook) -> None:
    limit = review.MAX_REVIEW_MEMORY
    payload = _selectors(1)
    n = 1
    while budget.estimate(_selectors(n * 2)).peak <= limit:  # the largest selector list under the budget
        n *= 2
    payload = _selectors(n)
    answers: list[dict[str, Any]] = []
    peak = traced_peak(lambda: answers.append(in_process.post(payload)))
    assert answers[0]["response"]["allowed"] is True
    assert peak <= limit, f"{peak / 2**20:.1f} MiB traced, budget {limit / 2**20:.1f} MiB"
