"""The general estimator (scheduler.md §7.2/§7.3, estimator.md §5)."""

from __future__ import annotations

import pytest

from fleetsched.scheduler.framework import ReplicaEstimator
from fleetsched.scheduler.general_estimator import GeneralEstimator, is_scalar_resource
from fleetsched.scheduler.types import ReplicaRequirements

from .builders import ClusterBuilder, a_binding, a_cluster

GRADES = (
    (0, {"cpu": "0", "memory": "0"}),
    (1, {"cpu": "2", "memory": "4Gi"}),
    (2, {"cpu": "4", "memory": "8Gi"}),
)


def _requirements(**requests: str) -> ReplicaRequirements | None:
    return a_binding().requests(**requests).build().replica_requirements


def _estimate(
    cluster: ClusterBuilder, requirements: ReplicaRequirements | None, modeling: bool = True
) -> int:
    estimator: ReplicaEstimator = GeneralEstimator(resource_modeling=modeling)
    return estimator.max_available_replicas([cluster.build()], requirements)[0]


@pytest.mark.parametrize(
    ("cluster", "requests", "expected"),
    [
        pytest.param(a_cluster("m").free(30), None, 30, id="no requirements: pod headroom"),
        pytest.param(a_cluster("m").no_summary(), None, 0, id="no resource summary"),
        pytest.param(a_cluster("m").free(5).allocated(pods="7"), None, 0, id="negative pod headroom"),
        pytest.param(a_cluster("m").allocatable(cpu="4"), {"cpu": "500m"}, 8, id="cpu in millicores"),
        pytest.param(
            a_cluster("m").allocatable(cpu="4").allocated(cpu="3500m"),
            {"cpu": "300m"},
            1,
            id="cpu available after allocated",
        ),
        pytest.param(
            a_cluster("m").allocatable(cpu="1"),
            {"cpu": "0.1m"},
            110,
            id="0.1m counts as one millicore, capped by pods",
        ),
        pytest.param(a_cluster("m").allocatable(memory="10Gi"), {"memory": "3Gi"}, 3, id="memory in units"),
        pytest.param(
            a_cluster("m").allocatable(cpu="4"), {"nvidia.com/gpu": "1"}, 0, id="a resource the cluster lacks"
        ),
        pytest.param(
            a_cluster("m").allocatable(cpu="4").allocated(cpu="4"), {"cpu": "1"}, 0, id="nothing left"
        ),
        pytest.param(a_cluster("m").allocatable(cpu="4"), {"cpu": "0"}, 110, id="zero requests are skipped"),
    ],
)
def test_summary_estimate(cluster: ClusterBuilder, requests: dict[str, str] | None, expected: int) -> None:
    assert _estimate(cluster, _requirements(**requests) if requests is not None else None) == expected


def _modeled() -> ClusterBuilder:
    return (
        a_cluster("m")
        .free(500)
        .allocatable(cpu="1000", memory="1000Gi")
        .models(*GRADES, modelings={0: 5, 1: 3, 2: 2})
    )


def test_model_estimate_example_8() -> None:
    assert _estimate(_modeled(), _requirements(cpu="1", memory="2Gi")) == 14
    assert _estimate(_modeled(), _requirements(cpu="1", memory="2Gi", **{"nvidia.com/gpu": "1"})) == 0


def test_model_estimate_is_capped_by_pods_and_ignores_the_summary() -> None:
    small = (
        a_cluster("m").free(10).allocatable(cpu="1000", memory="1000Gi").models(*GRADES, modelings={2: 100})
    )
    assert _estimate(small, _requirements(cpu="1")) == 10
    # The summary alone would allow 1000 // 1 = 1000 (capped to 500 pods); models say 14.
    assert _estimate(_modeled(), _requirements(cpu="1", memory="2Gi"), modeling=False) == 500


def test_models_without_modelings_or_with_negative_counts_fall_back_to_the_summary() -> None:
    fallback = a_cluster("m").free(500).allocatable(cpu="8").models(*GRADES, modelings={1: -1})
    assert _estimate(fallback, _requirements(cpu="1")) == 8


def test_model_nodes_fit_at_most_110_pods_each() -> None:
    cluster = a_cluster("m").free(1000).allocatable(cpu="1000").models(*GRADES, modelings={2: 2})
    assert _estimate(cluster, _requirements(cpu="1m")) == 220


def test_a_cluster_keeps_its_prepared_headroom_only_however_many_requests_it_is_asked() -> None:
    # The cold path: every binding its own request. Nothing per request may pile up on a cluster.
    cluster = a_cluster("m").allocatable(cpu="4").build()
    estimator = GeneralEstimator()
    assert estimator.max_available_replicas([cluster], _requirements(cpu="1")) == [4]
    assert estimator.max_available_replicas([cluster], _requirements(cpu="1000m")) == [4]
    for millis in range(1, 200):
        estimator.max_available_replicas([cluster], _requirements(cpu=f"{millis}m"))
    assert len(cluster.memo) == 1  # the per-cluster base, computed once


def test_converted_requests_are_bounded_and_evicted_gradually() -> None:
    from fleetsched.scheduler import general_estimator as general

    general._REQUESTS.clear()
    cluster = a_cluster("m").allocatable(cpu="4").build()
    estimator = GeneralEstimator()
    for millis in range(1, general._REQUESTS_LIMIT + 10):
        estimator.max_available_replicas([cluster], _requirements(cpu=f"{millis}m"))
    assert len(general._REQUESTS) <= general._REQUESTS_LIMIT
    assert len(general._REQUESTS) > general._REQUESTS_LIMIT // 2  # not cleared all at once


@pytest.mark.parametrize(
    ("name", "scalar"),
    [
        ("nvidia.com/gpu", True),
        ("hugepages-2Mi", True),
        ("kubernetes.io/foo", True),
        ("attachable-volumes-aws-ebs", True),
        ("cpu", False),
        ("pods", False),
        ("storage", False),
        ("requests.cpu", False),
    ],
)
def test_scalar_resource_names(name: str, scalar: bool) -> None:
    assert is_scalar_resource(name) is scalar
