"""The HTTPS edge of the webhook: aiohttp routes around ``review.handle``.

Decode, call one pure function, encode: every admission path reads the body (bounded), passes
it to ``review.handle`` and writes the AdmissionReview it returns with HTTP 200, as
controller-runtime does (the outcome, including errors, is in ``response.status``). Health and
Prometheus metrics are served here too. The serving certificate is re-read when its files
change, so a rotated Secret needs no restart.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import ssl
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import prometheus_client
import structlog
from aiohttp import web

from fleetsched.webhook import conversion, review

__all__ = ["Metrics", "ServerConfig", "build_app", "build_probe_app", "ssl_context", "watch_certificate"]

log = structlog.get_logger("fleetsched.webhook")

OFFLOAD_BYTES = 256 * 1024

TLS_VERSIONS = {
    "1.0": ssl.TLSVersion.TLSv1,
    "1.1": ssl.TLSVersion.TLSv1_1,
    "1.2": ssl.TLSVersion.TLSv1_2,
    "1.3": ssl.TLSVersion.TLSv1_3,
}


@dataclass(frozen=True, slots=True)
class ServerConfig:
    cert_file: Path
    key_file: Path
    tls_min_version: str = "1.3"
    settings: review.Settings = field(default_factory=review.Settings)


class Metrics:
    """controller-runtime's webhook metric names, so existing dashboards keep working."""

    def __init__(self, registry: prometheus_client.CollectorRegistry | None = None) -> None:
        self.registry = registry or prometheus_client.CollectorRegistry()
        self.requests = prometheus_client.Counter(
            "controller_runtime_webhook_requests_total", "Admission requests by webhook path and code.",
            ["webhook", "code"], registry=self.registry)
        self.latency = prometheus_client.Histogram(
            "controller_runtime_webhook_latency_seconds", "Time to answer an admission request.",
            ["webhook"], registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5))
        self.in_flight = prometheus_client.Gauge(
            "controller_runtime_webhook_requests_in_flight", "Admission requests being answered.",
            ["webhook"], registry=self.registry)
        self.decisions = prometheus_client.Counter(
            "fleetsched_webhook_admission_decisions_total", "Admission answers by path and decision.",
            ["webhook", "allowed"], registry=self.registry)

    def render(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


def ssl_context(config: ServerConfig) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = TLS_VERSIONS[config.tls_min_version]
    context.load_cert_chain(str(config.cert_file), str(config.key_file))
    return context


async def watch_certificate(context: ssl.SSLContext, config: ServerConfig, *, interval: float = 10.0) -> None:
    """Reload the key pair into the live context when either file changes."""

    def stamp() -> tuple[float, float]:
        return (os.stat(config.cert_file).st_mtime, os.stat(config.key_file).st_mtime)

    last = stamp()
    while True:
        await asyncio.sleep(interval)
        try:
            current = stamp()
            if current != last:
                context.load_cert_chain(str(config.cert_file), str(config.key_file))
                last = current
                log.info("serving_certificate_reloaded", cert=str(config.cert_file))
        except (OSError, ssl.SSLError) as exc:
            log.warning("serving_certificate_reload_failed", error=str(exc))


async def _read_bounded(request: web.Request, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the body: enough to know it is too large."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = await request.content.read(min(65536, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _admission_handler(path: str, config: ServerConfig, metrics: Metrics
                       ) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handler(request: web.Request) -> web.Response:
        started = time.perf_counter()
        metrics.in_flight.labels(path).inc()
        try:
            body = await _read_bounded(request, review.MAX_REQUEST_BYTES)
            content_type = request.headers.get("Content-Type")
            if len(body) > OFFLOAD_BYTES:
                # A large body takes long enough to decode and check that the loop should keep
                # answering other (small) requests meanwhile.
                call = functools.partial(review.handle, path, body, content_type, settings=config.settings)
                outcome = await asyncio.get_running_loop().run_in_executor(None, call)
            else:
                outcome = review.handle(path, body, content_type, settings=config.settings)
            payload = json.dumps(outcome.review, separators=(",", ":"), ensure_ascii=False).encode()
        finally:
            metrics.in_flight.labels(path).dec()
        elapsed = time.perf_counter() - started
        metrics.requests.labels(path, str(outcome.code)).inc()
        metrics.latency.labels(path).observe(elapsed)
        metrics.decisions.labels(path, str(outcome.allowed).lower()).inc()
        event = log.info if outcome.code < 500 else log.error
        event("admission_reviewed", duration_ms=round(elapsed * 1000, 3), bytes=len(body),
              message=outcome.message[:500], **outcome.log)
        response = web.Response(body=payload, content_type="application/json")
        if outcome.code == 413:
            response.force_close()  # the rest of an oversized body is not worth reading
        return response

    return handler


async def _convert(request: web.Request) -> web.Response:
    body = await _read_bounded(request, review.MAX_REQUEST_BYTES)
    if len(body) > review.MAX_REQUEST_BYTES:
        return web.Response(status=413, text="request entity is too large")
    status, answer = conversion.handle(body, request.headers.get("Content-Type"))
    response = answer.get("response", {})
    log.info("conversion_reviewed", uid=response.get("uid", ""),
             objects=len(response.get("convertedObjects", [])),
             result=response.get("result", {}).get("status"))
    return web.json_response(answer, status=status)


async def _ok(_: web.Request) -> web.Response:
    return web.Response(text="ok")


def _add_health(app: web.Application) -> None:
    for path in ("/readyz", "/readyz/", "/healthz", "/healthz/"):
        app.router.add_get(path, _ok)


def build_app(config: ServerConfig, metrics: Metrics | None = None) -> web.Application:
    """The HTTPS application: admission paths plus health (Karmada serves /readyz on this port)."""
    metrics = metrics or Metrics()
    app = web.Application(client_max_size=review.MAX_REQUEST_BYTES + 1)
    for path in review.ENDPOINTS:
        app.router.add_route("*", path, _admission_handler(path, config, metrics))
    app.router.add_post("/convert", _convert)
    _add_health(app)
    app["metrics"] = metrics
    return app


def build_probe_app(metrics: Metrics | None, *, health: bool) -> web.Application:
    """A plain-HTTP application for the metrics and/or health-probe address."""
    app = web.Application()
    if health:
        _add_health(app)
    if metrics is not None:
        async def serve_metrics(_: web.Request) -> web.Response:
            return web.Response(body=metrics.render(),
                                headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})

        app.router.add_get("/metrics", serve_metrics)
    return app
