"""Ordered clusterAffinities (scheduling groups) and the single-affinity path (Karmada's
``scheduleResourceBindingWithClusterAffinities`` and ``scheduleResourceBindingWithClusterAffinity``).

Owns where the affinity-group loop starts, when it moves on, which error is reported, what happens
to ``spec.clusters`` and ``schedulerObservingAffinityName`` on success and failure, and the
condition mapping. Overflow tiers inside a term are handled by ``assign.py``. Pure.

Checkpoints (a cooperative budget, ``framework/checkpoint.py``, re-exported here): ``checkpoint()``
runs before each affinity term is tried.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Protocol

from fleetsched.scheduler.errors import FitError, SchedulingError
from fleetsched.scheduler.framework.checkpoint import checkpoint, checkpointing
from fleetsched.scheduler.framework.runtime import Framework
from fleetsched.scheduler.outcome import (
    SUCCESS_MESSAGE,
    AttemptFailed,
    AttemptOutput,
    Condition,
    GroupAttempt,
    ScheduleResult,
)
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import BindingStatus, SchedulingBinding, TargetCluster

__all__ = [
    "TermScheduler",
    "checkpoint",
    "checkpointing",
    "condition_for",
    "reschedule_required",
    "schedule_binding",
    "start_index",
]


class TermScheduler(Protocol):
    """What the group loop needs of the scheduler (``pipeline.Scheduler``): the algorithm for one
    affinity term, the binding's replica strategy, and the framework (for the profile's name)."""

    @property
    def framework(self) -> Framework: ...

    def strategy(self, binding: SchedulingBinding) -> str: ...

    def run_algorithm(
        self, binding: SchedulingBinding, status: BindingStatus, snapshot: Snapshot, observed_name: str
    ) -> AttemptOutput:
        """Raises ``AttemptFailed`` with the explanation when the term does not schedule."""
        ...


def reschedule_required(triggered_at: dt.datetime | None, last_scheduled: dt.datetime | None) -> bool:
    """An explicit reschedule newer than the last schedule (Karmada's ``helper.RescheduleRequired``):
    the group loop starts over from the first term."""
    return triggered_at is not None and last_scheduled is not None and triggered_at > last_scheduled


def condition_for(error: SchedulingError | None) -> Condition:
    """§3.5: Success, or the reason of the error's kind with its full text."""
    if error is None:
        return Condition(True, "Success", SUCCESS_MESSAGE)
    return Condition(False, error.reason, str(error))


def start_index(binding: SchedulingBinding, status: BindingStatus) -> int:
    """The observed term, or 0 when unknown or when an explicit reschedule is pending (§3.7)."""
    terms = binding.placement.cluster_affinities if binding.placement is not None else None
    if not terms:
        return 0
    if reschedule_required(binding.reschedule_triggered_at, status.last_scheduled_time):
        return 0
    name = status.scheduler_observing_affinity_name
    if name:
        for i, term in enumerate(terms):
            if term.name == name:
                return i
    return 0


def schedule_binding(
    scheduler: TermScheduler, binding: SchedulingBinding, status: BindingStatus, snapshot: Snapshot
) -> ScheduleResult:
    mode = (
        "Fresh"
        if reschedule_required(binding.reschedule_triggered_at, status.last_scheduled_time)
        else "Steady"
    )
    strategy = scheduler.strategy(binding)
    profile = scheduler.framework.profile_name
    if binding.placement is None:
        # Karmada returns an error before any attempt (§3.3): no condition, nothing written.
        return ScheduleResult(binding.key, None, None, None, False, mode, strategy, (), profile)
    terms = binding.placement.cluster_affinities
    attempts: list[GroupAttempt] = []

    def scheduled(targets: Sequence[TargetCluster], affinity_name: str | None) -> ScheduleResult:
        return ScheduleResult(
            binding.key, condition_for(None), tuple(targets), affinity_name, True, mode, strategy,
            tuple(attempts), profile,
        )

    def failed(error: SchedulingError) -> ScheduleResult:
        # §3.6: a FitError clears spec.clusters (an empty result is written); any other error writes
        # only the condition.
        cleared = isinstance(error, FitError)
        return ScheduleResult(
            binding.key, condition_for(error), () if cleared else None, None, cleared, mode, strategy,
            tuple(attempts), profile,
        )

    if terms is None:
        # §3.6 single-affinity path.
        checkpoint()
        try:
            out = scheduler.run_algorithm(binding, status, snapshot, status.scheduler_observing_affinity_name)
        except AttemptFailed as attempt_failed:
            attempts.append(attempt_failed.attempt)
            return failed(attempt_failed.error)
        attempts.append(out.attempt)
        return scheduled(out.targets, None)

    # §3.7 ordered scheduling groups.
    first_error: SchedulingError | None = None
    for i in range(start_index(binding, status), len(terms)):
        name = terms[i].name
        term_status = BindingStatus(name, status.last_scheduled_time)
        checkpoint()
        try:
            out = scheduler.run_algorithm(binding, term_status, snapshot, name)
        except AttemptFailed as attempt_failed:
            attempts.append(attempt_failed.attempt)
            first_error = first_error or attempt_failed.error
            continue
        attempts.append(out.attempt)
        return scheduled(out.targets, name)
    if first_error is None:
        # An empty (non-nil) clusterAffinities list: Karmada reports success and writes nothing.
        return ScheduleResult(
            binding.key, condition_for(None), None, None, False, mode, strategy, (), profile
        )
    return failed(first_error)
