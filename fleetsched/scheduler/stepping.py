"""Moves within a budget (issue 27 item 5) and keeping available replicas (item 3): the arithmetic.

A reschedule that takes replicas away from clusters where they run is written in steps, as a
Deployment rolls: replicas are added on the destinations (at most ``maxSurge`` above
``spec.replicas`` in all) and removed from the sources only while the replicas counted ready stay
at or above ``replicas - maxUnavailable``. This module says what the next step is, given the
placement written now, the final target and the ready count per cluster; the operator writes it
(``controller/scheduler/moves.py``), ``fleetsched what-if`` prints the whole plan (``plan``).

Counting ready replicas: a cluster holding ``n`` replicas of which the members report ``r`` ready
counts ``min(n, r)``. Removing from a source takes its not-ready replicas first, which costs nothing
(so the part that cannot run moves at once); its ready replicas go only within the budget. Each step
first removes, then adds within the surge room the removal left, so replicas added in a step are
never counted ready in that step.

Rounding is a Deployment's: a percentage of ``spec.replicas``, ``maxSurge`` rounded up,
``maxUnavailable`` down; when both come to 0, ``maxUnavailable`` is 1 (a budget always moves).

``preserve_available``: a rescheduled binding keeps, on every cluster the new result still selects,
the replicas it has available there (``min(assigned, ready)``); what the result adds there beyond
is taken back from where the result grew. Pure: no I/O, standard library only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "BUDGET_ANNOTATIONS",
    "DEFAULT_STEP_TIMEOUT",
    "MAX_SURGE_ANNOTATION",
    "MAX_UNAVAILABLE_ANNOTATION",
    "IntOrPercent",
    "MoveBudget",
    "Placement",
    "next_step",
    "plan",
    "preserve_available",
    "ready_total",
    "takes_running",
]

Placement = Mapping[str, int]

# A binding's own budget (or a policy's, copied onto the bindings it builds): the counts as above.
MAX_UNAVAILABLE_ANNOTATION = "scheduler.fleetsched.io/max-unavailable"
MAX_SURGE_ANNOTATION = "scheduler.fleetsched.io/max-surge"
BUDGET_ANNOTATIONS = (MAX_UNAVAILABLE_ANNOTATION, MAX_SURGE_ANNOTATION)

DEFAULT_STEP_TIMEOUT = 300.0  # seconds a step waits for the added replicas to be reported ready

_PERCENT_RE = re.compile(r"(0|[1-9][0-9]{0,2})%")
_INT_RE = re.compile(r"0|[1-9][0-9]*")


@dataclass(frozen=True, slots=True)
class IntOrPercent:
    """A replica count or a percentage of ``spec.replicas`` (Kubernetes' intstr)."""

    value: int
    percent: bool = False

    @classmethod
    def parse(cls, raw: object, field: str) -> IntOrPercent:
        """``10``, ``"10"`` or ``"25%"``; ``ValueError`` naming ``field`` otherwise."""
        if isinstance(raw, bool):
            raise ValueError(f"{field}: must be a non-negative integer or a percentage such as 25%")
        if isinstance(raw, int):
            if raw < 0:
                raise ValueError(f"{field}: must not be negative, got {raw}")
            return cls(raw)
        if isinstance(raw, str):
            text = raw.strip()
            if _INT_RE.fullmatch(text):
                return cls(int(text))
            match = _PERCENT_RE.fullmatch(text)
            if match and int(match.group(1)) <= 100:
                return cls(int(match.group(1)), percent=True)
            if text.startswith("-"):
                raise ValueError(f"{field}: must not be negative, got {raw!r}")
        kinds = "a non-negative integer or a percentage from 0% to 100% such as 25%"
        raise ValueError(f"{field}: must be {kinds}, got {raw!r}")

    def resolve(self, replicas: int, *, round_up: bool) -> int:
        if not self.percent:
            return self.value
        exact = self.value * replicas / 100
        return math.ceil(exact) if round_up else math.floor(exact)

    def __str__(self) -> str:
        return f"{self.value}%" if self.percent else str(self.value)


@dataclass(frozen=True, slots=True)
class MoveBudget:
    """``maxUnavailable`` / ``maxSurge`` of replicas during a move, and how long a step waits for the
    replicas it added to be reported ready before the next step counts them ready anyway."""

    max_unavailable: IntOrPercent = IntOrPercent(0)
    max_surge: IntOrPercent = IntOrPercent(0)
    step_timeout: float = DEFAULT_STEP_TIMEOUT

    def __post_init__(self) -> None:
        if self.max_unavailable.value == 0 and self.max_surge.value == 0:
            raise ValueError("maxUnavailable, maxSurge: may not both be 0 (nothing could ever move)")
        if not self.step_timeout > 0:
            raise ValueError(f"stepTimeout: must be a positive duration, got {self.step_timeout}")

    def limits(self, replicas: int) -> tuple[int, int]:
        """(surge, unavailable) in replicas for ``spec.replicas``, rounded as a Deployment's."""
        surge = self.max_surge.resolve(replicas, round_up=True)
        unavailable = self.max_unavailable.resolve(replicas, round_up=False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, unavailable

    def describe(self) -> str:
        return f"maxUnavailable {self.max_unavailable}, maxSurge {self.max_surge}"


def ready_total(placement: Placement, ready: Placement) -> int:
    """Replicas counted ready on ``placement``: ``min(assigned, ready)`` per cluster."""
    return sum(min(n, max(ready.get(c, 0), 0)) for c, n in placement.items())


def takes_running(current: Placement, target: Placement, ready: Placement) -> bool:
    """Whether going from ``current`` to ``target`` at once takes away replicas counted ready."""
    return any(min(n, ready.get(c, 0)) > target.get(c, 0) for c, n in current.items())


def _clean(placement: Mapping[str, int]) -> dict[str, int]:
    return {c: n for c, n in sorted(placement.items()) if n > 0}


def next_step(
    current: Placement, target: Placement, ready: Placement, *, replicas: int, surge: int, unavailable: int
) -> dict[str, int]:
    """The placement to write next on the way from ``current`` to ``target``: every cluster moves
    toward its target, never past it; the replicas counted ready (``ready`` per cluster) end at or
    above ``min(replicas - unavailable, ready now)``; the total is at most
    ``max(total now, replicas + surge)``. Clusters in name order. Equal to ``target`` at the end."""
    step = {c: n for c, n in current.items() if n > 0}
    floor = replicas - unavailable
    allowance = max(0, ready_total(step, ready) - floor)
    for cluster in sorted(step):
        excess = step[cluster] - target.get(cluster, 0)
        if excess <= 0:
            continue
        not_ready = max(0, step[cluster] - max(ready.get(cluster, 0), 0))
        free = min(excess, not_ready)  # not counted ready: costs nothing
        costly = min(excess - free, allowance)
        allowance -= costly
        step[cluster] -= free + costly
    room = replicas + surge - sum(step.values())
    for cluster in sorted(target):
        short = target[cluster] - step.get(cluster, 0)
        if short <= 0 or room <= 0:
            continue
        added = min(short, room)
        step[cluster] = step.get(cluster, 0) + added
        room -= added
    return _clean(step)


def plan(current: Placement, target: Placement, *, replicas: int, budget: MoveBudget,
         limit: int = 10_000) -> list[dict[str, int]]:
    """Every step from ``current`` to ``target`` when all replicas placed are ready before each step
    (what ``fleetsched what-if`` prints); the last is ``target``. Empty when nothing moves."""
    surge, unavailable = budget.limits(replicas)
    steps: list[dict[str, int]] = []
    now, goal = _clean(current), _clean(target)
    while now != goal:
        if len(steps) >= limit:
            raise RuntimeError(f"no end after {limit} steps from {now} to {goal}")
        step = next_step(now, goal, now, replicas=replicas, surge=surge, unavailable=unavailable)
        if step == now:  # cannot happen with a valid budget; a guard against a loop
            raise RuntimeError(f"no progress from {now} to {goal}")
        steps.append(step)
        now = step
    return steps


def preserve_available(previous: Placement, result: Placement, ready: Placement) -> dict[str, int]:
    """``result`` changed so that every cluster it selects keeps at least the replicas available
    there now (``min(previous, ready)``), the total unchanged; the replicas this adds are taken back
    from the clusters where the result grew beyond ``previous`` (most growth first, then name), then
    from any cluster above what it keeps. ``result`` itself when the kept replicas exceed its total
    (a scale-down takes from where the result says)."""
    kept = {c: min(previous.get(c, 0), max(ready.get(c, 0), 0)) for c in result}
    total = sum(result.values())
    if sum(kept.values()) > total:
        return _clean(result)
    out = {c: max(n, kept[c]) for c, n in result.items()}
    extra = sum(out.values()) - total

    def order(cluster: str) -> tuple[int, str]:
        return (-(out[cluster] - previous.get(cluster, 0)), cluster)

    for floor_of in (lambda c: max(kept[c], previous.get(c, 0)), lambda c: kept[c]):
        for cluster in sorted(out, key=order):
            if extra <= 0:
                break
            take = min(extra, max(0, out[cluster] - floor_of(cluster)))
            out[cluster] -= take
            extra -= take
    return _clean(out)
