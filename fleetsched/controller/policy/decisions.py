"""The policy controller's decisions as pure functions over JSON objects.

* ``claim_patch``: the merge patch that makes a template carry a policy's claim, or None;
* ``release_patch``: the merge patch that removes a policy's claim from a template or binding;
* ``merge_binding``: create-or-update of a binding: what to write given the existing object and
  the desired one built by ``fleetsched.detector``;
* ``template_changed``: whether a template update counts as a change (§7.1);
* ``changed_by_karmada``: whether it only touched Karmada's own bookkeeping (§7.11, Lazy policies);
* ``binding_finalizer_release``: standalone only, whether a terminating binding's Karmada finalizer
  is this controller's to remove (there is no binding controller and no Works to clean up);
* ``unwatched_selectors``: the resource selectors naming kinds this controller does not watch.

No I/O here: ``policy_operator`` reads, calls these, and writes.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy, ResourceSelector
from fleetsched.detector import binding_name, claim_metadata
from fleetsched.detector import constants as keys

__all__ = [
    "BINDING_FINALIZERS",
    "OWNER_UID_MISMATCH",
    "BindingWrite",
    "FinalizerRelease",
    "WriteAction",
    "binding_finalizer_release",
    "changed_by_karmada",
    "claim_patch",
    "is_deleting",
    "merge_binding",
    "release_patch",
    "template_changed",
    "unwatched_selectors",
]

Obj = dict[str, Any]
Policy = PropagationPolicy | ClusterPropagationPolicy

OWNER_UID_MISMATCH = (
    "failed to update binding due to different owner reference UID, will try again later after "
    "binding is garbage collected, see https://github.com/karmada-io/karmada/issues/2090"
)

# Spec fields the detector owns on an existing binding (§7.8); everything else is preserved.
_OWNED_SPEC_FIELDS = (
    "resource",
    "replicaRequirements",
    "replicas",
    "components",
    "propagateDeps",
    "schedulerName",
    "placement",
    "failover",
    "conflictResolution",
    "preserveResourcesOnDeletion",
    "schedulePriority",
    "workloadAffinityGroups",
)
# ClusterResourceBinding update path quirk (§7.8): these are never refreshed there.
_CRB_NOT_UPDATED = ("propagateDeps", "schedulePriority", "workloadAffinityGroups")

_PP_CLAIM = (
    (keys.PP_PERMANENT_ID_LABEL,),
    (keys.PP_NAMESPACE_ANNOTATION, keys.PP_NAME_ANNOTATION),
)
_CPP_CLAIM = ((keys.CPP_PERMANENT_ID_LABEL,), (keys.CPP_NAME_ANNOTATION,))


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def claim_patch(template: Mapping[str, Any], policy: Policy) -> Obj | None:
    """§7.5: the merge patch putting ``policy``'s claim on the template; None when it is there."""
    meta = _meta(template)
    labels: Mapping[str, str] = meta.get("labels") or {}
    labels_patch, annotations_patch = claim_metadata(policy)
    label_key = next(iter(labels_patch))
    patch_labels: dict[str, str | None] = dict(labels_patch)
    patch_annotations: dict[str, str | None] = dict(annotations_patch)
    if isinstance(policy, PropagationPolicy):
        has_cpp_claim = bool(labels.get(keys.CPP_PERMANENT_ID_LABEL)) or bool(
            (meta.get("annotations") or {}).get(keys.CPP_NAME_ANNOTATION)
        )
        if labels.get(label_key) == labels_patch[label_key] and not has_cpp_claim:
            return None
        if has_cpp_claim:
            patch_labels[keys.CPP_PERMANENT_ID_LABEL] = None
            patch_annotations[keys.CPP_NAME_ANNOTATION] = None
    elif labels.get(label_key) == labels_patch[label_key]:
        return None
    return {"metadata": {"labels": patch_labels, "annotations": patch_annotations}}


def release_patch(obj: Mapping[str, Any], policy_kind: str, permanent_id: str | None = None) -> Obj | None:
    """The merge patch removing a policy kind's claim labels/annotations, or None if absent.

    With ``permanent_id``, only a claim by that policy is removed (§7.12: "only if the label still
    holds this policy's id"); a claim another policy has taken meanwhile is left alone.
    """
    label_keys, annotation_keys = _PP_CLAIM if policy_kind == PropagationPolicy.KIND else _CPP_CLAIM
    meta = _meta(obj)
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    if permanent_id is not None and labels.get(label_keys[0], permanent_id) != permanent_id:
        return None
    patch: Obj = {}
    drop_labels = {k: None for k in label_keys if k in labels}
    drop_annotations = {k: None for k in annotation_keys if k in annotations}
    if drop_labels:
        patch["labels"] = drop_labels
    if drop_annotations:
        patch["annotations"] = drop_annotations
    return {"metadata": patch} if patch else None


class WriteAction(enum.Enum):
    NONE = "none"
    CREATE = "create"
    UPDATE = "update"
    # The existing binding is being deleted: no write (the API server refuses to add a finalizer
    # to a terminating object); retry, and create it afresh once it is gone.
    WAIT = "wait"


@dataclass(frozen=True, slots=True)
class BindingWrite:
    action: WriteAction
    body: Obj | None = None


def _omitempty_spec(spec: Obj) -> Obj:
    # Go drops a zero replica count; keep the stored shape identical to Karmada's.
    if spec.get("replicas") == 0:
        spec = {k: v for k, v in spec.items() if k != "replicas"}
    return spec


def _controller_uid(obj: Mapping[str, Any]) -> str | None:
    for ref in _meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid", ""))
    return None


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def merge_binding(existing: Mapping[str, Any] | None, desired: Mapping[str, Any]) -> BindingWrite:
    """§7.8 create-or-update. ``desired`` is the detector's binding as JSON (``to_dict()``).

    Raises ``ValueError(OWNER_UID_MISMATCH)`` when the existing binding belongs to another
    incarnation of the template (it waits for garbage collection). An existing binding of the
    same template that is being deleted gives ``WAIT``: Karmada would update it while its binding
    controller still holds the finalizer; standalone, the finalizer may be gone already, and
    putting it back is refused by the API server.
    """
    desired_spec = _omitempty_spec(dict(desired.get("spec") or {}))
    if existing is None:
        body = copy.deepcopy(dict(desired))
        body["spec"] = copy.deepcopy(desired_spec)
        return BindingWrite(WriteAction.CREATE, body)
    existing_uid = _controller_uid(existing)
    desired_uid = _controller_uid(desired)
    if existing_uid is not None and desired_uid is not None and existing_uid != desired_uid:
        raise ValueError(OWNER_UID_MISMATCH)
    if is_deleting(existing):
        return BindingWrite(WriteAction.WAIT)
    updated: Obj = copy.deepcopy(dict(existing))
    meta: Obj = updated.setdefault("metadata", {})
    want_meta = _meta(desired)
    labels = dict(meta.get("labels") or {})
    annotations = dict(meta.get("annotations") or {})
    if (want_meta.get("labels") or {}).get(keys.PP_PERMANENT_ID_LABEL):
        # A PropagationPolicy takes over: any ClusterPropagationPolicy claim goes.
        labels.pop(keys.CPP_PERMANENT_ID_LABEL, None)
        annotations.pop(keys.CPP_NAME_ANNOTATION, None)
    labels.update(want_meta.get("labels") or {})
    annotations.update(want_meta.get("annotations") or {})
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    finalizers = list(meta.get("finalizers") or [])
    finalizers += [f for f in want_meta.get("finalizers") or [] if f not in finalizers]
    if finalizers:
        meta["finalizers"] = finalizers
    meta["ownerReferences"] = copy.deepcopy(want_meta.get("ownerReferences") or [])
    spec: Obj = updated.setdefault("spec", {})
    cluster_scoped = updated.get("kind") == "ClusterResourceBinding"
    for name in _OWNED_SPEC_FIELDS:
        if cluster_scoped and name in _CRB_NOT_UPDATED:
            continue
        if name in desired_spec:
            spec[name] = copy.deepcopy(desired_spec[name])
        else:
            spec.pop(name, None)
    _merge_suspension(spec, desired_spec.get("suspension"))
    if updated == existing:
        return BindingWrite(WriteAction.NONE)
    return BindingWrite(WriteAction.UPDATE, updated)


def _merge_suspension(spec: Obj, wanted: Mapping[str, Any] | None) -> None:
    """Policy suspension replaces dispatching/dispatchingOnClusters; ``scheduling`` is kept."""
    current = dict(spec.get("suspension") or {})
    for name in ("dispatching", "dispatchingOnClusters"):
        current.pop(name, None)
        if wanted and name in wanted:
            current[name] = copy.deepcopy(wanted[name])
    if current:
        spec["suspension"] = current
    else:
        spec.pop("suspension", None)


_IGNORED_METADATA = ("managedFields", "resourceVersion")


def template_changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """§7.1: an update counts unless only status, managedFields or resourceVersion changed."""

    def essence(obj: Mapping[str, Any]) -> Obj:
        trimmed = {k: v for k, v in obj.items() if k != "status"}
        trimmed["metadata"] = {k: v for k, v in _meta(obj).items() if k not in _IGNORED_METADATA}
        return trimmed

    return essence(old) != essence(new)


_SKIP_AUTO_PROPAGATION = "namespace.karmada.io/skip-auto-propagation"


def _without_karmada_keys(values: Mapping[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (values or {}).items() if ".karmada.io" not in k or k == _SKIP_AUTO_PROPAGATION}


def changed_by_karmada(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """§7.11: a change whose only differences are ``metadata.generation`` and labels/annotations
    with ``.karmada.io`` in the key (claims and the like). Such updates do not activate a Lazy
    policy's pending changes."""
    if not template_changed(old, new):
        return False

    def essence(obj: Mapping[str, Any]) -> Obj:
        trimmed = {k: v for k, v in obj.items() if k != "status"}
        meta = {k: v for k, v in _meta(obj).items() if k not in (*_IGNORED_METADATA, "generation")}
        meta["labels"] = _without_karmada_keys(meta.get("labels"))
        meta["annotations"] = _without_karmada_keys(meta.get("annotations"))
        trimmed["metadata"] = meta
        return trimmed

    return essence(old) == essence(new)


# ---- standalone: the binding controller's finalizer --------------------------------------------

BINDING_FINALIZERS = {
    "ResourceBinding": keys.BINDING_FINALIZER,
    "ClusterResourceBinding": keys.CLUSTER_BINDING_FINALIZER,
}
MANAGED_BY_LABEL = "binding.karmada.io/managed-by"


@dataclass(frozen=True, slots=True)
class FinalizerRelease:
    """The merge patch removing a terminating binding's Karmada finalizer, or why there is none."""

    patch: Obj | None
    reason: str
    finalizer: str = ""


def binding_finalizer_release(
    binding: Mapping[str, Any], *, watched_kinds: Collection[tuple[str, str]]
) -> FinalizerRelease:
    """Standalone only: whether to remove ``karmada.io/binding-controller`` (or the
    ClusterResourceBinding one) from ``binding``.

    In Karmada the binding controller removes it once the binding's Works are deleted. A standalone
    install has no binding controller and no Works, so the policy controller removes it from the bindings
    it derives: being deleted, carrying the finalizer, not managed by another controller, pointing at a
    template of a kind in ``watched_kinds`` (``(apiVersion, kind)`` pairs), owned by that template through
    the controller reference, and named as the detector names it. The patch keeps every other finalizer
    and carries the ``resourceVersion`` read, so a concurrent change fails it with 409 instead of being
    undone.
    """
    meta = _meta(binding)
    kind = str(binding.get("kind", ""))
    finalizer = BINDING_FINALIZERS.get(kind)
    if finalizer is None:
        return FinalizerRelease(None, f"kind {kind!r} is not a binding")
    if not meta.get("deletionTimestamp"):
        return FinalizerRelease(None, "not being deleted")
    finalizers = list(meta.get("finalizers") or [])
    if finalizer not in finalizers:
        return FinalizerRelease(None, f"no {finalizer} finalizer")
    managed_by = (meta.get("labels") or {}).get(MANAGED_BY_LABEL)
    if managed_by:
        return FinalizerRelease(None, f"managed by {managed_by}, not derived from a policy")
    resource = (binding.get("spec") or {}).get("resource") or {}
    api_version, resource_kind, name = (resource.get(k, "") for k in ("apiVersion", "kind", "name"))
    if (api_version, resource_kind) not in watched_kinds:
        return FinalizerRelease(
            None, f"spec.resource {api_version} {resource_kind} is not a kind this controller watches"
        )
    owner = next((r for r in meta.get("ownerReferences") or [] if r.get("controller")), None)
    if owner is None or (owner.get("apiVersion"), owner.get("kind"), owner.get("name")) != (
        api_version,
        resource_kind,
        name,
    ):
        return FinalizerRelease(None, "not owned by its resource template (controller ownerReference)")
    derived_name = binding_name(str(name), str(resource_kind))
    if meta.get("name") != derived_name:
        return FinalizerRelease(None, f"name is not the derived {derived_name}")
    finalizers.remove(finalizer)
    patch = {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}}
    return FinalizerRelease(patch, "derived binding being deleted; no Works to clean up", finalizer)


def unwatched_selectors(
    selectors: Sequence[ResourceSelector], watched_kinds: Collection[tuple[str, str]]
) -> list[str]:
    """``resourceSelectors[i]: <apiVersion> <kind>`` for each selector naming a kind (or version)
    the controller does not watch: templates of it are never claimed, so the policy says so."""
    return [
        f"resourceSelectors[{index}]: {selector.api_version} {selector.kind}"
        for index, selector in enumerate(selectors)
        if (selector.api_version, selector.kind) not in watched_kinds
    ]
