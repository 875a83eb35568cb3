from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from fleetsched.scheduler.convert import (
    ConversionError,
    binding_from_dict,
    cluster_from_dict,
    status_from_dict,
)

CLUSTER = {
    "metadata": {"name": "m1", "labels": {"env": "prod"}, "deletionTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {
        "provider": "aws",
        "region": "us-east-1",
        "syncMode": "Pull",
        "zones": ["a", "b"],
        "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}],
        "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]}],
    },
    "status": {
        "apiEnablements": [
            {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}
        ],
        "resourceSummary": {
            "allocatable": {"cpu": "4", "pods": 110},
            "allocated": {"cpu": "500m"},
            "allocatableModelings": [{"grade": 0, "count": 3}],
        },
    },
}


def test_cluster_fields() -> None:
    c = cluster_from_dict(CLUSTER)
    assert (c.name, c.provider, c.region, c.zones, c.deleting) == ("m1", "aws", "us-east-1", ("a", "b"), True)
    assert c.labels == {"env": "prod"}
    assert c.taints[0].render() == "k=v:NoSchedule"
    assert ("apps/v1", "Deployment") in c.api_enablements
    assert c.resource_summary is not None
    assert c.resource_summary.allocated["cpu"].milli_value() == 500
    assert c.resource_summary.allocatable_modelings == ((0, 3),)
    assert c.resource_models[0].grade == 0
    assert c.sync_mode == "Pull"


def test_binding_fields_are_taken_as_written() -> None:
    raw = {
        "kind": "ClusterResourceBinding",
        "metadata": {"name": "crb"},
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u"},
            "replicas": 2,
            "clusters": [{"name": "m1", "replicas": 2}, {"name": "m2"}],
            "placement": {
                "clusterAffinities": [{"affinityName": "a", "overflowAffinities": []}],
                "replicaScheduling": {"replicaSchedulingType": "Divided"},
            },
            "gracefulEvictionTasks": [{"fromCluster": "m3"}],
            "rescheduleTriggeredAt": "2026-01-02T00:00:00Z",
        },
        "status": {"schedulerObservingAffinityName": "a", "lastScheduledTime": "2026-01-01T00:00:00Z"},
    }
    b = binding_from_dict(raw)
    assert (b.kind, b.key, b.replicas, b.resource.uid) == ("ClusterResourceBinding", "crb", 2, "u")
    assert [(t.name, t.replicas) for t in b.clusters] == [("m1", 2), ("m2", 0)]
    assert b.placement is not None and b.placement.cluster_affinities is not None
    assert b.placement.cluster_affinities[0].overflow == ()  # an explicit empty list is not None
    rs = b.placement.replica_scheduling
    assert rs is not None and (rs.scheduling_type, rs.division_preference) == ("Divided", "")  # no defaults
    assert b.evicting_clusters == ("m3",)
    assert b.reschedule_triggered_at == dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    status = status_from_dict(raw)
    assert status.scheduler_observing_affinity_name == "a"
    assert status.last_scheduled_time == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        pytest.param({"spec": {"replicas": "3"}}, "spec.replicas", id="replicas must be an integer"),
        pytest.param(
            {"spec": {"placement": {"spreadConstraints": {}}}},
            "spec.placement.spreadConstraints",
            id="a list",
        ),
        pytest.param(
            {"spec": {"replicaRequirements": {"resourceRequest": {"cpu": "lots"}}}},
            "spec.replicaRequirements.resourceRequest.cpu",
            id="a quantity",
        ),
        pytest.param(
            {"spec": {"rescheduleTriggeredAt": "yesterday"}}, "spec.rescheduleTriggeredAt", id="a time"
        ),
    ],
)
def test_malformed_bindings_name_the_field(raw: dict, path: str) -> None:
    with pytest.raises(ConversionError) as info:
        binding_from_dict(raw)
    assert info.value.path == path
    assert str(info.value).startswith(path + ": ")


@pytest.mark.parametrize(
    ("convert", "raw", "path"),
    [
        pytest.param(binding_from_dict, {"spec": {"clusters": [{"name": "a"}, "b"]}}, "spec.clusters[1]",
                     id="a list item must be an object"),
        pytest.param(
            binding_from_dict,
            {"spec": {"placement": {"clusterAffinities": [
                {"affinityName": "a"},
                {"affinityName": "b", "overflowAffinities": [{"affinityName": "c"}, {"affinityName": 1}]},
            ]}}},
            "spec.placement.clusterAffinities[1].overflowAffinities[1].affinityName",
            id="nested list items",
        ),
        pytest.param(
            binding_from_dict,
            {"spec": {"placement": {"replicaScheduling": {"weightPreference": {"staticWeightList": [
                {"targetCluster": {}, "weight": 1},
                {"targetCluster": {"clusterNames": [2]}, "weight": 1},
            ]}}}}},
            "spec.placement.replicaScheduling.weightPreference.staticWeightList[1].targetCluster.clusterNames[0]",
            id="a list inside a list item",
        ),
        pytest.param(cluster_from_dict, {"status": {"apiEnablements": [
            {"groupVersion": "v1", "resources": [{"kind": "Pod"}, {"kind": 3}]}]}},
            "status.apiEnablements[0].resources[1].kind", id="api enablements"),
        pytest.param(cluster_from_dict, {"spec": {"resourceModels": [
            {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "x"}]}]}},
            "spec.resourceModels[0].ranges[0].max", id="resource model ranges"),
        pytest.param(cluster_from_dict, {"status": {"resourceSummary": {"allocatableModelings": [
            {"grade": 0, "count": 1}, {"grade": 1, "count": "2"}]}}},
            "status.resourceSummary.allocatableModelings[1].count", id="allocatable modelings"),
    ],
)
def test_malformed_list_items_name_their_index(convert: Any, raw: dict, path: str) -> None:
    with pytest.raises(ConversionError) as info:
        convert(raw)
    assert info.value.path == path
