"""``fleetsched controller``: the policy controller's command line, HTTP endpoints and lifecycle.

Flags follow the scheduler command's (kubeconfig, QPS, leader election, metrics and health
addresses) plus Karmada's ``--skipped-propagating-namespaces`` and ``--feature-gates`` for the gates
the detector honours, ``--resources`` for the template kinds to watch, and ``--standalone`` for an
install without Karmada's binding controller (the manifests turn it on; beside Karmada it stays off).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import uuid

import structlog
from aiohttp import web

from fleetsched.controller import logs
from fleetsched.controller.kube import KubeClient, load_connection
from fleetsched.controller.leader import LeaderElectionConfig
from fleetsched.controller.policy_operator import (
    DEFAULT_RESOURCES,
    KNOWN_RESOURCES,
    PolicyController,
    PolicyControllerConfig,
)
from fleetsched.controller.scheduler_cmd import _bool, _duration, _http_app, _split_address
from fleetsched.detector import FeatureGates

log = structlog.get_logger("fleetsched.controller")

_GATES = {
    "PriorityBasedScheduling": "priority_based_scheduling",
    "WorkloadAffinity": "workload_affinity",
    "ResourceQuotaEstimate": "resource_quota_estimate",
    "PolicyPreemption": "policy_preemption",
}


def _gates(text: str) -> FeatureGates:
    values: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep or value.lower() not in ("true", "false"):
            raise argparse.ArgumentTypeError(f"--feature-gates: {item!r}: expected Name=true|false")
        if name not in _GATES:
            raise argparse.ArgumentTypeError(
                f"--feature-gates: unknown gate {name!r} (known: {', '.join(sorted(_GATES))})"
            )
        values[_GATES[name]] = value.lower() == "true"
    return FeatureGates(**values)


def _resources(text: str) -> tuple[str, ...]:
    names = tuple(filter(None, (part.strip() for part in text.split(","))))
    unknown = [n for n in names if n not in KNOWN_RESOURCES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"--resources: unknown {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_RESOURCES))})"
        )
    return names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig", help="kubeconfig of the Karmada control plane (in-cluster when absent)"
    )
    parser.add_argument(
        "--resources",
        type=_resources,
        default=DEFAULT_RESOURCES,
        help="comma-separated resource templates to watch, as plural.group (default: common workloads "
        "and their dependencies, without pods)",
    )
    parser.add_argument("--workers", type=int, default=2, help="concurrent workers (default %(default)s)")
    parser.add_argument(
        "--skipped-propagating-namespaces",
        default="kube-.*",
        help="comma-separated regular expressions of namespaces never propagated (default %(default)s)",
    )
    parser.add_argument(
        "--feature-gates",
        type=_gates,
        default=FeatureGates(),
        help="e.g. PolicyPreemption=true,WorkloadAffinity=true (Karmada's defaults otherwise)",
    )
    parser.add_argument(
        "--standalone",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        help="no Karmada binding controller runs: remove its finalizer (karmada.io/binding-controller, "
        "karmada.io/cluster-resource-binding-controller) from terminating bindings this controller "
        "derived, so deleting a workload deletes its binding. Keep off beside Karmada, whose binding "
        "controller removes it after cleaning up member clusters; ignored, with a warning, where the "
        "control plane serves Karmada's works.work.karmada.io (default %(default)s)",
    )
    parser.add_argument("--kube-api-qps", type=float, default=40.0)
    parser.add_argument("--kube-api-burst", type=int, default=60)
    parser.add_argument("--leader-elect", type=_bool, nargs="?", const=True, default=True)
    parser.add_argument("--leader-elect-resource-name", default="fleetsched-controller")
    parser.add_argument("--leader-elect-resource-namespace", default="karmada-system")
    parser.add_argument("--leader-elect-lease-duration", type=_duration, default=15.0)
    parser.add_argument("--leader-elect-renew-deadline", type=_duration, default=10.0)
    parser.add_argument("--leader-elect-retry-period", type=_duration, default=2.0)
    parser.add_argument("--metrics-bind-address", default=":8081", help="'0' disables (default %(default)s)")
    parser.add_argument(
        "--health-probe-bind-address", default=":10358", help="'0' disables (default %(default)s)"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


async def _serve(args: argparse.Namespace) -> int:
    connection = load_connection(args.kubeconfig)
    client = KubeClient(
        connection,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        user_agent="fleetsched-controller",
        field_manager="fleetsched-controller",
    )
    election = None
    if args.leader_elect:
        election = LeaderElectionConfig(
            name=args.leader_elect_resource_name,
            namespace=args.leader_elect_resource_namespace,
            identity=f"{socket.gethostname()}_{uuid.uuid4()}",
            lease_duration=args.leader_elect_lease_duration,
            renew_deadline=args.leader_elect_renew_deadline,
            retry_period=args.leader_elect_retry_period,
        )
    skipped = tuple(filter(None, (p.strip() for p in args.skipped_propagating_namespaces.split(","))))
    controller = PolicyController(
        client=client,
        connection=connection,
        config=PolicyControllerConfig(
            resources=tuple(KNOWN_RESOURCES[name] for name in args.resources),
            workers=max(args.workers, 1),
            gates=args.feature_gates,
            skipped_namespaces=skipped,
            leader_election=election,
            standalone=args.standalone,
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
            _http_app(controller, health=health, metrics_enabled=metrics_enabled),  # type: ignore[arg-type]
            access_log=None,
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
        "controller_starting",
        resources=list(args.resources),
        workers=args.workers,
        leader_elect=args.leader_elect,
        standalone=args.standalone,
        pid=os.getpid(),
    )
    try:
        await controller.run(stop)
    finally:
        for runner in runners:
            with contextlib.suppress(Exception):
                await runner.cleanup()
        await client.close()
    log.info("controller_stopped")
    return 0


def run(args: argparse.Namespace) -> int:
    logs.configure(args.log_level)
    try:
        return asyncio.run(_serve(args))
    except KeyboardInterrupt:
        return 0
