"""Wiring of the accurate estimator client (``--enable-scheduler-estimator``) into the operator.

The client (``fleetsched.estimator.client``) is Karmada's: every candidate cluster is asked over
gRPC under one deadline (``--scheduler-estimator-timeout``), and any failure makes the scheduler
ignore the whole answer for that attempt and keep the general estimate. Its estimator Services are
found the way Karmada finds them: ``<prefix>-<cluster>`` in ``--scheduler-estimator-service-namespace``
looked up through the control plane (an ExternalName Service gives ``externalName:targetPort``),
else the in-cluster DNS names.

The client blocks on gRPC; the operator runs the scheduling core, and so these calls, in its core
threads (one per ``--workers``, ``controller/scheduler/compute.py``), never on the event loop. The Service
lookups the client makes from its dial threads go through the operator's event loop. Every RPC is
counted (``RpcMetrics``): in flight now, the peak of that since the start, and by status code.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from collections.abc import Mapping
from typing import Any

from fleetsched.api.yamlload import LoadError, read_regular_file
from fleetsched.controller.runtime import command, metrics
from fleetsched.estimator.client import AccurateEstimatorClient, ClientTLS, EstimatorClientConfig
from fleetsched.kube.client import ApiError, KubeClient


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Where the estimators are and how to reach them (karmada-scheduler's and
    karmada-descheduler's flags, the same in both)."""
    parser.add_argument(
        "--scheduler-estimator-timeout",
        type=command.duration,
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


class RpcMetrics:
    """The client's ``RpcObserver``: estimator RPCs in flight, their peak, and their outcomes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def rpc_started(self, method: str, cluster: str) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            metrics.ESTIMATOR_RPCS_IN_FLIGHT.set(self.in_flight)
            metrics.ESTIMATOR_RPCS_IN_FLIGHT_PEAK.set(self.peak)

    def rpc_finished(self, method: str, cluster: str, code: str, seconds: float) -> None:
        with self._lock:
            self.in_flight -= 1
            metrics.ESTIMATOR_RPCS_IN_FLIGHT.set(self.in_flight)
        metrics.ESTIMATOR_RPCS.labels(method, code).inc()


# A CA bundle, client certificate or key (as the extender client's limit).
MAX_PEM_BYTES = 4 << 20


def _read(path: str | None, flag: str) -> bytes | None:
    """A PEM file named by ``flag``: a regular file of at most ``MAX_PEM_BYTES`` (``/dev/zero`` is
    refused, not read); ValueError naming the flag otherwise."""
    if not path:
        return None
    try:
        return read_regular_file(path, limit=MAX_PEM_BYTES)
    except LoadError as exc:
        why = exc.reason.removeprefix("cannot read the file: ")
        raise ValueError(f"{flag}: cannot read {path}: {why}") from None


async def accurate_estimator(client: KubeClient, args: argparse.Namespace) -> AccurateEstimatorClient:
    loop = asyncio.get_running_loop()

    def lookup(namespace: str, name: str) -> Mapping[str, Any] | None:
        future = asyncio.run_coroutine_threadsafe(
            client.get(f"/api/v1/namespaces/{namespace}/services/{name}"), loop
        )
        try:
            return future.result(timeout=5)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    tls = ClientTLS(
        ca=_read(args.scheduler_estimator_ca_file, "--scheduler-estimator-ca-file"),
        cert=_read(args.scheduler_estimator_cert_file, "--scheduler-estimator-cert-file"),
        key=_read(args.scheduler_estimator_key_file, "--scheduler-estimator-key-file"),
        insecure_skip_verify=args.insecure_skip_estimator_verify,
    )
    config = EstimatorClientConfig(
        service_prefix=args.scheduler_estimator_service_prefix,
        service_namespace=args.scheduler_estimator_service_namespace,
        port=args.scheduler_estimator_port,
        timeout=args.scheduler_estimator_timeout,
        tls=tls,
        service_lookup=lookup,
        disable_in_pull_mode=args.disable_scheduler_estimator_in_pull_mode,
        observer=RpcMetrics(),
    )
    return AccurateEstimatorClient(config)
