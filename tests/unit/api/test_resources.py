"""Resource names and pod requests as the node math counts them (spec 3.3)."""

from __future__ import annotations

import pytest

from fleetsched.api.resources import column_of, demand_of, node_allocatable, parse_cached, pod_request


@pytest.mark.parametrize(("name", "column"), [
    ("cpu", "cpu"), ("memory", "memory"), ("ephemeral-storage", "ephemeral-storage"), ("pods", "pods"),
    ("nvidia.com/gpu", "nvidia.com/gpu"), ("hugepages-2Mi", "hugepages-2Mi"),
    ("kubernetes.io/batch-cpu", "kubernetes.io/batch-cpu"),
    ("attachable-volumes-aws-ebs", "attachable-volumes-aws-ebs"),
    ("storage", None), ("foo", None), ("requests.cpu", None), ("requests.nvidia.com/gpu", None),
    ("bad/name/x", None), ("Example.COM/gpu", None),
])
def test_resource_classification(name: str, column: str | None) -> None:
    assert column_of(name) == column


def test_pod_request_takes_init_maximum_and_adds_overhead() -> None:
    spec = {
        "initContainers": [{"resources": {"requests": {"cpu": "3", "memory": "512Mi"}}},
                           {"resources": {"requests": {"example.com/dongle": "1"}}}],
        "containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
                       {"resources": {"requests": {"cpu": "0.5", "storage": "1Gi"}, "limits": {"cpu": "9"}}}],
        "overhead": {"cpu": "250m"},
    }
    assert pod_request(spec) == {"cpu": 3250, "memory": 1024**3, "example.com/dongle": 1}


def test_conversion_rounds_up_once_per_pod() -> None:
    spec = {"containers": [{"resources": {"requests": {"cpu": "0.1m"}}},
                           {"resources": {"requests": {"cpu": "0.1m", "memory": "0.5"}}}]}
    assert pod_request(spec) == {"cpu": 1, "memory": 1}


def test_allocatable_and_demand_views() -> None:
    assert node_allocatable({"cpu": "3.5", "memory": "1Ki", "pods": "1.1e2", "storage": "1"}) == {
        "cpu": 3500, "memory": 1024, "pods": 110}
    assert demand_of([("cpu", parse_cached("1n")), ("memory", parse_cached("0")), ("pods", parse_cached("3")),
                      ("foo", parse_cached("1"))]) == [("cpu", 1)]
