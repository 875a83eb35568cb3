"""The policy controller (Karmada's resource detector): policies + resource templates in,
ResourceBindings out.

Data flow, as for the scheduler operator:

  kopf raw watch events (templates of the configured kinds, PropagationPolicies,
  ClusterPropagationPolicies) -> caches -> work queue of template keys and policy keys
  -> workers: the pure detector (``fleetsched.detector``) decides the claiming policy and builds
  the desired binding; ``policy`` decides the writes (claim on the template, create-or-update of
  the binding, releases) -> API writes, retried on 409 Conflict -> Events on the template.

This module owns the controller itself: its configuration, the watch events in (caches updated,
queue keys out), the initial sync, the dispatch of a popped key to its reconciler and the kopf
wiring. What it is built from lives beside it, one responsibility each:
``policy_resources`` (the kinds it can watch, the Karmada names, API paths, queue keys),
``policy_cache`` (parsed policies, the detector's view, template indexes) and
``policy_reconcile`` (the template, binding and policy reconcilers, their writes and metrics),
``policy_shard`` (sharded mode: what this replica owns, how a policy change reaches the templates
it owns, and that mode's metrics).

Only the Lease holder's workers write; in sharded mode (``config.sharding``) every replica writes,
each only the objects it owns. Nothing is persisted on watched objects except Karmada's own
claim labels/annotations; kopf runs with raw event handlers only and no-op persistence.

Deletion (§7.12): a deleted template is only forgotten; garbage collection deletes its binding
through the owner reference. In Karmada the binding controller then removes the binding's
``karmada.io/binding-controller`` finalizer after deleting its Works. A standalone install has
neither, so with ``standalone`` on the controller also watches bindings and removes that finalizer
from the terminating bindings it derived (``policy.binding_finalizer_release``). Beside Karmada it
must stay off: Karmada's binding controller needs the finalizer to clean up member clusters.
"""

from __future__ import annotations

import asyncio
from collections import Counter as Tally
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any

import kopf
import structlog
from prometheus_client import Gauge

from fleetsched.api.names import WORK_GROUP, WORK_VERSION
from fleetsched.controller.policy.cache import PolicyViews, new_policy_caches
from fleetsched.controller.policy.config import PolicyControllerConfig
from fleetsched.controller.policy.decisions import (
    binding_finalizer_release,
    changed_by_karmada,
    template_changed,
)
from fleetsched.controller.policy.reconcile import APPLIES, FINALIZER_REMOVALS, PolicyReconcilers
from fleetsched.controller.policy.resources import (
    BINDING_PLURALS,
    CPP,
    DEFAULT_RESOURCES,
    KNOWN_RESOURCES,
    OPT_IN_RESOURCES,
    POLICY_GROUP,
    POLICY_PLURALS,
    POLICY_VERSION,
    PP,
    RBAC_RESOURCES,
    SECRET_RESOURCES,
    TemplateResource,
    permanent_id_label,
    template_qkey,
    works_served,
)
from fleetsched.controller.policy.shard import PolicySharding, uid
from fleetsched.controller.policy.template_index import TemplateIndex
from fleetsched.controller.policy.watching import kopf_registry, on_raw_event, run_kopf
from fleetsched.controller.rebalancer.reconcile import (
    APPS_GROUP,
    APPS_VERSION,
    REBALANCER,
    REBALANCER_PLURAL,
    RebalancerReconciler,
)
from fleetsched.controller.runtime import controller as runtime
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ObjectCache, object_key
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.controller import NotLeader as NotLeader  # raised by runtime.ensure_leader
from fleetsched.controller.runtime.queue import Outcome, QueuedBinding, QueueKey, SchedulingQueue
from fleetsched.detector import binding_name
from fleetsched.kube.client import ApiError, Connection, KubeClient

# Names other modules and tests import from here (the catalogue and the metrics moved out).
__all__ = [
    "APPLIES",
    "BINDING_PLURALS",
    "DEFAULT_RESOURCES",
    "FINALIZER_REMOVALS",
    "KNOWN_RESOURCES",
    "OPT_IN_RESOURCES",
    "POLICY_GROUP",
    "POLICY_PLURALS",
    "RBAC_RESOURCES",
    "SECRET_RESOURCES",
    "WORK_GROUP",
    "NotLeader",
    "PolicyController",
    "PolicyControllerConfig",
    "TemplateResource",
]

log = structlog.get_logger("fleetsched.controller")

LEADER = Gauge("fleetsched_policy_controller_is_leader", "1 while this replica holds the Lease.",
               registry=metrics.REGISTRY)


def _label(meta: Mapping[str, Any], key: str) -> str:
    return str((meta.get("labels") or {}).get(key) or "")


@dataclass
class PolicyController(PolicySharding, PolicyReconcilers, RebalancerReconciler):
    client: KubeClient
    connection: Connection
    config: PolicyControllerConfig = field(default_factory=PolicyControllerConfig)

    queue: SchedulingQueue = field(default_factory=SchedulingQueue)
    templates: dict[str, ObjectCache] = field(default_factory=dict)
    policies: dict[str, ObjectCache] = field(default_factory=new_policy_caches)
    _views: PolicyViews = field(default_factory=PolicyViews)
    # template queue keys whose pending reconcile was caused by Karmada, not a user (§7.11)
    _changed_by_karmada: set[QueueKey] = field(default_factory=set)
    _changed_by_user: set[QueueKey] = field(default_factory=set)
    _terminating_bindings: dict[QueueKey, str] = field(default_factory=dict)
    _policy_notes: dict[QueueKey, set[QueueKey]] = field(default_factory=dict)
    _owned_by_kind: Tally[str] = field(default_factory=Tally)
    # policy kind -> keys of live policies without their permanent-id label (the webhook did not run)
    _without_permanent_id: dict[str, set[str]] = field(default_factory=dict)
    # WorkloadRebalancers (controller/rebalancer/): name -> (UID, generation), and their TTL timers
    _rebalancers: dict[str, tuple[str | None, int | None]] = field(default_factory=dict)
    _ttl_timers: dict[str, asyncio.TimerHandle] = field(default_factory=dict)
    # leadership or shard membership, the workers, start-up and shutdown (composed around this controller)
    runtime: ControllerRuntime = field(init=False)

    def __post_init__(self) -> None:
        self.runtime = ControllerRuntime(
            reconciler=self, config=self.config, client=self.client, queue=self.queue, log=log,
            key_field="key",
        )
        for resource in self.config.resources:
            index = TemplateIndex(namespaced=resource.namespaced)
            self.templates.setdefault(resource.name, ObjectCache(index))
        self._resources = {r.name: r for r in self.config.resources}
        self.watched_kinds = frozenset((r.api_version, r.kind) for r in self.config.resources)
        # Off again if the control plane turns out to serve Karmada's Works (``check_standalone``).
        self.removes_binding_finalizers = self.config.standalone
        # Off again if the control plane does not serve WorkloadRebalancers (``list_rebalancers``).
        self.rebalancing = self.config.workload_rebalancer

    # ---- watch events -------------------------------------------------------------------------

    def on_template_event(
        self, resource: TemplateResource, event_type: str | None, obj: dict[str, Any]
    ) -> None:
        obj.setdefault("apiVersion", resource.api_version)
        obj.setdefault("kind", resource.kind)
        cache = self.templates[resource.name]
        key = object_key(obj)
        if event_type == "DELETED":
            # §7.12: only forget it; garbage collection deletes the binding (owner reference).
            if cache.delete(key) is not None:
                log.info(
                    "template_deleted",
                    template=key,
                    kind=resource.kind,
                    binding=binding_name((obj.get("metadata") or {}).get("name", ""), resource.kind),
                    standalone=self.removes_binding_finalizers,
                )
            self.queue.forget(template_qkey(resource, key))
            self._changed_by_karmada.discard(template_qkey(resource, key))
            self._changed_by_user.discard(template_qkey(resource, key))
            self._policy_notes.pop(template_qkey(resource, key), None)
            self.forget_owned(template_qkey(resource, key))
            return
        stored, previous = cache.upsert(obj)
        if not stored:
            return
        qkey = template_qkey(resource, key)
        if not self.note_owned(qkey, uid(obj)):
            return  # sharded: another replica's template (always ours otherwise)
        if previous is None:
            self._changed_by_user.add(qkey)  # a new template is always applied at once
            self.queue.push(qkey)
        elif template_changed(previous, obj):
            flags = self._changed_by_karmada if changed_by_karmada(previous, obj) else self._changed_by_user
            flags.add(qkey)
            self.queue.push(qkey)

    def on_policy_event(self, kind: str, event_type: str | None, obj: dict[str, Any]) -> None:
        obj.setdefault("apiVersion", f"{POLICY_GROUP}/{POLICY_VERSION}")
        obj.setdefault("kind", kind)
        cache = self.policies[kind]
        key = object_key(obj)
        qkey = QueueKey.of(kind, key)
        if event_type == "DELETED":
            cache.delete(key)
            self._views.parsed.forget(kind, key)
            self.forget_owned(qkey)
            self._note_permanent_id(kind, key, None, None)
            return
        stored, previous = cache.upsert(obj)
        if not stored:
            return
        owned = self.note_owned(qkey, uid(obj))
        meta, old_meta = obj.get("metadata") or {}, (previous or {}).get("metadata") or {}
        if (
            previous is None
            or meta.get("generation") != old_meta.get("generation")
            or bool(meta.get("deletionTimestamp")) != bool(old_meta.get("deletionTimestamp"))
            # the permanent-id given late (the webhook was not running at creation): claim now
            or _label(meta, permanent_id_label(kind)) != _label(old_meta, permanent_id_label(kind))
        ):
            if owned:
                self.queue.push(qkey)
            if self.config.sharding is not None:
                # every replica, for the templates it owns (policy_shard.py)
                self.fan_out_policy(kind, key, obj)

    def on_binding_event(self, kind: str, event_type: str | None, obj: dict[str, Any]) -> None:
        """Standalone only: queue terminating derived bindings whose finalizer is ours to remove."""
        obj.setdefault("kind", kind)
        qkey = QueueKey.of(kind, object_key(obj))
        if event_type == "DELETED":
            self.queue.forget(qkey)
            self._terminating_bindings.pop(qkey, None)
            self.forget_owned(qkey)
            return
        if binding_finalizer_release(obj, watched_kinds=self.watched_kinds).patch is None:
            if self._terminating_bindings.pop(qkey, None) is not None:
                self.forget_owned(qkey)
            return
        binding_uid = uid(obj)
        if binding_uid is not None:
            self._terminating_bindings[qkey] = binding_uid
        if self.note_owned(qkey, binding_uid):
            self.queue.push(qkey)

    # ---- initial sync -------------------------------------------------------------------------

    async def check_standalone(self) -> None:
        """``standalone`` claims no Karmada binding controller runs. A control plane serving
        Karmada's Work API (``works.work.karmada.io``, which fleetsched does not install) has one,
        and it needs the finalizer to delete the Works and the member clusters' copies: leave it."""
        if not self.removes_binding_finalizers:
            return
        try:
            discovery = await self.client.get(f"/apis/{WORK_GROUP}/v1alpha1")
        except ApiError:
            return  # not served: nothing but fleetsched's bindings in work.karmada.io
        if works_served(discovery):
            self.removes_binding_finalizers = False
            log.warning(
                "standalone_ignored",
                reason=f"the control plane serves works.{WORK_GROUP}: a Karmada binding controller "
                "removes the binding finalizers after cleaning up member clusters",
            )

    async def initial_sync(self) -> None:
        for kind, plural in POLICY_PLURALS.items():
            items, _ = await self.client.list_all(f"/apis/{POLICY_GROUP}/{POLICY_VERSION}/{plural}")
            for obj in items:
                self.on_policy_event(kind, None, obj)
        for resource in self.config.resources:
            try:
                items, _ = await self.client.list_all(resource.collection_path())
            except ApiError as exc:
                log.warning("resource_not_listable", resource=resource.name, error=str(exc))
                continue
            for obj in items:
                self.on_template_event(resource, None, obj)
        await self.list_rebalancers()
        runtime.settle_gc()
        log.info(
            "caches_synced",
            policies=len(self.policies[PP]) + len(self.policies[CPP]),
            templates=sum(len(c) for c in self.templates.values()),
        )

    # ---- workers ------------------------------------------------------------------------------

    async def process(self, entry: QueuedBinding) -> Outcome:
        qkey = entry.key
        assert isinstance(qkey, QueueKey)
        if qkey.kind in BINDING_PLURALS:
            return await self.reconcile_binding(qkey.kind, qkey.object_key)
        if qkey.kind in POLICY_PLURALS:
            return await self.reconcile_policy(qkey.kind, qkey.object_key)
        if qkey.kind == REBALANCER:
            return await self.reconcile_rebalancer(qkey.object_key)
        # Anything else is a template, keyed by its resource's name.
        resource = self._resources.get(qkey.kind)
        notes = self._policy_notes.pop(qkey, None)
        if notes and resource is not None:  # sharded: policy changes to apply to this template
            pushed_by_event = qkey in self._changed_by_karmada or qkey in self._changed_by_user
            step = await self.reconcile_policy_notes(resource, qkey, notes)
            if isinstance(step, Outcome):
                return step
            if not step and not pushed_by_event:
                return Outcome.DONE
        # Only Karmada-made changes pending since the last reconcile: a Lazy policy waits.
        lazy_only = qkey in self._changed_by_karmada and qkey not in self._changed_by_user
        self._changed_by_karmada.discard(qkey)
        self._changed_by_user.discard(qkey)
        if resource is None:
            return Outcome.DONE
        return await self.reconcile_template(resource, qkey.object_key, changed_by_karmada=lazy_only)

    # ---- kopf wiring --------------------------------------------------------------------------
    #
    # Every handler is a coroutine: kopf runs a plain ``def`` handler in an executor thread, and
    # these push onto the queue (a heap and an ``asyncio.Event``) and update the caches, which only
    # the event loop may touch. Each handler does what an event needs and no more: copy the object,
    # update a cache, compare with the previous version, push a key; the detector runs in the
    # workers. tests/unit/controller/test_policy_handlers.py keeps them coroutines.

    def kopf_registry(self) -> kopf.OperatorRegistry:
        registry = kopf_registry(self.connection)
        for policy_kind, plural in POLICY_PLURALS.items():
            self._watch_policy(registry, policy_kind, plural)
        for resource in self.config.resources:
            self._watch_template(registry, resource)
        if self.removes_binding_finalizers:
            for binding_kind, binding_plural in BINDING_PLURALS.items():
                self._watch_binding(registry, binding_kind, binding_plural)
        if self.rebalancing:
            self._watch_rebalancers(registry)
        return registry

    def _watch_rebalancers(self, registry: kopf.OperatorRegistry) -> None:
        async def on_rebalancer(event: Mapping[str, Any]) -> None:
            self.on_rebalancer_event(event.get("type"), dict(event["object"]))

        on_raw_event(registry, APPS_GROUP, APPS_VERSION, REBALANCER_PLURAL, on_rebalancer)

    def _watch_binding(self, registry: kopf.OperatorRegistry, kind: str, plural: str) -> None:
        async def on_binding(event: Mapping[str, Any]) -> None:
            self.on_binding_event(kind, event.get("type"), dict(event["object"]))

        on_raw_event(registry, WORK_GROUP, WORK_VERSION, plural, on_binding)

    def _watch_policy(self, registry: kopf.OperatorRegistry, kind: str, plural: str) -> None:
        async def on_policy(event: Mapping[str, Any]) -> None:
            self.on_policy_event(kind, event.get("type"), dict(event["object"]))

        on_raw_event(registry, POLICY_GROUP, POLICY_VERSION, plural, on_policy)

    def _watch_template(self, registry: kopf.OperatorRegistry, resource: TemplateResource) -> None:
        async def on_template(event: Mapping[str, Any]) -> None:
            self.on_template_event(resource, event.get("type"), dict(event["object"]))

        on_raw_event(registry, resource.group, resource.version, resource.plural, on_template)

    # ---- lifecycle (ControllerRuntime.run) ------------------------------------------------------

    def watching(self, *, stop: asyncio.Event, ready: asyncio.Event) -> Awaitable[object]:
        return run_kopf(self.kopf_registry(), stop=stop, ready=ready)

    async def run(self, stop: asyncio.Event) -> int:
        return await self.runtime.run(stop)

    def ready(self) -> tuple[bool, str]:
        return self.runtime.ready()

    def on_leading(self, leading: bool) -> None:
        """The leadership gauge (alert FleetschedPolicyControllerNoLeader)."""
        LEADER.set(1 if leading else 0)

    def after_outcome(self, entry: QueuedBinding, outcome: Outcome) -> None:
        """Nothing: the reconcilers count their own outcomes."""

    def on_done(self) -> None:
        """Nothing: no queue gauges."""

    def on_stopped(self) -> None:
        """The WorkloadRebalancers' TTL timers; the rest the runtime releases."""
        self.cancel_ttl_timers()

    async def before_sync(self) -> None:
        await self.check_standalone()
