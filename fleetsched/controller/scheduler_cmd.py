"""``fleetsched scheduler``: the scheduler operator's command line, HTTP endpoints and lifecycle.

Flags follow karmada-scheduler where it has one (``--scheduler-name``, ``--plugins``,
``--enable-scheduler-estimator``, ``--scheduler-estimator-timeout``, ``--kube-api-qps``,
``--kube-api-burst``, ``--leader-elect*``, ``--metrics-bind-address``,
``--health-probe-bind-address``); ``--workers`` is ours (Karmada has one worker).

Endpoints: ``/healthz`` (the process is alive), ``/readyz`` (caches synced and, with leader
election, holding the Lease), ``/metrics`` (Prometheus). SIGTERM/SIGINT stop taking new work,
finish in-flight writes, release the Lease and exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import uuid
from typing import Any

import structlog
from aiohttp import web

from fleetsched.controller import logs, metrics
from fleetsched.controller.decision import DEFAULT_SCHEDULER_NAME
from fleetsched.controller.kube import KubeClient, load_connection
from fleetsched.controller.leader import LeaderElectionConfig
from fleetsched.controller.operator import OperatorConfig, SchedulerOperator

log = structlog.get_logger("fleetsched.scheduler")


def _duration(text: str) -> float:
    """Go-style durations as Karmada's flags use (``3s``, ``500ms``, ``1m``); bare numbers are seconds."""
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for suffix in ("ms", "s", "m", "h"):
        if text.endswith(suffix):
            try:
                return float(text[: -len(suffix)]) * units[suffix]
            except ValueError:
                break
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (use e.g. 3s, 500ms)") from None


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "1", "yes"):
        return True
    if lowered in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (use true or false)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", help="kubeconfig of the Karmada control plane (in-cluster when absent)"
    )
    parser.add_argument(
        "--scheduler-name",
        default=DEFAULT_SCHEDULER_NAME,
        help="only bindings whose spec.schedulerName matches are scheduled (default %(default)s)",
    )
    parser.add_argument(
        "--workers", type=int, default=32, help="concurrent scheduling workers (default %(default)s)"
    )
    parser.add_argument(
        "--kube-api-qps",
        type=float,
        default=500.0,
        help="client-side QPS limit for API writes; 0 disables (default %(default)s)",
    )
    parser.add_argument(
        "--kube-api-burst", type=int, default=1000, help="burst for --kube-api-qps (default %(default)s)"
    )
    parser.add_argument(
        "--plugins",
        default="*",
        help="scheduler plugins: '*' all in-tree, '-Name' disables one (default %(default)s)",
    )
    parser.add_argument(
        "--enable-empty-workload-propagation", type=_bool, nargs="?", const=True, default=False
    )
    parser.add_argument(
        "--enable-scheduler-estimator",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        help="ask each member's accurate estimator (gRPC) as well as the general one",
    )
    parser.add_argument(
        "--scheduler-estimator-timeout",
        type=_duration,
        default=3.0,
        help="deadline for one binding's estimator calls (default 3s)",
    )
    parser.add_argument("--scheduler-estimator-port", type=int, default=10352)
    parser.add_argument("--scheduler-estimator-ca-file", help="CA of the estimators' serving certificates")
    parser.add_argument("--scheduler-estimator-cert-file", help="client certificate for the estimators")
    parser.add_argument("--scheduler-estimator-key-file", help="client key for the estimators")
    parser.add_argument(
        "--insecure-skip-estimator-verify",
        action="store_true",
        help="TLS to the estimators without verifying their host names",
    )
    parser.add_argument("--scheduler-estimator-service-prefix", default="karmada-scheduler-estimator")
    parser.add_argument("--scheduler-estimator-service-namespace", default="karmada-system")
    parser.add_argument(
        "--leader-elect",
        type=_bool,
        nargs="?",
        const=True,
        default=True,
        help="use a coordination.k8s.io Lease so only one replica schedules (default true)",
    )
    parser.add_argument("--leader-elect-resource-name", default="fleetsched-scheduler")
    parser.add_argument("--leader-elect-resource-namespace", default="karmada-system")
    parser.add_argument("--leader-elect-lease-duration", type=_duration, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=_duration, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=_duration, default=2.0)
    parser.add_argument("--metrics-bind-address", default=":8080", help="'0' disables (default %(default)s)")
    parser.add_argument(
        "--health-probe-bind-address", default=":10351", help="'0' disables (default %(default)s)"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def _split_address(address: str) -> tuple[str, int] | None:
    if address in ("0", ""):
        return None
    host, _, port = address.rpartition(":")
    return (host or "0.0.0.0"), int(port)


def _http_app(operator: SchedulerOperator, *, health: bool, metrics_enabled: bool) -> web.Application:
    app = web.Application()

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        ok, why = operator.ready()
        return web.Response(text=why, status=200 if ok else 503)

    async def metrics_handler(_: web.Request) -> web.Response:
        return web.Response(body=metrics.exposition(), content_type="text/plain", charset="utf-8")

    if health:
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
    if metrics_enabled:
        app.router.add_get("/metrics", metrics_handler)
    return app


async def _serve(args: argparse.Namespace) -> int:
    connection = load_connection(args.kubeconfig)
    client = KubeClient(
        connection,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        user_agent="fleetsched-scheduler",
        field_manager="fleetsched-scheduler",
    )
    from fleetsched.scheduler import Scheduler, Settings
    from fleetsched.scheduler.framework import PluginSelectionError

    estimators: list[Any] = []
    accurate: Any = None
    run_core = None
    if args.enable_scheduler_estimator:
        try:
            from fleetsched.controller.estimation import accurate_estimator
        except ImportError as exc:
            log.error(
                "invalid_flag",
                flag="--enable-scheduler-estimator",
                error=f"the accurate estimator client is not available: {exc}",
            )
            await client.close()
            return 2
        accurate = await accurate_estimator(client, args)
        estimators.append(accurate)
        run_core = asyncio.to_thread  # the estimator blocks on gRPC: keep the event loop free
    try:
        scheduler = Scheduler(
            settings=Settings(
                plugins=args.plugins, enable_empty_workload_propagation=args.enable_empty_workload_propagation
            ),
            estimators=estimators,
        )
    except PluginSelectionError as exc:
        log.error("invalid_flag", flag="--plugins", error=str(exc))
        await client.close()
        return 2
    election = None
    if args.leader_elect:
        identity = f"{socket.gethostname()}_{uuid.uuid4()}"
        election = LeaderElectionConfig(
            name=args.leader_elect_resource_name,
            namespace=args.leader_elect_resource_namespace,
            identity=identity,
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
        )
    operator = SchedulerOperator(
        client=client,
        connection=connection,
        scheduler=scheduler,
        run_core=run_core,
        accurate=accurate,
        config=OperatorConfig(
            scheduler_name=args.scheduler_name, workers=max(args.workers, 1), leader_election=election
        ),
    )

    runners: list[web.AppRunner] = []
    health_address = _split_address(args.health_probe_bind_address)
    metrics_address = _split_address(args.metrics_bind_address)
    if health_address is not None and health_address == metrics_address:
        groups = [(health_address, True, True)]
    else:
        groups = [
            (a, h, m)
            for a, h, m in ((health_address, True, False), (metrics_address, False, True))
            if a is not None
        ]
    for address, health, metrics_enabled in groups:
        runner = web.AppRunner(
            _http_app(operator, health=health, metrics_enabled=metrics_enabled), access_log=None
        )
        await runner.setup()
        await web.TCPSite(runner, address[0], address[1]).start()
        runners.append(runner)
        log.info(
            "http_listening", address=f"{address[0]}:{address[1]}", health=health, metrics=metrics_enabled
        )

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "scheduler_starting",
        scheduler_name=args.scheduler_name,
        workers=args.workers,
        leader_elect=args.leader_elect,
        pid=os.getpid(),
    )
    try:
        code = await operator.run(stop)
    finally:
        for runner in runners:
            with contextlib.suppress(Exception):
                await runner.cleanup()
        await client.close()
        if accurate is not None:
            accurate.close()
    log.info("scheduler_stopped", exit_code=code)
    return code


def run(args: argparse.Namespace) -> int:
    logs.configure(args.log_level)
    try:
        return asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return 0
