"""The operator's side of moves within a budget (controller/scheduler/moves.py): which budget a
binding has, what is written instead of the core's placement, and how a pending move goes on."""

from __future__ import annotations

import copy
import datetime as dt
import json
from typing import Any

import pytest

from fleetsched.controller.scheduler import moves
from fleetsched.scheduler.stepping import IntOrPercent, MoveBudget

NOW = dt.datetime(2026, 12, 5, 12, 0, tzinfo=dt.UTC)
TEN = MoveBudget(max_unavailable=IntOrPercent(10))


def binding(clusters: dict[str, int], ready: dict[str, int] | None = None, *, replicas: int = 100,
            annotations: dict[str, str] | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": "web", "namespace": "ns", "annotations": dict(annotations or {})},
        "spec": {"replicas": replicas, "clusters": [{"name": c, "replicas": n} for c, n in clusters.items()]},
        "status": {},
    }
    if ready is not None:
        obj["status"]["aggregatedStatus"] = [
            {"clusterName": c, "status": {"readyReplicas": n}} for c, n in ready.items()
        ]
    return obj


def rendered(obj: dict[str, Any], clusters: dict[str, int]) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    out["spec"]["clusters"] = [{"name": c, "replicas": n} for c, n in clusters.items()]
    return out


def written(step: moves.Step) -> dict[str, int]:
    return moves.placement_of(step.rendered["spec"]["clusters"])


def target_of(step: moves.Step) -> dict[str, int] | None:
    raw = step.rendered["metadata"]["annotations"].get(moves.TARGET_ANNOTATION)
    return None if raw is None else {c["name"]: c["replicas"] for c in json.loads(raw)["clusters"]}


def test_budget_from_the_annotations_over_the_file() -> None:
    assert moves.budget_of(binding({}), None) is None
    assert moves.budget_of(binding({}), TEN) == TEN
    own = binding({}, annotations={moves.MAX_SURGE_ANNOTATION: "25%"})
    assert moves.budget_of(own, TEN) == MoveBudget(max_surge=IntOrPercent(25, True))


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        ({moves.MAX_UNAVAILABLE_ANNOTATION: "lots"},
         "annotation scheduler.fleetsched.io/max-unavailable: must be a non-negative integer or a "
         "percentage from 0% to 100% such as 25%, got 'lots'"),
        ({moves.MAX_UNAVAILABLE_ANNOTATION: "0", moves.MAX_SURGE_ANNOTATION: "0%"},
         "annotations scheduler.fleetsched.io/max-unavailable, scheduler.fleetsched.io/max-surge: may not "
         "both be 0 (nothing could ever move)"),
    ],
)
def test_a_bad_annotation_is_one_line_naming_it(annotations: dict[str, str], message: str) -> None:
    with pytest.raises(moves.BudgetError) as exc:
        moves.budget_of(binding({}, annotations=annotations), None)
    assert str(exc.value) == message
    bad = binding({}, annotations=annotations)
    _, warning = moves.after_core(bad, binding({}), TEN, fresh=False, now=NOW)
    assert warning == message  # the file's budget applies meanwhile


def test_without_a_budget_the_cores_placement_is_written() -> None:
    obj = binding({"a": 40, "b": 60}, {"a": 40, "b": 60})
    step = moves.pace(obj, rendered(obj, {"b": 70, "c": 30}), None, NOW, fresh=False)
    assert written(step) == {"b": 70, "c": 30} and step.message is None and not step.pending
    assert moves.TARGET_ANNOTATION not in step.rendered["metadata"]["annotations"]


def test_a_move_of_running_replicas_starts_with_a_step_and_keeps_the_target() -> None:
    obj = binding({"a": 40, "b": 60}, {"a": 40, "b": 60})
    step = moves.pace(obj, rendered(obj, {"b": 70, "c": 30}), TEN, NOW, fresh=False)
    assert written(step) == {"a": 30, "b": 70}
    assert target_of(step) == {"b": 70, "c": 30} and step.pending
    assert step.message is not None
    assert step.message.startswith("step: spec.clusters a:30,b:70 toward b:70,c:30 (ready 90/100")


def test_replicas_that_do_not_run_move_at_once() -> None:
    obj = binding({"a": 40, "b": 60}, {"b": 60})  # nothing runs on a
    step = moves.pace(obj, rendered(obj, {"b": 70, "c": 30}), TEN, NOW, fresh=False)
    assert written(step) == {"b": 70, "c": 30} and not step.pending and target_of(step) is None


def test_available_replicas_are_kept_unless_fresh() -> None:
    obj = binding({"a": 10}, {"a": 7}, replicas=10)
    kept = moves.pace(obj, rendered(obj, {"a": 5, "b": 5}), TEN, NOW, fresh=False)
    assert written(kept) == {"a": 7, "b": 3} and not kept.pending
    fresh = moves.pace(obj, rendered(obj, {"a": 5, "b": 5}), MoveBudget(max_unavailable=IntOrPercent(1)),
                       NOW, fresh=True)
    # fresh: the 3 that do not run move at once, a's running ones only within the budget later
    assert written(fresh) == {"a": 7, "b": 3} and target_of(fresh) == {"a": 5, "b": 5}


def test_the_move_goes_on_from_the_kept_target_when_ready() -> None:
    start = binding({"a": 40, "b": 60}, {"a": 40, "b": 60})
    first = moves.pace(start, rendered(start, {"b": 70, "c": 30}), TEN, NOW, fresh=False).rendered
    assert moves.resumes(first, nothing_else=False, replicas_reason=True)
    # the replicas added are not ready: nothing to write
    first["status"]["aggregatedStatus"] = [{"clusterName": "a", "status": {"readyReplicas": 30}},
                                           {"clusterName": "b", "status": {"readyReplicas": 60}}]
    waiting = moves.resume(first, TEN, NOW + dt.timedelta(seconds=5))
    assert waiting.rendered == first and waiting.pending and waiting.message is None
    # ready: the next step
    first["status"]["aggregatedStatus"][1]["status"]["readyReplicas"] = 70
    second = moves.resume(first, TEN, NOW + dt.timedelta(seconds=6))
    assert written(second) == {"a": 20, "b": 70, "c": 10} and second.pending


def test_after_the_step_timeout_the_added_replicas_count_as_ready() -> None:
    start = binding({"a": 40, "b": 60}, {"a": 40, "b": 60})
    first = moves.pace(start, rendered(start, {"b": 70, "c": 30}), TEN, NOW, fresh=False).rendered
    first["status"]["aggregatedStatus"] = [{"clusterName": "a", "status": {"readyReplicas": 30}},
                                           {"clusterName": "b", "status": {"readyReplicas": 60}}]
    late = moves.resume(first, TEN, NOW + dt.timedelta(seconds=TEN.step_timeout))
    assert written(late) == {"a": 20, "b": 70, "c": 10}
    assert late.message is not None and "step timeout passed" in late.message


def test_no_target_goes_on_for_other_replicas_or_a_deleted_binding() -> None:
    start = binding({"a": 40, "b": 60}, {"a": 40, "b": 60})
    first = moves.pace(start, rendered(start, {"b": 70, "c": 30}), TEN, NOW, fresh=False).rendered
    assert not moves.resumes(first, nothing_else=False, replicas_reason=False)
    first["spec"]["replicas"] = 120  # the user scaled: the core decides again
    assert not moves.resumes(first, nothing_else=True, replicas_reason=True)
    first["spec"]["replicas"] = 100
    first["metadata"]["deletionTimestamp"] = "2026-12-05T12:00:00Z"
    assert not moves.resumes(first, nothing_else=True, replicas_reason=False)


def test_the_target_is_dropped_when_the_budget_is() -> None:
    start = binding({"a": 40, "b": 60}, {"a": 40, "b": 60})
    first = moves.pace(start, rendered(start, {"b": 70, "c": 30}), TEN, NOW, fresh=False).rendered
    whole = moves.resume(first, None, NOW)
    assert written(whole) == {"b": 70, "c": 30}
    assert whole.rendered["metadata"]["annotations"][moves.TARGET_ANNOTATION] is None  # removed by the patch
