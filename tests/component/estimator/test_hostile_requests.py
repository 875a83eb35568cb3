"""Hostile and heavy requests over real gRPC on loopback (issue 14, item 4).

One request whose node affinity is 2,000 terms x 50 expressions (the 2.4-2.9 MB request of the issue)
used to be computed on the server's event loop, so health checks and every other caller waited
behind it. Now it is refused by default (INVALID_ARGUMENT naming the limit); with the limits raised it
is computed in a worker thread while the loop keeps answering. No timing is asserted: the tests assert
the order of events (a health check and a small request complete while the heavy one is still in
flight) and that generous deadlines are met.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc
import pytest
import structlog
import structlog.testing
from grpc_health.v1 import health_pb2, health_pb2_grpc

from fleetsched.estimator import wire
from fleetsched.estimator.limits import RequestLimits
from fleetsched.estimator.pb import k8s_types_pb2, service_pb2_grpc
from fleetsched.estimator.server import Capacity

from .conftest import StartedServer, node

pytestmark = pytest.mark.component

CLUSTER = "member1"
NODES = [node(f"n{i:03d}", "16", labels={"zone": f"z{i % 3}", "tier": str(i % 5)}) for i in range(300)]
SMALL = {"cluster": CLUSTER, "replicaRequirements": {"resourceRequest": {"cpu": "1"}}}
RAISED = RequestLimits(max_affinity_terms=2000, max_affinity_expressions=50,
                       max_affinity_total_expressions=100_000)
GENEROUS = 60  # seconds: a deadline no healthy server misses on a loaded machine


def heavy(terms: int = 2000, expressions: int = 50) -> Any:
    """Every expression matches every node (NotIn an absent value), so no term is cut short."""
    affinity = {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ("zone", "tier")[e % 2], "operator": "NotIn", "values": [f"x{t}-{e}"]}
                              for e in range(expressions)]}
        for t in range(terms)]}
    return wire.replicas_request_to_pb({"cluster": CLUSTER, "replicaRequirements": {
        "resourceRequest": {"cpu": "1"}, "nodeClaim": {"hardNodeAffinity": affinity}}})


def _channel(server: StartedServer) -> grpc.Channel:
    return grpc.insecure_channel(server.address, options=[("grpc.max_send_message_length", 64 << 20)])


def _in_flight(server: StartedServer) -> float:
    return server.metrics.registry.get_sample_value("fleetsched_estimator_requests_in_flight") or 0.0


def _wait_admitted(server: StartedServer, call: grpc.Future, count: int = 1) -> None:
    """Until the server has admitted ``count`` calls (they are computing); fails if ``call`` ended first."""
    give_up = time.monotonic() + GENEROUS
    while _in_flight(server) < count:
        assert not call.done(), f"the heavy call ended before it was seen in flight: {call.result()}"
        assert time.monotonic() < give_up, "the heavy call was never admitted"
        time.sleep(0.005)


def _rejected(server: StartedServer, limit: str, rpc: str = "MaxAvailableReplicas") -> float:
    return server.metrics.registry.get_sample_value(
        "fleetsched_estimator_rejected_requests_total", {"type": rpc, "limit": limit}) or 0.0


def test_a_heavy_request_leaves_health_checks_and_small_requests_answered(
        start: Callable[..., StartedServer]) -> None:
    server = start(CLUSTER, NODES, limits=RAISED)
    with _channel(server) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        call = stub.MaxAvailableReplicas.future(heavy(), timeout=600)
        _wait_admitted(server, call)
        status = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=GENEROUS)
        small = stub.MaxAvailableReplicas(wire.replicas_request_to_pb(SMALL), timeout=GENEROUS)
        still_computing = not call.done()
        answer = call.result(timeout=600)
    assert status.status == health_pb2.HealthCheckResponse.SERVING
    assert small.maxReplicas == 300 * 16
    assert still_computing, "the health check and the small request were answered only after the heavy one"
    assert answer.maxReplicas == 300 * 16  # the heavy one is computed too, and right


def test_the_heavy_request_is_refused_by_default_naming_the_limit(
        start: Callable[..., StartedServer]) -> None:
    server = start(CLUSTER, NODES)
    with _channel(server) as channel, pytest.raises(grpc.RpcError) as refused:
        service_pb2_grpc.EstimatorStub(channel).MaxAvailableReplicas(heavy(), timeout=GENEROUS)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == (
        "replicaRequirements.nodeClaim.nodeAffinity has 2000 terms, more than --max-affinity-terms=100")
    assert _rejected(server, "max_affinity_terms") == 1
    registry = server.metrics.registry
    assert registry.get_sample_value("karmada_scheduler_estimator_estimating_request_total",
                                     {"type": "MaxAvailableReplicas", "result": "error"}) == 1


def _claim(**claim: Any) -> dict[str, Any]:
    return {"cluster": CLUSTER, "replicaRequirements": {"nodeClaim": claim}}


def _affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"nodeSelectorTerms": [{"matchExpressions": list(term)} for term in terms]}


_EXPRESSION = {"key": "zone", "operator": "In", "values": ["z1"]}


@pytest.mark.parametrize(("limits", "request_body", "limit", "message"), [
    pytest.param(RequestLimits(max_affinity_expressions=3),
                 _claim(hardNodeAffinity=_affinity([_EXPRESSION] * 2, [_EXPRESSION] * 4)),
                 "max_affinity_expressions",
                 "replicaRequirements.nodeClaim.nodeAffinity.nodeSelectorTerms[1].matchExpressions has 4 "
                 "entries, more than --max-affinity-expressions=3", id="expressions in one term"),
    pytest.param(RequestLimits(max_affinity_values=2),
                 _claim(hardNodeAffinity=_affinity([{"key": "zone", "operator": "In",
                                                     "values": ["a", "b", "c"]}])),
                 "max_affinity_values",
                 "replicaRequirements.nodeClaim.nodeAffinity.nodeSelectorTerms[0].matchExpressions[0].values "
                 "has 3 entries, more than --max-affinity-values=2", id="values of one expression"),
    pytest.param(RequestLimits(max_affinity_total_expressions=5),
                 _claim(hardNodeAffinity=_affinity([_EXPRESSION] * 3, [_EXPRESSION] * 3)),
                 "max_affinity_total_expressions",
                 "request has 6 node affinity expressions, more than --max-affinity-total-expressions=5",
                 id="expressions in the whole request"),
    pytest.param(RequestLimits(max_tolerations=1),
                 _claim(tolerations=[{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]),
                 "max_tolerations",
                 "replicaRequirements.nodeClaim.tolerations has 2 entries, more than --max-tolerations=1",
                 id="tolerations"),
    pytest.param(RequestLimits(max_node_selector=1), _claim(nodeSelector={"zone": "z1", "tier": "1"}),
                 "max_node_selector",
                 "replicaRequirements.nodeClaim.nodeSelector has 2 entries, more than --max-node-selector=1",
                 id="node selector"),
    pytest.param(RequestLimits(max_resource_entries=2),
                 {"cluster": CLUSTER, "replicaRequirements": {"resourceRequest": {"cpu": "1", "memory": "1Gi",
                                                                                  "example.com/gpu": "1"}}},
                 "max_resource_entries",
                 "replicaRequirements.resourceRequest has 3 entries, more than --max-resource-entries=2",
                 id="resource entries"),
    pytest.param(RequestLimits(max_request_bytes=64), _claim(nodeSelector={"k": "v" * 100}),
                 "max_request_bytes", "request has 120 bytes, more than --max-request-bytes=64",
                 id="bytes"),
])
def test_a_request_over_a_limit_is_invalid_argument_naming_field_and_flag(
        start: Callable[..., StartedServer], limits: RequestLimits, request_body: dict[str, Any], limit: str,
        message: str) -> None:
    server = start(CLUSTER, NODES, limits=limits)
    with _channel(server) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.MaxAvailableReplicas(wire.replicas_request_to_pb(request_body), timeout=GENEROUS)
        after = stub.MaxAvailableReplicas(wire.replicas_request_to_pb(SMALL), timeout=GENEROUS)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == message
    assert _rejected(server, limit) == 1
    assert after.maxReplicas == 300 * 16, "the server goes on answering"


def test_component_sets_are_bounded_per_component(start: Callable[..., StartedServer]) -> None:
    server = start(CLUSTER, NODES, limits=RequestLimits(max_components=2, max_tolerations=1))
    too_many = wire.component_sets_request_to_pb({"cluster": CLUSTER, "components": [
        {"name": f"c{i}", "replicas": 1} for i in range(3)]})
    tolerant = wire.component_sets_request_to_pb({"cluster": CLUSTER, "components": [
        {"name": "a", "replicas": 1},
        {"name": "b", "replicas": 1, "replicaRequirements": {"nodeClaim": {"tolerations": [
            {"key": "x", "operator": "Exists"}, {"key": "y", "operator": "Exists"}]}}}]})
    with _channel(server) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        details = []
        for request in (too_many, tolerant):
            with pytest.raises(grpc.RpcError) as refused:
                stub.MaxAvailableComponentSets(request, timeout=GENEROUS)
            assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
            details.append(refused.value.details())
    assert details == [
        "components has 3 entries, more than --max-components=2",
        "components[1].replicaRequirements.nodeClaim.tolerations has 2 entries, "
        "more than --max-tolerations=1",
    ]
    assert _rejected(server, "max_components", "MaxAvailableComponentSets") == 1


def test_over_the_concurrency_limit_is_resource_exhausted_and_health_still_answers(
        start: Callable[..., StartedServer]) -> None:
    server = start(CLUSTER, NODES, limits=RAISED, capacity=Capacity(workers=1, max_concurrent_requests=1))
    with _channel(server) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        call = stub.MaxAvailableReplicas.future(heavy(), timeout=600)
        _wait_admitted(server, call)
        with pytest.raises(grpc.RpcError) as busy:
            stub.MaxAvailableReplicas(wire.replicas_request_to_pb(SMALL), timeout=GENEROUS)
        status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""),
                                                           timeout=GENEROUS)
        refused_while_in_flight = not call.done()
        assert call.result(timeout=600).maxReplicas == 300 * 16
        after = stub.MaxAvailableReplicas(wire.replicas_request_to_pb(SMALL), timeout=GENEROUS)
    assert busy.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert busy.value.details() == ("estimator is busy: 1 requests in flight, "
                                    "the limit is --max-concurrent-requests=1")
    assert refused_while_in_flight
    assert status.status == health_pb2.HealthCheckResponse.SERVING
    assert after.maxReplicas == 300 * 16, "admitted again once the heavy one is answered"
    assert _rejected(server, "max_concurrent_requests") == 1
    assert _in_flight(server) == 0


def test_a_request_that_is_not_protobuf_is_invalid_argument(start: Callable[..., StartedServer]) -> None:
    server = start(CLUSTER, NODES)
    with _channel(server) as channel:
        raw = channel.unary_unary(
            "/github.com.karmada_io.karmada.pkg.estimator.service.Estimator/MaxAvailableReplicas",
            request_serializer=None, response_deserializer=None)
        with pytest.raises(grpc.RpcError) as refused:
            raw(b"\xff\xff\xff", timeout=GENEROUS)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details().startswith("request is not a valid MaxAvailableReplicasRequest: ")


def test_far_over_the_byte_limit_grpc_drops_the_message_unread(start: Callable[..., StartedServer]) -> None:
    server = start(CLUSTER, NODES, limits=RequestLimits(max_request_bytes=1024))
    huge = _claim(nodeSelector={"k": "v" * (2 << 20)})  # 2 MiB: past the 1 MiB headroom
    with _channel(server) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        with pytest.raises(grpc.RpcError) as dropped:
            stub.MaxAvailableReplicas(wire.replicas_request_to_pb(huge), timeout=GENEROUS)
        after = stub.MaxAvailableReplicas(wire.replicas_request_to_pb(SMALL), timeout=GENEROUS)
    assert dropped.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "larger than max" in dropped.value.details()
    assert after.maxReplicas == 300 * 16


def _with_quantity(text: str, *, component: bool = False) -> Any:
    """A request carrying ``text`` as its cpu quantity, in the bytes a Karmada scheduler sends."""
    payload = k8s_types_pb2.Quantity(string=text).SerializeToString()
    requirements = {"resourceRequest": {"cpu": "1"}}
    if component:
        request = wire.component_sets_request_to_pb({"cluster": CLUSTER, "components": [
            {"name": "a", "replicas": 1}, {"name": "b", "replicas": 1, "replicaRequirements": requirements}]})
        request.components[1].replicaRequirements.resourceRequestBytes["cpu"] = payload
    else:
        request = wire.replicas_request_to_pb({"cluster": CLUSTER, "replicaRequirements": requirements})
        request.replicaRequirements.resourceRequestBytes["cpu"] = payload
    return request


@pytest.mark.parametrize(("text", "what"), [
    pytest.param("9" * 5000, "5000 characters", id="5,000 digits"),
    pytest.param("0." + "1" * 4999, "5001 characters", id="5,000 fraction digits"),
    pytest.param("1e" + "0" * 4998 + "1", "5001 characters", id="5,000-digit exponent"),
])
def test_an_absurd_quantity_is_invalid_argument_naming_the_field_without_a_traceback(
        start: Callable[..., StartedServer], text: str, what: str) -> None:
    server = start(CLUSTER, NODES)
    with structlog.testing.capture_logs() as logs, _channel(server) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.MaxAvailableReplicas(_with_quantity(text), timeout=GENEROUS)
        with pytest.raises(grpc.RpcError) as refused_sets:
            stub.MaxAvailableComponentSets(_with_quantity(text, component=True), timeout=GENEROUS)
        after = stub.MaxAvailableReplicas(wire.replicas_request_to_pb(SMALL), timeout=GENEROUS)
    assert refused.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.details() == (
        f"replicaRequirements.resourceRequest[cpu]: quantity is {what} long, more than 1000")
    assert refused_sets.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert refused_sets.value.details() == (
        f"components[1].replicaRequirements.resourceRequest[cpu]: quantity is {what} long, more than 1000")
    assert after.maxReplicas == 300 * 16, "the server goes on answering"
    crashed = [e for e in logs if e.get("log_level") in ("error", "critical") or "exc_info" in e]
    assert not crashed, crashed


def test_a_long_but_sane_quantity_is_still_read_as_karmada_reads_it(
        start: Callable[..., StartedServer]) -> None:
    server = start(CLUSTER, NODES)
    text = "0" * 900 + "2"  # leading zeros: 901 characters, the amount 2
    with _channel(server) as channel:
        answer = service_pb2_grpc.EstimatorStub(channel).MaxAvailableReplicas(_with_quantity(text),
                                                                              timeout=GENEROUS)
    assert answer.maxReplicas == 300 * 16 // 2
