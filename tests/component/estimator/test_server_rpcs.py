"""The estimator server on loopback answering a real gRPC client: the three RPCs, Karmada's errors,
readiness, the health service and metrics."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from fleetsched.estimator import wire
from fleetsched.estimator.pb import service_pb2_grpc

from .conftest import StartedServer, node

pytestmark = pytest.mark.component

STORY_B = [node("b-1", "16"), node("b-2", "16")]


def _stub(server: StartedServer) -> tuple[grpc.Channel, service_pb2_grpc.EstimatorStub]:
    channel = grpc.insecure_channel(server.address)
    return channel, service_pb2_grpc.EstimatorStub(channel)


def test_max_available_replicas_counts_per_node(start: Callable[..., StartedServer]) -> None:
    server = start("member-b", STORY_B)
    channel, stub = _stub(server)
    with channel:
        request = wire.replicas_request_to_pb(
            {"cluster": "member-b", "replicaRequirements": {"resourceRequest": {"cpu": "12"}}})
        response = stub.MaxAvailableReplicas(request, timeout=5,
                                             metadata=(("object", "kind=Deployment, name=a/b"),))
    assert response.maxReplicas == 2


def test_component_sets_and_unschedulable_replicas(start: Callable[..., StartedServer]) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "web", "namespace": "default", "uid": "d1"},
                  "spec": {"selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}}
    replica_set = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "web-1", "namespace": "default", "uid": "rs1",
                                "labels": {"app": "web", "pod-template-hash": "1"},
                                "ownerReferences": [{"uid": "d1", "controller": True, "kind": "Deployment"}]},
                   "spec": {"template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "1"}},
                                         "spec": {}}}}
    pending = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web-1-a", "namespace": "default", "labels": {"app": "web"},
                            "ownerReferences": [{"uid": "rs1", "controller": True, "kind": "ReplicaSet"}]},
               "spec": {"containers": [{"name": "app"}]},
               "status": {"phase": "Pending", "conditions": [
                   {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                    "lastTransitionTime": "2020-01-01T00:00:00Z"}]}}
    server = start("member-b", [*STORY_B, deployment, replica_set, pending])
    channel, stub = _stub(server)
    with channel:
        sets = stub.MaxAvailableComponentSets(wire.component_sets_request_to_pb({
            "cluster": "member-b", "namespace": "default",
            "components": [
                {"name": "jm", "replicas": 1, "replicaRequirements": {"resourceRequest": {"cpu": "4"}}},
                {"name": "tm", "replicas": 2, "replicaRequirements": {"resourceRequest": {"cpu": "6"}}}],
        }), timeout=5)
        stuck = stub.GetUnschedulableReplicas(wire.unschedulable_request_to_pb({
            "cluster": "member-b", "unschedulableThreshold": 60_000_000_000,
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                         "name": "web"},
        }), timeout=5)
    # set 1: jm and both tms on b-1 (0 left); set 2: the same on b-2; set 3: nowhere
    assert sets.maxSets == 2
    assert stuck.unschedulableReplicas == 1


def test_another_clusters_request_is_refused_with_karmadas_error(start: Callable[..., StartedServer]) -> None:
    server = start("member-b", STORY_B)
    channel, stub = _stub(server)
    with channel, pytest.raises(grpc.RpcError) as failure:
        stub.MaxAvailableReplicas(wire.replicas_request_to_pb({"cluster": "member-a"}), timeout=5)
    assert failure.value.code() is grpc.StatusCode.UNKNOWN
    assert failure.value.details() == "cluster name does not match, got: member-a, desire: member-b"


def test_corrupt_quantity_fails_the_call_not_the_server(start: Callable[..., StartedServer]) -> None:
    server = start("member-b", STORY_B)
    channel, stub = _stub(server)
    with channel:
        bad = wire.replicas_request_to_pb({"cluster": "member-b"})
        bad.replicaRequirements.resourceRequestBytes["cpu"] = b"\x0a\x03abc"
        with pytest.raises(grpc.RpcError) as failure:
            stub.MaxAvailableReplicas(bad, timeout=5)
        assert failure.value.code() is grpc.StatusCode.UNKNOWN
        assert failure.value.details().startswith(
            "failed to estimate replicas: estimate replica plugins fails with [quantities must match")
        still = stub.MaxAvailableReplicas(wire.replicas_request_to_pb({"cluster": "member-b"}), timeout=5)
    assert still.maxReplicas == 220


def test_unavailable_until_synced_and_health_reports_it(start: Callable[..., StartedServer]) -> None:
    server = start("member-b", STORY_B, synced=False)
    channel, stub = _stub(server)
    with channel:
        with pytest.raises(grpc.RpcError) as failure:
            stub.MaxAvailableReplicas(wire.replicas_request_to_pb({"cluster": "member-b"}), timeout=5)
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""),
                                                           timeout=5)
        assert failure.value.code() is grpc.StatusCode.UNAVAILABLE
        assert health.status == health_pb2.HealthCheckResponse.NOT_SERVING
        server.state.synced = True
        answer = stub.MaxAvailableReplicas(wire.replicas_request_to_pb({"cluster": "member-b"}), timeout=5)
    assert answer.maxReplicas == 220


def test_health_service_serving_and_metrics_count_requests(start: Callable[..., StartedServer]) -> None:
    server = start("member-b", STORY_B)
    channel, stub = _stub(server)
    with channel:
        health = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(
                service="github.com.karmada_io.karmada.pkg.estimator.service.Estimator"),
            timeout=5)
        stub.MaxAvailableReplicas(wire.replicas_request_to_pb({"cluster": "member-b"}), timeout=5)
        with pytest.raises(grpc.RpcError):
            stub.MaxAvailableReplicas(wire.replicas_request_to_pb({"cluster": "x"}), timeout=5)
    assert health.status == health_pb2.HealthCheckResponse.SERVING
    registry = server.metrics.registry
    labels = {"type": "MaxAvailableReplicas"}
    assert registry.get_sample_value("karmada_scheduler_estimator_estimating_request_total",
                                     {**labels, "result": "success"}) == 1
    assert registry.get_sample_value("karmada_scheduler_estimator_estimating_request_total",
                                     {**labels, "result": "error"}) == 1
    histogram = "karmada_scheduler_estimator_estimating_algorithm_duration_seconds_count"
    assert registry.get_sample_value(histogram, {**labels, "result": "success", "step": "Total"}) == 1
