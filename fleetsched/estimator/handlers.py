"""Protobuf request in, protobuf response out: the body of each RPC, shared by the gRPC servicer and
``fleetsched estimate``. Raises :class:`EstimatorError` for answers that are gRPC errors.

Order follows Karmada's server: the cluster name is checked first, then a cluster without nodes answers 0,
and only then is the payload decoded (Karmada's plugins decode it), so a request for another cluster gets the
mismatch error and a request to an empty cluster gets 0 even when its payload is corrupt.

Given limits (the server passes its flags'), a request over one gets INVALID_ARGUMENT whether or not the
cluster has nodes: the bound is on the request, not on the answer, so an empty cluster still decodes the
payload to check it, and only a corrupt one is answered 0 as Karmada does.

Pure and synchronous: the server runs these in its worker threads, never on the event loop.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from fleetsched.estimator import wire
from fleetsched.estimator.limits import LimitExceeded, RequestLimits
from fleetsched.estimator.model import EstimatorError
from fleetsched.estimator.pb import estimator_pb2
from fleetsched.estimator.service import EstimatorService

__all__ = ["get_unschedulable_replicas", "max_available_component_sets", "max_available_replicas"]


def _check(service: EstimatorService, cluster: str) -> None:
    if cluster != service.cluster_name:
        raise EstimatorError(f"cluster name does not match, got: {cluster}, desire: {service.cluster_name}")


def _without_unused_assumptions(service: EstimatorService, message: Any, used: bool = True) -> Any:
    """The request minus its assumed workloads when nothing will read them (the overcommit gate is off,
    spec 3.2 step 4, or there are no components, 3.8 step 1): Karmada never decodes them then, so a corrupt
    payload in them is no error."""
    if (service.gates.scheduling_overcommit_protection and used) or not len(message.assumedWorkloads):
        return message
    trimmed = type(message)()
    trimmed.CopyFrom(message)
    trimmed.ClearField("assumedWorkloads")
    return trimmed


def _decode(decode: Callable[[Any, RequestLimits | None], Any], message: Any, limits: RequestLimits | None,
            failure: str) -> Any:
    try:
        return decode(message, limits)
    except EstimatorError as exc:
        if _refused(exc):
            raise
        # a decode error is a plugin Error (spec 3.7 step 1), reported like any other (3.10)
        raise EstimatorError(f"{failure} [{exc.message}]") from exc


def _refused(exc: EstimatorError) -> bool:
    """A request fleetsched refuses before estimating (over a limit, a quantity too long to read):
    INVALID_ARGUMENT naming the field, never wrapped as a plugin error."""
    return isinstance(exc, LimitExceeded) or exc.code == "InvalidArgument"


def _checked_for_empty_cluster(decode: Callable[[Any, RequestLimits | None], Any], message: Any,
                               limits: RequestLimits | None) -> None:
    """Karmada answers 0 before any plugin runs, and its plugins decode the payload (spec 3.2 step 3): a
    corrupt payload is no error then, but a request over the limits still is."""
    if limits is None:
        return
    try:
        decode(message, limits)
    except EstimatorError as exc:
        if _refused(exc):
            raise


def max_available_replicas(service: EstimatorService, message: Any, *,
                           limits: RequestLimits | None = None) -> Any:
    _check(service, message.cluster)
    message = _without_unused_assumptions(service, message)
    if service.table.num_nodes() == 0:
        _checked_for_empty_cluster(wire.replicas_request_from_pb, message, limits)
        return estimator_pb2.MaxAvailableReplicasResponse(maxReplicas=0)
    request = _decode(wire.replicas_request_from_pb, message, limits,
                      "failed to estimate replicas: estimate replica plugins fails with")
    return estimator_pb2.MaxAvailableReplicasResponse(maxReplicas=service.max_available_replicas(request))


def max_available_component_sets(service: EstimatorService, message: Any, *,
                                 limits: RequestLimits | None = None) -> Any:
    _check(service, message.cluster)
    message = _without_unused_assumptions(service, message, used=len(message.components) > 0)
    if service.table.num_nodes() == 0:
        _checked_for_empty_cluster(wire.component_sets_request_from_pb, message, limits)
        return estimator_pb2.MaxAvailableComponentSetsResponse(maxSets=0)
    request = _decode(wire.component_sets_request_from_pb, message, limits,
                      "failed to estimate component sets: estimate components plugins fails with")
    sets = service.max_available_component_sets(request)
    return estimator_pb2.MaxAvailableComponentSetsResponse(maxSets=sets)


def get_unschedulable_replicas(service: EstimatorService, message: Any, now: datetime | None = None, *,
                               limits: RequestLimits | None = None) -> Any:
    """``limits`` is accepted for a uniform signature: this request has no lists to bound."""
    _check(service, message.cluster)
    request = wire.unschedulable_request_from_pb(message)
    return estimator_pb2.UnschedulableReplicasResponse(
        unschedulableReplicas=service.get_unschedulable_replicas(request, now))
