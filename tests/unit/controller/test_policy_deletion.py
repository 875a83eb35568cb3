"""Deletion in the policy controller (api.md §4.4, §7.8, §7.12): whose binding finalizer it removes
when standalone, terminating bindings and templates, releases, and selectors of unwatched kinds."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fleetsched.api import PropagationPolicy
from fleetsched.controller.policy.decisions import (
    OWNER_UID_MISMATCH,
    WriteAction,
    binding_finalizer_release,
    merge_binding,
    release_patch,
    unwatched_selectors,
)
from fleetsched.controller.policy.operator import (
    FINALIZER_REMOVALS,
    KNOWN_RESOURCES,
    PolicyController,
    PolicyControllerConfig,
)
from fleetsched.controller.runtime.queue import Outcome, QueueKey
from fleetsched.kube.client import ApiError

RB_FINALIZER = "karmada.io/binding-controller"
CRB_FINALIZER = "karmada.io/cluster-resource-binding-controller"
PP_ID = "propagationpolicy.karmada.io/permanent-id"
WATCHED = frozenset({("apps/v1", "Deployment"), ("rbac.authorization.k8s.io/v1", "ClusterRole")})
DELETED_AT = "2026-11-29T13:00:00Z"


def a_binding(**meta: Any) -> dict[str, Any]:
    """A ResourceBinding as the detector derives it for Deployment shop/web, being deleted."""
    metadata: dict[str, Any] = {
        "name": "web-deployment",
        "namespace": "shop",
        "resourceVersion": "7",
        "deletionTimestamp": DELETED_AT,
        "finalizers": [RB_FINALIZER],
        "labels": {PP_ID: "id-1"},
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1", "controller": True}
        ],
    }
    metadata.update(meta)
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": metadata,
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop",
                              "name": "web", "uid": "u1"}},
    }


def a_cluster_binding() -> dict[str, Any]:
    return {
        "kind": "ClusterResourceBinding",
        "metadata": {
            "name": "fleet.reader-clusterrole",
            "resourceVersion": "3",
            "deletionTimestamp": DELETED_AT,
            "finalizers": ["foregroundDeletion", CRB_FINALIZER],
            "ownerReferences": [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                 "name": "fleet:reader", "uid": "c1", "controller": True}],
        },
        "spec": {"resource": {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                              "name": "fleet:reader", "uid": "c1"}},
    }


# ---- whose finalizer is ours to remove -------------------------------------------------------


def test_a_terminating_derived_binding_loses_only_karmadas_finalizer() -> None:
    binding = a_binding(finalizers=["example.com/keep", RB_FINALIZER])
    release = binding_finalizer_release(binding, watched_kinds=WATCHED)
    assert release.patch == {"metadata": {"finalizers": ["example.com/keep"], "resourceVersion": "7"}}
    assert release.finalizer == RB_FINALIZER


def test_a_cluster_resource_binding_loses_its_own_finalizer_and_keeps_foreground_deletion() -> None:
    release = binding_finalizer_release(a_cluster_binding(), watched_kinds=WATCHED)
    assert release.patch == {"metadata": {"finalizers": ["foregroundDeletion"], "resourceVersion": "3"}}
    assert release.finalizer == CRB_FINALIZER


def test_a_binding_released_from_its_policy_is_still_derived() -> None:
    # §7.12: a deleted policy leaves its bindings without claim labels; deleting the template later
    # must not leave them Terminating.
    release = binding_finalizer_release(a_binding(labels={}), watched_kinds=WATCHED)
    assert release.patch is not None


def _without_deletion() -> dict[str, Any]:
    binding = a_binding()
    del binding["metadata"]["deletionTimestamp"]
    return binding


def _foreign_resource() -> dict[str, Any]:
    binding = a_binding()
    binding["spec"]["resource"] = {"apiVersion": "example.io/v1", "kind": "Widget", "name": "web"}
    binding["metadata"]["ownerReferences"][0].update(apiVersion="example.io/v1", kind="Widget")
    binding["metadata"]["name"] = "web-widget"
    return binding


def _no_controller_owner() -> dict[str, Any]:
    binding = a_binding()
    binding["metadata"]["ownerReferences"][0]["controller"] = False
    return binding


def _owned_by_another_object() -> dict[str, Any]:
    binding = a_binding()
    binding["metadata"]["ownerReferences"][0]["name"] = "other"
    return binding


@pytest.mark.parametrize(
    ("binding", "reason"),
    [
        pytest.param(_without_deletion(), "not being deleted", id="not being deleted"),
        pytest.param(a_binding(finalizers=["example.com/keep"]), "no karmada.io/binding-controller",
                     id="finalizer already gone"),
        pytest.param(a_binding(labels={"binding.karmada.io/managed-by": "mcs"}), "managed by mcs",
                     id="made by the MultiClusterService controller"),
        pytest.param(_foreign_resource(), "not a kind this controller watches", id="unwatched template kind"),
        pytest.param(_no_controller_owner(), "not owned by its resource template", id="no controller owner"),
        pytest.param(_owned_by_another_object(), "not owned by its resource template",
                     id="owner is not spec.resource"),
        pytest.param(a_binding(name="hand-made"), "name is not the derived web-deployment",
                     id="not the derived name"),
        pytest.param({**a_binding(), "kind": "Work"}, "is not a binding", id="not a binding kind"),
    ],
)
def test_finalizers_that_are_not_ours_stay(binding: dict[str, Any], reason: str) -> None:
    before = copy.deepcopy(binding)
    release = binding_finalizer_release(binding, watched_kinds=WATCHED)
    assert release.patch is None
    assert reason in release.reason
    assert binding == before, "the decision never changes its input"


# ---- create-or-update meets a terminating binding --------------------------------------------


def desired() -> dict[str, Any]:
    binding = a_binding()
    for key in ("deletionTimestamp", "resourceVersion"):
        del binding["metadata"][key]
    binding["spec"]["replicas"] = 3
    return binding


def test_a_terminating_binding_of_the_same_template_is_waited_for_not_updated() -> None:
    # Standalone, its finalizer may be gone already: re-adding it is refused by the API server.
    existing = a_binding(finalizers=[])
    assert merge_binding(existing, desired()).action is WriteAction.WAIT


def test_a_terminating_binding_of_a_deleted_template_keeps_karmadas_error() -> None:
    existing = a_binding()
    existing["metadata"]["ownerReferences"][0]["uid"] = "u0"
    with pytest.raises(ValueError, match="different owner reference UID"):
        merge_binding(existing, desired())
    assert OWNER_UID_MISMATCH.startswith("failed to update binding")


# ---- releases only touch this policy's claim -------------------------------------------------


def test_release_patch_leaves_a_claim_another_policy_took() -> None:
    claimed = {"metadata": {"labels": {PP_ID: "id-2"}, "annotations": {
        "propagationpolicy.karmada.io/namespace": "shop", "propagationpolicy.karmada.io/name": "other"}}}
    assert release_patch(claimed, "PropagationPolicy", "id-1") is None
    assert release_patch(claimed, "PropagationPolicy", "id-2") == {"metadata": {
        "labels": {PP_ID: None},
        "annotations": {"propagationpolicy.karmada.io/namespace": None,
                        "propagationpolicy.karmada.io/name": None}}}
    assert release_patch(claimed, "PropagationPolicy") is not None, "no id: any claim of the kind"


# ---- selectors of kinds the controller does not watch ----------------------------------------


def test_unwatched_selectors_name_index_version_and_kind() -> None:
    policy = PropagationPolicy.model_validate({
        "metadata": {"name": "p", "namespace": "shop"},
        "spec": {"resourceSelectors": [
            {"apiVersion": "apps/v1", "kind": "Deployment"},
            {"apiVersion": "example.io/v1", "kind": "Widget"},
            {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler"},
        ]},
    })
    watched = {(r.api_version, r.kind) for r in KNOWN_RESOURCES.values()}
    assert unwatched_selectors(policy.spec.resource_selectors, watched) == [
        "resourceSelectors[1]: example.io/v1 Widget",
        "resourceSelectors[2]: autoscaling/v1 HorizontalPodAutoscaler",
    ]


# ---- the controller's edges: which binding events become work, and the write ------------------


class BindingStore:
    """An in-memory stand-in for the two API calls ``reconcile_binding`` makes, with the API
    server's resourceVersion precondition on merge patches."""

    def __init__(self, binding: dict[str, Any] | None, *, conflicts: int = 0) -> None:
        self.binding = binding
        self.conflicts = conflicts
        self.patches: list[dict[str, Any]] = []

    async def get(self, path: str) -> dict[str, Any]:
        if self.binding is None:
            raise ApiError(404, "NotFound", "not found")
        return copy.deepcopy(self.binding)

    async def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        assert self.binding is not None
        if self.conflicts:
            # someone else wrote in between: a newer resourceVersion, the precondition fails
            self.conflicts -= 1
            meta = self.binding["metadata"]
            meta["resourceVersion"] = str(int(meta["resourceVersion"]) + 1)
            raise ApiError(409, "Conflict", "the object has been modified")
        self.patches.append(patch)
        self.binding["metadata"]["finalizers"] = patch["metadata"]["finalizers"]
        return copy.deepcopy(self.binding)


def a_controller(client: Any, *, standalone: bool) -> PolicyController:
    config = PolicyControllerConfig(resources=(KNOWN_RESOURCES["deployments.apps"],), standalone=standalone)
    return PolicyController(client=client, connection=None, config=config)  # type: ignore[arg-type]


def test_binding_events_queue_only_terminating_derived_bindings() -> None:
    controller = a_controller(None, standalone=True)
    key = QueueKey("ResourceBinding", "shop", "web-deployment")
    controller.on_binding_event("ResourceBinding", "MODIFIED", _without_deletion())
    assert key not in controller.queue
    controller.on_binding_event("ResourceBinding", "MODIFIED", _foreign_resource())
    assert QueueKey("ResourceBinding", "shop", "web-widget") not in controller.queue
    controller.on_binding_event("ResourceBinding", None, a_binding())
    assert key in controller.queue
    controller.on_binding_event("ResourceBinding", "DELETED", a_binding())
    assert key not in controller.queue


def removals(kind: str, result: str) -> float:
    return FINALIZER_REMOVALS.labels(kind, result)._value.get()


async def test_reconcile_binding_removes_the_finalizer_retrying_a_conflict_with_a_fresh_read() -> None:
    store = BindingStore(a_binding(finalizers=["example.com/keep", RB_FINALIZER]), conflicts=1)
    controller = a_controller(store, standalone=True)
    before = removals("ResourceBinding", "removed")
    assert await controller.reconcile_binding("ResourceBinding", "shop/web-deployment") is Outcome.DONE
    assert store.patches == [{"metadata": {"finalizers": ["example.com/keep"], "resourceVersion": "8"}}]
    assert removals("ResourceBinding", "removed") == before + 1


async def test_reconcile_binding_is_done_when_the_binding_is_gone_or_not_ours() -> None:
    gone = BindingStore(None)
    assert await a_controller(gone, standalone=True).reconcile_binding(
        "ResourceBinding", "shop/web-deployment") is Outcome.DONE
    foreign = BindingStore(a_binding(labels={"binding.karmada.io/managed-by": "mcs"}))
    assert await a_controller(foreign, standalone=True).reconcile_binding(
        "ResourceBinding", "shop/web-deployment") is Outcome.DONE
    assert foreign.patches == []


async def test_beside_karmada_the_finalizer_is_never_touched() -> None:
    store = BindingStore(a_binding())
    controller = a_controller(store, standalone=False)
    assert await controller.reconcile_binding("ResourceBinding", "shop/web-deployment") is Outcome.DONE
    assert store.patches == []
    assert store.binding is not None and store.binding["metadata"]["finalizers"] == [RB_FINALIZER]


@pytest.mark.parametrize("standalone", [True, False])
def test_bindings_are_watched_only_when_standalone(standalone: bool) -> None:
    registry = a_controller(None, standalone=standalone).kopf_registry()
    watched = {h.selector.any_name for h in registry._watching.get_all_handlers()}
    assert {"resourcebindings", "clusterresourcebindings"} <= watched if standalone else not (
        {"resourcebindings", "clusterresourcebindings"} & watched)
    assert "deployments" in watched


# ---- a template reconcile never writes to a terminating binding or for a terminating template -----


class TemplateWorld:
    """The reads ``reconcile_template`` makes, answered from memory; any write fails the test."""

    def __init__(self, binding: dict[str, Any] | None) -> None:
        self.binding = binding

    async def get(self, path: str) -> dict[str, Any]:
        if self.binding is None or not path.endswith("/resourcebindings/web-deployment"):
            raise ApiError(404, "NotFound", "not found")
        return copy.deepcopy(self.binding)

    async def _no_write(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError(f"unexpected write to {path}: {body}")

    create = replace = merge_patch = _no_write


def claimed_deployment(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": "5",
            "labels": {PP_ID: "id-1"},
            "annotations": {"propagationpolicy.karmada.io/namespace": "shop",
                            "propagationpolicy.karmada.io/name": "web"},
            **meta,
        },
        "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
    }


def world_controller(binding: dict[str, Any] | None, template: dict[str, Any]) -> PolicyController:
    controller = a_controller(TemplateWorld(binding), standalone=True)
    controller.on_policy_event("PropagationPolicy", "ADDED", {
        "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "1", "generation": 1,
                     "labels": {PP_ID: "id-1"}},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
    })
    controller.on_template_event(KNOWN_RESOURCES["deployments.apps"], "ADDED", template)
    return controller


async def test_a_terminating_binding_is_retried_until_gone_not_written() -> None:
    from fleetsched.controller.policy.operator import APPLIES

    controller = world_controller(a_binding(finalizers=[]), claimed_deployment())
    waiting = APPLIES.labels("waiting")._value.get()
    outcome = await controller.reconcile_template(KNOWN_RESOURCES["deployments.apps"], "shop/web")
    assert outcome is Outcome.ERROR, "retried with backoff: created afresh once it is gone"
    assert APPLIES.labels("waiting")._value.get() == waiting + 1


async def test_a_terminating_template_gets_no_binding_written() -> None:
    # Foreground deletion keeps the template until its binding is gone: recreating it would undo
    # the garbage collector's work.
    controller = world_controller(None, claimed_deployment(deletionTimestamp=DELETED_AT))
    outcome = await controller.reconcile_template(KNOWN_RESOURCES["deployments.apps"], "shop/web")
    assert outcome is Outcome.DONE


# ---- --standalone beside a control plane that serves Karmada's Works -----------------------------


class Discovery:
    def __init__(self, resources: list[str] | None) -> None:
        self.resources = resources

    async def get(self, path: str) -> dict[str, Any]:
        assert path == "/apis/work.karmada.io/v1alpha1"
        if self.resources is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {"kind": "APIResourceList", "resources": [{"name": n} for n in self.resources]}


@pytest.mark.parametrize(
    ("resources", "removes"),
    [
        pytest.param(None, True, id="work.karmada.io/v1alpha1 not served"),
        pytest.param(["resourcebindings", "clusterresourcebindings"], True,
                     id="only fleetsched's legacy binding versions"),
        pytest.param(["works", "resourcebindings"], False, id="Karmada's Works: its binding controller runs"),
    ],
)
async def test_standalone_stands_down_where_karmadas_works_are_served(
    resources: list[str] | None, removes: bool
) -> None:
    controller = a_controller(Discovery(resources), standalone=True)
    await controller.check_standalone()
    assert controller.removes_binding_finalizers is removes
    store = BindingStore(a_binding())
    controller.client = store  # type: ignore[assignment]
    await controller.reconcile_binding("ResourceBinding", "shop/web-deployment")
    assert bool(store.patches) is removes
