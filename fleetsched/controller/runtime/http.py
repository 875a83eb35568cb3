"""The probe and metrics endpoints both controller commands serve.

``/healthz`` (the process is alive), ``/readyz`` (the controller's ``ready()``: caches synced and,
with leader election, holding the Lease) and ``/metrics`` (Prometheus). The probe and metrics
addresses may be the same (one listener serves all three) or different; ``0`` or empty disables one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

import structlog
from aiohttp import web

from fleetsched.controller.runtime import metrics
from fleetsched.flags import parse_bind_address as split_address

log = structlog.get_logger("fleetsched.controller")

Address = tuple[str, int]


def http_app(
    ready: Callable[[], tuple[bool, str]], *, health: bool, metrics_enabled: bool
) -> web.Application:
    app = web.Application()

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        ok, why = ready()
        return web.Response(text=why, status=200 if ok else 503)

    async def metrics_handler(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), content_type="text/plain", charset="utf-8")

    if health:
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
    if metrics_enabled:
        app.router.add_get("/metrics", metrics_handler)
    return app


def listener_groups(
    health_address: Address | None, metrics_address: Address | None
) -> list[tuple[Address, bool, bool]]:
    """(address, serves probes, serves metrics) per listener: one when both share an address."""
    if health_address is not None and health_address == metrics_address:
        return [(health_address, True, True)]
    return [
        (a, h, m)
        for a, h, m in ((health_address, True, False), (metrics_address, False, True))
        if a is not None
    ]


class ListenError(ValueError):
    """A listener could not be opened (a taken port, an address not on this host): a start-up
    failure reported as one line naming the flag, never a traceback."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(message)
        self.flag = flag


async def start_endpoints(
    ready: Callable[[], tuple[bool, str]], *, health_probe_bind_address: str, metrics_bind_address: str
) -> list[web.AppRunner]:
    """Start the listeners; stop them with ``stop_endpoints``. Raises ``ListenError`` (with the
    listeners opened so far closed) when one cannot be opened."""
    runners: list[web.AppRunner] = []
    groups = listener_groups(split_address(health_probe_bind_address), split_address(metrics_bind_address))
    for address, health, metrics_enabled in groups:
        runner = web.AppRunner(
            http_app(ready, health=health, metrics_enabled=metrics_enabled), access_log=None
        )
        await runner.setup()
        runners.append(runner)
        try:
            await web.TCPSite(runner, address[0], address[1]).start()
        except OSError as exc:
            await stop_endpoints(runners)
            flags = [f for f, on in (("--health-probe-bind-address", health),
                                     ("--metrics-bind-address", metrics_enabled)) if on]
            named, why = " and ".join(flags), os.strerror(exc.errno) if exc.errno else str(exc)
            raise ListenError(named, f"{named} {address[0]}:{address[1]}: cannot listen: {why}") from None
        log.info(
            "http_listening", address=f"{address[0]}:{address[1]}", health=health, metrics=metrics_enabled
        )
    return runners


async def stop_endpoints(runners: list[web.AppRunner]) -> None:
    for runner in runners:
        with contextlib.suppress(Exception):
            await runner.cleanup()
