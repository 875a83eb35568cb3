"""The Warning Events that name the mistake behind an unschedulable binding (scheduler/diagnosis.py):
a ``clusterNames`` entry that names no Cluster, candidate Clusters that have never reported a
status. Beside Karmada's ``ScheduleBindingFailed`` Event, whose message stays Karmada's; on the
binding only (the template gets Karmada's Events alone). The recorder aggregates repeats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fleetsched.controller.runtime.events import WARNING, EventRecorder, InvolvedObject
from fleetsched.scheduler.convert import ConversionError, placement_from_dict
from fleetsched.scheduler.diagnosis import hints
from fleetsched.scheduler.types import ClusterInfo


def record_hints(
    events: EventRecorder | None, obj: Mapping[str, Any], clusters: Sequence[ClusterInfo]
) -> None:
    """One Warning Event on the binding ``obj`` per mistake its placement makes against ``clusters``."""
    if events is None:
        return
    try:
        placement = placement_from_dict((obj.get("spec") or {}).get("placement"))
    except ConversionError:  # reported as the binding's SchedulerError already
        return
    for hint in hints(placement, clusters):
        events.record(InvolvedObject.of_binding(obj), WARNING, hint.reason, hint.message)
