"""What the queue does with a binding after an attempt, from the attempt's result (spec §3.5)."""

from __future__ import annotations

import pytest

from fleetsched.controller.runtime.queue import Outcome
from fleetsched.controller.scheduler.schedule_one import queue_outcome
from fleetsched.scheduler.outcome import Condition, GroupAttempt, ScheduleResult

TRIED = (GroupAttempt("", error="boom"),)


def a_result(ok: bool, reason: str, attempts: tuple[GroupAttempt, ...] = TRIED) -> ScheduleResult:
    return ScheduleResult("ns/b", Condition(ok, reason, "m"), None, None, False, attempts=attempts)


@pytest.mark.parametrize(
    ("result", "over_budget", "expected"),
    [
        pytest.param(a_result(True, "Success"), False, Outcome.DONE, id="scheduled"),
        pytest.param(a_result(False, "NoClusterFit"), False, Outcome.DONE, id="a FitError is not retried"),
        pytest.param(a_result(False, "Unschedulable"), False, Outcome.UNSCHEDULABLE, id="unschedulable"),
        pytest.param(a_result(False, "SchedulerError"), False, Outcome.ERROR, id="error: backoff"),
        pytest.param(a_result(False, "SchedulerError", ()), False, Outcome.DONE, id="unreadable: wait"),
        pytest.param(a_result(False, "SchedulerError", ()), True, Outcome.ERROR, id="over budget: backoff"),
    ],
)
def test_queue_outcome(result: ScheduleResult, over_budget: bool, expected: Outcome) -> None:
    assert queue_outcome(result, over_budget=over_budget) is expected
