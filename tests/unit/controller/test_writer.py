"""What the operator sends for a result: at most one spec patch and one status patch, only changes."""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import json
from typing import Any

from fleetsched.controller.scheduler.writer import (
    EXPLANATION_ANNOTATION,
    compute_patches,
    explanation,
    status_patch,
)
from fleetsched.scheduler import ScheduleResult, render_into_binding
from fleetsched.scheduler.outcome import Condition, FilterSummary, GroupAttempt
from fleetsched.scheduler.types import TargetCluster

NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)
PLACEMENT = {"clusterAffinity": {"clusterNames": ["m1", "m2"]}}


def stored(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "ns", "generation": 4, "resourceVersion": "77"},
        "spec": {"replicas": 3, "placement": copy.deepcopy(PLACEMENT)},
        "status": dict(status),
    }


def success(*targets: tuple[str, int]) -> ScheduleResult:
    return ScheduleResult(
        key="ns/b",
        condition=Condition(True, "Success", "Binding has been scheduled successfully."),
        clusters=tuple(TargetCluster(n, r) for n, r in targets),
        affinity_name=None,
        write_placement_annotation=True,
        strategy="Duplicated",
        attempts=(GroupAttempt(affinity_name="", selected=tuple(n for n, _ in targets)),),
    )


def test_first_result_is_one_spec_patch_and_one_status_patch() -> None:
    binding = stored()
    result = success(("m1", 2), ("m2", 1))
    rendered = render_into_binding(binding, result, now=NOW)
    patches = compute_patches(binding, rendered, explain=explanation(result))
    assert patches.spec is not None and patches.status is not None
    assert patches.spec["spec"] == {
        "clusters": [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}]
    }
    annotations = patches.spec["metadata"]["annotations"]
    assert (
        annotations["policy.karmada.io/applied-placement"]
        == '{"clusterAffinity":{"clusterNames":["m1","m2"]}}'
    )
    assert EXPLANATION_ANNOTATION in annotations
    # the spec patch only applies to the copy we read: a concurrent change gets a 409
    assert patches.spec["metadata"]["resourceVersion"] == "77"
    # the spec write's watch event is known by the generation it gives the binding
    assert patches.generation_after_spec == 5
    # the status patch is computed again from the spec write's answer: the generation the apiserver
    # gave the binding is recorded, so no second pass is needed
    answer = {**binding, "metadata": {**binding["metadata"], "generation": 5, "resourceVersion": "78"}}
    written = status_patch(answer, rendered)
    assert written is not None
    status = written["status"]
    assert status["schedulerObservedGeneration"] == 5
    assert status["conditions"][0]["reason"] == "Success"
    assert status["lastScheduledTime"] == "2026-05-01T12:00:00Z"
    # against the binding as read, the generation read (Karmada's)
    assert patches.status is not None and patches.status["status"]["schedulerObservedGeneration"] == 4


def test_unchanged_result_writes_nothing_to_spec() -> None:
    binding = stored()
    result = success(("m1", 3))
    once = render_into_binding(binding, result, now=NOW)
    once["metadata"]["annotations"][EXPLANATION_ANNOTATION] = explanation(result)
    once["status"]["schedulerObservedGeneration"] = 4
    again = compute_patches(once, render_into_binding(once, result, now=NOW), explain=explanation(result))
    assert again.spec is None
    assert again.status is None  # same condition, same second, same generation
    later = compute_patches(
        once,
        render_into_binding(once, result, now=NOW + dt.timedelta(seconds=5)),
        explain=explanation(result),
    )
    assert later.spec is None
    assert later.status == {"status": {"lastScheduledTime": "2026-05-01T12:00:05Z"}}


def test_a_new_explanation_alone_writes_nothing_and_rides_along_a_result_write() -> None:
    """Duplicated bindings are scheduled again on every cluster change: a cluster joining elsewhere
    changes the rejection counts of every explanation, and must not rewrite bindings it did not move."""
    binding = stored()
    result = success(("m1", 3), ("m2", 3))
    once = render_into_binding(binding, result, now=NOW)
    once["metadata"]["annotations"][EXPLANATION_ANNOTATION] = explanation(result)
    once["status"]["schedulerObservedGeneration"] = 4
    one_more_rejected = dataclasses.replace(
        result,
        attempts=(
            GroupAttempt(
                affinity_name="", selected=("m1", "m2"),
                summary_factory=lambda: FilterSummary(feasible=2, rejected=(("ClusterAffinity", 1),)),
            ),
        ),
    )
    assert explanation(one_more_rejected) != explanation(result)
    again = compute_patches(
        once, render_into_binding(once, one_more_rejected, now=NOW), explain=explanation(one_more_rejected)
    )
    assert again.spec is None and again.status is None
    # a binding without one (a first decision that writes nothing else there) gets it once
    bare = copy.deepcopy(once)
    del bare["metadata"]["annotations"][EXPLANATION_ANNOTATION]
    first = compute_patches(bare, render_into_binding(bare, result, now=NOW), explain=explanation(result))
    assert first.spec is not None and "spec" not in first.spec
    assert first.spec["metadata"]["annotations"] == {EXPLANATION_ANNOTATION: explanation(result)}
    moved = success(("m1", 3))
    patches = compute_patches(once, render_into_binding(once, moved, now=NOW), explain=explanation(moved))
    assert patches.spec is not None
    assert patches.spec["metadata"]["annotations"][EXPLANATION_ANNOTATION] == explanation(moved)


def test_the_explanation_lists_clusters_by_name_whatever_the_score_order() -> None:
    by_score = success(("m2", 3), ("m1", 3))
    assert explanation(by_score) == explanation(success(("m1", 3), ("m2", 3)))
    assert '"selected":["m1","m2"]' in explanation(by_score)


def test_fit_error_clears_targets_and_leaves_generation_alone() -> None:
    binding = stored()
    binding["spec"]["clusters"] = [{"name": "m1", "replicas": 3}]
    failed = ScheduleResult(
        key="ns/b",
        condition=Condition(False, "NoClusterFit", "0/2 clusters are available."),
        clusters=(),
        affinity_name=None,
        write_placement_annotation=True,
    )
    patches = compute_patches(binding, render_into_binding(binding, failed, now=NOW), explain=None)
    assert patches.spec is not None and patches.spec["spec"] == {"clusters": None}
    assert patches.status is not None
    assert "schedulerObservedGeneration" not in patches.status["status"]
    assert patches.status["status"]["conditions"][0]["status"] == "False"


def test_explanation_is_compact_and_deterministic() -> None:
    result = success(("m1", 3))
    assert explanation(result) == explanation(result)
    assert (
        explanation(result) == '{"strategy":"Duplicated","mode":"Steady","groups":[{"feasible":0,'
        '"rejected":{},"selected":["m1"]}]}'
    )


def test_the_compact_json_of_the_explanation_is_the_stdlib_text_whatever_the_strings() -> None:
    from fleetsched.controller.scheduler.writer import _compact_json

    every_ascii = "".join(chr(i) for i in range(128))
    for value in [
        {"groups": [{"feasible": 3, "rejected": {"TaintToleration": 2}, "selected": ["m1"]}]},
        {"k": every_ascii + '"\\/'},  # control characters, quotes, backslash, DEL
        {"k": "région ✓ 集群"},  # non-ASCII: json escapes it, orjson would not
        {"big": 2**70, "neg": -(2**63)},  # past 64 bits orjson refuses
        {1: "int key"},
        [True, False, None, 0, -1],
    ]:
        assert _compact_json(value) == json.dumps(value, separators=(",", ":"))


def test_the_same_targets_in_another_order_are_the_same_result() -> None:
    binding = stored()
    binding["spec"]["clusters"] = [{"name": "m2", "replicas": 3}, {"name": "m1", "replicas": 3}]
    result = success(("m1", 3), ("m2", 3))
    patches = compute_patches(binding, render_into_binding(binding, result, now=NOW), explain=None)
    assert patches.spec is None or "spec" not in patches.spec
    other = success(("m1", 3), ("m2", 2))
    patches = compute_patches(binding, render_into_binding(binding, other, now=NOW), explain=None)
    assert patches.spec is not None and patches.spec["spec"]["clusters"][1] == {"name": "m2", "replicas": 2}
