"""``fleetsched estimator --cluster-name NAME --kubeconfig FILE``: one member cluster's estimator.

Flags and defaults are Karmada's ``karmada-scheduler-estimator``
(cmd/scheduler-estimator/app/options):
gRPC on ``--server-port`` 10352 (all interfaces), ``/healthz`` on ``--health-probe-bind-address``
``:10351``, ``/metrics`` on ``--metrics-bind-address`` ``:8080`` (one listener when both are equal,
``0`` disables), TLS from ``--grpc-auth-cert-file``/``--grpc-auth-key-file`` with an optional
``--grpc-client-ca-file`` (client certificates required unless ``--insecure-skip-grpc-client-verify``).
We also serve ``/readyz`` (503 until the caches have synced) and the standard gRPC health service.

Deliberate differences: the gRPC port opens at once and answers UNAVAILABLE until synced (Karmada opens
it only after syncing); grpcio cannot enforce a TLS 1.3 minimum on the server, it negotiates 1.3 with
clients that offer it; ``--parallelism`` (Karmada's worker count for one request's per-node loop) is the
number of threads that estimate, a request each, since a request here is one vectorised pass;
profiling flags are accepted and ignored.

Added (fleetsched): ``--max-concurrent-requests`` (RESOURCE_EXHAUSTED beyond it) and the request limits
of :mod:`fleetsched.estimator.limits` (``--max-request-bytes``, ``--max-affinity-terms`` ...;
INVALID_ARGUMENT beyond them).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from pathlib import Path

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from fleetsched import karmada_flags
from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.limits import DEFAULT_LIMITS, FLAGS, RequestLimits
from fleetsched.estimator.plugins.resource_quota import QuotaStore
from fleetsched.estimator.server import Capacity, EstimatorMetrics, ServerTLS, SyncState, serve
from fleetsched.estimator.service import EstimatorService, FeatureGates
from fleetsched.flags import parse_bind_address, parse_feature_gates
from fleetsched.kube.client import Connection

__all__ = ["add_arguments", "run"]

log = structlog.get_logger("fleetsched.estimator")


_LIMIT_HELP = {
    "max_request_bytes": "bytes in one request (gRPC drops 1 MiB more unread)",
    "max_affinity_terms": "nodeSelectorTerms in one node affinity",
    "max_affinity_expressions": "matchExpressions (and matchFields) in one node selector term",
    "max_affinity_values": "values of one node selector requirement",
    "max_affinity_total_expressions": "node affinity expressions in one request, over all its claims",
    "max_node_selector": "nodeSelector entries of one node claim",
    "max_tolerations": "tolerations of one node claim",
    "max_resource_entries": "resourceRequest entries of one replica requirement",
    "max_components": "components of one request or assumed workload",
    "max_assumed_workloads": "assumed workloads of one request",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster-name", required=True,
                        help="name of the member cluster this estimator serves")
    parser.add_argument(
        "--kubeconfig", default="",
        help="kubeconfig of the member cluster (empty: KUBECONFIG, in-cluster, ~/.kube/config)")
    parser.add_argument("--server-port", type=int, default=10352, help="gRPC port (all interfaces)")
    parser.add_argument("--server-bind-address", default="0.0.0.0", help="gRPC listen address (fleetsched)")
    parser.add_argument("--grpc-auth-cert-file", default="", help="server certificate (PEM) for TLS")
    parser.add_argument("--grpc-auth-key-file", default="", help="server private key (PEM) for TLS")
    parser.add_argument("--grpc-client-ca-file", default="", help="CA that signs client certificates")
    parser.add_argument("--insecure-skip-grpc-client-verify", action="store_true",
                        help="do not ask clients for a certificate even when a client CA is given")
    parser.add_argument("--kube-api-qps", type=float, default=20.0, help="QPS to the member API server")
    parser.add_argument("--kube-api-burst", type=int, default=30, help="burst to the member API server")
    parser.add_argument("--parallelism", type=int, default=0,
                        help="threads that estimate, one request each (0 means 16)")
    parser.add_argument("--max-concurrent-requests", type=int, default=Capacity().max_concurrent_requests,
                        help="estimating RPCs admitted at once, computing or waiting for a thread; "
                             "more get RESOURCE_EXHAUSTED (fleetsched)")
    for name, flag in FLAGS.items():
        parser.add_argument(flag, type=int, default=getattr(DEFAULT_LIMITS, name),
                            help=f"most {_LIMIT_HELP[name]}; more is INVALID_ARGUMENT (fleetsched)")
    parser.add_argument("--metrics-bind-address", default=":8080", help="address of /metrics, '0' disables")
    parser.add_argument("--health-probe-bind-address", default=":10351",
                        help="address of /healthz and /readyz, '0' disables")
    parser.add_argument("--feature-gates", default="",
                        help="A=true,B=false; ResourceQuotaEstimate and SchedulingOvercommitProtection "
                             "(both off by default) change the answers")
    parser.add_argument("--log-level", default="info", help="debug, info, warning or error")
    karmada_flags.add_arguments(parser)  # --master: the member API server


def limits_from(args: argparse.Namespace) -> RequestLimits:
    return RequestLimits(**{name: getattr(args, name) for name in FLAGS})


def capacity_from(args: argparse.Namespace) -> Capacity:
    return Capacity(workers=args.parallelism or 16, max_concurrent_requests=args.max_concurrent_requests)


def _validate(args: argparse.Namespace) -> list[str]:
    problems = []
    if not args.cluster_name:
        problems.append("--cluster-name: required")
    if not 0 <= args.server_port <= 65535:
        problems.append(f"--server-port: {args.server_port} must be between 0 and 65535")
    if args.parallelism < 0:
        problems.append(f"--parallelism: {args.parallelism} must not be negative")
    if args.max_concurrent_requests < 1:
        problems.append(f"--max-concurrent-requests: {args.max_concurrent_requests} must be at least 1")
    for name, flag in FLAGS.items():
        if getattr(args, name) < 1:
            problems.append(f"{flag}: {getattr(args, name)} must be at least 1")
    if bool(args.grpc_auth_cert_file) != bool(args.grpc_auth_key_file):
        problems.append("--grpc-auth-cert-file and --grpc-auth-key-file: give both or neither")
    for flag in ("metrics_bind_address", "health_probe_bind_address"):
        try:
            parse_bind_address(getattr(args, flag))
        except ValueError:
            problems.append(f"--{flag.replace('_', '-')}: {getattr(args, flag)!r} is not host:port")
    return problems


def _tls(args: argparse.Namespace) -> ServerTLS | None:
    if not (args.grpc_auth_cert_file and args.grpc_auth_key_file):
        return None
    ca = Path(args.grpc_client_ca_file).read_bytes() if args.grpc_client_ca_file else None
    return ServerTLS(Path(args.grpc_auth_cert_file).read_bytes(), Path(args.grpc_auth_key_file).read_bytes(),
                     ca, args.insecure_skip_grpc_client_verify)


async def _probes(args: argparse.Namespace, state: SyncState,
                  metrics: EstimatorMetrics) -> list[web.AppRunner]:
    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        if state.synced:
            if state.connected:
                return web.Response(text="ok")
            return web.Response(text=f"ok (serving the last synced state; {state.reason})")
        return web.Response(status=503, text=state.reason)

    async def metrics_handler(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(metrics.registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    listeners: dict[tuple[str, int], web.Application] = {}
    health = parse_bind_address(args.health_probe_bind_address)
    if health is not None:
        app = listeners.setdefault(health, web.Application())
        app.router.add_get("/healthz", healthz)
        app.router.add_get("/readyz", readyz)
    metrics_address = parse_bind_address(args.metrics_bind_address)
    if metrics_address is not None:
        app = listeners.setdefault(metrics_address, web.Application())
        app.router.add_get("/metrics", metrics_handler)
    runners = []
    for (host, port), app in listeners.items():
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        try:
            await web.TCPSite(runner, host, port).start()
        except OSError as exc:
            for started in reversed(runners):
                await started.cleanup()
            flags = " and ".join(f for f, address in (("--health-probe-bind-address", health),
                                                      ("--metrics-bind-address", metrics_address))
                                 if address == (host, port))
            why = os.strerror(exc.errno) if exc.errno else str(exc)
            raise StartupError(f"{flags} {host or '0.0.0.0'}:{port}: cannot listen: {why}") from None
    return runners


class StartupError(Exception):
    """A start-up failure (a taken port): one line on stderr and exit 2, never a traceback."""


async def _main(args: argparse.Namespace, gates: FeatureGates, connection: Connection) -> int:
    from fleetsched.estimator.watch import LiveWorkloadSource, MemberWatcher
    from fleetsched.kube.client import KubeClient

    if args.master:
        connection = dataclasses.replace(connection, server=args.master.rstrip("/"))
    client = KubeClient(connection, qps=args.kube_api_qps, burst=args.kube_api_burst,
                        user_agent=f"fleetsched-estimator/{args.cluster_name}")
    table, quotas, state, metrics = NodeTable(), QuotaStore(), SyncState(), EstimatorMetrics()
    workloads = LiveWorkloadSource(client)
    workloads.loop = asyncio.get_running_loop()
    service = EstimatorService(cluster_name=args.cluster_name, gates=gates, table=table, quotas=quotas,
                               workloads=workloads, observer=metrics.observe_plugin,
                               step_observer=metrics.observe_unschedulable_step)
    watcher = MemberWatcher(client=client, table=table, quotas=quotas,
                            workloads=workloads, state=state, watch_quotas=gates.resource_quota_estimate)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    try:
        runners = await _probes(args, state, metrics)
    except StartupError:
        await client.close()
        raise
    watch_task = asyncio.create_task(watcher.run(stop))
    log.info("estimator_starting", cluster=args.cluster_name, member=connection.server,
             resource_quota_estimate=gates.resource_quota_estimate,
             scheduling_overcommit_protection=gates.scheduling_overcommit_protection)
    try:
        await serve(service, address=f"{args.server_bind_address}:{args.server_port}", state=state,
                    metrics=metrics, tls=_tls(args), stop=stop, limits=limits_from(args),
                    capacity=capacity_from(args))
    except OSError as exc:
        if not str(exc).startswith("cannot listen on"):  # server.serve: the gRPC port was not bound
            raise
        address = f"{args.server_bind_address}:{args.server_port}"
        raise StartupError(f"--server-bind-address and --server-port {address}: cannot listen "
                           "(in use, or not an address of this host)") from None
    finally:
        stop.set()
        await asyncio.gather(watch_task, return_exceptions=True)
        for runner in runners:
            await runner.cleanup()
        await client.close()
    return 0


def run(args: argparse.Namespace) -> int:
    from fleetsched.kube import logs

    logs.configure(args.log_level)
    problems = _validate(args)
    try:
        gates = FeatureGates.from_mapping(parse_feature_gates(args.feature_gates))
    except ValueError as exc:
        problems.append(f"--feature-gates: {exc}")
    if problems:
        for problem in problems:
            print(f"fleetsched estimator: {problem}", file=sys.stderr)
        return 2
    from fleetsched.kube.client import load_connection

    try:
        connection = load_connection(args.kubeconfig or None)
    except Exception as exc:  # the kubernetes config loader raises its own exception types
        source = args.kubeconfig or "KUBECONFIG, the pod's ServiceAccount or ~/.kube/config"
        print(f"fleetsched estimator: --kubeconfig: cannot load {source}: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_main(args, gates, connection))
    except StartupError as exc:
        print(f"fleetsched estimator: {exc}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError) as exc:  # unreadable TLS files, a port in use
        print(f"fleetsched estimator: {exc}", file=sys.stderr)
        return 1
