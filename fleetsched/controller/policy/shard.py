"""The policy controller in sharded mode (``--shard-mode=lease``): what each replica owns.

Every replica watches and caches everything; the live members divide the objects by rendezvous
hashing of their UID (``controller/runtime/shard.py``): resource templates by theirs, policies by theirs,
and (standalone) terminating bindings by theirs. A replica pushes, processes and writes only what
it owns; the runtime checks it at pop and before every write (``ControllerRuntime``).

What a key's reconcile writes is the key's object and what derives from it, so two replicas never
write the same object:

* a template's owner writes the claim on the template, creates or updates its binding (named
  after the template, owner reference to it), releases claims from both, and records its Events;
* a policy's owner writes the policy (its finalizer, once no cached template carries its claim any
  more) and its Event;
* a terminating binding's owner removes the binding finalizer (standalone); the template's owner
  never writes a terminating binding (``policy.merge_binding`` waits for it to go).

A policy change reaches every template through its owner: on a policy event EVERY replica notes
the policy on the templates it owns that the policy concerns (those it claims, those its selectors
may select) and pushes them (``fan_out_policy``); the template's reconcile then does for it what
the single-leader policy reconcile does inline (``PolicyReconcilers.reconcile_policy_notes``).

This module owns that bookkeeping and the sharded-mode metrics. No API calls.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from prometheus_client import Gauge

from fleetsched.controller.policy.cache import PolicyViews, claimed_by, template_index
from fleetsched.controller.policy.config import PolicyControllerConfig
from fleetsched.controller.policy.resources import (
    BINDING_PLURALS,
    POLICY_PLURALS,
    PP,
    TemplateResource,
    claiming_policy_key,
    permanent_id_label,
    template_qkey,
)
from fleetsched.controller.rebalancer.reconcile import REBALANCER
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ObjectCache, object_key
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.queue import QueuedBinding, QueueKey, SchedulingQueue
from fleetsched.controller.runtime.shard import MembershipChange
from fleetsched.detector import claim_of

OWNED_OBJECTS = Gauge(
    "fleetsched_policy_controller_owned_objects",
    "Sharded mode: objects this replica owns now, by kind (template, policy, binding, rebalancer)",
    ["kind"],
    registry=metrics.REGISTRY,
)
SHARD = metrics.ShardMetrics.of(
    "fleetsched_policy_controller", registry=metrics.REGISTRY, objects="Objects", noun="the object"
)
TEMPLATE, POLICY, BINDING, REBALANCER_KIND = "template", "policy", "binding", "rebalancer"


def key_kind(key: Hashable) -> str:
    """Which of the four kinds of work a queue key names."""
    assert isinstance(key, QueueKey)
    if key.kind == REBALANCER:
        return REBALANCER_KIND
    if key.kind in POLICY_PLURALS:
        return POLICY
    if key.kind in BINDING_PLURALS:
        return BINDING
    return TEMPLATE


def uid(obj: Mapping[str, Any] | None) -> str | None:
    return ((obj or {}).get("metadata") or {}).get("uid") or None


class PolicySharding:
    """``PolicyController``'s side of sharding: the ``ShardedReconciler`` hooks the runtime calls,
    and the owned count by kind (see the module docstring)."""

    config: PolicyControllerConfig
    runtime: ControllerRuntime
    queue: SchedulingQueue
    templates: dict[str, ObjectCache]
    policies: dict[str, ObjectCache]
    _views: PolicyViews
    # standalone: terminating derived bindings whose finalizer is to be removed, by key (their UID)
    _terminating_bindings: dict[QueueKey, str]
    # sharded: template key -> the policies whose change it has yet to be reconciled for
    _policy_notes: dict[QueueKey, set[QueueKey]]
    _owned_by_kind: Tally[str]
    _resources: dict[str, TemplateResource]
    # WorkloadRebalancers (RebalancerReconciler)
    rebalancer_uid: Callable[[str], str | None]
    rebalancer_objects: Callable[[], list[tuple[Hashable, str]]]

    # ---- what the runtime asks ----------------------------------------------------------------

    def uid_of(self, key: Hashable) -> str | None:
        assert isinstance(key, QueueKey)
        kind = key_kind(key)
        if kind == POLICY:
            return uid(self.policies[key.kind].get(key.object_key))
        if kind == BINDING:
            return self._terminating_bindings.get(key)
        if kind == REBALANCER_KIND:
            return self.rebalancer_uid(key.object_key)
        cache = self.templates.get(key.kind)
        return None if cache is None else uid(cache.get(key.object_key))

    def shard_objects(self) -> Iterable[tuple[Hashable, str]]:
        for kind, cache in self.policies.items():
            for obj in cache:
                if (found := uid(obj)) is not None:
                    yield QueueKey.of(kind, object_key(obj)), found
        for resource in self.config.resources:
            for obj in self.templates[resource.name]:
                if (found := uid(obj)) is not None:
                    yield template_qkey(resource, object_key(obj)), found
        yield from self._terminating_bindings.items()
        yield from self.rebalancer_objects()

    def on_ownership_gained(self, keys: list[Hashable]) -> None:
        """Push what became owned. A template handed over may be claimed by a policy whose change
        its previous owner had not finished (a release, say): note that policy on it too."""
        for key in keys:
            assert isinstance(key, QueueKey)
            if key_kind(key) == TEMPLATE:
                self._note_claiming_policy(key)
            self.queue.push(key)

    def on_not_owner(self, entry: QueuedBinding) -> None:
        SHARD.not_owner_drops.inc()
        if isinstance(entry.key, QueueKey):
            self._policy_notes.pop(entry.key, None)

    def on_owned_count(self, owned: int) -> None:
        """Nothing: the owned count by kind is kept by ``note_owned`` / ``forget_owned`` below."""

    def on_shard_change(
        self, change: MembershipChange, *, owned: int, gained: int, lost: int, held: bool
    ) -> None:
        SHARD.membership_changed(len(change.members), gained=gained, lost=lost, held=held)
        self._owned_by_kind = Tally(key_kind(key) for key in self.runtime.owned_keys())
        self._publish_owned()

    # ---- the owned count by kind (the runtime keeps the owned set) ----------------------------

    def note_owned(self, key: Hashable, uid: str | None) -> bool:
        was = self.runtime.is_owned(key)
        owned = self.runtime.note_owned(key, uid)
        if self.config.sharding is not None and owned != was:
            self._owned_by_kind[key_kind(key)] += 1 if owned else -1
            self._publish_owned()
        return owned

    def forget_owned(self, key: Hashable) -> None:
        if self.runtime.is_owned(key):
            self._owned_by_kind[key_kind(key)] -= 1
            self._publish_owned()
        self.runtime.forget_owned(key)

    def _publish_owned(self) -> None:
        for kind in (TEMPLATE, POLICY, BINDING, REBALANCER_KIND):
            OWNED_OBJECTS.labels(kind).set(self._owned_by_kind[kind])

    # ---- a policy change reaches the templates this replica owns -------------------------------

    def fan_out_policy(self, kind: str, key: str, obj: Mapping[str, Any]) -> int:
        """Note the policy on every owned template it claims or its selectors may select, and push
        them; returns how many. (Every replica does this for its own templates.)"""
        policy = self._views.parsed.get(kind, obj)
        if policy is None:
            return 0
        policy_qkey = QueueKey.of(kind, key)
        concerned: list[QueueKey] = []
        permanent_id = (policy.metadata.labels or {}).get(permanent_id_label(kind), "")
        if permanent_id:
            namespace = policy.metadata.namespace if kind == PP else None
            for resource, template in claimed_by(
                self.templates, self.config.resources, kind, permanent_id, namespace
            ):
                concerned.append(template_qkey(resource, object_key(template)))
        if policy.metadata.deletion_timestamp is None:
            for resource in self.config.resources:
                index = template_index(self.templates[resource.name], resource)
                concerned.extend(
                    template_qkey(resource, k) for k in index.candidates(policy.spec.resource_selectors)
                )
        pushed = 0
        for template_key in dict.fromkeys(concerned):  # claimed ones are candidates too
            template_uid = self.uid_of(template_key)
            if self.note_owned(template_key, template_uid):
                self._policy_notes.setdefault(template_key, set()).add(policy_qkey)
                self.queue.push(template_key)
                pushed += 1
            elif self._ours_by_view(template_uid):
                # not active this instant (a renewal or LIST running late): the note waits for the
                # key's next push (the runtime pushes such keys again once active, or on a change)
                self._policy_notes.setdefault(template_key, set()).add(policy_qkey)
        return pushed

    def _ours_by_view(self, uid: str | None) -> bool:
        membership = self.runtime.membership
        return membership is not None and uid is not None and membership.owner(uid) == membership.name

    def _note_claiming_policy(self, key: QueueKey) -> None:
        resource: TemplateResource | None = self._resources.get(key.kind)
        if resource is None:
            return
        parsed = template_index(self.templates[resource.name], resource).parsed(key.object_key)
        claim = None if parsed is None else claim_of(parsed)
        if claim is None:
            return
        policy_key = claiming_policy_key(claim)
        if self.policies[claim.kind].get(policy_key) is not None:
            self._policy_notes.setdefault(key, set()).add(QueueKey.of(claim.kind, policy_key))
