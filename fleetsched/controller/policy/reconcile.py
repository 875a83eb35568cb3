"""The policy controller's three reconcilers: one template, one terminating binding, one policy.

Owns: §7.2 for a template (the detector's claiming policy and desired binding, the claim on the
template, create-or-update of the binding, releases of a gone policy's claim), §7.12 for a
terminating derived binding in standalone mode (Karmada's binding finalizer), §7.9/§7.12 for a
policy (releases when it is deleted or stops matching, its finalizer, re-queueing the templates it
may claim), with the writes each one makes, their metrics and the Events on the objects.

Must not: touch the watch or kopf, or decide what a write contains (``policy`` and the detector
do; this module reads the caches, calls them and writes what they say, each write conditional and
retried on 409 Conflict). ``PolicyReconcilers`` is a mixin of ``PolicyController``, which provides
the caches, the queue, the client and ``ControllerRuntime``'s leadership check.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import structlog
from prometheus_client import Counter, Gauge

from fleetsched.api.load import ResourceTemplate
from fleetsched.api.names import WORK_GROUP, WORK_VERSION, binding_path, binding_path_of_key
from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.controller.policy import selection
from fleetsched.controller.policy.cache import PolicyViews, claimed_by, template_index
from fleetsched.controller.policy.config import PolicyControllerConfig
from fleetsched.controller.policy.decisions import (
    OWNER_UID_MISMATCH,
    WriteAction,
    binding_finalizer_release,
    claim_patch,
    is_deleting,
    merge_binding,
    release_patch,
    unwatched_selectors,
)
from fleetsched.controller.policy.resources import (
    POLICY_FINALIZERS,
    PP,
    TemplateResource,
    claim_label_value,
    claiming_policy_key,
    override_policy_path,
    permanent_id_label,
    policy_path,
    priority_class_path,
    template_qkey,
)
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ObjectCache, object_key
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.events import NORMAL, WARNING, InvolvedObject
from fleetsched.controller.runtime.queue import Outcome, QueueKey, SchedulingQueue
from fleetsched.detector import binding_name, build_binding, claim_of, derive, implicit_priority
from fleetsched.kube.client import ApiError, KubeClient

log = structlog.get_logger("fleetsched.controller")

AnyPolicy = PropagationPolicy | ClusterPropagationPolicy

MAX_CONFLICT_RETRIES = 5

APPLY_SUCCEED = "ApplyPolicySucceed"
APPLY_FAILED = "ApplyPolicyFailed"
FINALIZER_REMOVED = "FinalizerRemoved"
FINALIZER_REMOVE_FAILED = "FinalizerRemoveFailed"
SELECTOR_NOT_WATCHED = "ResourceKindNotWatched"
NO_PERMANENT_ID = "PermanentIDMissing"

APPLIES = Counter(
    "fleetsched_policy_controller_applies_total",
    "Templates reconciled by the policy controller, by result "
    "(created, updated, unchanged, waiting for a terminating binding, error)",
    ["result"],
    registry=metrics.REGISTRY,
)
WRITE_CONFLICTS = Counter(
    "fleetsched_policy_controller_write_conflicts_total",
    "Writes the API server refused with 409 (Conflict or AlreadyExists): re-read and re-decided",
    registry=metrics.REGISTRY,
)
FINALIZER_REMOVALS = Counter(
    "fleetsched_policy_controller_binding_finalizer_removals_total",
    "Standalone: Karmada binding finalizers removed from terminating bindings, by binding kind and "
    "result (removed, error)",
    ["kind", "result"],
    registry=metrics.REGISTRY,
)

POLICIES_WITHOUT_PERMANENT_ID = Gauge(
    "fleetsched_policy_controller_policies_without_permanent_id",
    "Policies without their permanent-id label (the webhook did not default them): their bindings "
    "are never scheduled",
    ["kind"],
    registry=metrics.REGISTRY,
)


class _NotFound(Exception):
    """The object of a write is gone; for a release that means nothing is left to release."""


def _apply_message(policy: PropagationPolicy | ClusterPropagationPolicy, outcome: str) -> str:
    if isinstance(policy, PropagationPolicy):
        return f"Apply policy({policy.metadata.namespace}/{policy.metadata.name}) {outcome}"
    return f"Apply cluster policy({policy.metadata.name}) {outcome}"


class PolicyReconcilers:
    """The reconcilers, as methods of ``PolicyController`` (see the module docstring)."""

    client: KubeClient
    config: PolicyControllerConfig
    runtime: ControllerRuntime
    queue: SchedulingQueue
    templates: dict[str, ObjectCache]
    policies: dict[str, ObjectCache]
    watched_kinds: frozenset[tuple[str, str]]
    removes_binding_finalizers: bool
    _views: PolicyViews
    _changed_by_karmada: set[QueueKey]
    # provided by PolicyController
    on_template_event: Callable[[TemplateResource, str | None, dict[str, Any]], None]
    _policy_notes: dict[QueueKey, set[QueueKey]]
    _without_permanent_id: dict[str, set[str]]

    # ---- what a template's reconcile reads beside the caches ------------------------------------

    async def _priority_classes(
        self, policies: Sequence[PropagationPolicy | ClusterPropagationPolicy]
    ) -> dict[str, int]:
        values: dict[str, int] = {}
        for policy in policies:
            source = policy.spec.schedule_priority
            if source is None or source.priority_class_name in values:
                continue
            try:
                found = await self.client.get(priority_class_path(source.priority_class_name))
            except ApiError:
                continue
            if isinstance(found.get("value"), int):
                values[source.priority_class_name] = found["value"]
        return values

    async def _missing_overrides(self, policy: PropagationPolicy | ClusterPropagationPolicy) -> list[str]:
        missing = []
        for name in policy.spec.dependent_overrides or ():
            try:
                await self.client.get(override_policy_path(policy, name))
            except ApiError:
                missing.append(name)
        return missing

    # ---- one template (§7.2) ------------------------------------------------------------------

    async def reconcile_template(
        self, resource: TemplateResource, key: str, *, changed_by_karmada: bool = False
    ) -> Outcome:
        """§7.2 for one template. ``changed_by_karmada``: the reconcile comes from a policy change
        or Karmada's own bookkeeping, so a Lazy policy only claims the template (§7.11)."""
        obj = self.templates[resource.name].get(key)
        if obj is None:
            return Outcome.DONE
        if is_deleting(obj):
            # Going away (e.g. foreground deletion, which waits for the binding to go first):
            # neither create nor update its binding, so garbage collection is not undone.
            log.info("template_being_deleted", template=key, kind=resource.kind)
            return Outcome.DONE
        template = template_index(self.templates[resource.name], resource).parsed(
            key
        ) or ResourceTemplate.from_dict(obj, namespaced=resource.namespaced)
        view = self._views.view(self.policies)
        claim = claim_of(template)
        if claim is not None:
            cache = self.policies[claim.kind]
            policy_key = claiming_policy_key(claim)
            if cache.get(policy_key) is None:
                # The claiming policy is gone: drop its claim; the template update re-matches it.
                try:
                    await self._release(resource, obj, claim.kind, claim_label_value(obj, claim.kind))
                except ApiError as exc:
                    log.warning("release_failed", template=key, policy_kind=claim.kind, error=str(exc))
                    return Outcome.ERROR
                return Outcome.DONE
        priority_values = await self._priority_classes(view.class_sources)
        derivation = derive(
            [template],
            view.propagation_policies,
            view.cluster_propagation_policies,
            gates=self.config.gates,
            priority_class_value=priority_values.get,
            skipped_namespace_patterns=self.config.skipped_namespaces,
            index=view.index,
        )
        (result,) = derivation.results
        policy = result.policy
        if policy is None:
            log.debug("template_unmatched", template=key, kind=resource.kind, reason=result.reason)
            return Outcome.DONE
        if result.binding is None:
            if "being deleted" in result.reason or "no longer match" in result.reason:
                log.debug("template_left_alone", template=key, reason=result.reason)
                return Outcome.DONE
            self._event(obj, WARNING, APPLY_FAILED, _apply_message(policy, f"failed: {result.reason}"))
            APPLIES.labels("error").inc()
            return Outcome.ERROR
        missing = await self._missing_overrides(policy)
        if missing:
            log.info("waiting_for_dependent_overrides", template=key, missing=missing)
            return Outcome.ERROR
        lazy = changed_by_karmada and policy.spec.activation_preference == "Lazy"
        try:
            return await self._apply(resource, obj, policy, priority_values, claim_only=lazy)
        except ApiError as exc:
            if exc.is_not_found:
                return Outcome.DONE
            self._event(obj, WARNING, APPLY_FAILED, _apply_message(policy, f"failed: {exc.message}"))
            APPLIES.labels("error").inc()
            log.warning("apply_failed", template=key, error=str(exc))
            return Outcome.ERROR

    async def _apply(
        self,
        resource: TemplateResource,
        obj: dict[str, Any],
        policy: PropagationPolicy | ClusterPropagationPolicy,
        priority_values: Mapping[str, int],
        *,
        claim_only: bool = False,
    ) -> Outcome:
        key = object_key(obj)
        patch = claim_patch(obj, policy)
        if patch is not None:
            self.runtime.ensure_leader()
            obj = await self.client.merge_patch(resource.object_path(key), patch)
            obj.setdefault("apiVersion", resource.api_version)
            obj.setdefault("kind", resource.kind)
            self.templates[resource.name].upsert(obj)
        if claim_only:
            log.info("lazy_policy_change_deferred", template=key, policy=policy.metadata.name)
            return Outcome.DONE
        template = ResourceTemplate.from_dict(obj, namespaced=resource.namespaced)
        desired = build_binding(
            template, policy, gates=self.config.gates, priority_class_value=priority_values.get
        ).to_dict()
        path = binding_path(
            desired["kind"], desired["metadata"].get("namespace"), desired["metadata"]["name"]
        )
        for _ in range(MAX_CONFLICT_RETRIES):
            existing = await self._get_if_exists(path)
            try:
                write = merge_binding(existing, desired)
            except ValueError:
                self._event(
                    obj, WARNING, APPLY_FAILED, _apply_message(policy, f"failed: {OWNER_UID_MISMATCH}")
                )
                APPLIES.labels("error").inc()
                return Outcome.ERROR
            if write.action is WriteAction.NONE:
                APPLIES.labels("unchanged").inc()
                return Outcome.DONE
            if write.action is WriteAction.WAIT:
                # Retried with backoff; once garbage collection has finished it, it is created again.
                APPLIES.labels("waiting").inc()
                log.info("binding_terminating_wait", template=key, binding=desired["metadata"]["name"])
                return Outcome.ERROR
            self.runtime.ensure_leader()
            try:
                if write.action is WriteAction.CREATE:
                    await self.client.create(path.rsplit("/", 1)[0], write.body or {})
                    APPLIES.labels("created").inc()
                else:
                    await self.client.replace(path, write.body or {})
                    APPLIES.labels("updated").inc()
            except ApiError as exc:
                if exc.is_conflict or exc.is_already_exists:
                    WRITE_CONFLICTS.inc()
                    continue
                raise
            log.info(
                "binding_applied",
                template=key,
                binding=desired["metadata"]["name"],
                action=write.action.value,
            )
            self._event(obj, NORMAL, APPLY_SUCCEED, _apply_message(policy, "succeed"))
            return Outcome.DONE
        return Outcome.ERROR

    async def _release(
        self, resource: TemplateResource, obj: Mapping[str, Any], policy_kind: str, permanent_id: str
    ) -> None:
        """§7.12: remove the claim of the policy ``permanent_id`` from the template's binding, then
        from the template. The binding goes first: the template's claim label is what finds the
        pair again, so a failure in between is retried rather than leaving a stale binding label.

        Either object may be gone meanwhile (nothing to release there). The template patch carries
        the resourceVersion the decision was made on: if the template changed (another claim, a
        user edit), the 409 makes the caller retry with the fresh one.
        """
        meta = obj.get("metadata") or {}
        key = object_key(obj)
        name = binding_name(meta.get("name", ""), resource.kind)
        if resource.namespaced:
            path = binding_path("ResourceBinding", meta.get("namespace"), name)
        else:
            path = binding_path("ClusterResourceBinding", None, name)
        self.runtime.ensure_leader()
        binding = await self._get_if_exists(path)
        if binding is not None:
            patch = release_patch(binding, policy_kind, permanent_id)
            if patch is not None:
                with contextlib.suppress(_NotFound):
                    await self._tolerating_not_found(self.client.merge_patch(path, patch))
                    log.info(
                        "claim_released",
                        object="binding",
                        binding=name,
                        template=key,
                        policy_kind=policy_kind,
                    )
        patch = release_patch(obj, policy_kind, permanent_id)
        if patch is None:
            return
        patch["metadata"]["resourceVersion"] = meta.get("resourceVersion")
        try:
            updated = await self._tolerating_not_found(
                self.client.merge_patch(resource.object_path(key), patch)
            )
        except _NotFound:
            return
        log.info(
            "claim_released", object="template", template=key, kind=resource.kind, policy_kind=policy_kind
        )
        updated.setdefault("apiVersion", resource.api_version)
        updated.setdefault("kind", resource.kind)
        self.on_template_event(resource, "MODIFIED", updated)

    async def _get_if_exists(self, path: str) -> dict[str, Any] | None:
        try:
            return await self.client.get(path)
        except ApiError as exc:
            if exc.is_not_found:
                return None
            raise

    @staticmethod
    async def _tolerating_not_found(call: Any) -> dict[str, Any]:
        try:
            return await call  # type: ignore[no-any-return]
        except ApiError as exc:
            if exc.is_not_found:
                raise _NotFound from exc
            if exc.is_conflict:  # the caller retries with the fresh object
                WRITE_CONFLICTS.inc()
            raise

    # ---- one terminating binding (standalone) -----------------------------------------------------

    async def reconcile_binding(self, kind: str, key: str) -> Outcome:
        """Standalone: remove Karmada's binding finalizer from a terminating derived binding, as
        Karmada's binding controller does once the Works are gone (there are none here)."""
        if not self.removes_binding_finalizers:
            return Outcome.DONE
        path = binding_path_of_key(kind, key)
        for _ in range(MAX_CONFLICT_RETRIES):
            try:
                binding = await self.client.get(path)
            except ApiError as exc:
                if exc.is_not_found:
                    return Outcome.DONE
                log.warning("binding_read_failed", binding=key, kind=kind, error=str(exc))
                return Outcome.ERROR
            binding.setdefault("kind", kind)
            binding.setdefault("apiVersion", f"{WORK_GROUP}/{WORK_VERSION}")
            release = binding_finalizer_release(binding, watched_kinds=self.watched_kinds)
            if release.patch is None:
                log.debug("binding_finalizer_kept", binding=key, kind=kind, reason=release.reason)
                return Outcome.DONE
            self.runtime.ensure_leader()
            try:
                await self.client.merge_patch(path, release.patch)
            except ApiError as exc:
                if exc.is_not_found:
                    return Outcome.DONE
                if exc.is_conflict:
                    WRITE_CONFLICTS.inc()
                    continue
                FINALIZER_REMOVALS.labels(kind, "error").inc()
                log.warning("binding_finalizer_remove_failed", binding=key, kind=kind, error=str(exc))
                self._event(
                    binding,
                    WARNING,
                    FINALIZER_REMOVE_FAILED,
                    f"Failed to remove finalizer {release.finalizer}: {exc.message}",
                )
                return Outcome.ERROR
            FINALIZER_REMOVALS.labels(kind, "removed").inc()
            log.info(
                "binding_finalizer_removed",
                binding=key,
                kind=kind,
                finalizer=release.finalizer,
                template=(binding.get("spec") or {}).get("resource", {}).get("name"),
            )
            self._event(
                binding,
                NORMAL,
                FINALIZER_REMOVED,
                f"Removed finalizer {release.finalizer}: standalone, no binding controller and no "
                "Works to clean up",
            )
            return Outcome.DONE
        return Outcome.ERROR

    # ---- one policy (§7.9, §7.12) ----------------------------------------------------------------

    async def reconcile_policy(self, kind: str, key: str) -> Outcome:
        obj = self.policies[kind].get(key)
        if obj is None:
            self._note_permanent_id(kind, key, None, None)
            return Outcome.DONE
        policy = self._views.parsed.get(kind, obj)
        if policy is None:
            return Outcome.DONE
        self._note_permanent_id(kind, key, obj, policy)
        if self.config.sharding is not None:
            return await self._reconcile_owned_policy(kind, key, obj, policy)
        label = permanent_id_label(kind)
        permanent_id = (policy.metadata.labels or {}).get(label, "")
        namespace = policy.metadata.namespace if kind == PP else None
        claimed = (
            claimed_by(self.templates, self.config.resources, kind, permanent_id, namespace)
            if permanent_id
            else []
        )
        # Each template's priority under this policy, computed once for this reconcile.
        # (Kept with the object it was computed from: a release in between replaces the object.)
        priorities: dict[tuple[str, str], tuple[Mapping[str, Any], int]] = {}

        def priority_of(resource: TemplateResource, template: Mapping[str, Any]) -> int:
            parsed = ResourceTemplate.from_dict(template, namespaced=resource.namespaced)
            priority = implicit_priority(policy, parsed)
            priorities[(resource.name, object_key(template))] = (template, priority)
            return priority

        try:
            if policy.metadata.deletion_timestamp is not None:
                for resource, template in claimed:
                    await self._release(resource, template, kind, permanent_id)
                await self._remove_finalizer(kind, key, obj)
                log.info("policy_released", kind=kind, policy=key, templates=len(claimed))
                return Outcome.DONE
            await self._warn_unwatched(kind, key, obj, policy)
            for resource, template in claimed:
                if priority_of(resource, template) == 0:
                    log.info(
                        "policy_no_longer_matches",
                        kind=kind,
                        policy=key,
                        template=object_key(template),
                        template_kind=resource.kind,
                    )
                    await self._release(resource, template, kind, permanent_id)
                else:
                    self._enqueue_for_policy(policy, template_qkey(resource, object_key(template)))
        except ApiError as exc:
            if exc.is_not_found:
                return Outcome.DONE
            log.warning("policy_reconcile_failed", kind=kind, policy=key, error=str(exc))
            return Outcome.ERROR
        # Templates no policy claims yet may match now (Karmada's "waiting" set): only those the
        # policy's selectors may select are looked at (template_index.py); any other has priority 0.
        matched = any(priority > 0 for _, priority in priorities.values())
        for resource in self.config.resources:
            index = template_index(self.templates[resource.name], resource)
            for template_key in index.candidates(policy.spec.resource_selectors):
                parsed = index.parsed(template_key)
                if parsed is None:
                    continue
                known = priorities.get((resource.name, template_key))
                if known is not None and known[0] is index.object(template_key):
                    priority = known[1]
                else:
                    priority = implicit_priority(policy, parsed)
                matched = matched or priority > 0
                if self._may_claim(policy, parsed, priority):
                    self._enqueue_for_policy(policy, template_qkey(resource, template_key))
        if not matched:  # a policy that selects nothing says so (issue 29)
            log.info("policy_selects_nothing", kind=kind, policy=key)
            self._event(obj, WARNING, selection.NOTHING_SELECTED, selection.NOTHING_SELECTED_MESSAGE)
        return Outcome.DONE

    def _may_claim(self, policy: AnyPolicy, template: ResourceTemplate, priority: int) -> bool:
        """Whether a template the policy does not claim is to be reconciled for it: it is claimed
        by none and matches, or the policy may preempt its claim (§7.9)."""
        unclaimed_match = claim_of(template) is None and priority > 0
        may_preempt = (
            self.config.gates.policy_preemption and policy.spec.preemption == "Always" and priority == 3
        )
        return unclaimed_match or may_preempt

    def _note_permanent_id(
        self, kind: str, key: str, obj: Mapping[str, Any] | None, policy: AnyPolicy | None
    ) -> None:
        """A live policy without its permanent-id label (the webhook did not run) gives bindings no
        scheduler takes: a Warning Event on each reconcile (the recorder aggregates them), a log line
        and the gauge once per policy."""
        missing = self._without_permanent_id.setdefault(kind, set())
        if obj is None or policy is None or policy.metadata.deletion_timestamp is not None or (
            policy.metadata.labels or {}
        ).get(permanent_id_label(kind)):
            if key in missing:
                missing.discard(key)
                POLICIES_WITHOUT_PERMANENT_ID.labels(kind).set(len(missing))
            return
        label = permanent_id_label(kind)
        if key not in missing:
            missing.add(key)
            POLICIES_WITHOUT_PERMANENT_ID.labels(kind).set(len(missing))
            log.warning("policy_without_permanent_id", kind=kind, policy=key, label=label)
        self._event(obj, WARNING, NO_PERMANENT_ID,
                    f"metadata.labels[{label}] is missing: the admission webhook did not default this "
                    "policy, so the scheduler skips its bindings (register fleetsched webhook)")

    async def _warn_unwatched(self, kind: str, key: str, obj: Mapping[str, Any], policy: AnyPolicy) -> None:
        """Selectors of kinds the controller does not watch: a kind the API server does not serve
        (discovery) is a mistake in the policy; a served one is missing from ``--resources``."""
        if not unwatched_selectors(policy.spec.resource_selectors, self.watched_kinds):
            return
        kinds = await selection.check_kinds(self.client, policy.spec.resource_selectors, self.watched_kinds)
        for message in kinds.not_served:
            log.warning("policy_selects_unserved_kind", kind=kind, policy=key, message=message)
            self._event(obj, WARNING, selection.SELECTOR_NOT_SERVED, message)
        if kinds.not_watched:
            message = (
                f"{'; '.join(kinds.not_watched)}: not a kind this controller watches, so no template of "
                "it is propagated (add it to the controller's --resources)"
            )
            log.warning("policy_selects_unwatched_kinds", kind=kind, policy=key, selectors=kinds.not_watched)
            self._event(obj, WARNING, SELECTOR_NOT_WATCHED, message)

    # ---- sharded mode: the policy's owner, and the templates' owners (policy_shard.py) ---------

    async def _reconcile_owned_policy(
        self, kind: str, key: str, obj: Mapping[str, Any], policy: AnyPolicy
    ) -> Outcome:
        """Sharded: what the policy's owner writes, the policy only. The templates' owners release
        their claims (``reconcile_policy_notes``); the finalizer goes once no cached template
        carries the policy's claim any more (retried with backoff until then)."""
        try:
            if policy.metadata.deletion_timestamp is not None:
                permanent_id = (policy.metadata.labels or {}).get(permanent_id_label(kind), "")
                namespace = policy.metadata.namespace if kind == PP else None
                remaining = (
                    claimed_by(self.templates, self.config.resources, kind, permanent_id, namespace)
                    if permanent_id
                    else []
                )
                if remaining:
                    log.info("policy_release_waiting", kind=kind, policy=key, templates=len(remaining))
                    return Outcome.ERROR
                await self._remove_finalizer(kind, key, obj)
                log.info("policy_released", kind=kind, policy=key, templates=0)
                return Outcome.DONE
            await self._warn_unwatched(kind, key, obj, policy)
        except ApiError as exc:
            if exc.is_not_found:
                return Outcome.DONE
            log.warning("policy_reconcile_failed", kind=kind, policy=key, error=str(exc))
            return Outcome.ERROR
        return Outcome.DONE

    async def reconcile_policy_notes(
        self, resource: TemplateResource, qkey: QueueKey, notes: set[QueueKey]
    ) -> Outcome | bool:
        """Sharded: for one owned template, what ``reconcile_policy`` does for it for each noted
        policy: release the policy's claim when it is being deleted or no longer matches (then the
        outcome is returned; the release's template event brings the key back for the rest), or
        say whether the template is to be reconciled for it (True), a Lazy policy marking it as
        Karmada's change as ``_enqueue_for_policy`` does."""
        wanted = False
        pending = sorted(notes, key=str)
        while pending:
            note = pending.pop(0)
            obj = self.templates[resource.name].get(qkey.object_key)
            if obj is None:
                return Outcome.DONE
            policy_obj = self.policies[note.kind].get(note.object_key)
            policy = None if policy_obj is None else self._views.parsed.get(note.kind, policy_obj)
            if policy is None:
                continue
            permanent_id = (policy.metadata.labels or {}).get(permanent_id_label(note.kind), "")
            claimed = bool(permanent_id) and claim_label_value(obj, note.kind) == permanent_id
            if claimed and note.kind == PP:
                claimed = (obj.get("metadata") or {}).get("namespace") == policy.metadata.namespace
            deleting = policy.metadata.deletion_timestamp is not None
            if claimed:
                release = deleting
                if not deleting:
                    parsed = ResourceTemplate.from_dict(obj, namespaced=resource.namespaced)
                    if implicit_priority(policy, parsed) == 0:
                        log.info(
                            "policy_no_longer_matches",
                            kind=note.kind,
                            policy=note.object_key,
                            template=qkey.object_key,
                            template_kind=resource.kind,
                        )
                        release = True
                if release:
                    return await self._release_for_policy(resource, obj, qkey, note, permanent_id, pending)
            elif deleting:
                continue
            else:
                parsed_template = template_index(self.templates[resource.name], resource).parsed(
                    qkey.object_key
                )
                if parsed_template is None or not self._may_claim(
                    policy, parsed_template, implicit_priority(policy, parsed_template)
                ):
                    continue
            wanted = True
            if policy.spec.activation_preference == "Lazy":
                self._changed_by_karmada.add(qkey)
        return wanted

    async def _release_for_policy(
        self,
        resource: TemplateResource,
        obj: Mapping[str, Any],
        qkey: QueueKey,
        note: QueueKey,
        permanent_id: str,
        pending: list[QueueKey],
    ) -> Outcome:
        """Release ``note``'s claim on an owned template; the notes left come back with the key."""
        try:
            await self._release(resource, obj, note.kind, permanent_id)
        except ApiError as exc:
            if exc.is_not_found:
                return Outcome.DONE
            log.warning(
                "policy_reconcile_failed",
                kind=note.kind,
                policy=note.object_key,
                template=qkey.object_key,
                error=str(exc),
            )
            pending.append(note)  # retried with backoff
            self._policy_notes.setdefault(qkey, set()).update(pending)
            return Outcome.ERROR
        if pending:
            self._policy_notes.setdefault(qkey, set()).update(pending)
            self.queue.push(qkey)  # taken again once this pass is done
        return Outcome.DONE

    def _enqueue_for_policy(
        self, policy: PropagationPolicy | ClusterPropagationPolicy, qkey: QueueKey
    ) -> None:
        if policy.spec.activation_preference == "Lazy":
            self._changed_by_karmada.add(qkey)
        self.queue.push(qkey)

    async def _remove_finalizer(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or [])
        if POLICY_FINALIZERS[kind] not in finalizers:
            return
        finalizers.remove(POLICY_FINALIZERS[kind])
        self.runtime.ensure_leader()
        # resourceVersion makes the patch fail with 409 rather than drop another controller's finalizer.
        try:
            await self.client.merge_patch(
                policy_path(kind, key),
                {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}},
            )
        except ApiError as exc:
            if exc.is_conflict:  # retried with backoff, from the newer version the watch brings
                WRITE_CONFLICTS.inc()
            raise

    # ---- helpers ------------------------------------------------------------------------------

    def _event(self, template: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if self.runtime.events is None:
            return
        meta = template.get("metadata") or {}
        target = InvolvedObject(
            template.get("apiVersion", ""),
            template.get("kind", ""),
            meta.get("name", ""),
            meta.get("namespace", ""),
            meta.get("uid", ""),
        )
        self.runtime.events.record(target, type_, reason, message)
