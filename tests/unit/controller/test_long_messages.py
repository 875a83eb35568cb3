"""Every message the scheduler writes fits its field (issue 23): the Scheduled condition's message is
cut to the CRD's 32768 at a reason boundary with a count, Event messages to kube's 1024-byte note,
and the explanation annotation gives way when the object's annotations would pass 256 KiB."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from fleetsched.api.text import (
    ANNOTATIONS_LIMIT,
    CONDITION_MESSAGE_LIMIT,
    EVENT_MESSAGE_LIMIT,
    annotations_size,
)
from fleetsched.controller.runtime.events import (
    REASON_FAILED,
    REASON_SUCCEED,
    InvolvedObject,
    PendingEvent,
    event_body,
    success_message,
)
from fleetsched.controller.scheduler.writer import EXPLANATION_ANNOTATION, compute_patches, explanation
from fleetsched.scheduler import ScheduleResult, render_into_binding
from fleetsched.scheduler.errors import fit_error_message
from fleetsched.scheduler.outcome import Condition, GroupAttempt
from fleetsched.scheduler.types import TargetCluster

NOW = dt.datetime(2026, 5, 1, 12, 0, 0, tzinfo=dt.UTC)


def stored(**metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "ns", "generation": 4, "resourceVersion": "77", **metadata},
        "spec": {"replicas": 3, "placement": {"clusterAffinity": {"clusterNames": ["m1"]}}},
        "status": {},
    }


def no_fit(clusters: int) -> ScheduleResult:
    # 150 Clusters with distinct long taints: the message the issue measured past 50,000 bytes.
    diagnosis = {
        f"member-{i}": (
            f"cluster(s) had untolerated taint {{team.example.com/dedicated-{i:04d}-"
            f"{'x' * 200}=tenant-{i}:NoSchedule}}",
        )
        for i in range(clusters)
    }
    message = fit_error_message(clusters, diagnosis)
    return ScheduleResult(
        key="ns/b",
        condition=Condition(False, "NoClusterFit", message),
        clusters=None,
        affinity_name=None,
        write_placement_annotation=False,
        strategy="Duplicated",
        attempts=(GroupAttempt(affinity_name=""),),
    )


def test_a_long_scheduled_message_is_cut_at_a_reason_boundary_and_stays_cut() -> None:
    binding = stored()
    result = no_fit(150)
    assert result.condition is not None and len(result.condition.message.encode()) > CONDITION_MESSAGE_LIMIT
    patches = compute_patches(binding, render_into_binding(binding, result, now=NOW), explain=None)
    assert patches.status is not None
    (condition,) = patches.status["status"]["conditions"]
    message = condition["message"]
    assert len(message.encode()) <= CONDITION_MESSAGE_LIMIT
    assert message.startswith("0/150 clusters are available: 1 cluster(s) had untolerated taint")
    kept = message.split(", ")[:-1]
    left_out = int(message.rsplit("… and ", 1)[1].split()[0])
    assert message.endswith(f"… and {left_out} more reasons") and len(kept) + left_out == 150
    # Written once, it is not written again: the cut is the same on the next pass.
    written = copy.deepcopy(binding)
    written["status"] = patches.status["status"]
    again = compute_patches(written, render_into_binding(written, result, now=NOW), explain=None)
    assert again.status is None


def test_event_messages_fit_kubes_note_limit() -> None:
    target = InvolvedObject("work.karmada.io/v1alpha2", "ResourceBinding", "b", "ns", "u")
    result = no_fit(150)
    assert result.condition is not None
    failed = event_body(
        PendingEvent(target, "Warning", REASON_FAILED, result.condition.message), now=NOW, host="h"
    )
    assert len(failed["message"].encode()) <= EVENT_MESSAGE_LIMIT
    assert failed["message"].endswith("more reasons")
    clusters = [{"name": f"member-{i}", "replicas": 1} for i in range(1000)]
    text = success_message("ResourceBinding", clusters)
    succeeded = event_body(PendingEvent(target, "Normal", REASON_SUCCEED, text), now=NOW, host="h")
    message = succeeded["message"]
    assert len(message.encode()) <= EVENT_MESSAGE_LIMIT
    assert message.startswith("Binding has been scheduled successfully. Result: {member-0:1, member-1:1")
    assert message.endswith("more clusters")


def test_the_explanation_gives_way_to_the_annotation_budget() -> None:
    crowded = {"team.example.com/notes": "n" * (ANNOTATIONS_LIMIT - 1000)}
    binding = stored(annotations=crowded)
    result = ScheduleResult(
        key="ns/b",
        condition=Condition(True, "Success", "Binding has been scheduled successfully."),
        clusters=(TargetCluster("m1", 3),),
        affinity_name=None,
        write_placement_annotation=True,
        strategy="Duplicated",
        attempts=(GroupAttempt(affinity_name="", selected=("m1",)),),
    )
    explain = explanation(result) + " " * 2000  # an explanation that would pass the budget
    patches = compute_patches(binding, render_into_binding(binding, result, now=NOW), explain=explain)
    assert patches.spec is not None
    annotations = patches.spec["metadata"]["annotations"]
    assert EXPLANATION_ANNOTATION not in annotations
    assert "policy.karmada.io/applied-placement" in annotations  # Karmada's, never dropped
    assert annotations_size({**crowded, **annotations}) <= ANNOTATIONS_LIMIT
    # An explanation already stored is removed rather than left stale.
    with_old = stored(annotations={**crowded, EXPLANATION_ANNOTATION: "{}"})
    patches = compute_patches(with_old, render_into_binding(with_old, result, now=NOW), explain=explain)
    assert (
        patches.spec is not None and patches.spec["metadata"]["annotations"][EXPLANATION_ANNOTATION] is None
    )
    # With room, it is written as before.
    roomy = compute_patches(stored(), render_into_binding(stored(), result, now=NOW), explain=explain)
    assert roomy.spec is not None and roomy.spec["metadata"]["annotations"][EXPLANATION_ANNOTATION] == explain


def test_only_the_scheduled_condition_is_fitted() -> None:
    # Another controller's condition is left as it is, even with a control character in it.
    theirs = {"type": "FullyApplied", "status": "True", "reason": "x", "message": "tab\there"}
    binding = stored()
    binding["status"] = {"conditions": [theirs]}
    patches = compute_patches(binding, render_into_binding(binding, no_fit(150), now=NOW), explain=None)
    assert patches.status is not None
    first, scheduled = patches.status["status"]["conditions"]
    assert first == theirs
    assert len(scheduled["message"].encode()) <= CONDITION_MESSAGE_LIMIT
