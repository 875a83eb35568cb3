"""The descheduler's I/O edge: list, ask the estimators, write ``spec.clusters``, record Events.

Every ``--descheduling-interval`` (measured from the end of a round, as Go's ``wait.Until``) the
leader lists the ResourceBindings, keeps those ``core.filter_bindings`` picks, and for each binding
with a cluster short of ready replicas asks that cluster's accurate estimator (gRPC
``GetUnschedulableReplicas`` with ``--unschedulable-threshold``) in a thread of its own. The
estimator client's rules are Karmada's: one failed cluster discards the binding's whole answer
(its clusters count 0 unschedulable this round) and the others go on; one slow estimator costs
one ``--scheduler-estimator-timeout`` for that binding, never the round.

A binding that loses replicas is written with a PUT of the object as listed (its
``resourceVersion``: a binding the scheduler changed meanwhile is a 409, left for the next round),
and an Event goes to the binding and to its template: ``Normal``/``DescheduleBindingSucceed`` with
the message of ``core.Descheduling``, or ``Warning``/``DescheduleBindingFailed`` with the error.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from prometheus_client import Counter

from fleetsched.api.names import RESOURCE_BINDING, binding_path
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.events import NORMAL, WARNING, EventRecorder, InvolvedObject
from fleetsched.descheduler import core
from fleetsched.estimator.client import EstimatorUnavailable
from fleetsched.kube.client import ApiError, KubeClient

log = structlog.get_logger("fleetsched.descheduler")

BINDINGS_PATH = "/apis/work.karmada.io/v1alpha2/resourcebindings"
CLUSTERS_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters"
BINDING_API_VERSION = "work.karmada.io/v1alpha2"
COMPONENT = "fleetsched-descheduler"
# Bindings whose estimators are asked at the same time (each in a thread of its own).
CONCURRENCY = 8

DESCHEDULED_REPLICAS = Counter(
    "fleetsched_descheduler_descheduled_replicas_total",
    "Replicas taken out of a member cluster because its estimator found them unschedulable.",
    ["cluster"],
    registry=metrics.REGISTRY,
)
BINDING_UPDATES = Counter(
    "fleetsched_descheduler_binding_updates_total",
    "Writes of a descheduled binding's spec.clusters, by result (success, error).",
    ["result"],
    registry=metrics.REGISTRY,
)
ROUNDS = Counter(
    "fleetsched_descheduler_rounds_total",
    "Descheduling rounds, by result (success: the bindings were listed; error: they were not).",
    ["result"],
    registry=metrics.REGISTRY,
)


class UnschedulableEstimator(Protocol):
    """What the descheduler needs of the accurate estimator client (blocking; called in a thread)."""

    def get_unschedulable_replicas(self, clusters: Sequence[Any], resource: Mapping[str, str],
                                   threshold_seconds: float = 300.0) -> list[int]: ...


@dataclass
class Descheduler:
    client: KubeClient
    estimator: UnschedulableEstimator | None
    events: EventRecorder
    unschedulable_threshold: float
    known_clusters: set[str] = field(default_factory=set)
    on_clusters: Callable[[set[str], set[str]], None] | None = None  # (added, removed)

    async def round(self) -> int:
        """One pass over the bindings; returns how many were descheduled."""
        try:
            bindings, _ = await self.client.list_all(BINDINGS_PATH)
        except (ApiError, OSError, TimeoutError) as exc:
            ROUNDS.labels("error").inc()
            log.warning("list_bindings_failed", error=str(exc))
            return 0
        ROUNDS.labels("success").inc()
        await self._refresh_clusters()
        candidates = core.filter_bindings(bindings)
        for binding in bindings:
            if core.supported_kind(binding):
                try:
                    core.applied_placement(binding)
                except core.PlacementError as exc:
                    log.warning("binding_skipped", binding=_key(binding), error=str(exc))
        limit = asyncio.Semaphore(CONCURRENCY)

        async def one(binding: Mapping[str, Any]) -> bool:
            async with limit:
                try:
                    return await self.deschedule(binding)
                except Exception as exc:  # one binding's trouble never ends the round
                    log.warning("deschedule_failed", binding=_key(binding), error=repr(exc))
                    return False

        done = await asyncio.gather(*(one(b) for b in candidates))
        return sum(done)

    async def _refresh_clusters(self) -> None:
        """Karmada dials each Cluster's estimator when it appears and drops it when it goes."""
        if self.on_clusters is None:
            return
        try:
            clusters, _ = await self.client.list_all(CLUSTERS_PATH)
        except (ApiError, OSError, TimeoutError) as exc:
            log.info("list_clusters_failed", error=str(exc))
            return
        names = {str((c.get("metadata") or {}).get("name") or "") for c in clusters} - {""}
        added, removed = names - self.known_clusters, self.known_clusters - names
        self.known_clusters = names
        if added or removed:
            self.on_clusters(added, removed)

    def _ask(self, clusters: list[str], resource: Mapping[str, str]) -> list[int] | None:
        if self.estimator is None:
            return None
        try:
            return self.estimator.get_unschedulable_replicas(clusters, resource, self.unschedulable_threshold)
        except EstimatorUnavailable as exc:
            log.warning("unschedulable_replicas_unknown", resource=_resource_key(resource), error=str(exc))
            return None

    async def deschedule(self, binding: Mapping[str, Any]) -> bool:
        """Karmada's worker for one binding; True when replicas were taken out."""
        if (binding.get("metadata") or {}).get("deletionTimestamp"):
            return False
        statuses = core.replica_statuses(binding)
        wanted = core.undesired(statuses)
        if not wanted:
            return False
        resource = {k: str(v) for k, v in ((binding.get("spec") or {}).get("resource") or {}).items()
                    if k in ("apiVersion", "kind", "namespace", "name")}
        answer = await asyncio.to_thread(self._ask, [s.cluster for s in wanted], resource)
        filled = core.fill_unschedulable(statuses, [answer])
        result = core.deschedule(filled)
        log.debug("unschedulable_replicas", binding=_key(binding),
                  clusters={s.cluster: (s.spec, s.ready, s.unschedulable) for s in filled})
        if result is None:
            return False
        body = copy.deepcopy(dict(binding))
        body.setdefault("apiVersion", BINDING_API_VERSION)
        body.setdefault("kind", "ResourceBinding")
        body["spec"] = {**body["spec"], "clusters": core.updated_clusters(binding, result)}
        meta = binding.get("metadata") or {}
        try:
            await self.client.replace(
                binding_path(RESOURCE_BINDING, meta.get("namespace", ""), meta.get("name", "")), body
            )
        except (ApiError, OSError, TimeoutError) as exc:
            BINDING_UPDATES.labels("error").inc()
            log.warning("binding_update_failed", binding=_key(binding), error=str(exc))
            self._record(binding, WARNING, core.REASON_FAILED, _error_text(exc))
            return False
        BINDING_UPDATES.labels("success").inc()
        for cluster, count in result.removed:
            DESCHEDULED_REPLICAS.labels(cluster).inc(count)
        log.info("binding_descheduled", binding=_key(binding), message=result.message)
        self._record(binding, NORMAL, core.REASON_SUCCEED, result.message)
        return True

    def _record(self, binding: Mapping[str, Any], type_: str, reason: str, message: str) -> None:
        meta = binding.get("metadata") or {}
        target = InvolvedObject(BINDING_API_VERSION, "ResourceBinding", meta.get("name", ""),
                                meta.get("namespace", ""), meta.get("uid", ""))
        self.events.record(target, type_, reason, message)
        self.events.record(InvolvedObject.of_template(binding), type_, reason, message)


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return exc.message or str(exc)
    return str(exc) or repr(exc)


def _key(binding: Mapping[str, Any]) -> str:
    meta = binding.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _resource_key(resource: Mapping[str, str]) -> str:
    return f"{resource.get('kind', '')} {resource.get('namespace', '')}/{resource.get('name', '')}"


async def run_rounds(descheduler: Descheduler, *, interval: float, stop: asyncio.Event,
                     leading: Callable[[], bool], synced: asyncio.Event) -> None:
    """Rounds every ``interval`` seconds after the previous one ends, while ``leading()``."""
    while not stop.is_set():
        if leading():
            descheduled = await descheduler.round()
            synced.set()
            log.debug("descheduling_round_done", descheduled=descheduled)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval if leading() else min(interval, 1.0))
