"""The policy controller's write decisions (api.md §7.5, §7.8, §7.12): claims, releases, merges."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fleetsched.api import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.controller.policy.decisions import (
    OWNER_UID_MISMATCH,
    WriteAction,
    changed_by_karmada,
    claim_patch,
    merge_binding,
    release_patch,
    template_changed,
)

PP_ID = "propagationpolicy.karmada.io/permanent-id"
CPP_ID = "clusterpropagationpolicy.karmada.io/permanent-id"


def a_pp(name: str = "web", permanent_id: str = "id-1") -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {"name": name, "namespace": "shop", "labels": {PP_ID: permanent_id}},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
        }
    )


def a_cpp(name: str = "all", permanent_id: str = "id-c") -> ClusterPropagationPolicy:
    return ClusterPropagationPolicy.model_validate(
        {
            "metadata": {"name": name, "labels": {CPP_ID: permanent_id}},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
        }
    )


def template(
    labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "web",
            "namespace": "shop",
            "labels": labels or {},
            "annotations": annotations or {},
        }
    }


def test_pp_claim_patch_and_no_op() -> None:
    patch = claim_patch(template(), a_pp())
    assert patch == {
        "metadata": {
            "labels": {PP_ID: "id-1"},
            "annotations": {
                "propagationpolicy.karmada.io/namespace": "shop",
                "propagationpolicy.karmada.io/name": "web",
            },
        }
    }
    assert claim_patch(template({PP_ID: "id-1"}), a_pp()) is None


def test_pp_claim_removes_cpp_claim() -> None:
    claimed = template({CPP_ID: "id-c", PP_ID: "id-1"}, {"clusterpropagationpolicy.karmada.io/name": "all"})
    patch = claim_patch(claimed, a_pp())
    assert patch is not None
    assert patch["metadata"]["labels"][CPP_ID] is None
    assert patch["metadata"]["annotations"]["clusterpropagationpolicy.karmada.io/name"] is None


def test_cpp_claim_keeps_pp_claim() -> None:
    patch = claim_patch(template({PP_ID: "id-1"}), a_cpp())
    assert patch == {
        "metadata": {
            "labels": {CPP_ID: "id-c"},
            "annotations": {"clusterpropagationpolicy.karmada.io/name": "all"},
        }
    }
    assert claim_patch(template({CPP_ID: "id-c"}), a_cpp()) is None


def test_release_patch() -> None:
    claimed = template(
        {PP_ID: "id-1", "app": "web"},
        {
            "propagationpolicy.karmada.io/namespace": "shop",
            "propagationpolicy.karmada.io/name": "web",
            "x": "y",
        },
    )
    assert release_patch(claimed, "PropagationPolicy") == {
        "metadata": {
            "labels": {PP_ID: None},
            "annotations": {
                "propagationpolicy.karmada.io/namespace": None,
                "propagationpolicy.karmada.io/name": None,
            },
        }
    }
    assert release_patch(claimed, "ClusterPropagationPolicy") is None


def desired(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": "web-deployment",
            "namespace": "shop",
            "labels": {PP_ID: "id-1"},
            "annotations": {"propagationpolicy.karmada.io/name": "web"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "name": "web",
                    "uid": "u1",
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "finalizers": ["karmada.io/binding-controller"],
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1"},
            "replicas": 3,
            **spec,
        },
    }


def test_create_when_absent_drops_zero_replicas() -> None:
    write = merge_binding(None, desired(replicas=0))
    assert write.action is WriteAction.CREATE
    assert write.body is not None and "replicas" not in write.body["spec"]


def test_update_preserves_what_others_own() -> None:
    existing = desired(placement={"clusterAffinity": {"clusterNames": ["old"]}})
    existing["metadata"]["labels"] = {"foreign": "x", CPP_ID: "id-c", PP_ID: "stale"}
    existing["metadata"]["annotations"] = {"clusterpropagationpolicy.karmada.io/name": "all", "keep": "me"}
    existing["metadata"]["finalizers"] = ["other", "karmada.io/binding-controller"]
    existing["metadata"]["resourceVersion"] = "42"
    existing["spec"]["clusters"] = [{"name": "m1", "replicas": 3}]
    existing["spec"]["gracefulEvictionTasks"] = [
        {"fromCluster": "m9", "reason": "TaintUntolerated", "producer": "x"}
    ]
    existing["spec"]["replicaRequirements"] = {"resourceRequest": {"cpu": "1"}}
    existing["spec"]["suspension"] = {"scheduling": True, "dispatching": True}
    existing["status"] = {"schedulerObservedGeneration": 3}
    write = merge_binding(
        existing, desired(replicas=5, placement={"clusterAffinity": {"clusterNames": ["new"]}})
    )
    assert write.action is WriteAction.UPDATE and write.body is not None
    body = write.body
    assert body["metadata"]["labels"] == {"foreign": "x", PP_ID: "id-1"}, "CPP claim removed, desired wins"
    assert body["metadata"]["annotations"] == {"keep": "me", "propagationpolicy.karmada.io/name": "web"}
    assert body["metadata"]["finalizers"] == ["other", "karmada.io/binding-controller"]
    assert body["metadata"]["resourceVersion"] == "42", "optimistic concurrency on replace"
    assert body["spec"]["replicas"] == 5
    assert body["spec"]["placement"] == {"clusterAffinity": {"clusterNames": ["new"]}}
    assert body["spec"]["clusters"] == [{"name": "m1", "replicas": 3}]
    assert body["spec"]["gracefulEvictionTasks"] == existing["spec"]["gracefulEvictionTasks"]
    assert "replicaRequirements" not in body["spec"], (
        "owned fields absent from the desired binding are cleared"
    )
    assert body["spec"]["suspension"] == {"scheduling": True}, (
        "scheduling kept, dispatching follows the policy"
    )
    assert body["status"] == {"schedulerObservedGeneration": 3}


def test_no_write_when_nothing_changed() -> None:
    existing = desired()
    existing["metadata"]["resourceVersion"] = "7"
    existing["spec"]["clusters"] = [{"name": "m1", "replicas": 3}]
    assert merge_binding(existing, desired()).action is WriteAction.NONE


def test_owner_uid_mismatch_waits_for_garbage_collection() -> None:
    existing = desired()
    existing["metadata"]["ownerReferences"][0]["uid"] = "u0"
    with pytest.raises(ValueError, match="different owner reference UID"):
        merge_binding(existing, desired())
    assert "karmada-io/karmada/issues/2090" in OWNER_UID_MISMATCH


def test_cluster_resource_binding_update_quirk() -> None:
    existing = desired()
    existing["kind"] = "ClusterResourceBinding"
    want = copy.deepcopy(desired(propagateDeps=True, replicas=4))
    want["kind"] = "ClusterResourceBinding"
    body = merge_binding(existing, want).body
    assert body is not None and body["spec"]["replicas"] == 4
    assert "propagateDeps" not in body["spec"], "Karmada never refreshes propagateDeps on a CRB update"


def test_suspension_from_policy_replaces_dispatching() -> None:
    existing = desired()
    existing["spec"]["suspension"] = {"dispatching": False, "scheduling": True}
    body = merge_binding(
        existing, desired(suspension={"dispatchingOnClusters": {"clusterNames": ["m1"]}})
    ).body
    assert body is not None
    assert body["spec"]["suspension"] == {
        "scheduling": True,
        "dispatchingOnClusters": {"clusterNames": ["m1"]},
    }


def test_template_changed_ignores_status_and_bookkeeping() -> None:
    old = {
        "metadata": {"name": "a", "resourceVersion": "1", "managedFields": [{}]},
        "spec": {"x": 1},
        "status": {},
    }
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "2"
    new["metadata"]["managedFields"] = [{"a": 1}]
    new["status"] = {"ready": 1}
    assert not template_changed(old, new)
    new["metadata"]["labels"] = {"a": "b"}
    assert template_changed(old, new)


def test_changed_by_karmada_only_for_bookkeeping() -> None:
    old = {"metadata": {"name": "a", "generation": 1, "labels": {"app": "web"}}, "spec": {"replicas": 1}}
    claimed = copy.deepcopy(old)
    claimed["metadata"]["labels"][PP_ID] = "id-1"
    claimed["metadata"]["annotations"] = {"propagationpolicy.karmada.io/name": "web"}
    claimed["metadata"]["generation"] = 2
    assert changed_by_karmada(old, claimed)
    user = copy.deepcopy(claimed)
    user["spec"]["replicas"] = 3
    assert not changed_by_karmada(claimed, user)
    skip = copy.deepcopy(old)
    skip["metadata"]["labels"]["namespace.karmada.io/skip-auto-propagation"] = "true"
    assert not changed_by_karmada(old, skip), "the skip-auto-propagation label is a user change"
    assert not changed_by_karmada(old, copy.deepcopy(old)), "no change at all is not a Karmada change"
