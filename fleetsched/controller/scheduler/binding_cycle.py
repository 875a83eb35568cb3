"""The binding cycle: from a decision to the written binding (kube-scheduler's ``bindingCycle``).

The framework's Reserve, Permit (waiting if a plugin asks to) and PreBind of the binding's
profile, each in a core thread of that profile; the rendering of the result into the binding
(with a move's step, ``moves.py``) and at most two writes — spec + annotations, then status,
conditional on the resourceVersion the spec write returned, retried from a fresh read on 409 —
then PostBind. A decision that will not be written (a plugin refused it, a write failed) goes
through **one** failure handler, ``_failed``, as kube-scheduler's ``handleBindingCycleError``:
the plugins unreserved, the assumption forgotten and the peer entry restored, together.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog

from fleetsched.controller.runtime.controller import ControllerRuntime, NotOwner
from fleetsched.controller.scheduler import decision, moves, reporting
from fleetsched.controller.scheduler.assume import Assumption, Record
from fleetsched.controller.scheduler.compute import BudgetExceeded, CoreExecutor, Profiles
from fleetsched.controller.scheduler.peers import NoPeers, Peers
from fleetsched.controller.scheduler.reporting import Reporter
from fleetsched.controller.scheduler.store import BindingStore, binding_path, queue_key
from fleetsched.controller.scheduler.writer import (
    Patches,
    compute_patches,
    explanation,
    observed_generation_patch,
    status_patch,
)
from fleetsched.kube.client import ApiError, KubeClient
from fleetsched.scheduler import ScheduleResult, render_into_binding
from fleetsched.scheduler.framework.interface import Code, Status
from fleetsched.scheduler.framework.runtime import BindingCycle
from fleetsched.scheduler.outcome import Condition
from fleetsched.scheduler.stepping import MoveBudget

T = TypeVar("T")

log = structlog.get_logger("fleetsched.scheduler")

MAX_CONFLICT_RETRIES = 5
# Karmada's BindingReasonQuotaExceeded, and the Status reason a FederatedResourceQuota's webhook gives.
QUOTA_EXCEEDED = "QuotaExceeded"


def is_quota_exceeded(exc: BaseException) -> bool:
    """A write refused because a quota is exceeded: 403 with reason QuotaExceeded (Karmada's check)."""
    return isinstance(exc, ApiError) and exc.status == 403 and exc.reason == QUOTA_EXCEEDED


@dataclass(frozen=True, slots=True)
class Bound:
    """What the binding cycle wrote (or, for a refused decision, said): for the report."""

    result: ScheduleResult
    rendered: Mapping[str, Any]
    patches: Patches
    step: moves.Step
    warning: str | None


@dataclass
class Binder:
    client: KubeClient
    store: BindingStore
    runtime: ControllerRuntime
    compute: CoreExecutor
    profiles: Profiles
    assumptions: Record
    report: Reporter
    peers: Peers = field(default_factory=NoPeers)
    move_budget: MoveBudget | None = None
    _background: set[asyncio.Future[Any]] = field(default_factory=set)

    async def bind(
        self, kind: str, key: str, obj: dict[str, Any], result: ScheduleResult, assumption: Assumption,
        *, fresh: bool,
    ) -> Bound | None:
        """The cycle of one decision; None when there is nothing to report (the failure is handled:
        the binding goes back to the queue with backoff). ``fresh``: a reschedule was asked for."""
        profile = decision.effective_scheduler_name(obj)  # the pool of its binding-cycle plugins
        if result.condition is None:
            await self._failed(kind, key, profile, assumption, None)
            return None
        cycle: BindingCycle | None = None
        failed = False
        try:
            cycle, result = await self._plugins(key, result, profile)
            if not result.scheduled:  # not scheduled, or a Reserve, Permit or PreBind plugin refused it
                failed = True
                await self._failed(kind, key, profile, assumption, cycle, background=True)
            now = dt.datetime.now(dt.UTC)
            step, warning = moves.after_core(obj, render_into_binding(obj, result, now=now),
                                             self.move_budget, fresh=fresh, now=now)
            explain = explanation(result) if result.attempts else None
            patches = compute_patches(obj, step.rendered, explain=explain)
            patches = await self.write(kind, key, obj, patches, result, rendered=step.rendered)
        except BaseException as exc:
            if not failed:
                await self._failed(kind, key, profile, assumption, cycle)
            if is_quota_exceeded(exc):
                assert isinstance(exc, ApiError)
                await self._quota_exceeded(kind, key, obj, exc)
                return None
            raise
        if not failed:
            self.assumptions.bound(assumption)
            if cycle is not None:
                await self._quietly(cycle.post_bind, key, profile)
        return Bound(result, step.rendered, patches, step, warning)

    async def _failed(
        self, kind: str, key: str, profile: str, assumption: Assumption, cycle: BindingCycle | None,
        *, background: bool = False,
    ) -> None:
        """A decision that will not be written (kube-scheduler's handleBindingCycleError): the
        plugins that still hold it unreserved (``cycle``; ``background`` when one of them may not
        return), the assumption forgotten, the peer entry as stored."""
        if cycle is not None:
            unreserve = self._quietly(cycle.unreserve, key, profile)
            if background:
                task = asyncio.ensure_future(unreserve)
                self._background.add(task)
                task.add_done_callback(self._background.discard)
            else:
                await unreserve
        self.assumptions.forget(assumption)
        self.peers.observe(kind, self.store.get(kind, key), key)

    # ---- the framework's points -----------------------------------------------------------------

    async def _plugins(
        self, key: str, result: ScheduleResult, profile: str
    ) -> tuple[BindingCycle | None, ScheduleResult]:
        """Reserve, Permit (waiting if a plugin asks to) and PreBind of the binding's profile before
        the write: the cycle when its plugins hold the decision (it passed, or one of them ran past
        its budget: the result then says so), None when there is none or one refused it (the
        framework has unreserved them). A refusal turns the result into a failed condition only."""
        framework = self.profiles.scheduler_for(profile).framework
        if not framework.has_binding_cycle or not result.scheduled or result.clusters is None:
            return None, result
        cycle: BindingCycle | None = framework.binding_cycle(result.cycle_context(), result.clusters)
        assert cycle is not None
        try:
            status = await self._in_profile(cycle.reserve, key, profile)
            if status.is_success:
                status = await self._in_profile(cycle.permit, key, profile)
                if status.code is Code.WAIT:
                    status = await self._wait_on_permit(cycle)
            if status.is_success:
                status = await self._in_profile(cycle.pre_bind, key, profile)
        except BudgetExceeded as exc:  # a plugin that did not return: its thread is left behind
            status = Status(Code.ERROR, (str(exc),), exc.plugin or None)
        else:
            if not status.is_success:
                cycle = None  # the framework unreserved them
        if status.is_success:
            return cycle, result
        reason = "Unschedulable" if status.is_rejection else "SchedulerError"
        message = f"{status.plugin}: {status.message()}" if status.plugin else status.message()
        refused = Condition(False, reason, message)
        return cycle, dataclasses.replace(
            result, condition=refused, clusters=None, write_placement_annotation=False
        )

    async def _wait_on_permit(self, cycle: BindingCycle) -> Status:
        """Woken by the framework when every waiting plugin allowed the binding or one rejected it
        (from whatever thread did), else by a timer at its Permit timeout, which wait_on_permit
        answers with the timeout rejection. A decision always reaches the loop after a clear
        (call_soon_threadsafe), so none is lost; it loops again only when the timer fires a hair
        before the framework's clock reaches the deadline."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        cycle.on_permit_decided(lambda: loop.call_soon_threadsafe(woken.set))
        while (answer := cycle.wait_on_permit()) is None:
            woken.clear()
            timer = loop.call_later(cycle.permit_seconds_left(), woken.set)
            try:
                await woken.wait()
            finally:
                timer.cancel()
        return answer

    async def _in_profile(self, call: Callable[[], T], key: str, profile: str) -> T:
        """A binding-cycle point in a core thread of the binding's profile, within --scheduling-timeout:
        a plugin that hangs at Reserve, Permit, PreBind, Unreserve or PostBind holds one thread of its
        own profile (``BudgetExceeded`` names it), never the event loop."""
        return await self.compute.run(call, key=key, pool=profile)

    async def _quietly(self, call: Callable[[], object], key: str, profile: str) -> None:
        """``_in_profile`` for what has nothing to report (Unreserve, PostBind): an overrun is counted
        by the executor and logged, and changes nothing that was written."""
        try:
            await self._in_profile(call, key, profile)
        except BudgetExceeded as exc:
            log.warning("binding_cycle_overrun", binding=key, error=str(exc))

    # ---- the writes -----------------------------------------------------------------------------

    async def write(
        self, kind: str, key: str, obj: Mapping[str, Any], patches: Patches, result: ScheduleResult | None,
        *, rendered: Mapping[str, Any] | None = None,
    ) -> Patches:
        """At most two writes: spec + annotations (recording the generation it gives the binding,
        so its watch event is not taken for a user change), then status, conditional on the
        resourceVersion the spec write returned and computed from its answer when ``rendered`` is
        given (else ``patches.status`` as it is). The patches as written; the caller handles a
        failure."""
        status = patches.status
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if patches.spec is not None:
            written = await self._write_spec(kind, key, patches)
            version = (written.get("metadata") or {}).get("resourceVersion")
            if rendered is not None:
                status = status_patch(written, rendered)
        if status is not None:
            self.runtime.ensure_leader()
            body = {"metadata": {"resourceVersion": version}, **status}
            try:
                response = await self._write_status(kind, key, body, result)
            except (ApiError, NotOwner, OSError) as exc:
                if not isinstance(exc, NotOwner):
                    reporting.wrote("status", ok=False)
                raise
            reporting.wrote("status", ok=True)
            self.store.store_response(kind, response)
        return dataclasses.replace(patches, status=status)

    async def _write_spec(self, kind: str, key: str, patches: Patches) -> dict[str, Any]:
        """The spec + annotations patch; its answer, stored (its echo is skipped)."""
        assert patches.spec is not None
        qkey = queue_key(kind, key)
        own_generation = self.store.own_generation
        self.runtime.ensure_leader()
        own_generation[qkey] = patches.generation_after_spec  # for an echo ahead of the answer
        try:
            response = await self.client.merge_patch(binding_path(kind, key), patches.spec)
        except (ApiError, NotOwner, OSError) as exc:  # NotOwner: the write guard; OSError: no answer
            if not isinstance(exc, NotOwner):
                reporting.wrote("spec", ok=False)
            own_generation.pop(qkey, None)
            raise
        reporting.wrote("spec", ok=True)
        own_generation[qkey] = int((response.get("metadata") or {}).get("generation") or 0)
        self.store.store_response(kind, response)
        return response

    async def _write_status(
        self, kind: str, key: str, body: dict[str, Any], result: ScheduleResult | None
    ) -> dict[str, Any]:
        """Status patch; on 409 re-read and re-render only the status (spec is already written)."""
        path = binding_path(kind, key, status=True)
        for attempt in range(MAX_CONFLICT_RETRIES):
            try:
                return await self.client.merge_patch(path, body)
            except ApiError as exc:
                if not exc.is_conflict or attempt == MAX_CONFLICT_RETRIES - 1:
                    raise
                reporting.conflict()
            fresh = await self.store.refresh(self.client, kind, key)
            if fresh is None:
                raise ApiError(404, "NotFound", f"{kind} {key} disappeared")
            assert result is not None  # a move's step writes no status through here
            status_only = dataclasses.replace(result, clusters=None, write_placement_annotation=False)
            rendered = render_into_binding(fresh, status_only, now=dt.datetime.now(dt.UTC))
            patches = compute_patches(fresh, rendered, explain=None)
            if patches.status is None:
                return fresh
            self.runtime.ensure_leader()
            body = {
                "metadata": {"resourceVersion": (fresh.get("metadata") or {}).get("resourceVersion")},
                **patches.status,
            }
        raise AssertionError("unreachable")

    async def write_observed_generation(self, kind: str, key: str, obj: Mapping[str, Any]) -> None:
        """§3.4 "nothing to schedule": only ``schedulerObservedGeneration`` caught up."""
        self.runtime.ensure_leader()
        path = binding_path(kind, key, status=True)
        response = await self.client.merge_patch(path, observed_generation_patch(obj))
        reporting.wrote("status", ok=True)
        self.store.store_response(kind, response)

    async def _quota_exceeded(self, kind: str, key: str, obj: Mapping[str, Any], exc: ApiError) -> None:
        """A write refused with 403 QuotaExceeded (a FederatedResourceQuota's admission): as Karmada's
        getConditionByError, ``Scheduled=False`` reason QuotaExceeded with the API's message and a
        Warning Event; the binding is retried with backoff."""
        result = ScheduleResult(key, Condition(False, QUOTA_EXCEEDED, exc.message), None, None, False)
        fresh = self.store.get(kind, key) or obj
        rendered = render_into_binding(fresh, result, now=dt.datetime.now(dt.UTC))
        patches = compute_patches(fresh, rendered, explain=None)
        self.report.quota_exceeded(kind, key, fresh, exc.message)
        if patches.status is None:
            return
        self.runtime.ensure_leader()
        version = (fresh.get("metadata") or {}).get("resourceVersion")
        response = await self._write_status(kind, key, {"metadata": {"resourceVersion": version},
                                                        **patches.status}, result)
        reporting.wrote("status", ok=True)
        self.store.store_response(kind, response)
