"""Moves within a budget on the live binding (issue 27 items 3 and 5): what the operator writes
instead of the core's placement when a budget applies, and where the pending target is kept.

Off unless a budget applies to the binding: ``moveBudget`` in the SchedulerConfiguration, or the
binding's own annotations ``scheduler.fleetsched.io/max-unavailable`` / ``.../max-surge`` (a count or
a percentage of ``spec.replicas``; a PropagationPolicy's are copied onto the bindings it builds; on
the binding they replace the file's counts, the other one then 0; both "0" is refused). Without one
the core's placement is written as it is: Karmada's writes and results.

With a budget, for a Divided binding (the targets add up to ``spec.replicas``):

* **keeping available replicas** (item 3) applies when the binding already has a placement and the
  attempt is not a fresh reschedule asked for by ``rescheduleTriggeredAt`` (a WorkloadRebalancer
  sets it): every cluster the new result still selects keeps the replicas its members report ready
  there (``min(assigned, readyReplicas)``, from ``status.aggregatedStatus``), and only the
  remainder goes where the result says (``stepping.preserve_available``). A cluster the result no
  longer selects (filtered out: placement, taints, eviction) loses its replicas; that is a move;
* **the move in steps** (item 5): when the target would take away replicas counted ready, the
  operator writes ``stepping.next_step`` instead and keeps the final target in the annotation
  ``scheduler.fleetsched.io/move-target`` (JSON: the clusters and when the last step was written),
  so a restarted scheduler, or the replica that owns the binding next, continues the move. The
  binding is looked at again every ``POLL_SECONDS`` while a target is pending; a step is written
  when the members' ready counts allow it, or once ``stepTimeout`` has passed since the last step
  (the replicas added on the destinations then count as ready). Every step is an Event
  ``ScheduleBindingStep`` on the binding. A new decision of the core (placement or replicas changed
  by the user, a reschedule) replaces the pending target.

Pure functions over the binding's JSON, plus ``Polls`` (the timers that look again).
"""

from __future__ import annotations

import asyncio
import copy
import datetime as dt
import json
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fleetsched.scheduler import stepping
from fleetsched.scheduler.stepping import (
    MAX_SURGE_ANNOTATION,
    MAX_UNAVAILABLE_ANNOTATION,
    IntOrPercent,
    MoveBudget,
)

TARGET_ANNOTATION = "scheduler.fleetsched.io/move-target"
REASON_STEP = "ScheduleBindingStep"
POLL_SECONDS = 1.0

Obj = Mapping[str, Any]


class BudgetError(ValueError):
    """A budget annotation that cannot be read (one line naming the annotation)."""


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _annotations(obj: Obj) -> Mapping[str, Any]:
    return _meta(obj).get("annotations") or {}


def budget_of(obj: Obj, configured: MoveBudget | None) -> MoveBudget | None:
    """The budget of this binding: its annotations', else the configuration's, else None."""
    annotations = _annotations(obj)
    if MAX_UNAVAILABLE_ANNOTATION not in annotations and MAX_SURGE_ANNOTATION not in annotations:
        return configured
    counts: dict[str, IntOrPercent] = {}
    names = (("max_unavailable", MAX_UNAVAILABLE_ANNOTATION), ("max_surge", MAX_SURGE_ANNOTATION))
    for attribute, name in names:
        if name in annotations:
            try:
                counts[attribute] = IntOrPercent.parse(annotations[name], name)
            except ValueError as exc:
                raise BudgetError(f"annotation {exc}") from None
    timeout = configured.step_timeout if configured is not None else stepping.DEFAULT_STEP_TIMEOUT
    try:
        return MoveBudget(**counts, step_timeout=timeout)
    except ValueError:
        raise BudgetError(
            f"annotations {MAX_UNAVAILABLE_ANNOTATION}, {MAX_SURGE_ANNOTATION}: may not both be 0 "
            "(nothing could ever move)"
        ) from None


def placement_of(clusters: Any) -> dict[str, int]:
    """``spec.clusters`` as a map (clusters without replicas left out)."""
    out: dict[str, int] = {}
    for target in clusters or ():
        if isinstance(target, Mapping) and target.get("name"):
            replicas = int(target.get("replicas") or 0)
            if replicas > 0:
                out[str(target["name"])] = out.get(str(target["name"]), 0) + replicas
    return out


def ready_counts(obj: Obj) -> dict[str, int]:
    """``readyReplicas`` per cluster as the members report it in ``status.aggregatedStatus``."""
    out: dict[str, int] = {}
    for item in (obj.get("status") or {}).get("aggregatedStatus") or ():
        if not isinstance(item, Mapping) or not item.get("clusterName"):
            continue
        status = item.get("status")
        ready = status.get("readyReplicas") if isinstance(status, Mapping) else None
        if isinstance(ready, int) and not isinstance(ready, bool) and ready > 0:
            out[str(item["clusterName"])] = ready
    return out


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _targets(placement: Mapping[str, int]) -> list[dict[str, Any]]:
    return [{"name": c, "replicas": n} for c, n in sorted(placement.items()) if n > 0]


def _text(placement: Mapping[str, int]) -> str:
    return ",".join(f"{c}:{n}" for c, n in sorted(placement.items())) or "<none>"


def _stamp(now: dt.datetime) -> str:
    return now.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class Pending:
    """The final target kept on the binding, and when the last step was written."""

    target: dict[str, int]
    since: dt.datetime

    def encode(self) -> str:
        return json.dumps({"clusters": _targets(self.target), "since": _stamp(self.since)},
                          separators=(",", ":"))


def pending_of(obj: Obj) -> Pending | None:
    """The pending target annotation, or None (absent or unreadable: an unreadable one is dropped
    at the next write, as no target)."""
    raw = _annotations(obj).get(TARGET_ANNOTATION)
    if not isinstance(raw, str):
        return None
    try:
        value = json.loads(raw)
        since = dt.datetime.strptime(value["since"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
        return Pending(placement_of(value["clusters"]), since)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


@dataclass(frozen=True, slots=True)
class Step:
    """What to write: the binding as it should be (spec.clusters, the target annotation), and the
    Event message of the step (None: no step, e.g. the whole placement is written)."""

    rendered: Mapping[str, Any]
    message: str | None
    pending: bool


def _with(rendered: Mapping[str, Any], clusters: Mapping[str, int] | None, pending: Pending | None,
          *, had_target: bool) -> dict[str, Any]:
    out = copy.deepcopy(dict(rendered))
    if clusters is not None:
        out.setdefault("spec", {})["clusters"] = _targets(clusters) or None
    annotations = out.setdefault("metadata", {}).setdefault("annotations", {})
    if pending is not None:
        annotations[TARGET_ANNOTATION] = pending.encode()
    elif had_target:
        annotations[TARGET_ANNOTATION] = None  # removed by the merge patch
    else:
        annotations.pop(TARGET_ANNOTATION, None)
    return out


def _message(step: Mapping[str, int], target: Mapping[str, int], ready: Mapping[str, int],
             replicas: int, budget: MoveBudget, *, timed_out: bool) -> str:
    surge, unavailable = budget.limits(replicas)
    done = step == target
    head = "last step" if done else "step"
    why = "; step timeout passed, added replicas counted ready" if timed_out else ""
    counted = stepping.ready_total(step, ready)
    return (
        f"{head}: spec.clusters {_text(step)} toward {_text(target)} (ready {counted}"
        f"/{replicas}, at least {replicas - unavailable} kept ready, at most {replicas + surge} placed; "
        f"{budget.describe()}{why})"
    )


def pace(obj: Obj, rendered: Mapping[str, Any], budget: MoveBudget | None, now: dt.datetime,
         *, fresh: bool) -> Step:
    """The core's rendering of ``obj`` as it is to be written under ``budget``: unchanged without a
    budget (a stale target annotation removed), else with available replicas kept (unless
    ``fresh``) and the first step of the move instead of the whole placement."""
    had_target = TARGET_ANNOTATION in _annotations(obj)
    if budget is None:
        if not had_target:
            return Step(rendered, None, False)  # the common case: the core's rendering, not copied
        return Step(_with(rendered, None, None, had_target=True), None, False)
    current = placement_of((obj.get("spec") or {}).get("clusters"))
    new_clusters = (rendered.get("spec") or {}).get("clusters")
    target = placement_of(new_clusters)
    replicas = _replicas(obj)
    if new_clusters is None or not current or sum(target.values()) != replicas:
        # unscheduled, first placement, or not Divided: nothing moves from running replicas
        return Step(_with(rendered, None, None, had_target=had_target), None, False)
    ready = ready_counts(obj)
    if not fresh:
        target = stepping.preserve_available(current, target, ready)
    if not stepping.takes_running(current, target, ready):
        return Step(_with(rendered, target, None, had_target=had_target), None, False)
    return _step(rendered, current, target, ready, replicas, budget, now, timed_out=False,
                 had_target=had_target, resuming=False)


def _step(rendered: Mapping[str, Any], current: Mapping[str, int], target: dict[str, int],
          ready: Mapping[str, int], replicas: int, budget: MoveBudget, now: dt.datetime, *,
          timed_out: bool, had_target: bool, resuming: bool) -> Step:
    surge, unavailable = budget.limits(replicas)
    step = stepping.next_step(current, target, ready, replicas=replicas, surge=surge, unavailable=unavailable)
    if step == dict(current):  # the ready counts allow no step yet
        if resuming:
            return Step(dict(rendered), None, True)  # nothing to write: the target stays as kept
        return Step(_with(rendered, current, Pending(target, now), had_target=had_target), None, True)
    done = step == target
    pending = None if done else Pending(target, now)
    message = _message(step, target, ready, replicas, budget, timed_out=timed_out)
    return Step(_with(rendered, step, pending, had_target=had_target), message, not done)


def resumes(obj: Obj, *, nothing_else: bool, replicas_reason: bool) -> bool:
    """Whether the pending target of ``obj`` goes on without the core: a target is pending for the
    binding's ``spec.replicas``, and the only decision is "nothing to schedule" (``nothing_else``)
    or "replicas changed" caused by the step written (``replicas_reason``: the targets written do
    not add up to ``spec.replicas`` in the middle of a move)."""
    pending = pending_of(obj)
    if pending is None or sum(pending.target.values()) != _replicas(obj):
        return False
    if _meta(obj).get("deletionTimestamp"):
        return False
    return nothing_else or replicas_reason


def resume(obj: Obj, budget: MoveBudget | None, now: dt.datetime) -> Step:
    """The next step toward the pending target of ``obj`` (``resumes`` held): written when the ready
    counts allow it, or with the added replicas counted ready once the step timeout has passed;
    the target annotation dropped when there is no budget any more (the target is written whole)."""
    pending = pending_of(obj)
    assert pending is not None
    current = placement_of((obj.get("spec") or {}).get("clusters"))
    if budget is None:
        return Step(_with(obj, pending.target, None, had_target=True), None, False)
    ready = ready_counts(obj)
    timed_out = (now - pending.since).total_seconds() >= budget.step_timeout
    if timed_out:
        ready = {**ready, **{c: n for c, n in current.items() if pending.target.get(c, 0) >= n}}
    return _step(obj, current, pending.target, ready, _replicas(obj), budget, now, timed_out=timed_out,
                 had_target=True, resuming=True)


@dataclass
class Polls:
    """One timer per binding with a pending target: it queues the binding again in ``POLL_SECONDS``."""

    seconds: float = POLL_SECONDS
    timers: dict[Hashable, asyncio.TimerHandle] = field(default_factory=dict)

    def again(self, key: Hashable, push: Callable[[], None]) -> None:
        old = self.timers.pop(key, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            self.timers.pop(key, None)
            push()

        self.timers[key] = asyncio.get_running_loop().call_later(self.seconds, fire)

    def forget(self, key: Hashable) -> None:
        timer = self.timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def close(self) -> None:
        for timer in self.timers.values():
            timer.cancel()
        self.timers.clear()


def after_core(obj: Obj, rendered: Mapping[str, Any], configured: MoveBudget | None, *, fresh: bool,
               now: dt.datetime) -> tuple[Step, str | None]:
    """``pace`` with the binding's budget; a budget annotation that cannot be read gives the
    configured budget instead, and its one-line error (a Warning Event on the binding)."""
    try:
        budget, warning = budget_of(obj, configured), None
    except BudgetError as exc:
        budget, warning = configured, str(exc)
    return pace(obj, rendered, budget, now, fresh=fresh), warning


def going_on(obj: Obj, configured: MoveBudget | None, now: dt.datetime) -> tuple[Step, str | None]:
    """``resume`` with the binding's budget (as ``after_core``)."""
    try:
        budget, warning = budget_of(obj, configured), None
    except BudgetError as exc:
        budget, warning = configured, str(exc)
    return resume(obj, budget, now), warning
