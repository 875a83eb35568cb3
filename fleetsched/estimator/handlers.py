"""Protobuf request in, protobuf response out: the body of each RPC, shared by the gRPC servicer and
``fleetsched estimate``. Raises :class:`EstimatorError` for answers that are gRPC errors.

Order follows Karmada's server: the cluster name is checked before anything in the request is decoded,
so a request for another cluster gets the mismatch error even when its payload is corrupt.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fleetsched.estimator import wire
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2
from fleetsched.estimator.service import EstimatorService

__all__ = ["get_unschedulable_replicas", "max_available_component_sets", "max_available_replicas"]


def _check(service: EstimatorService, cluster: str) -> None:
    if cluster != service.cluster_name:
        raise EstimatorError(f"cluster name does not match, got: {cluster}, desire: {service.cluster_name}")


def max_available_replicas(service: EstimatorService, message: Any) -> Any:
    _check(service, message.cluster)
    try:
        request = wire.replicas_request_from_pb(message)
    except EstimatorError as exc:
        raise EstimatorError(f"failed to estimate replicas: {exc.message}") from exc
    return estimator_pb2.MaxAvailableReplicasResponse(maxReplicas=service.max_available_replicas(request))


def max_available_component_sets(service: EstimatorService, message: Any) -> Any:
    _check(service, message.cluster)
    try:
        request = wire.component_sets_request_from_pb(message)
    except EstimatorError as exc:
        raise EstimatorError(f"failed to estimate component sets: {exc.message}") from exc
    sets = service.max_available_component_sets(request)
    return estimator_pb2.MaxAvailableComponentSetsResponse(maxSets=sets)


def get_unschedulable_replicas(service: EstimatorService, message: Any, now: datetime | None = None) -> Any:
    _check(service, message.cluster)
    request = wire.unschedulable_request_from_pb(message)
    return estimator_pb2.UnschedulableReplicasResponse(
        unschedulableReplicas=service.get_unschedulable_replicas(request, now))
