"""What to send for a scheduling result: at most one spec/metadata patch and one status patch.

``render_into_binding`` (the core's, shared with ``fleetsched simulate``) says what the binding
should look like after a result; this module turns the difference between the binding as read and
as rendered into JSON merge patches:

1. the main resource: ``spec.clusters`` (compared in any order: ``same_targets``) plus the
   ``policy.karmada.io/applied-placement`` annotation and a compact explanation annotation — only
   the parts that changed, nothing when none did. The explanation rides along such a write, or
   is written once when the binding has none (a first decision whose result writes nothing to the
   main resource, e.g. an error); a changed explanation alone never causes a write: it counts the
   filter verdicts of every cluster, so a cluster joining or changing elsewhere would otherwise
   rewrite every binding it did not move (Duplicated bindings are scheduled again on every
   cluster change). It so explains the decision that last changed the result (``simulate
   --explain`` gives today's);
2. the status subresource: the Scheduled condition, ``schedulerObservedGeneration``,
   ``lastScheduledTime`` and ``schedulerObservingAffinityName`` — only the keys that changed from the
   binding they are written to (``status_patch``): after a spec write, the write's answer, so the
   generation recorded is the one the apiserver gave the binding, not a prediction.

Both carry ``metadata.resourceVersion``, so a concurrent change makes the API answer 409 Conflict
instead of being overwritten; the caller then retries from a fresh read. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from fleetsched.api.text import fit_annotations, fit_conditions
from fleetsched.scheduler import ScheduleResult
from fleetsched.scheduler.framework.profile import DEFAULT_SCHEDULER_NAME
from fleetsched.scheduler.outcome import SCHEDULED_CONDITION

EXPLANATION_ANNOTATION = "scheduler.fleetsched.io/explanation"
EXPLANATION_LIMIT = 2048
STATUS_KEYS = (
    "conditions",
    "schedulerObservedGeneration",
    "lastScheduledTime",
    "schedulerObservingAffinityName",
)


@dataclass(frozen=True, slots=True)
class Patches:
    spec: dict[str, Any] | None
    # against the binding as read: the binding cycle computes it again from the spec write's answer
    status: dict[str, Any] | None
    # generation the binding will have after the spec patch (spec changes bump it by one): what the
    # spec write's watch event is recognised by when it arrives before the write's answer
    generation_after_spec: int


def explanation(result: ScheduleResult) -> str:
    """A compact, deterministic JSON summary of why the binding landed where it did.

    It holds no timestamps or capacity figures, and lists clusters in name order (not in score
    order, which moves with capacities), so the same decision gives the same text.
    A profile other than the default is named, with the weighted score total of each selected
    cluster; skipped (ignorable) plugins and extenders' filter verdicts are listed when present.
    """
    custom = bool(result.profile) and result.profile != DEFAULT_SCHEDULER_NAME
    groups = []
    for attempt in result.attempts:
        summary = attempt.summary
        group: dict[str, Any] = {
            "feasible": summary.feasible,
            "rejected": dict(summary.rejected),
            "selected": sorted(attempt.selected),
        }
        if attempt.affinity_name:
            group["affinityName"] = attempt.affinity_name
        if attempt.overflow:
            group["overflow"] = True
        if attempt.error_reason:
            group["error"] = attempt.error_reason
        if attempt.skipped:
            group["skipped"] = [f"{s.plugin}@{s.point}" for s in attempt.skipped]
        if attempt.extenders:
            group["extenders"] = {
                e.extender: "skipped" if e.skipped else {"kept": e.kept, "rejected": e.rejected}
                for e in attempt.extenders
            }
        if custom and attempt.selected:
            selected = set(attempt.selected)
            numbers = sorted(attempt.numbers, key=lambda n: n.cluster)
            group["scores"] = {n.cluster: n.score for n in numbers if n.cluster in selected}
        groups.append(group)
    head: dict[str, Any] = {"profile": result.profile} if custom else {}
    text = _compact_json({**head, "strategy": result.strategy, "mode": result.mode, "groups": groups})
    if len(text) > EXPLANATION_LIMIT:
        text = json.dumps(
            {"strategy": result.strategy, "mode": result.mode, "groups": len(groups), "truncated": True},
            separators=(",", ":"),
        )
    return text


def _compact_json(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"))``, by orjson where that gives the same text: an
    ASCII text without DEL (json escapes DEL and every non-ASCII character; orjson writes them
    as they are) from strings and integers of at most 64 bits (past those orjson refuses)."""
    try:
        text = orjson.dumps(value).decode()
    except TypeError:
        text = ""
    if not text or not text.isascii() or "\x7f" in text:
        text = json.dumps(value, separators=(",", ":"))
    return text


def same_targets(old: Any, new: Any) -> bool:
    """Whether two ``spec.clusters`` lists place the same replicas on the same clusters, in any
    order: the list's order means nothing to its readers, and the core lists clusters in score
    order, which capacity changes reshuffle (a Duplicated binding, scheduled again on every
    cluster change, would be rewritten for a new order alone)."""
    if (old or None) == (new or None):
        return True
    if not isinstance(old, list) or not isinstance(new, list) or len(old) != len(new):
        return False

    def key(target: Any) -> str:
        return json.dumps(target, sort_keys=True, separators=(",", ":"))

    return sorted(map(key, old)) == sorted(map(key, new))


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def compute_patches(
    original: Mapping[str, Any], rendered: Mapping[str, Any], *, explain: str | None
) -> Patches:
    resource_version = _meta(original).get("resourceVersion")
    generation = int(_meta(original).get("generation") or 0)

    spec_patch: dict[str, Any] = {}
    old_clusters = (original.get("spec") or {}).get("clusters")
    new_clusters = (rendered.get("spec") or {}).get("clusters")
    if not same_targets(old_clusters, new_clusters):
        spec_patch["spec"] = {"clusters": new_clusters or None}
    old_annotations = _meta(original).get("annotations") or {}
    new_annotations = dict(_meta(rendered).get("annotations") or {})
    new_annotations.pop(EXPLANATION_ANNOTATION, None)
    changed = {k: v for k, v in new_annotations.items() if old_annotations.get(k) != v}
    # with a result write, or once when there is none; a changed explanation alone never makes a
    # write (see the module's doc)
    writes_result = bool(spec_patch or changed)
    old_explain = old_annotations.get(EXPLANATION_ANNOTATION)
    if explain is not None and (writes_result or old_explain is None) and old_explain != explain:
        changed[EXPLANATION_ANNOTATION] = explain
    changed_annotations = fit_annotations(old_annotations, changed, optional=(EXPLANATION_ANNOTATION,))
    if changed_annotations:
        spec_patch["metadata"] = {"annotations": changed_annotations}
    generation_after = generation + 1 if "spec" in spec_patch else generation
    if spec_patch:
        spec_patch.setdefault("metadata", {})["resourceVersion"] = resource_version

    return Patches(spec_patch or None, status_patch(original, rendered), generation_after)


def status_patch(current: Mapping[str, Any], rendered: Mapping[str, Any]) -> dict[str, Any] | None:
    """The status keys of ``rendered`` that differ from ``current``'s: the binding as read, or
    after a spec write its answer. A success records ``current``'s generation: Karmada records the
    generation read at the start and catches up on the next pass; the answer to our own spec write
    says the generation it gave the binding, so we record that and skip the extra pass."""
    old_status = current.get("status") or {}
    new_status = dict(rendered.get("status") or {})
    if "schedulerObservedGeneration" in new_status:
        new_status["schedulerObservedGeneration"] = int(_meta(current).get("generation") or 0)
    if isinstance(new_status.get("conditions"), list):
        # The CRD holds a condition message to 32768 characters: cut at a reason boundary, counted.
        new_status["conditions"] = fit_conditions(new_status["conditions"], types=(SCHEDULED_CONDITION,))
    changed = [k for k in STATUS_KEYS if k in new_status and old_status.get(k) != new_status[k]]
    changes = {k: new_status[k] for k in changed}
    return {"status": changes} if changes else None


def observed_generation_patch(binding: Mapping[str, Any]) -> dict[str, Any]:
    """§3.4 "nothing to schedule": only catch ``schedulerObservedGeneration`` up."""
    meta = _meta(binding)
    return {
        "metadata": {"resourceVersion": meta.get("resourceVersion")},
        "status": {"schedulerObservedGeneration": int(meta.get("generation") or 0)},
    }
