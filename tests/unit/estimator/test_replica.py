"""GetUnschedulableReplicas (spec 3.11): the newest ReplicaSet, the threshold, and Karmada's errors."""

from __future__ import annotations

from typing import Any

import pytest

from .builders import member

DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment",
          "metadata": {"name": "web", "namespace": "prod", "uid": "d1"},
          "spec": {"selector": {"matchLabels": {"app": "web"}},
                   "template": {"metadata": {"labels": {"app": "web"}},
                                "spec": {"containers": [
                                    {"name": "c", "resources": {"requests": {"cpu": "0.5"}}}]}}}}


def rs(name: str, uid: str, created: str, cpu: str = "500m", owner: str = "d1") -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "prod", "uid": uid, "creationTimestamp": created,
                         "labels": {"app": "web", "pod-template-hash": name},
                         "ownerReferences": [{"kind": "Deployment", "uid": owner, "controller": True}]},
            "spec": {"template": {"metadata": {"labels": {"app": "web", "pod-template-hash": name}},
                                  "spec": {"containers": [
                                      {"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}}


def pod(name: str, owner: str, *, since: str = "2020-01-01T00:00:00Z", reason: str = "Unschedulable",
        phase: str = "Pending") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "prod", "labels": {"app": "web"},
                         "ownerReferences": [{"kind": "ReplicaSet", "uid": owner, "controller": True}]},
            "spec": {"containers": [{"name": "c"}]},
            "status": {"phase": phase, "conditions": [{"type": "PodScheduled", "status": "False",
                                                       "reason": reason, "lastTransitionTime": since}]}}


def ask(inventory, kind: str = "Deployment", name: str = "web", api_version: str = "apps/v1",  # type: ignore[no-untyped-def]
        threshold: int = 60_000_000_000) -> int | str:
    from fleetsched.estimator import handlers, wire
    from fleetsched.estimator.model import EstimatorError

    message = wire.unschedulable_request_to_pb({
        "cluster": "member1", "unschedulableThreshold": threshold,
        "resource": {"apiVersion": api_version, "kind": kind, "namespace": "prod", "name": name}})
    try:
        return int(handlers.get_unschedulable_replicas(inventory.service, message).unschedulableReplicas)
    except EstimatorError as exc:
        return exc.message


def test_counts_only_pods_of_the_oldest_matching_replica_set_past_the_threshold() -> None:
    inventory = member(
        DEPLOY,
        rs("old", "rs-old", "2020-01-01T00:00:00Z", cpu="1"),  # template differs
        rs("new", "rs-new", "2021-01-01T00:00:00Z"),  # template equal ignoring the hash, 0.5 == 500m
        rs("newer", "rs-newer", "2022-01-01T00:00:00Z"),  # also equal but younger
        rs("foreign", "rs-f", "2019-01-01T00:00:00Z", owner="someone-else"),
        pod("a", "rs-new"), pod("b", "rs-new"), pod("c", "rs-new", since="2200-01-01T00:00:00Z"),
        pod("d", "rs-new", reason="SchedulerError"), pod("e", "rs-new", phase="Failed"),
        pod("f", "rs-old"), pod("g", "rs-newer"), pod("h", "rs-f"),
    )
    assert ask(inventory) == 2


def test_negative_threshold_counts_as_zero_and_no_new_replica_set_gives_zero() -> None:
    assert ask(member(DEPLOY, rs("new", "rs-new", "2021-01-01T00:00:00Z"), pod("a", "rs-new")),
               threshold=-5) == 1
    assert ask(member(DEPLOY, rs("old", "rs-old", "2020-01-01T00:00:00Z", cpu="1"), pod("a", "rs-old"))) == 0


@pytest.mark.parametrize(("kind", "name", "api_version", "message"), [
    pytest.param("Deployment", "nope", "apps/v1", 'deployments.apps "prod/nope" not found',
                 id="missing deployment"),
    pytest.param("StatefulSet", "db", "apps/v1", 'statefulsets.apps "db" not found',
                 id="missing statefulset"),
    pytest.param("Widget", "w", "apps/v1", 'no matches for kind "Widget" in version "apps/v1"',
                 id="unknown kind"),
    pytest.param("Deployment", "web", "apps/v2", 'no matches for kind "Deployment" in version "apps/v2"',
                 id="unserved version"),
    pytest.param("ReplicaSet", "new", "apps/v1", "kind(ReplicaSet) of workload(prod/new) is not supported",
                 id="unsupported kind"),
])
def test_karmadas_error_texts(kind: str, name: str, api_version: str, message: str) -> None:
    inventory = member(DEPLOY, rs("new", "rs-new", "2021-01-01T00:00:00Z"))
    assert ask(inventory, kind, name, api_version) == message
