"""WorkloadRebalancers: Karmada's ``workload-rebalancer`` controller, run inside the policy controller.

A WorkloadRebalancer is queued when it appears (the initial LIST, a watch ADDED) and when its spec
changes (``metadata.generation``), as Karmada's controller is; status writes and deletions queue
nothing. One reconcile (``reconcile_rebalancer``):

1. reads the rebalancer from the API (gone: nothing to do);
2. brings ``status.observedWorkloads`` in line with the spec (``decisions.sync_observed``) and, for
   each workload without a result, reads its binding: none (404) is final, ``Failed`` with reason
   ``ReferencedBindingNotFound``; one whose ``spec.rescheduleTriggeredAt`` is unset or older than
   the rebalancer gets the rebalancer's ``creationTimestamp`` (a merge patch conditional on the
   binding's resourceVersion, re-read on 409), and the workload is ``Successful``. Any other error
   leaves the workload without a result, to be retried;
3. writes the status when it changed: ``observedGeneration``, and ``finishTime`` once nothing is
   left to retry (``decisions.finished_status``);
4. with ``spec.ttlSecondsAfterFinished``, deletes the finished rebalancer (conditional on its
   resourceVersion) once the TTL has passed since ``finishTime``, or queues it again for then.

The scheduler does the rest: a binding whose ``rescheduleTriggeredAt`` is newer than its
``status.lastScheduledTime`` is scheduled afresh (from the first cluster affinity term, replicas
divided anew). A workload waiting for a retry makes the reconcile an ``ERROR`` (queue backoff).

``RebalancerReconciler`` is a mixin of ``PolicyController``, which provides the client, the queue
and ``ControllerRuntime``'s leadership check (made before every write). Sharded, a rebalancer is
handled by the replica owning its UID (``controller/policy/shard.py``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Hashable
from typing import Any

import structlog
from prometheus_client import Counter
from pydantic import ValidationError

from fleetsched.api._base import parse_time
from fleetsched.api.apps import REBALANCE_FAILED, REBALANCE_SUCCESSFUL, ObservedWorkload, WorkloadRebalancer
from fleetsched.api.names import CLUSTER_RESOURCE_BINDING, RESOURCE_BINDING
from fleetsched.api.names import binding_path as names_binding_path
from fleetsched.controller.rebalancer import decisions
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.queue import Outcome, QueueKey, SchedulingQueue
from fleetsched.kube.client import ApiError, KubeClient

log = structlog.get_logger("fleetsched.controller")

REBALANCER = WorkloadRebalancer.KIND
APPS_GROUP, APPS_VERSION, REBALANCER_PLURAL = "apps.karmada.io", "v1alpha1", "workloadrebalancers"
MAX_CONFLICT_RETRIES = 5
# A TTL timer fires this much late, so the rebalancer is past its TTL when it is read again.
TTL_SLACK = 0.05

REBALANCED = Counter(
    "fleetsched_workload_rebalancer_workloads_total",
    "Workloads of WorkloadRebalancers handled, by result (Successful: reschedule requested on its "
    "binding; Failed: no binding; retry: an API error, tried again)",
    ["result"],
    registry=metrics.REGISTRY,
)
DELETED_AFTER_TTL = Counter(
    "fleetsched_workload_rebalancer_ttl_deletions_total",
    "Finished WorkloadRebalancers deleted after spec.ttlSecondsAfterFinished",
    registry=metrics.REGISTRY,
)


def rebalancer_path(name: str | None = None) -> str:
    base = f"/apis/{APPS_GROUP}/{APPS_VERSION}/{REBALANCER_PLURAL}"
    return base if name is None else f"{base}/{name}"


def binding_path(ref: decisions.BindingRef) -> str:
    kind = RESOURCE_BINDING if ref.namespace else CLUSTER_RESOURCE_BINDING
    return names_binding_path(kind, ref.namespace, ref.name)


def rebalancer_qkey(name: str) -> QueueKey:
    return QueueKey.of(REBALANCER, name)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class RebalancerReconciler:
    """WorkloadRebalancers, as methods of ``PolicyController`` (see the module docstring)."""

    client: KubeClient
    runtime: ControllerRuntime
    queue: SchedulingQueue
    # provided by PolicyController (PolicySharding)
    note_owned: Callable[[Hashable, str | None], bool]
    forget_owned: Callable[[Hashable], None]
    # name -> (UID, generation) of every WorkloadRebalancer seen
    _rebalancers: dict[str, tuple[str | None, int | None]]
    # name -> the timer queueing it again once its TTL has passed
    _ttl_timers: dict[str, asyncio.TimerHandle]
    # watching WorkloadRebalancers at all: --controllers and the CRD being served
    rebalancing: bool
    clock: Callable[[], dt.datetime] = staticmethod(_utcnow)

    # ---- watch events ------------------------------------------------------------------------

    def on_rebalancer_event(self, event_type: str | None, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        if not name:
            return
        qkey = rebalancer_qkey(name)
        if event_type == "DELETED":
            self._rebalancers.pop(name, None)
            self._cancel_ttl(name)
            self.queue.forget(qkey)
            self.forget_owned(qkey)
            return
        uid, generation = meta.get("uid") or None, meta.get("generation")
        previous = self._rebalancers.get(name)
        self._rebalancers[name] = (uid, generation)
        owned = self.note_owned(qkey, uid)
        # as Karmada's predicate: created, or its spec changed; status writes are ours
        if owned and (previous is None or previous != (uid, generation)):
            self.queue.push(qkey)

    def rebalancer_uid(self, name: str) -> str | None:
        found = self._rebalancers.get(name)
        return found[0] if found is not None else None

    def rebalancer_objects(self) -> list[tuple[Hashable, str]]:
        return [(rebalancer_qkey(name), uid) for name, (uid, _) in self._rebalancers.items() if uid]

    async def list_rebalancers(self) -> None:
        """The initial LIST; a control plane without the CRD turns the controller off (a warning)."""
        if not self.rebalancing:
            return
        try:
            items, _ = await self.client.list_all(rebalancer_path())
        except ApiError as exc:
            if exc.status != 404:
                raise
            self.rebalancing = False
            log.warning(
                "workload_rebalancer_not_served",
                reason=f"{REBALANCER_PLURAL}.{APPS_GROUP} is not served (install crds/): "
                "WorkloadRebalancers are not handled",
            )
            return
        for obj in items:
            self.on_rebalancer_event(None, obj)

    def cancel_ttl_timers(self) -> None:
        for handle in self._ttl_timers.values():
            handle.cancel()
        self._ttl_timers.clear()

    def _cancel_ttl(self, name: str) -> None:
        handle = self._ttl_timers.pop(name, None)
        if handle is not None:
            handle.cancel()

    def _requeue_after(self, name: str, seconds: float) -> None:
        self._cancel_ttl(name)

        def due() -> None:
            self._ttl_timers.pop(name, None)
            if name in self._rebalancers:
                self.queue.push(rebalancer_qkey(name))

        self._ttl_timers[name] = asyncio.get_running_loop().call_later(seconds + TTL_SLACK, due)

    # ---- the reconcile -----------------------------------------------------------------------

    async def reconcile_rebalancer(self, name: str) -> Outcome:
        try:
            raw = await self.client.get(rebalancer_path(name))
        except ApiError as exc:
            if exc.is_not_found:
                return Outcome.DONE
            log.warning("workload_rebalancer_read_failed", rebalancer=name, error=str(exc))
            return Outcome.ERROR
        try:
            rebalancer = WorkloadRebalancer.model_validate(raw)
        except ValidationError as exc:
            # the CRD's schema keeps this out; a hand-made object without one is skipped, once
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"])
            log.warning("workload_rebalancer_invalid", rebalancer=name, field=field, error=first["msg"])
            return Outcome.DONE
        observed = decisions.sync_observed(rebalancer)
        created = (raw.get("metadata") or {}).get("creationTimestamp")
        retries = 0
        for index in decisions.pending(observed):
            result = await self._trigger(observed[index], created)
            if result is None:
                retries += 1
                REBALANCED.labels("retry").inc()
            else:
                observed[index] = result
                REBALANCED.labels(result.result or "").inc()
        status = decisions.finished_status(rebalancer, observed, retries, self.clock())
        resource_version = rebalancer.metadata.resource_version
        if status != rebalancer.status:
            self.runtime.ensure_leader()
            try:
                written = await self.client.merge_patch(
                    rebalancer_path(name) + "/status", {"status": status.to_dict()}
                )
            except ApiError as exc:
                if exc.is_not_found:
                    return Outcome.DONE
                log.warning("workload_rebalancer_status_failed", rebalancer=name, error=str(exc))
                return Outcome.ERROR
            resource_version = (written.get("metadata") or {}).get("resourceVersion") or resource_version
            rebalancer.status = status
            log.info(
                "workload_rebalancer_observed",
                rebalancer=name,
                successful=sum(1 for o in observed if o.result == REBALANCE_SUCCESSFUL),
                failed=sum(1 for o in observed if o.result == REBALANCE_FAILED),
                retrying=retries,
                finished=retries == 0,
            )
        if retries:
            return Outcome.ERROR
        return await self._expire(rebalancer, resource_version)

    async def _trigger(self, item: ObservedWorkload, created: str | None) -> ObservedWorkload | None:
        """Request the reschedule of one workload: its new entry, or None to retry later."""
        ref = decisions.binding_of(item.workload)
        path = binding_path(ref)
        created_at = parse_time(created) if created else None
        for _ in range(MAX_CONFLICT_RETRIES):
            try:
                binding = await self.client.get(path)
            except ApiError as exc:
                if exc.is_not_found:
                    return decisions.binding_not_found(item)
                log.warning("workload_rebalancer_binding_read_failed", binding=str(ref), error=str(exc))
                return None
            spec = binding.get("spec") or {}
            triggered = spec.get("rescheduleTriggeredAt")
            try:
                triggered_at = parse_time(triggered) if triggered else None
            except ValueError:
                triggered_at = None  # not a time: overwritten, as a fresh request
            if not decisions.needs_trigger(created_at, triggered_at):
                return decisions.succeeded(item)
            patch = {
                "metadata": {"resourceVersion": (binding.get("metadata") or {}).get("resourceVersion")},
                "spec": {"rescheduleTriggeredAt": created},
            }
            self.runtime.ensure_leader()
            try:
                await self.client.merge_patch(path, patch)
            except ApiError as exc:
                if exc.is_conflict:
                    continue  # changed meanwhile: read it again
                if exc.is_not_found:
                    return decisions.binding_not_found(item)
                log.warning("workload_rebalancer_binding_write_failed", binding=str(ref), error=str(exc))
                return None
            log.info("reschedule_triggered", binding=str(ref), rescheduleTriggeredAt=created)
            return decisions.succeeded(item)
        return None

    async def _expire(self, rebalancer: WorkloadRebalancer, resource_version: str | None) -> Outcome:
        name = rebalancer.metadata.name or ""
        try:
            remaining = decisions.ttl_remaining(rebalancer, self.clock())
        except ValueError as exc:
            log.warning("workload_rebalancer_unfinished", rebalancer=name, error=str(exc))
            return Outcome.ERROR
        if remaining is None:
            return Outcome.DONE
        if remaining > 0:
            self._requeue_after(name, remaining)
            return Outcome.DONE
        self.runtime.ensure_leader()
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"resourceVersion": resource_version},
        }
        try:
            await self.client.request("DELETE", rebalancer_path(name), body=options)
        except ApiError as exc:
            if exc.is_not_found:
                return Outcome.DONE
            log.warning("workload_rebalancer_delete_failed", rebalancer=name, error=str(exc))
            return Outcome.ERROR
        DELETED_AFTER_TTL.inc()
        log.info("workload_rebalancer_deleted", rebalancer=name,
                 ttlSecondsAfterFinished=rebalancer.spec.ttl_seconds_after_finished)
        return Outcome.DONE
