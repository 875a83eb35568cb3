"""Estimators as the scheduler core sees them (``ReplicaEstimator`` in fleetsched.scheduler.framework).

:class:`AccurateEstimatorClient` calls each member cluster's estimator over gRPC (Karmada's or ours):
all candidate clusters concurrently under one shared deadline (default 3 s), one cached channel per
cluster, found through Karmada's service naming (``<prefix>-<cluster>.<namespace>.svc.cluster.local``
then ``.svc``, port 10352) or an explicit address map. Failure handling is Karmada's (spec 4.4): if any
cluster's call fails - no estimator, deadline exceeded, UNIMPLEMENTED, a server error - the whole answer
is discarded for this attempt by raising :class:`EstimatorUnavailable`; the scheduler then keeps the
general estimator's numbers. An answer of -1 ("cannot judge") is passed through for the merge to skip.

Nothing in the client serialises callers: each caller's RPCs are issued at once on the shared channel
(HTTP/2 streams, no client-side limit) and waited for in the caller's own thread, so with one estimator
hung, N concurrent callers (the operator's core threads, one per ``--workers``) cost one timeout
together. A first contact's dial is shared by the callers that need it at the same moment (one
channel per cluster, never one per caller). ``RpcObserver`` sees every RPC start and end (the
operator counts them in flight, with their peak, and by status code).

:class:`InventoryEstimator` answers the same question in process from node inventories (Nodes and
Pods given as objects), with the estimator server's own code and no gRPC: ``fleetsched simulate`` uses
it to be node-accurate for member clusters whose Nodes are in its input.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import grpc
import structlog
from cryptography import x509

from fleetsched.estimator import wire
from fleetsched.estimator.inprocess import (
    MEMBER_CLUSTER_ANNOTATION,
    UNAUTHENTIC_REPLICA,
    InventoryEstimator,
    _requirements_namespace,
    cluster_name,
    component_json,
    inventories_from_objects,
    requirements_json,
)
from fleetsched.estimator.pb import service_pb2_grpc

__all__ = [
    "MEMBER_CLUSTER_ANNOTATION",
    "UNAUTHENTIC_REPLICA",
    "AccurateEstimatorClient",
    "ClientTLS",
    "EstimatorClientConfig",
    "EstimatorUnavailable",
    "InventoryEstimator",
    "RpcObserver",
    "component_json",
    "inventories_from_objects",
    "requirements_json",
    "service_candidates",
]

log = structlog.get_logger("fleetsched.estimator.client")


PULL_MODE_REFUSAL = "no connection (Pull mode, --disable-scheduler-estimator-in-pull-mode)"


class EstimatorUnavailable(RuntimeError):
    """At least one cluster's estimator failed; the whole answer of this estimator is to be ignored."""

    def __init__(self, failures: Mapping[str, str]) -> None:
        self.failures = dict(failures)
        detail = "; ".join(f"{name}: {reason}" for name, reason in sorted(self.failures.items()))
        super().__init__(f"accurate estimator failed for {len(self.failures)} cluster(s): {detail}")


class RpcObserver(Protocol):
    """Told about each estimator RPC; called from the caller's thread and from gRPC's threads."""

    def rpc_started(self, method: str, cluster: str) -> None: ...

    def rpc_finished(self, method: str, cluster: str, code: str, seconds: float) -> None: ...


# ------------------------------------------------------------------------------------------- gRPC client
@dataclass(frozen=True)
class ClientTLS:
    """Karmada's client flags: without a CA (and without skip-verify) the connection is plaintext."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    insecure_skip_verify: bool = False

    @property
    def enabled(self) -> bool:
        return self.ca is not None or self.insecure_skip_verify


@dataclass(frozen=True)
class EstimatorClientConfig:
    service_prefix: str = "karmada-scheduler-estimator"
    service_namespace: str = "karmada-system"
    port: int = 10352
    timeout: float = 3.0
    dial_timeout: float = 5.0
    # cluster -> "host:port"; when set for a cluster, service naming is not used for it
    addresses: Mapping[str, str] = field(default_factory=dict)
    tls: ClientTLS = ClientTLS()
    # a cluster whose dial failed is not dialed again for this long (Karmada re-dials on Cluster changes)
    redial_after: float = 5.0
    # Looks up the estimator Service (namespace, name) in the control plane and returns the object, or
    # None when it does not exist (Karmada GETs it through its kube client). Called from a dial thread.
    service_lookup: Callable[[str, str], Mapping[str, Any] | None] | None = None
    # Dual-write Karmada <= 1.17's field numbers too (spec 2.4), for old estimators.
    legacy_fields: bool = False
    # --disable-scheduler-estimator-in-pull-mode: Clusters whose spec.syncMode is Pull get no
    # connection, so (all or nothing, spec 4.4) any batch that includes one uses the general estimate.
    disable_in_pull_mode: bool = False
    # Sees every RPC start and end (metrics); None: nobody is told.
    observer: RpcObserver | None = None

    @classmethod
    def from_flags(cls, *, timeout: float = 3.0, port: int = 10352, ca_file: str | None = None,
                   cert_file: str | None = None, key_file: str | None = None,
                   insecure_skip_verify: bool = False, service_prefix: str = "karmada-scheduler-estimator",
                   service_namespace: str = "karmada-system",
                   service_lookup: Callable[[str, str], Mapping[str, Any] | None] | None = None,
                   addresses: Mapping[str, str] | None = None) -> EstimatorClientConfig:
        """From Karmada's scheduler flags (``--scheduler-estimator-*``, ``--insecure-skip-estimator-verify``);
        certificate files are read here, so a missing file fails at start-up, not at the first call."""

        def read(path: str | None) -> bytes | None:
            return Path(path).read_bytes() if path else None

        if bool(cert_file) != bool(key_file):
            raise ValueError("--scheduler-estimator-cert-file and --scheduler-estimator-key-file: "
                             "give both or neither")
        return cls(service_prefix=service_prefix, service_namespace=service_namespace, port=port,
                   timeout=timeout, addresses=dict(addresses or {}), service_lookup=service_lookup,
                   tls=ClientTLS(ca=read(ca_file), cert=read(cert_file), key=read(key_file),
                                 insecure_skip_verify=insecure_skip_verify))

    def service_name(self, cluster: str) -> str:
        return f"{self.service_prefix}-{cluster}"

    def candidates(self, cluster: str) -> list[str]:
        explicit = self.addresses.get(cluster)
        if explicit:
            return [explicit]
        service = None
        if self.service_lookup is not None:
            service = self.service_lookup(self.service_namespace, self.service_name(cluster))
        return service_candidates(service, name=self.service_name(cluster), namespace=self.service_namespace,
                                  port=self.port)


def service_candidates(service: Mapping[str, Any] | None, *, name: str, namespace: str,
                       port: int) -> list[str]:
    """Karmada's resolution of an estimator Service (spec 2.8): absent -> the two cluster DNS names; an
    ExternalName Service -> ``externalName:targetPort`` of the port equal to ``port``; else an error."""
    if service is None:
        return [f"{name}.{namespace}.svc.cluster.local:{port}", f"{name}.{namespace}.svc:{port}"]
    spec = service.get("spec") or {}
    if spec.get("type") != "ExternalName":
        raise ValueError(f"service {namespace}/{name} is of type {spec.get('type') or 'ClusterIP'}, "
                         "not ExternalName")
    for entry in spec.get("ports") or ():
        if entry.get("port") == port:
            target = entry.get("targetPort")
            if not isinstance(target, int):
                raise ValueError(f"service {namespace}/{name}: targetPort of port {port} is not a number")
            return [f"{spec.get('externalName', '')}:{target}"]
    raise ValueError(f"service {namespace}/{name} has no port {port}")


def _server_name(address: str) -> str | None:
    """For insecure-skip-verify: the name the server's certificate carries, so grpc's host check passes."""
    host, _, port = address.rpartition(":")
    try:
        pem = ssl.get_server_certificate((host.strip("[]"), int(port)), timeout=2)
    except OSError:
        return None
    cert = x509.load_pem_x509_certificate(pem.encode())
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        dns = names.get_values_for_type(x509.DNSName)
        if dns:
            return str(dns[0])
    except x509.ExtensionNotFound:
        pass
    common = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(common[0].value) if common else None


class AccurateEstimatorClient:
    """The ``scheduler-estimator``: Karmada's accurate estimator client over gRPC."""

    name = "scheduler-estimator"

    def __init__(self, config: EstimatorClientConfig | None = None) -> None:
        self.config = config or EstimatorClientConfig()
        # re-entrant: a dial future that is already done runs its callback at once, under the lock
        self._lock = threading.RLock()
        self._channels: dict[str, tuple[grpc.Channel, Any]] = {}
        self._dial_failed: dict[str, tuple[float, str]] = {}
        self._redialing: set[str] = set()
        # first contacts being dialed now: later callers wait for the same dial
        self._dialing: dict[str, Future[tuple[grpc.Channel, Any]]] = {}
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="estimator-dial")

    def close(self) -> None:
        with self._lock:
            channels, self._channels = self._channels, {}
        for channel, _ in channels.values():
            channel.close()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def forget(self, cluster: str) -> None:
        """Drop the cached connection (the Cluster was deleted or its estimator moved)."""
        with self._lock:
            known = self._channels.pop(cluster, None)
            self._dial_failed.pop(cluster, None)
        if known is not None:
            known[0].close()

    def _open(self, address: str) -> grpc.Channel:
        tls = self.config.tls
        if not tls.enabled:
            return grpc.insecure_channel(address)
        options: list[tuple[str, Any]] = []
        if tls.insecure_skip_verify:
            name = _server_name(address)
            if name:
                options.append(("grpc.ssl_target_name_override", name))
        credentials = grpc.ssl_channel_credentials(root_certificates=tls.ca, private_key=tls.key,
                                                   certificate_chain=tls.cert)
        return grpc.secure_channel(address, credentials, options=options)

    def _dial(self, cluster: str, deadline: float) -> tuple[grpc.Channel, Any]:
        last_error = "no address"
        try:
            candidates = self.config.candidates(cluster)
        except ValueError as exc:
            candidates, last_error = [], str(exc)
        for address in candidates:
            wait = min(self.config.dial_timeout, deadline - time.monotonic())
            if wait <= 0:
                last_error = "deadline exceeded while dialing"
                break
            channel = self._open(address)
            try:
                grpc.channel_ready_future(channel).result(timeout=wait)
            except grpc.FutureTimeoutError:
                channel.close()
                last_error = f"{address} not ready within {wait:.1f}s"
                continue
            stub = service_pb2_grpc.EstimatorStub(channel)
            with self._lock:
                self._channels[cluster] = (channel, stub)
                self._dial_failed.pop(cluster, None)
            log.info("estimator_connected", cluster=cluster, address=address)
            return channel, stub
        with self._lock:
            self._dial_failed[cluster] = (time.monotonic(), last_error)
        raise ConnectionError(last_error)

    def _stubs(self, clusters: Sequence[str], deadline: float) -> tuple[dict[str, Any], dict[str, str]]:
        """Cached stubs; a first contact is dialed within the batch's deadline. A cluster whose dial failed
        fails at once (as Karmada's uncached cluster does) and is re-dialed in the background, so a
        missing estimator never stalls later batches."""
        stubs: dict[str, Any] = {}
        failures: dict[str, str] = {}
        dials: dict[str, Future[tuple[grpc.Channel, Any]]] = {}
        now = time.monotonic()
        with self._lock:
            for cluster in clusters:
                cached = self._channels.get(cluster)
                if cached is not None:
                    stubs[cluster] = cached[1]
                    continue
                failed = self._dial_failed.get(cluster)
                if failed is None:
                    # One dial per cluster however many callers ask at once: concurrent dials each
                    # opened a channel, and all but the last stored one leaked.
                    dialing = self._dialing.get(cluster)
                    if dialing is None:
                        dialing = self._pool.submit(self._dial, cluster, deadline)
                        self._dialing[cluster] = dialing
                        dialing.add_done_callback(lambda _, c=cluster: self._dial_done(c))
                    dials[cluster] = dialing
                    continue
                failures[cluster] = f"no connection ({failed[1]})"
                if now - failed[0] >= self.config.redial_after and cluster not in self._redialing:
                    self._redialing.add(cluster)
                    self._pool.submit(self._redial, cluster)
        for cluster, future in dials.items():
            try:
                stubs[cluster] = future.result(timeout=max(deadline - time.monotonic(), 0.0) + 1.0)[1]
            except Exception as exc:
                failures[cluster] = f"no connection ({exc or 'dial still in progress'})"
        return stubs, failures

    def _dial_done(self, cluster: str) -> None:
        with self._lock:
            self._dialing.pop(cluster, None)

    def _redial(self, cluster: str) -> None:
        try:
            self._dial(cluster, time.monotonic() + self.config.dial_timeout * 2)
        except Exception as exc:
            log.info("estimator_redial_failed", cluster=cluster, error=str(exc))
        finally:
            with self._lock:
                self._redialing.discard(cluster)

    def _refused(self, clusters: Sequence[Any]) -> dict[str, str]:
        """The clusters this client does not connect to at all, with the reason."""
        if not self.config.disable_in_pull_mode:
            return {}
        return {
            cluster_name(c): PULL_MODE_REFUSAL for c in clusters if getattr(c, "sync_mode", "") == "Pull"
        }

    def connect(self, clusters: Sequence[Any]) -> dict[str, str]:
        """Dial these clusters now (Karmada dials every cluster at start); returns the failures."""
        deadline = time.monotonic() + self.config.dial_timeout
        refused = self._refused(clusters)
        names = [cluster_name(c) for c in clusters]
        _, failures = self._stubs([name for name in names if name not in refused], deadline)
        return {**refused, **failures}

    def connect_in_background(self, clusters: Sequence[Any]) -> Future[dict[str, str]]:
        """``connect`` in the client's own dial threads (not the caller's, nor an event loop's)."""
        return self._pool.submit(self.connect, list(clusters))

    def _fan_out(self, clusters: Sequence[Any], method: str, build: Callable[[str], Any], field_name: str,
                 metadata: Sequence[tuple[str, str]] = ()) -> list[int]:
        """One call per cluster, all at once, under one deadline; raise if any failed."""
        refused = self._refused(clusters)
        if refused:
            log.info("accurate_estimator_skipped", method=method, failures=refused)
            raise EstimatorUnavailable(refused)
        names = [cluster_name(c) for c in clusters]
        deadline = time.monotonic() + self.config.timeout
        stubs, failures = self._stubs(names, deadline)
        if failures:
            # One failed cluster discards the whole answer (Karmada), so calling the others is wasted
            # work; worse, a dial that used up the deadline would make their calls fail spuriously.
            log.warning("accurate_estimator_failed", method=method, failures=failures)
            raise EstimatorUnavailable(failures)
        calls = {}
        observer = self.config.observer
        for cluster, stub in stubs.items():
            remaining = max(deadline - time.monotonic(), 0.001)
            request = build(cluster)
            if self.config.legacy_fields:
                wire.add_legacy_fields(request)
            if observer is not None:
                observer.rpc_started(method, cluster)
            started = time.monotonic()
            try:
                call = getattr(stub, method).future(request, timeout=remaining,
                                                    metadata=tuple(metadata) or None)
            except Exception:
                if observer is not None:
                    observer.rpc_finished(method, cluster, "INTERNAL", time.monotonic() - started)
                raise
            if observer is not None:
                call.add_done_callback(
                    lambda done, c=cluster, t=started: observer.rpc_finished(
                        method, c, done.code().name, time.monotonic() - t
                    )
                )
            calls[cluster] = call
        answers: dict[str, int] = {}
        for cluster, call in calls.items():
            try:
                answers[cluster] = int(getattr(call.result(), field_name))
            except grpc.RpcError as exc:
                failures[cluster] = f"{exc.code().name}: {exc.details()}"
        if failures:
            log.warning("accurate_estimator_failed", method=method, failures=failures)
            raise EstimatorUnavailable(failures)
        return [answers[c] for c in names]

    # -------------------------------------------------------------------- the three questions
    # Without ``assumed_workloads`` each cluster's own (``ClusterInfo.assumed``, laid over the snapshot
    # by the assume record under SchedulingOvercommitProtection) are sent: spec 4.6, every binding's
    # non-expired assumptions on that cluster.
    def max_available_replicas(self, clusters: Sequence[Any], replica_requirements: Any,
                               *, assumed_workloads: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
                               object_ref: str = "") -> list[int]:
        requirements = requirements_json(replica_requirements)
        if assumed_workloads is None:
            assumed_workloads = _assumed_of(clusters)

        def build(cluster: str) -> Any:
            raw: dict[str, Any] = {"cluster": cluster}
            if requirements is not None:
                raw["replicaRequirements"] = requirements
            if assumed_workloads:
                raw["assumedWorkloads"] = list(assumed_workloads.get(cluster, ()))
            return wire.replicas_request_to_pb(raw)

        metadata = (("object", object_ref),) if object_ref else ()
        return self._fan_out(clusters, "MaxAvailableReplicas", build, "maxReplicas", metadata)

    def max_available_component_sets(self, clusters: Sequence[Any], components: Sequence[Any],
                                     namespace: str | None = None, *,
                                     assumed_workloads: Mapping[str, Sequence[Mapping[str, Any]]]
                                     | None = None,
                                     object_ref: str = "") -> list[int]:
        """The core's ``ComponentSetEstimator`` face (spec 4.2): ``components`` are the core's Component
        values or their JSON form; ``namespace`` (the workload's, request field 3) defaults to the one in
        the components' requirements."""
        parts = [component_json(c) for c in components]
        if assumed_workloads is None:
            assumed_workloads = _assumed_of(clusters)
        if namespace is None:
            namespace = next((ns for ns in (_requirements_namespace(c) for c in components) if ns), "")

        def build(cluster: str) -> Any:
            raw: dict[str, Any] = {"cluster": cluster, "components": parts, "namespace": namespace}
            if assumed_workloads:
                raw["assumedWorkloads"] = list(assumed_workloads.get(cluster, ()))
            return wire.component_sets_request_to_pb(raw)

        metadata = (("object", object_ref),) if object_ref else ()
        return self._fan_out(clusters, "MaxAvailableComponentSets", build, "maxSets", metadata)

    def get_unschedulable_replicas(self, clusters: Sequence[Any], resource: Mapping[str, str],
                                   threshold_seconds: float = 300.0) -> list[int]:

        def build(cluster: str) -> Any:
            return wire.unschedulable_request_to_pb({"cluster": cluster, "resource": dict(resource),
                                                     "unschedulableThreshold": int(threshold_seconds * 1e9)})

        return self._fan_out(clusters, "GetUnschedulableReplicas", build, "unschedulableReplicas")


def _assumed_of(clusters: Sequence[Any]) -> dict[str, list[dict[str, Any]]]:
    """The assumed workloads the clusters carry, in the request's JSON form, by cluster name."""
    out: dict[str, list[dict[str, Any]]] = {}
    for cluster in clusters:
        assumed = getattr(cluster, "assumed", ())
        if assumed:
            out[cluster.name] = [
                {"namespace": w.namespace, "components": [component_json(c) for c in w.components]}
                for w in assumed
            ]
    return out
