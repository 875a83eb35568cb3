"""The policy controller: policies + resource templates in, ResourceBindings out (api.md §7).

Data flow, as for the scheduler operator:

  kopf raw watch events (templates of the configured kinds, PropagationPolicies,
  ClusterPropagationPolicies) -> caches -> work queue of template keys and policy keys
  -> workers: the pure detector (``fleetsched.detector``) decides the claiming policy and builds
  the desired binding; ``policy`` decides the writes (claim on the template, create-or-update of
  the binding, releases) -> API writes, retried on 409 Conflict -> Events on the template.

Only the Lease holder's workers write. Nothing is persisted on watched objects except Karmada's own
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
import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import kopf
import structlog
from prometheus_client import Counter
from pydantic import ValidationError

from fleetsched.api.load import ResourceTemplate
from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.controller import metrics, runtime
from fleetsched.controller.cache import ObjectCache, object_key
from fleetsched.controller.events import NORMAL, WARNING, EventRecorder, InvolvedObject
from fleetsched.controller.leader import LeaderElectionConfig, LeaderElector
from fleetsched.controller.policy import (
    OWNER_UID_MISMATCH,
    WriteAction,
    binding_finalizer_release,
    changed_by_karmada,
    claim_patch,
    is_deleting,
    merge_binding,
    release_patch,
    template_changed,
    unwatched_selectors,
)
from fleetsched.controller.queue import Outcome, QueuedBinding, QueueKey, SchedulingQueue
from fleetsched.controller.runtime import ControllerRuntime
from fleetsched.controller.runtime import NotLeader as NotLeader  # raised by _ensure_leader
from fleetsched.controller.template_index import TemplateIndex
from fleetsched.detector import FeatureGates, binding_name, build_binding, claim_of, derive, implicit_priority
from fleetsched.detector import constants as keys
from fleetsched.detector.index import PolicySet
from fleetsched.kube.client import ApiError, Connection, KubeClient

log = structlog.get_logger("fleetsched.controller")

POLICY_GROUP, POLICY_VERSION = "policy.karmada.io", "v1alpha1"
WORK_GROUP, WORK_VERSION = "work.karmada.io", "v1alpha2"
PP, CPP = PropagationPolicy.KIND, ClusterPropagationPolicy.KIND
POLICY_PLURALS = {PP: "propagationpolicies", CPP: "clusterpropagationpolicies"}
POLICY_FINALIZERS = {
    PP: "karmada.io/propagation-policy-controller",
    CPP: "karmada.io/cluster-propagation-policy-controller",
}
MAX_CONFLICT_RETRIES = 5

BINDING_PLURALS = {"ResourceBinding": "resourcebindings", "ClusterResourceBinding": "clusterresourcebindings"}

APPLY_SUCCEED = "ApplyPolicySucceed"
APPLY_FAILED = "ApplyPolicyFailed"
FINALIZER_REMOVED = "FinalizerRemoved"
FINALIZER_REMOVE_FAILED = "FinalizerRemoveFailed"
SELECTOR_NOT_WATCHED = "ResourceKindNotWatched"

APPLIES = Counter(
    "fleetsched_policy_controller_applies_total",
    "Templates reconciled by the policy controller, by result "
    "(created, updated, unchanged, waiting for a terminating binding, error)",
    ["result"],
    registry=metrics.REGISTRY,
)
FINALIZER_REMOVALS = Counter(
    "fleetsched_policy_controller_binding_finalizer_removals_total",
    "Standalone: Karmada binding finalizers removed from terminating bindings, by binding kind and "
    "result (removed, error)",
    ["kind", "result"],
    registry=metrics.REGISTRY,
)


@dataclass(frozen=True, slots=True)
class TemplateResource:
    """One kind of resource template the controller watches."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection_path(self, namespace: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def object_path(self, key: str) -> str:
        if self.namespaced:
            namespace, name = key.split("/", 1)
            return f"{self.collection_path(namespace)}/{name}"
        return f"{self.collection_path()}/{key}"


KNOWN_RESOURCES: dict[str, TemplateResource] = {
    r.name: r
    for r in (
        TemplateResource("apps", "v1", "deployments", "Deployment", True),
        TemplateResource("apps", "v1", "statefulsets", "StatefulSet", True),
        TemplateResource("apps", "v1", "replicasets", "ReplicaSet", True),
        TemplateResource("apps", "v1", "daemonsets", "DaemonSet", True),
        TemplateResource("batch", "v1", "jobs", "Job", True),
        TemplateResource("batch", "v1", "cronjobs", "CronJob", True),
        TemplateResource("", "v1", "pods", "Pod", True),
        TemplateResource("", "v1", "configmaps", "ConfigMap", True),
        TemplateResource("", "v1", "secrets", "Secret", True),
        TemplateResource("", "v1", "services", "Service", True),
        TemplateResource("", "v1", "serviceaccounts", "ServiceAccount", True),
        TemplateResource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
        TemplateResource("networking.k8s.io", "v1", "ingresses", "Ingress", True),
        TemplateResource("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        TemplateResource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        TemplateResource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        TemplateResource(
            "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
        ),
        TemplateResource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True),
        TemplateResource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    )
}
# Kinds the controller can watch but does not by default. Pods: Karmada propagates their
# controllers, not them. Secrets: reading every Secret is reading every credential of the control
# plane. RBAC kinds: the API server refuses even a label patch on a Role, ClusterRole or binding
# granting more than the writer holds unless the writer may ``escalate`` and ``bind``, which lets
# it grant itself anything. The install grants neither; manifests/overlays/propagate-secrets and
# propagate-rbac add the rights and the kinds (README "Propagating Secrets and RBAC objects").
SECRET_RESOURCES = ("secrets",)
RBAC_RESOURCES = (
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "clusterroles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
)
OPT_IN_RESOURCES = ("pods", *SECRET_RESOURCES, *RBAC_RESOURCES)
DEFAULT_RESOURCES = tuple(name for name in KNOWN_RESOURCES if name not in OPT_IN_RESOURCES)


@dataclass(frozen=True, slots=True)
class PolicyControllerConfig:
    resources: tuple[TemplateResource, ...] = tuple(KNOWN_RESOURCES[n] for n in DEFAULT_RESOURCES)
    workers: int = 2
    gates: FeatureGates = field(default_factory=FeatureGates)
    skipped_namespaces: tuple[str, ...] = keys.DEFAULT_SKIPPED_NAMESPACE_PATTERNS
    leader_election: LeaderElectionConfig | None = None
    graceful_timeout: float = 20.0
    # No Karmada binding controller runs: remove its finalizer from terminating derived bindings.
    standalone: bool = False


class _NotFound(Exception):
    """The object of a write is gone; for a release that means nothing is left to release."""


def claim_label_value(obj: Mapping[str, Any], policy_kind: str) -> str:
    label = keys.PP_PERMANENT_ID_LABEL if policy_kind == PP else keys.CPP_PERMANENT_ID_LABEL
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(label, ""))


def _template_qkey(resource: TemplateResource, key: str) -> QueueKey:
    """A template's key names its resource (``plural.group``), not its kind."""
    return QueueKey.of(resource.name, key)


def _policy_qkey(kind: str, key: str) -> QueueKey:
    return QueueKey.of(kind, key)


def works_served(discovery: Mapping[str, Any]) -> bool:
    """Whether an APIResourceList (``GET /apis/work.karmada.io/v1alpha1``) lists Karmada's Works."""
    return any(r.get("name") == "works" for r in discovery.get("resources") or ())


def _binding_qkey(kind: str, key: str) -> QueueKey:
    return QueueKey.of(kind, key)


def _binding_path_of_key(kind: str, key: str) -> str:
    if kind == "ResourceBinding":
        namespace, name = key.split("/", 1)
        return binding_path(kind, namespace, name)
    return binding_path(kind, None, key)


def binding_path(kind: str, namespace: str | None, name: str) -> str:
    base = f"/apis/{WORK_GROUP}/{WORK_VERSION}"
    if kind == "ResourceBinding":
        return f"{base}/namespaces/{namespace}/resourcebindings/{name}"
    return f"{base}/clusterresourcebindings/{name}"


def policy_path(kind: str, key: str) -> str:
    base = f"/apis/{POLICY_GROUP}/{POLICY_VERSION}"
    if kind == PP:
        namespace, name = key.split("/", 1)
        return f"{base}/namespaces/{namespace}/propagationpolicies/{name}"
    return f"{base}/clusterpropagationpolicies/{key}"


def _apply_message(policy: PropagationPolicy | ClusterPropagationPolicy, outcome: str) -> str:
    if isinstance(policy, PropagationPolicy):
        return f"Apply policy({policy.metadata.namespace}/{policy.metadata.name}) {outcome}"
    return f"Apply cluster policy({policy.metadata.name}) {outcome}"


class _Changes:
    """A ``CacheIndex`` that only counts changes: the policy view is rebuilt when it moved."""

    __slots__ = ("version",)

    def __init__(self) -> None:
        self.version = 0

    def upsert(self, key: str, obj: Mapping[str, Any]) -> None:
        self.version += 1

    def delete(self, key: str) -> None:
        self.version += 1


@dataclass(frozen=True, slots=True)
class _PolicyView:
    """The parsed policies, indexed once per change of either policy cache (not per template)."""

    propagation_policies: list[PropagationPolicy]
    cluster_propagation_policies: list[ClusterPropagationPolicy]
    index: PolicySet
    # The first policy naming each PriorityClass, in policy order: the lookups a template needs.
    class_sources: list[PropagationPolicy | ClusterPropagationPolicy]


class _ParsedPolicies:
    """Policies as models, parsed once per resourceVersion."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, str], tuple[str | None, Any]] = {}

    def get(self, kind: str, obj: Mapping[str, Any]) -> PropagationPolicy | ClusterPropagationPolicy | None:
        key = (kind, object_key(obj))
        version = (obj.get("metadata") or {}).get("resourceVersion")
        cached = self._parsed.get(key)
        if cached is not None and cached[0] == version and version is not None:
            return cached[1]  # type: ignore[no-any-return]
        model = PropagationPolicy if kind == PP else ClusterPropagationPolicy
        try:
            parsed: Any = model.model_validate({**obj, "kind": kind})
        except ValidationError as exc:
            log.warning("policy_unreadable", kind=kind, policy=key[1], error=str(exc).splitlines()[0])
            parsed = None
        self._parsed[key] = (version, parsed)
        return parsed  # type: ignore[no-any-return]

    def forget(self, kind: str, key: str) -> None:
        self._parsed.pop((kind, key), None)


@dataclass
class PolicyController(ControllerRuntime):
    client: KubeClient
    connection: Connection
    config: PolicyControllerConfig = field(default_factory=PolicyControllerConfig)

    queue: SchedulingQueue = field(default_factory=SchedulingQueue)
    templates: dict[str, ObjectCache] = field(default_factory=dict)
    policies: dict[str, ObjectCache] = field(
        default_factory=lambda: {PP: ObjectCache(_Changes()), CPP: ObjectCache(_Changes())}
    )
    synced: asyncio.Event = field(default_factory=asyncio.Event)
    elector: LeaderElector | None = None
    events: EventRecorder | None = None
    _parsed: _ParsedPolicies = field(default_factory=_ParsedPolicies)
    _view: tuple[tuple[int, int], _PolicyView] | None = None
    # template queue keys whose pending reconcile was caused by Karmada, not a user (§7.11)
    _changed_by_karmada: set[QueueKey] = field(default_factory=set)
    _changed_by_user: set[QueueKey] = field(default_factory=set)
    _in_flight: set[asyncio.Task[Any]] = field(default_factory=set)

    def __post_init__(self) -> None:
        for resource in self.config.resources:
            index = TemplateIndex(namespaced=resource.namespaced)
            self.templates.setdefault(resource.name, ObjectCache(index))
        self._resources = {r.name: r for r in self.config.resources}
        self.watched_kinds = frozenset((r.api_version, r.kind) for r in self.config.resources)
        # Off again if the control plane turns out to serve Karmada's Works (``check_standalone``).
        self.removes_binding_finalizers = self.config.standalone

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
            self.queue.forget(_template_qkey(resource, key))
            self._changed_by_karmada.discard(_template_qkey(resource, key))
            self._changed_by_user.discard(_template_qkey(resource, key))
            return
        stored, previous = cache.upsert(obj)
        if not stored:
            return
        qkey = _template_qkey(resource, key)
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
        if event_type == "DELETED":
            cache.delete(key)
            self._parsed.forget(kind, key)
            return
        stored, previous = cache.upsert(obj)
        if not stored:
            return
        meta, old_meta = obj.get("metadata") or {}, (previous or {}).get("metadata") or {}
        if (
            previous is None
            or meta.get("generation") != old_meta.get("generation")
            or bool(meta.get("deletionTimestamp")) != bool(old_meta.get("deletionTimestamp"))
        ):
            self.queue.push(_policy_qkey(kind, key))

    def on_binding_event(self, kind: str, event_type: str | None, obj: dict[str, Any]) -> None:
        """Standalone only: queue terminating derived bindings whose finalizer is ours to remove."""
        obj.setdefault("kind", kind)
        qkey = _binding_qkey(kind, object_key(obj))
        if event_type == "DELETED":
            self.queue.forget(qkey)
            return
        if binding_finalizer_release(obj, watched_kinds=self.watched_kinds).patch is not None:
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
        runtime.settle_gc()
        self.synced.set()
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
        # Anything else is a template, keyed by its resource's name.
        resource = self._resources.get(qkey.kind)
        # Only Karmada-made changes pending since the last reconcile: a Lazy policy waits.
        lazy_only = qkey in self._changed_by_karmada and qkey not in self._changed_by_user
        self._changed_by_karmada.discard(qkey)
        self._changed_by_user.discard(qkey)
        if resource is None:
            return Outcome.DONE
        return await self.reconcile_template(resource, qkey.object_key, changed_by_karmada=lazy_only)

    # ---- policies: the view the detector needs -----------------------------------------------

    def _template_index(self, resource: TemplateResource) -> TemplateIndex:
        cache = self.templates[resource.name]
        if not isinstance(cache.index, TemplateIndex):  # a cache handed in without one
            index = TemplateIndex(namespaced=resource.namespaced)
            for obj in cache:
                index.upsert(object_key(obj), obj)
            cache.index = index
        return cache.index

    def _policy_version(self) -> tuple[int, int] | None:
        changes = [self.policies[kind].index for kind in (PP, CPP)]
        if all(isinstance(c, _Changes) for c in changes):
            return tuple(c.version for c in changes)  # type: ignore[union-attr, return-value]
        return None  # caches handed in without change counters: rebuild every time

    def _policy_view(self) -> _PolicyView:
        version = self._policy_version()
        if version is not None and self._view is not None and self._view[0] == version:
            return self._view[1]
        pps, cpps = self._policy_models()
        sources: dict[str, PropagationPolicy | ClusterPropagationPolicy] = {}
        for policy in (*pps, *cpps):
            source = policy.spec.schedule_priority
            if source is not None:
                sources.setdefault(source.priority_class_name, policy)
        view = _PolicyView(pps, cpps, PolicySet(pps, cpps), list(sources.values()))
        if version is not None:
            self._view = (version, view)
        return view

    def _policy_models(self) -> tuple[list[PropagationPolicy], list[ClusterPropagationPolicy]]:
        pps = [
            p
            for p in (self._parsed.get(PP, o) for o in self.policies[PP])
            if isinstance(p, PropagationPolicy)
        ]
        cpps = [
            p
            for p in (self._parsed.get(CPP, o) for o in self.policies[CPP])
            if isinstance(p, ClusterPropagationPolicy)
        ]
        return pps, cpps

    async def _priority_classes(
        self, policies: Sequence[PropagationPolicy | ClusterPropagationPolicy]
    ) -> dict[str, int]:
        values: dict[str, int] = {}
        for policy in policies:
            source = policy.spec.schedule_priority
            if source is None or source.priority_class_name in values:
                continue
            try:
                found = await self.client.get(
                    f"/apis/scheduling.k8s.io/v1/priorityclasses/{source.priority_class_name}"
                )
            except ApiError:
                continue
            if isinstance(found.get("value"), int):
                values[source.priority_class_name] = found["value"]
        return values

    async def _missing_overrides(self, policy: PropagationPolicy | ClusterPropagationPolicy) -> list[str]:
        missing = []
        for name in policy.spec.dependent_overrides or ():
            if isinstance(policy, PropagationPolicy):
                path = (
                    f"/apis/{POLICY_GROUP}/{POLICY_VERSION}/namespaces/{policy.metadata.namespace}"
                    f"/overridepolicies/{name}"
                )
            else:
                path = f"/apis/{POLICY_GROUP}/{POLICY_VERSION}/clusteroverridepolicies/{name}"
            try:
                await self.client.get(path)
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
        template = self._template_index(resource).parsed(key) or ResourceTemplate.from_dict(
            obj, namespaced=resource.namespaced
        )
        view = self._policy_view()
        claim = claim_of(template)
        if claim is not None:
            cache = self.policies[claim.kind]
            policy_key = f"{claim.namespace}/{claim.name}" if claim.kind == PP else claim.name
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
            self._ensure_leader()
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
            try:
                existing: dict[str, Any] | None = await self.client.get(path)
            except ApiError as exc:
                if not exc.is_not_found:
                    raise
                existing = None
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
            self._ensure_leader()
            try:
                if write.action is WriteAction.CREATE:
                    await self.client.create(path.rsplit("/", 1)[0], write.body or {})
                    APPLIES.labels("created").inc()
                else:
                    await self.client.replace(path, write.body or {})
                    APPLIES.labels("updated").inc()
            except ApiError as exc:
                if exc.is_conflict or exc.is_already_exists:
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
        self._ensure_leader()
        try:
            binding: dict[str, Any] | None = await self.client.get(path)
        except ApiError as exc:
            if not exc.is_not_found:
                raise
            binding = None
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

    @staticmethod
    async def _tolerating_not_found(call: Any) -> dict[str, Any]:
        try:
            return await call  # type: ignore[no-any-return]
        except ApiError as exc:
            if exc.is_not_found:
                raise _NotFound from exc
            raise

    # ---- one terminating binding (standalone) -----------------------------------------------------

    async def reconcile_binding(self, kind: str, key: str) -> Outcome:
        """Standalone: remove Karmada's binding finalizer from a terminating derived binding, as
        Karmada's binding controller does once the Works are gone (there are none here)."""
        if not self.removes_binding_finalizers:
            return Outcome.DONE
        path = _binding_path_of_key(kind, key)
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
            self._ensure_leader()
            try:
                await self.client.merge_patch(path, release.patch)
            except ApiError as exc:
                if exc.is_not_found:
                    return Outcome.DONE
                if exc.is_conflict:
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

    def _claimed_by(
        self, kind: str, permanent_id: str, namespace: str | None
    ) -> list[tuple[TemplateResource, Any]]:
        label = keys.PP_PERMANENT_ID_LABEL if kind == PP else keys.CPP_PERMANENT_ID_LABEL
        found = []
        for resource in self.config.resources:
            index = self._template_index(resource)
            for template_key in index.labelled(label, permanent_id):
                obj = index.object(template_key)
                if obj is None:
                    continue
                meta = obj.get("metadata") or {}
                if (meta.get("labels") or {}).get(label) != permanent_id:
                    continue
                if namespace is not None and meta.get("namespace") != namespace:
                    continue
                found.append((resource, obj))
        return found

    async def reconcile_policy(self, kind: str, key: str) -> Outcome:
        obj = self.policies[kind].get(key)
        if obj is None:
            return Outcome.DONE
        policy = self._parsed.get(kind, obj)
        if policy is None:
            return Outcome.DONE
        label = keys.PP_PERMANENT_ID_LABEL if kind == PP else keys.CPP_PERMANENT_ID_LABEL
        permanent_id = (policy.metadata.labels or {}).get(label, "")
        namespace = policy.metadata.namespace if kind == PP else None
        claimed = self._claimed_by(kind, permanent_id, namespace) if permanent_id else []
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
            unwatched = unwatched_selectors(policy.spec.resource_selectors, self.watched_kinds)
            if unwatched:
                message = (
                    f"{'; '.join(unwatched)}: not a kind this controller watches, so no template of "
                    "it is propagated (add it to the controller's --resources)"
                )
                log.warning("policy_selects_unwatched_kinds", kind=kind, policy=key, selectors=unwatched)
                self._event(obj, WARNING, SELECTOR_NOT_WATCHED, message)
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
                    self._enqueue_for_policy(policy, _template_qkey(resource, object_key(template)))
        except ApiError as exc:
            if exc.is_not_found:
                return Outcome.DONE
            log.warning("policy_reconcile_failed", kind=kind, policy=key, error=str(exc))
            return Outcome.ERROR
        # Templates no policy claims yet may match now (Karmada's "waiting" set): only those the
        # policy's selectors may select are looked at (template_index.py); any other has priority 0.
        for resource in self.config.resources:
            index = self._template_index(resource)
            for template_key in index.candidates(policy.spec.resource_selectors):
                parsed = index.parsed(template_key)
                if parsed is None:
                    continue
                known = priorities.get((resource.name, template_key))
                if known is not None and known[0] is index.object(template_key):
                    priority = known[1]
                else:
                    priority = implicit_priority(policy, parsed)
                unclaimed_match = claim_of(parsed) is None and priority > 0
                may_preempt = (
                    self.config.gates.policy_preemption
                    and policy.spec.preemption == "Always"
                    and priority == 3
                )
                if unclaimed_match or may_preempt:
                    self._enqueue_for_policy(policy, _template_qkey(resource, template_key))
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
        self._ensure_leader()
        # resourceVersion makes the patch fail with 409 rather than drop another controller's finalizer.
        await self.client.merge_patch(
            policy_path(kind, key),
            {"metadata": {"finalizers": finalizers, "resourceVersion": meta.get("resourceVersion")}},
        )

    # ---- helpers ------------------------------------------------------------------------------

    def _event(self, template: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        if self.events is None:
            return
        meta = template.get("metadata") or {}
        target = InvolvedObject(
            template.get("apiVersion", ""),
            template.get("kind", ""),
            meta.get("name", ""),
            meta.get("namespace", ""),
            meta.get("uid", ""),
        )
        self.events.record(target, type_, reason, message)

    # ---- kopf wiring --------------------------------------------------------------------------
    #
    # Every handler is a coroutine: kopf runs a plain ``def`` handler in an executor thread, and
    # these push onto the queue (a heap and an ``asyncio.Event``) and update the caches, which only
    # the event loop may touch. Each handler does what an event needs and no more: copy the object,
    # update a cache, compare with the previous version, push a key; the detector runs in the
    # workers. tests/unit/controller/test_policy_handlers.py keeps them coroutines.

    def kopf_registry(self) -> kopf.OperatorRegistry:
        registry = runtime.kopf_registry(self.connection)
        for policy_kind, plural in POLICY_PLURALS.items():
            self._watch_policy(registry, policy_kind, plural)
        for resource in self.config.resources:
            self._watch_template(registry, resource)
        if self.removes_binding_finalizers:
            for binding_kind, binding_plural in BINDING_PLURALS.items():
                self._watch_binding(registry, binding_kind, binding_plural)
        return registry

    def _watch_binding(self, registry: kopf.OperatorRegistry, kind: str, plural: str) -> None:
        async def on_binding(event: Mapping[str, Any]) -> None:
            self.on_binding_event(kind, event.get("type"), dict(event["object"]))

        runtime.on_raw_event(registry, WORK_GROUP, WORK_VERSION, plural, on_binding)

    def _watch_policy(self, registry: kopf.OperatorRegistry, kind: str, plural: str) -> None:
        async def on_policy(event: Mapping[str, Any]) -> None:
            self.on_policy_event(kind, event.get("type"), dict(event["object"]))

        runtime.on_raw_event(registry, POLICY_GROUP, POLICY_VERSION, plural, on_policy)

    def _watch_template(self, registry: kopf.OperatorRegistry, resource: TemplateResource) -> None:
        async def on_template(event: Mapping[str, Any]) -> None:
            self.on_template_event(resource, event.get("type"), dict(event["object"]))

        runtime.on_raw_event(registry, resource.group, resource.version, resource.plural, on_template)

    # ---- lifecycle (ControllerRuntime.run) ------------------------------------------------------

    async def before_sync(self) -> None:
        await self.check_standalone()
