"""The estimator's gRPC server (grpc.aio): the three RPCs, standard health service, TLS, metrics.

Each servicer method decodes, calls one handler from :mod:`fleetsched.estimator.handlers`, encodes.
Until the member cluster's caches are synced it answers UNAVAILABLE (and health says NOT_SERVING);
afterwards it keeps answering from the last synced state even while the watch is reconnecting.
Karmada's server answers errors as plain Go errors, i.e. gRPC UNKNOWN with the message; so do we.

The event loop only admits and answers. It serves the health service, the probes' state and the member
watch, so nothing that grows with a request runs on it: every RPC's bytes are parsed, checked against
:class:`~fleetsched.estimator.limits.RequestLimits`, estimated and encoded in a bounded thread pool
(``workers`` threads). The estimate reads the node table through a snapshot taken under the table's
lock and released before the filter runs (:mod:`fleetsched.estimator.cache`), so a heavy request holds
neither the loop nor the watch. Requests are taken as raw bytes for that reason (gRPC's own
deserializer would parse them on the loop).

Bounds, each refused with a one-line status that names the flag:

* more than ``max_concurrent_requests`` estimating RPCs in flight (computing or waiting for a worker):
  RESOURCE_EXHAUSTED at once, so callers fall back to their general estimate instead of queueing
  behind a backlog past their deadline;
* a request over one of the limits (bytes, node-affinity terms, expressions, values, tolerations,
  resource entries, components, assumed workloads): INVALID_ARGUMENT naming the field. gRPC itself
  drops a message more than 1 MiB over ``max_request_bytes`` unread (RESOURCE_EXHAUSTED, not counted
  here): the memory a request can take stays close to the limit.

Each refusal is logged (``request_rejected``) and counted in
``fleetsched_estimator_rejected_requests_total{type, limit}`` and, as an error, in Karmada's request
counter.

Metrics use Karmada's names (karmada-scheduler-estimator's metrics) in a registry per server, so that
tests can run several servers in one process.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import grpc
import structlog
from google.protobuf.message import DecodeError
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from fleetsched import buildinfo
from fleetsched.estimator import handlers
from fleetsched.estimator.limits import DEFAULT_LIMITS, LimitExceeded, RequestLimits
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2
from fleetsched.estimator.service import EstimatorService

__all__ = ["Capacity", "EstimatorMetrics", "ServerTLS", "SyncState", "serve", "start_server"]

SERVICE_NAME = "github.com.karmada_io.karmada.pkg.estimator.service.Estimator"
_CODES = {"Unknown": grpc.StatusCode.UNKNOWN, "InvalidArgument": grpc.StatusCode.INVALID_ARGUMENT,
          "Unavailable": grpc.StatusCode.UNAVAILABLE}
RECEIVE_HEADROOM = 1 << 20
# the rejection metric's limit label for the concurrency bound (the others are RequestLimits fields)
CONCURRENCY_LIMIT = "max_concurrent_requests"
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
        self.rejected = Counter(
            "fleetsched_estimator_rejected_requests",
            "Requests refused before estimating: over a request limit (INVALID_ARGUMENT) or over "
            "--max-concurrent-requests (RESOURCE_EXHAUSTED)", ["type", "limit"], registry=self.registry)
        self.in_flight = Gauge("fleetsched_estimator_requests_in_flight",
                               "Estimating RPCs admitted and not yet answered (computing or waiting for a "
                               "worker)", registry=self.registry)
        buildinfo.register(self.registry)

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

    def observe_rejection(self, rpc: str, limit: str) -> None:
        self.rejected.labels(type=rpc, limit=limit).inc()
        self.requests.labels(result="error", type=rpc).inc()


@dataclass
class SyncState:
    """Written by the member watch, read by the servicer and the probes (all on the event loop)."""

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


@dataclass(frozen=True, slots=True)
class Capacity:
    """How much the server takes on at once: ``workers`` threads estimate, and at most
    ``max_concurrent_requests`` estimating RPCs are admitted (the rest get RESOURCE_EXHAUSTED)."""

    workers: int = 16
    max_concurrent_requests: int = 64


Handler = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class _Method:
    name: str
    handler: Handler
    request_type: Any
    response_type: Any


_METHODS = (
    _Method("MaxAvailableReplicas", handlers.max_available_replicas,
            estimator_pb2.MaxAvailableReplicasRequest, estimator_pb2.MaxAvailableReplicasResponse),
    _Method("MaxAvailableComponentSets", handlers.max_available_component_sets,
            estimator_pb2.MaxAvailableComponentSetsRequest, estimator_pb2.MaxAvailableComponentSetsResponse),
    _Method("GetUnschedulableReplicas", handlers.get_unschedulable_replicas,
            estimator_pb2.UnschedulableReplicasRequest, estimator_pb2.UnschedulableReplicasResponse),
)


@dataclass
class _Outcome:
    response: Any = None
    failure: tuple[grpc.StatusCode, str] | None = None
    rejected_by: str | None = None
    seconds: float = 0.0


def _answer(method: _Method, service: EstimatorService, raw: bytes, limits: RequestLimits) -> _Outcome:
    """One RPC's work, in a worker thread: size check, parse, handler. Never raises."""
    start = time.perf_counter()
    outcome = _Outcome()
    try:
        if len(raw) > limits.max_request_bytes:
            raise LimitExceeded("request", len(raw), "max_request_bytes", limits.max_request_bytes,
                                what="bytes")
        try:
            message = method.request_type.FromString(raw)
        except DecodeError as exc:
            raise EstimatorError(f"request is not a valid {method.request_type.__name__}: {exc}",
                                 code="InvalidArgument") from exc
        outcome.response = method.handler(service, message, limits=limits)
    except LimitExceeded as exc:
        outcome.failure = (grpc.StatusCode.INVALID_ARGUMENT, exc.message)
        outcome.rejected_by = exc.limit
    except EstimatorError as exc:
        outcome.failure = (_CODES.get(exc.code, grpc.StatusCode.UNKNOWN), exc.message)
    except Exception as exc:  # a bug must fail this request, never the server
        log.exception("estimate_crashed", rpc=method.name)
        outcome.failure = (grpc.StatusCode.UNKNOWN, f"internal error: {exc}")
    outcome.seconds = time.perf_counter() - start
    return outcome


class EstimatorServicer:
    """The three RPCs over raw request bytes; the work runs in ``executor`` (module docstring)."""

    def __init__(self, service: EstimatorService, state: SyncState, metrics: EstimatorMetrics, *,
                 limits: RequestLimits, capacity: Capacity, executor: ThreadPoolExecutor) -> None:
        self._service = service
        self._state = state
        self._metrics = metrics
        self._limits = limits
        self._capacity = capacity
        self._executor = executor
        self._in_flight = 0  # touched on the event loop only

    def handler(self) -> grpc.GenericRpcHandler:
        def bind(method: _Method) -> Callable[[bytes, grpc.aio.ServicerContext], Awaitable[Any]]:
            async def call(raw: bytes, context: grpc.aio.ServicerContext) -> Any:
                return await self._call(method, raw, context)
            return call

        return grpc.method_handlers_generic_handler(SERVICE_NAME, {
            m.name: grpc.unary_unary_rpc_method_handler(
                bind(m), request_deserializer=None, response_serializer=m.response_type.SerializeToString)
            for m in _METHODS})

    async def _call(self, method: _Method, raw: bytes, context: grpc.aio.ServicerContext) -> Any:
        if not self._state.synced:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"estimator is not ready: {self._state.reason}")
        metadata = dict(context.invocation_metadata() or ())
        caller = metadata.get("object", "")
        limit = self._capacity.max_concurrent_requests
        if self._in_flight >= limit:
            message = (f"estimator is busy: {self._in_flight} requests in flight, "
                       f"the limit is --max-concurrent-requests={limit}")
            log.warning("request_rejected", rpc=method.name, object=caller, limit=CONCURRENCY_LIMIT,
                        error=message)
            self._metrics.observe_rejection(method.name, CONCURRENCY_LIMIT)
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
        self._in_flight += 1
        self._metrics.in_flight.set(self._in_flight)
        try:
            loop = asyncio.get_running_loop()
            outcome = await loop.run_in_executor(self._executor, _answer, method, self._service, raw,
                                                 self._limits)
        finally:
            self._in_flight -= 1
            self._metrics.in_flight.set(self._in_flight)
        # Recorded before the answer leaves, so a client that has its answer also sees it counted.
        if outcome.rejected_by is not None:
            assert outcome.failure is not None
            log.warning("request_rejected", rpc=method.name, object=caller, limit=outcome.rejected_by,
                        error=outcome.failure[1])
            self._metrics.observe_rejection(method.name, outcome.rejected_by)
            await context.abort(*outcome.failure)
        self._metrics.observe(method.name, outcome.failure is None, outcome.seconds)
        if outcome.failure is not None:
            log.warning("estimate_failed", rpc=method.name, object=caller, error=outcome.failure[1])
            await context.abort(*outcome.failure)
        log.debug("estimated", rpc=method.name, object=caller, seconds=round(outcome.seconds, 6))
        return outcome.response


@dataclass
class RunningServer:
    server: grpc.aio.Server
    port: int
    health: HealthServicer
    executor: ThreadPoolExecutor = field(repr=False)

    async def mark(self, serving: bool) -> None:
        response = health_pb2.HealthCheckResponse
        status = response.SERVING if serving else response.NOT_SERVING
        await self.health.set("", status)
        await self.health.set(SERVICE_NAME, status)

    async def stop(self, grace: float | None = 1.0) -> None:
        await self.server.stop(grace)
        # a computation still running finishes in its thread; queued ones are dropped
        self.executor.shutdown(wait=False, cancel_futures=True)


async def start_server(service: EstimatorService, *, address: str, state: SyncState,
                       metrics: EstimatorMetrics, tls: ServerTLS | None = None,
                       limits: RequestLimits = DEFAULT_LIMITS,
                       capacity: Capacity = Capacity()) -> RunningServer:
    """Bind and start; ``address`` like ``[::]:10352`` or ``127.0.0.1:0`` (port 0 picks a free port)."""
    # gRPC's own limit is the memory backstop, a little above ours so that a request just over ours
    # gets the INVALID_ARGUMENT naming the flag
    receive_limit = min(limits.max_request_bytes + RECEIVE_HEADROOM, 2**31 - 1)
    server = grpc.aio.server(options=[("grpc.max_receive_message_length", receive_limit)])
    executor = ThreadPoolExecutor(max_workers=capacity.workers, thread_name_prefix="estimate")
    servicer = EstimatorServicer(service, state, metrics, limits=limits, capacity=capacity, executor=executor)
    server.add_generic_rpc_handlers((servicer.handler(),))
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    try:
        port = (server.add_secure_port(address, tls.credentials()) if tls
                else server.add_insecure_port(address))
    except RuntimeError:
        port = 0
    if port == 0:
        executor.shutdown(wait=False)
        raise OSError(f"cannot listen on {address}")
    await server.start()
    running = RunningServer(server, port, health, executor)
    await running.mark(state.synced)
    return running


async def serve(service: EstimatorService, *, address: str, state: SyncState, metrics: EstimatorMetrics,
                tls: ServerTLS | None, stop: asyncio.Event,
                on_started: Callable[[RunningServer], Awaitable[None]] | None = None,
                limits: RequestLimits = DEFAULT_LIMITS, capacity: Capacity = Capacity()) -> None:
    running = await start_server(service, address=address, state=state, metrics=metrics, tls=tls,
                                 limits=limits, capacity=capacity)
    log.info("estimator_listening", port=running.port, tls=tls is not None, cluster=service.cluster_name,
             workers=capacity.workers, max_concurrent_requests=capacity.max_concurrent_requests)
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
