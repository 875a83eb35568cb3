"""The policy controller's watches: kopf, through its public API only.

kopf is the framework the policy controller is written with (the scheduler and the estimator use
the reflector in ``fleetsched.kube.watch``). Every handler is a raw event handler feeding the
queue; nothing is persisted on the watched objects, no diff base is kept and kopf's own peering,
posting and scanning are off: the settings below say so through ``kopf.OperatorSettings``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import kopf
import structlog

from fleetsched.kube import auth
from fleetsched.kube.client import Connection

log = structlog.get_logger("fleetsched.controller")

RawEventFn = Callable[[Any], Awaitable[None]]


class _NoProgressStorage(kopf.ProgressStorage):
    """kopf state is never persisted: there is nothing to persist for raw event handlers."""

    def fetch(self, **_: Any) -> Any:
        return None

    def store(self, **_: Any) -> None:
        return None

    def purge(self, **_: Any) -> None:
        return None

    def touch(self, **_: Any) -> None:
        return None

    def clear(self, *, essence: Any) -> Any:
        return essence


class _NoDiffBaseStorage(kopf.DiffBaseStorage):
    """No diff base either: raw event handlers never look at diffs, so none is built.

    kopf's default ``build()`` deep-copies every object on every watch event; with no change
    handlers registered the result is never used (it was 13% of the operator's CPU in the bench).
    """

    def build(self, **_: Any) -> Any:
        return {}

    def fetch(self, **_: Any) -> Any:
        return None

    def store(self, **_: Any) -> None:
        return None


def kopf_settings() -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    settings.persistence.progress_storage = _NoProgressStorage()
    settings.persistence.diffbase_storage = _NoDiffBaseStorage()
    settings.posting.enabled = False
    settings.peering.standalone = True
    settings.peering.mandatory = False
    settings.watching.connect_timeout = 10
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.inactivity_timeout = 360
    settings.batching.batch_window = 0.001
    settings.networking.request_timeout = 60
    settings.scanning.disabled = True
    # kopf would SIGKILL the process if its tasks ended without the stop flag; we stop it ourselves.
    settings.process.ultimate_exiting_timeout = None
    return settings


def on_raw_event(
    registry: kopf.OperatorRegistry, group: str, version: str, plural: str, fn: RawEventFn
) -> None:
    """Watch ``group/version/plural`` and hand each raw watch event (``{"type", "object"}``) to
    ``fn``: a kopf event handler (``kopf.on.event``); kopf logs a handler that raises and goes on
    watching."""

    @kopf.on.event(group, version, plural, registry=registry)
    async def handler(event: Any, **_: Any) -> None:
        await fn(event)


def kopf_registry(connection: Connection) -> kopf.OperatorRegistry:
    """A registry whose only handler so far logs kopf in with ``connection``'s current credentials:
    kopf calls it again at a plugin credential's expiry and after a 401 (a token file read again,
    a plugin run again)."""
    registry = kopf.OperatorRegistry()
    kept: list[auth.Credentials] = []  # made at the first login
    used: list[str | None] = []

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.ConnectionInfo:
        if not kept:
            kept.append(auth.Credentials(connection))
            if connection.tls_server_name:
                log.warning("kopf_ignores_tls_server_name", tls_server_name=connection.tls_server_name,
                            why="kopf checks the server's certificate against the server's own host name")
        credentials = kept[0]
        if used:  # called again: what kopf had expired or was refused
            await credentials.renew(401, used[-1])
        authorization = await credentials.authorization()
        used.append(authorization)
        scheme, _, token = (authorization or "").partition(" ")
        files = credentials.certificate_files()
        basic = connection.basic_auth if scheme == "Basic" else None
        return kopf.ConnectionInfo(
            server=connection.server,
            ca_path=connection.ca_path,
            insecure=connection.insecure,
            certificate_path=files[0] if files else None,
            private_key_path=files[1] if files else None,
            token=token if scheme == "Bearer" else None,
            scheme="Bearer" if scheme == "Bearer" else None,
            username=basic[0] if basic else None,
            password=basic[1] if basic else None,
            proxy_url=connection.proxy_url,
            expiration=credentials.expiration(),
        )

    return registry


def run_kopf(registry: kopf.OperatorRegistry, *, stop: Any, ready: Any) -> Awaitable[Any]:
    """kopf watching every registered resource cluster-wide until ``stop``; ``ready`` once it does."""
    return kopf.operator(
        registry=registry,
        settings=kopf_settings(),
        clusterwide=True,
        standalone=True,
        stop_flag=stop,
        ready_flag=ready,
    )
