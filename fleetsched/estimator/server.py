"""The estimator's gRPC server (grpc.aio): the three RPCs, standard health service, TLS, metrics.

Each servicer method decodes, calls one handler from :mod:`fleetsched.estimator.handlers`, encodes.
Until the member cluster's caches are synced it answers UNAVAILABLE (and health says NOT_SERVING);
afterwards it keeps answering from the last synced state even while the watch is reconnecting.
Karmada's server answers errors as plain Go errors, i.e. gRPC UNKNOWN with the message; so do we.

Metrics use Karmada's names (shared/spec/estimator.md section 2.9) in a registry per server, so that
tests can run several servers in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from fleetsched import __version__
from fleetsched.estimator import handlers
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import service_pb2_grpc
from fleetsched.estimator.service import EstimatorService

__all__ = ["EstimatorMetrics", "ServerTLS", "SyncState", "serve", "start_server"]

SERVICE_NAME = "github.com.karmada_io.karmada.pkg.estimator.service.Estimator"
_CODES = {"Unknown": grpc.StatusCode.UNKNOWN, "InvalidArgument": grpc.StatusCode.INVALID_ARGUMENT,
          "Unavailable": grpc.StatusCode.UNAVAILABLE}
log = structlog.get_logger("fleetsched.estimator")


class EstimatorMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.requests = Counter(
            "karmada_scheduler_estimator_estimating_request", "Number of scheduler estimator requests",
            ["result", "type"], registry=self.registry)
        self.latency = Histogram(
            "karmada_scheduler_estimator_estimating_algorithm_duration_seconds",
            "Estimating algorithm latency in seconds for each step", ["result", "type", "step"],
            buckets=[0.001 * 2**k for k in range(10)], registry=self.registry)
        self.extension_point = Histogram(
            "karmada_scheduler_estimator_estimating_plugin_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["estimating_plugin_extension_point"],
            buckets=[0.0001 * 2**k for k in range(12)], registry=self.registry)
        self.plugin = Histogram(
            "karmada_scheduler_estimator_estimating_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["estimating_plugin", "estimating_plugin_extension_point"],
            buckets=[0.00001 * 1.5**k for k in range(20)], registry=self.registry)
        self.synced = Gauge("fleetsched_estimator_cache_synced",
                            "1 once the member cluster's caches have synced", registry=self.registry)
        self.connected = Gauge("fleetsched_estimator_watch_connected",
                               "1 while every watch on the member cluster is live", registry=self.registry)
        self.nodes = Gauge("fleetsched_estimator_nodes", "Nodes in the estimator cache",
                           registry=self.registry)
        self.pods = Gauge("fleetsched_estimator_assigned_pods", "Assigned non-terminal pods in the cache",
                          registry=self.registry)
        build = Gauge("karmada_build_info", "Build information", ["version", "component"],
                      registry=self.registry)
        build.labels(version=__version__, component="fleetsched-estimator").set(1)

    def observe_plugin(self, plugin: str | None, extension_point: str, seconds: float) -> None:
        """EstimatorService's observer: one plugin's run, or (plugin None) the whole extension point."""
        if plugin is None:
            self.extension_point.labels(estimating_plugin_extension_point=extension_point).observe(seconds)
        else:
            self.plugin.labels(estimating_plugin=plugin,
                               estimating_plugin_extension_point=extension_point).observe(seconds)

    def observe_unschedulable_step(self, step: str, ok: bool, seconds: float) -> None:
        """EstimatorService's step observer: GetUnschedulableReplicas' GetObjectFromCache and
        GetWorkloadUnschedulablePods steps."""
        result = "success" if ok else "error"
        self.latency.labels(result=result, type="GetUnschedulableReplicas", step=step).observe(seconds)

    def observe(self, rpc: str, ok: bool, seconds: float) -> None:
        result = "success" if ok else "error"
        self.requests.labels(result=result, type=rpc).inc()
        self.latency.labels(result=result, type=rpc, step="Total").observe(seconds)


@dataclass
class SyncState:
    """Written by the watch threads, read by request handlers and probes."""

    synced: bool = False
    connected: bool = False
    reason: str = "caches have not synced yet"


@dataclass(frozen=True)
class ServerTLS:
    cert: bytes
    key: bytes
    client_ca: bytes | None = None
    skip_client_verify: bool = False

    def credentials(self) -> grpc.ServerCredentials:
        require = self.client_ca is not None and not self.skip_client_verify
        return grpc.ssl_server_credentials([(self.key, self.cert)],
                                           root_certificates=self.client_ca if require else None,
                                           require_client_auth=require)


Handler = Callable[[EstimatorService, Any], Any]


class EstimatorServicer(service_pb2_grpc.EstimatorServicer):
    def __init__(self, service: EstimatorService, state: SyncState, metrics: EstimatorMetrics) -> None:
        self._service = service
        self._state = state
        self._metrics = metrics

    async def _call(self, rpc: str, handler: Handler, request: Any, context: grpc.aio.ServicerContext,
                    *, offload: bool = False) -> Any:
        if not self._state.synced:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"estimator is not ready: {self._state.reason}")
        metadata = dict(context.invocation_metadata() or ())
        start = time.perf_counter()
        failure: tuple[grpc.StatusCode, str] | None = None
        try:
            if offload:
                response = await asyncio.to_thread(handler, self._service, request)
            else:
                response = handler(self._service, request)
        except EstimatorError as exc:
            log.warning("estimate_failed", rpc=rpc, object=metadata.get("object", ""), error=exc.message)
            failure = (_CODES.get(exc.code, grpc.StatusCode.UNKNOWN), exc.message)
        except Exception as exc:  # a bug must fail this request, never the server
            log.exception("estimate_crashed", rpc=rpc, object=metadata.get("object", ""))
            failure = (grpc.StatusCode.UNKNOWN, f"internal error: {exc}")
        elapsed = time.perf_counter() - start
        # Recorded before the answer leaves, so a client that has its answer also sees it counted.
        self._metrics.observe(rpc, failure is None, elapsed)
        if failure is not None:
            await context.abort(*failure)
        log.debug("estimated", rpc=rpc, object=metadata.get("object", ""), seconds=round(elapsed, 6))
        return response

    async def MaxAvailableReplicas(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("MaxAvailableReplicas", handlers.max_available_replicas, request, context)

    async def MaxAvailableComponentSets(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("MaxAvailableComponentSets", handlers.max_available_component_sets, request,
                                context, offload=True)

    async def GetUnschedulableReplicas(self, request: Any, context: grpc.aio.ServicerContext) -> Any:
        return await self._call("GetUnschedulableReplicas", handlers.get_unschedulable_replicas, request,
                                context, offload=True)


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: HealthServicer

    async def mark(self, serving: bool) -> None:
        response = health_pb2.HealthCheckResponse
        status = response.SERVING if serving else response.NOT_SERVING
        await self.health.set("", status)
        await self.health.set(SERVICE_NAME, status)

    async def stop(self, grace: float | None = 1.0) -> None:
        await self.server.stop(grace)


async def start_server(service: EstimatorService, *, address: str, state: SyncState,
                       metrics: EstimatorMetrics, tls: ServerTLS | None = None) -> RunningServer:
    """Bind and start; ``address`` like ``[::]:10352`` or ``127.0.0.1:0`` (port 0 picks a free port)."""
    server = grpc.aio.server()
    service_pb2_grpc.add_EstimatorServicer_to_server(EstimatorServicer(service, state, metrics), server)
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    port = server.add_secure_port(address, tls.credentials()) if tls else server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen on {address}")
    await server.start()
    running = RunningServer(server, port, health)
    await running.mark(state.synced)
    return running


async def serve(service: EstimatorService, *, address: str, state: SyncState, metrics: EstimatorMetrics,
                tls: ServerTLS | None, stop: asyncio.Event,
                on_started: Callable[[RunningServer], Awaitable[None]] | None = None) -> None:
    running = await start_server(service, address=address, state=state, metrics=metrics, tls=tls)
    log.info("estimator_listening", port=running.port, tls=tls is not None, cluster=service.cluster_name)
    if on_started is not None:
        await on_started(running)
    serving = state.synced
    try:
        while not stop.is_set():
            metrics.synced.set(1 if state.synced else 0)
            metrics.connected.set(1 if state.connected else 0)
            metrics.nodes.set(service.table.num_nodes())
            metrics.pods.set(service.table.num_pods())
            if state.synced != serving:
                serving = state.synced
                await running.mark(serving)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=0.5)
    finally:
        await running.stop(2.0)
