"""The request's binding and clusters are Karmada objects that read back into the same core values."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import orjson

from fleetsched.api import Cluster, ResourceBinding
from fleetsched.extender.objects import binding_json, binding_object, cluster_json, cluster_object
from fleetsched.extender.protocol import ExtenderArgs, encode_args
from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict
from fleetsched.scheduler.types import ClusterInfo

AFFINITY = {
    "labelSelector": {"matchLabels": {"tier": "gold"},
                      "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
    "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us"]}]},
    "clusterNames": ["m1", "m2"],
    "exclude": ["m9"],
}
BINDING: dict[str, Any] = {
    "apiVersion": "work.karmada.io/v1alpha2",
    "kind": "ResourceBinding",
    "metadata": {"name": "web-deployment", "namespace": "shop"},
    "spec": {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web",
                     "uid": "u-1"},
        "replicas": 5,
        "replicaRequirements": {
            "nodeClaim": {"nodeSelector": {"disk": "ssd"},
                          "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
                          "hardNodeAffinity": {"nodeSelectorTerms": [{"matchExpressions": [
                              {"key": "zone", "operator": "In", "values": ["a"]}]}]}},
            "resourceRequest": {"cpu": "250m", "memory": "512Mi", "nvidia.com/gpu": "1"},
            "namespace": "shop",
            "priorityClassName": "high",
        },
        "placement": {
            "clusterAffinities": [
                {"affinityName": "primary", **AFFINITY,
                 "overflowAffinities": [{"affinityName": "burst", "clusterNames": ["m3"]}]},
                {"affinityName": "backup", "clusterNames": ["m4"]},
            ],
            "clusterTolerations": [{"key": "maintenance", "operator": "Equal", "value": "yes",
                                    "effect": "NoExecute"}],
            "spreadConstraints": [{"spreadByField": "region", "maxGroups": 2, "minGroups": 1},
                                  {"spreadByLabel": "team", "maxGroups": 1}],
            "replicaScheduling": {
                "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["m1"]},
                                                           "weight": 2}],
                                     "dynamicWeight": "AvailableReplicas"},
            },
        },
        "clusters": [{"name": "m1", "replicas": 3}, {"name": "m2"}],
        "gracefulEvictionTasks": [{"fromCluster": "m7"}],
        "rescheduleTriggeredAt": "2026-01-02T03:04:05Z",
        "workloadAffinityGroups": {"affinityGroup": "a=b", "antiAffinityGroup": "c=d"},
    },
}
CLUSTER: dict[str, Any] = {
    "apiVersion": "cluster.karmada.io/v1alpha1",
    "kind": "Cluster",
    "metadata": {"name": "m1", "labels": {"region": "eu", "cost": "3"}},
    "spec": {"syncMode": "Push", "provider": "aws", "region": "eu-west-1", "zones": ["a", "b"],
             "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
                        {"key": "x", "effect": "NoExecute"}]},
    "status": {"resourceSummary": {"allocatable": {"cpu": "64", "memory": "256Gi"},
                                   "allocated": {"cpu": "10500m"}, "allocating": {},
                                   "allocatableModelings": [{"grade": 0, "count": 3}]}},
}


def _cluster_fields(c: ClusterInfo) -> tuple[Any, ...]:
    return (c.name, dict(c.labels), c.provider, c.region, c.zones, c.taints, c.resource_summary, c.sync_mode)


def test_a_binding_reads_back_into_the_same_value() -> None:
    binding = binding_from_dict(BINDING)
    assert binding.reschedule_triggered_at == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    rendered = binding_object(binding)
    # eviction tasks are not sent: the core keeps only their clusters, not a valid task
    assert binding_from_dict(rendered) == dataclasses.replace(binding, evicting_clusters=())
    assert orjson.loads(binding_json(binding)) == rendered


def test_a_cluster_reads_back_into_the_same_values() -> None:
    cluster = cluster_from_dict(CLUSTER)
    again = cluster_from_dict(cluster_object(cluster))
    assert _cluster_fields(again) == _cluster_fields(cluster)


def test_the_objects_are_valid_karmada_objects() -> None:
    binding = ResourceBinding.model_validate(binding_object(binding_from_dict(BINDING)))
    assert binding.spec.replica_requirements is not None
    assert str(binding.spec.replica_requirements.resource_request["cpu"]) == "250m"
    # the items of ``clusters`` carry no apiVersion/kind, like the items of a kube NodeList
    cluster = Cluster.model_validate({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                                      **cluster_object(cluster_from_dict(CLUSTER))})
    assert cluster.spec.taints is not None and cluster.spec.taints[0].key == "dedicated"


def test_a_cluster_is_rendered_once_per_value() -> None:
    cluster = cluster_from_dict(CLUSTER)
    assert cluster_json(cluster) is cluster_json(cluster)
    assert cluster_json(cluster_from_dict(CLUSTER)) == cluster_json(cluster)


def test_the_request_body_is_a_valid_extender_args() -> None:
    binding, cluster = binding_from_dict(BINDING), cluster_from_dict(CLUSTER)
    body = encode_args(binding_json(binding), [cluster_json(cluster)], ["m1"])
    args = ExtenderArgs.model_validate_json(body)
    assert args.api_version == "extender.fleetsched.io/v1alpha1" and args.kind == "ExtenderArgs"
    assert args.cluster_names == ["m1"]
    assert args.clusters == [cluster_object(cluster)]
    assert args.binding == binding_object(binding)
