"""The stepping arithmetic of moves within a budget (issue 27 item 5) and of keeping available
replicas (item 3): examples, refusals, and properties over generated placements."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.scheduler.stepping import (
    IntOrPercent,
    MoveBudget,
    next_step,
    plan,
    preserve_available,
    ready_total,
    takes_running,
)

# ---- parsing and rounding ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(10, IntOrPercent(10)), ("10", IntOrPercent(10)), ("25%", IntOrPercent(25, True)),
     ("0%", IntOrPercent(0, True)), ("100%", IntOrPercent(100, True)), (0, IntOrPercent(0))],
)
def test_parse(raw: object, expected: IntOrPercent) -> None:
    assert IntOrPercent.parse(raw, "maxSurge") == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (-1, "maxSurge: must not be negative, got -1"),
        ("-1", "maxSurge: must not be negative, got '-1'"),
        ("101%", "maxSurge: must be a non-negative integer or a percentage from 0% to 100% such as 25%, "
                 "got '101%'"),
        ("ten", "maxSurge: must be a non-negative integer or a percentage from 0% to 100% such as 25%, "
                "got 'ten'"),
        (1.5, "maxSurge: must be a non-negative integer or a percentage from 0% to 100% such as 25%, "
              "got 1.5"),
        (True, "maxSurge: must be a non-negative integer or a percentage such as 25%"),
    ],
)
def test_parse_refuses(raw: object, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        IntOrPercent.parse(raw, "maxSurge")
    assert str(exc.value) == message


def test_rounding_is_a_deployments() -> None:
    budget = MoveBudget(max_unavailable=IntOrPercent(25, True), max_surge=IntOrPercent(25, True))
    assert budget.limits(10) == (3, 2)  # surge: ceil(2.5); unavailable: floor(2.5)
    assert budget.limits(100) == (25, 25)
    # both rounding to 0: one replica may be unavailable, so a move always progresses
    small = MoveBudget(max_unavailable=IntOrPercent(10, True), max_surge=IntOrPercent(0))
    assert small.limits(5) == (0, 1)


def test_both_zero_refused() -> None:
    with pytest.raises(ValueError, match="maxUnavailable, maxSurge: may not both be 0"):
        MoveBudget()


# ---- steps ---------------------------------------------------------------------------------------


def test_forty_of_a_hundred_in_steps_of_ten() -> None:
    budget = MoveBudget(max_unavailable=IntOrPercent(10))
    current, target = {"a": 40, "b": 60}, {"b": 70, "c": 30}
    steps = plan(current, target, replicas=100, budget=budget)
    assert steps == [
        {"a": 30, "b": 70},
        {"a": 20, "b": 70, "c": 10},
        {"a": 10, "b": 70, "c": 20},
        {"b": 70, "c": 30},
    ]
    for before, after in zip([current, *steps], steps, strict=False):
        assert ready_total(after, before) >= 90


def test_surge_first_then_remove() -> None:
    budget = MoveBudget(max_surge=IntOrPercent(20))
    steps = plan({"a": 40, "b": 60}, {"b": 60, "c": 40}, replicas=100, budget=budget)
    assert steps == [{"a": 40, "b": 60, "c": 20}, {"a": 20, "b": 60, "c": 40}, {"b": 60, "c": 40}]


def test_removal_waits_for_ready_and_not_ready_moves_at_once() -> None:
    # step 1 written: a lost 10, c got 10; c not ready yet, so nothing more may go from a
    step = next_step({"a": 30, "b": 60, "c": 10}, {"b": 60, "c": 40}, {"a": 30, "b": 60},
                     replicas=100, surge=0, unavailable=10)
    assert step == {"a": 30, "b": 60, "c": 10}
    # a's replicas are pending there (5 of 30 ready): the 25 that cannot run move at once
    step = next_step({"a": 30, "b": 60, "c": 10}, {"b": 60, "c": 40}, {"a": 5, "b": 60, "c": 10},
                     replicas=100, surge=0, unavailable=10)
    assert step == {"a": 5, "b": 60, "c": 35}


def test_takes_running() -> None:
    assert takes_running({"a": 40, "b": 60}, {"b": 100}, {"a": 40, "b": 60})
    assert not takes_running({"a": 40, "b": 60}, {"b": 100}, {"b": 60})  # a's replicas do not run
    assert not takes_running({"a": 40}, {"a": 40, "b": 10}, {"a": 40})


# ---- keeping available replicas ------------------------------------------------------------------


def test_preserve_keeps_ready_and_scales_up_the_remainder() -> None:
    # a had 10 of which 7 run; a recomputation from scratch would give a 5, b 5
    assert preserve_available({"a": 10}, {"a": 5, "b": 5}, {"a": 7}) == {"a": 7, "b": 3}
    # a new cluster joining a static weighting takes nothing from running replicas
    running = {"a": 5, "b": 5}
    assert preserve_available(running, {"a": 4, "b": 3, "c": 3}, running) == running
    # a cluster the result no longer selects is not kept (the move the budget paces)
    moved = {"b": 70, "c": 30}
    assert preserve_available({"a": 40, "b": 60}, moved, {"a": 40, "b": 60}) == moved
    # a scale-down below what runs: the result as it is
    assert preserve_available({"a": 5, "b": 5}, {"a": 2, "b": 2}, {"a": 5, "b": 5}) == {"a": 2, "b": 2}


# ---- properties ----------------------------------------------------------------------------------

NAMES = ["m1", "m2", "m3", "m4", "m5"]


@st.composite
def _case(draw: st.DrawFn) -> tuple[dict[str, int], dict[str, int], dict[str, int], int, int, int]:
    replicas = draw(st.integers(1, 200))

    def placement(total: int) -> dict[str, int]:
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=5, unique=True))
        cuts = sorted(draw(st.lists(st.integers(0, total), min_size=len(names) - 1, max_size=len(names) - 1)))
        parts = [b - a for a, b in zip([0, *cuts], [*cuts, total], strict=True)]
        return {n: p for n, p in zip(names, parts, strict=True) if p > 0}

    current = placement(draw(st.integers(0, replicas + 20)))
    target = placement(replicas)
    ready = {c: draw(st.integers(0, n + 2)) for c, n in current.items()}
    surge = draw(st.integers(0, 30))
    unavailable = draw(st.integers(0 if surge else 1, replicas))
    return current, target, ready, replicas, surge, unavailable


@settings(max_examples=400, deadline=None)
@given(_case())
def test_no_step_leaves_fewer_than_the_floor_ready(case: tuple) -> None:  # type: ignore[type-arg]
    current, target, ready, replicas, surge, unavailable = case
    step = next_step(current, target, ready, replicas=replicas, surge=surge, unavailable=unavailable)
    before, after = ready_total(current, ready), ready_total(step, ready)
    assert after >= min(replicas - unavailable, before)
    assert sum(step.values()) <= max(sum(current.values()), replicas + surge)
    for cluster in set(step) | set(current) | set(target):
        now, then, goal = current.get(cluster, 0), step.get(cluster, 0), target.get(cluster, 0)
        assert min(now, goal) <= then <= max(now, goal)  # toward the target, never past it


@settings(max_examples=300, deadline=None)
@given(_case(), st.data())
def test_steps_end_at_the_target_and_keep_the_floor(case: tuple, data: st.DataObject) -> None:  # type: ignore[type-arg]
    current, target, _ready, replicas, surge, unavailable = case
    floor = replicas - unavailable
    now, ready = dict(current), dict(current)  # everything runs at the start
    least = min(floor, ready_total(now, ready))
    for round_ in range(4 * (replicas + 60)):
        if now == target:
            break
        now = next_step(now, target, ready, replicas=replicas, surge=surge, unavailable=unavailable)
        assert ready_total(now, ready) >= least
        if round_ % 3 == 2:  # a step timeout: what was added counts as ready
            ready = dict(now)
        else:  # the members catch up with some of what each cluster holds, never past it
            ready = {c: data.draw(st.integers(min(ready.get(c, 0), n), n)) for c, n in now.items()}
    assert now == target


@settings(max_examples=300, deadline=None)
@given(_case())
def test_plan_ends_at_the_target_and_every_step_keeps_the_floor(case: tuple) -> None:  # type: ignore[type-arg]
    current, target, _ready, replicas, surge, unavailable = case
    budget = MoveBudget(max_unavailable=IntOrPercent(unavailable), max_surge=IntOrPercent(surge))
    steps = plan(current, target, replicas=replicas, budget=budget)
    assert (steps[-1] if steps else {c: n for c, n in current.items() if n}) == target
    before = dict(current)
    for step in steps:
        assert ready_total(step, before) >= min(replicas - unavailable, sum(before.values()))
        before = step


@settings(max_examples=300, deadline=None)
@given(_case())
def test_preserve_keeps_the_total_and_what_runs(case: tuple) -> None:  # type: ignore[type-arg]
    previous, result, ready, *_ = case
    out = preserve_available(previous, result, ready)
    assert sum(out.values()) == sum(result.values())
    kept = {c: min(previous.get(c, 0), ready.get(c, 0)) for c in result}
    if sum(kept.values()) <= sum(result.values()):
        assert all(out.get(c, 0) >= k for c, k in kept.items())
        assert set(out) <= set(result)
