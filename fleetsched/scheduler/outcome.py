"""The result of scheduling one binding, its explanation, and how it is written into the binding.

Owns ``ScheduleResult`` (targets, the Scheduled condition, the observed affinity name, and the
per-group explanation), the §3.5 condition mapping, and ``render_into_binding``: the pure function
that applies a result to a JSON-shaped binding (``spec.clusters``, the applied-placement
annotation, ``status.conditions``, ``status.schedulerObservingAffinityName``), shared by the
operator's writes and ``fleetsched simulate``. Must not do I/O.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from fleetsched.api.times import format_time
from fleetsched.scheduler.errors import SchedulingError
from fleetsched.scheduler.types import TargetCluster

__all__ = [
    "APPLIED_PLACEMENT_ANNOTATION",
    "SCHEDULED_CONDITION",
    "AttemptFailed",
    "AttemptOutput",
    "ClusterNumbers",
    "ClusterVerdict",
    "Condition",
    "ExtenderVerdict",
    "FilterSummary",
    "GroupAttempt",
    "PluginScore",
    "ScheduleResult",
    "SkippedPlugin",
    "applied_placement_json",
    "render_into_binding",
]

SCHEDULED_CONDITION = "Scheduled"
APPLIED_PLACEMENT_ANNOTATION = "policy.karmada.io/applied-placement"
SUCCESS_MESSAGE = "Binding has been scheduled successfully."


@dataclass(frozen=True, slots=True)
class Condition:
    """The Scheduled condition Karmada would write (type is always ``Scheduled``)."""

    status: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ClusterVerdict:
    """One cluster's filter outcome: the first rejecting plugin and its reasons, or feasible."""

    cluster: str
    feasible: bool
    plugin: str = ""
    reasons: tuple[str, ...] = ()
    deleting: bool = False


@dataclass(frozen=True, slots=True)
class PluginScore:
    """One score plugin's (or extender's) part of one cluster's total: raw, after NormalizeScore
    (the raw score when the plugin does not normalise), its weight, and the weighted part."""

    plugin: str
    raw: int
    normalized: int
    weight: int
    extender: bool = False

    @property
    def weighted(self) -> int:
        return self.normalized * self.weight


@dataclass(frozen=True, slots=True)
class SkippedPlugin:
    """An ignorable plugin (or extender) left out for this binding, where, and why."""

    plugin: str
    point: str
    reason: str


@dataclass(frozen=True, slots=True)
class ExtenderVerdict:
    """What one extender's filter did: clusters kept and rejected, or why it was skipped."""

    extender: str
    kept: int
    rejected: int
    skipped: str = ""


@dataclass(frozen=True, slots=True)
class ClusterNumbers:
    """A feasible cluster's scores (per plugin), overflow tier and replica estimates.

    ``scores`` holds each score plugin's raw score (Karmada's view); ``parts`` the full breakdown
    (raw, normalised, weight, weighted) of plugins and extenders; ``score`` is the weighted total.
    """

    cluster: str
    scores: tuple[tuple[str, int], ...]
    score: int
    overflow_order: int
    allocatable: int
    available: int
    parts: tuple[PluginScore, ...] = ()

    @property
    def plain(self) -> bool:
        """True when the total is the plain sum of raw plugin scores (Karmada's, the default profile)."""
        return all(p.weight == 1 and p.normalized == p.raw and not p.extender for p in self.parts)


@dataclass(frozen=True, slots=True)
class FilterSummary:
    """Counts of the filter verdicts of one attempt: feasible clusters, and rejected clusters by the
    first plugin that rejected them (``Deleting`` for clusters being deleted), sorted by plugin."""

    feasible: int
    rejected: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, verdicts: Iterable[ClusterVerdict]) -> FilterSummary:
        feasible = 0
        rejected: dict[str, int] = {}
        for v in verdicts:
            if v.feasible:
                feasible += 1
            else:
                label = v.plugin or ("Deleting" if v.deleting else "?")
                rejected[label] = rejected.get(label, 0) + 1
        return cls(feasible, tuple(sorted(rejected.items())))


@dataclass(frozen=True, slots=True)
class GroupAttempt:
    """One run of the algorithm for one affinity term (or the only placement affinity)."""

    affinity_name: str
    selected: tuple[str, ...] = ()
    targets: tuple[TargetCluster, ...] | None = None
    error: str = ""
    error_reason: str = ""
    overflow: bool = False
    numbers_factory: Callable[[], tuple[ClusterNumbers, ...]] | None = field(
        default=None, compare=False, repr=False
    )
    verdicts_factory: Callable[[], tuple[ClusterVerdict, ...]] | None = field(
        default=None, compare=False, repr=False
    )
    summary_factory: Callable[[], FilterSummary] | None = field(default=None, compare=False, repr=False)
    # Ignorable plugins and extenders left out, extenders' filter verdicts, PostFilter explanations.
    skipped: tuple[SkippedPlugin, ...] = ()
    extenders: tuple[ExtenderVerdict, ...] = ()
    post_filter: tuple[tuple[str, str], ...] = ()
    # The attempt's FilterContext (with its CycleState), carried into the binding cycle.
    context: Any = field(default=None, compare=False, repr=False)

    @property
    def verdicts(self) -> tuple[ClusterVerdict, ...]:
        """Every cluster's filter verdict, in snapshot order (built on demand)."""
        return self.verdicts_factory() if self.verdicts_factory is not None else ()

    @property
    def summary(self) -> FilterSummary:
        """How many clusters passed the filters and how many each plugin rejected, without building
        a verdict per cluster (what the live scheduler's explanation annotation records)."""
        if self.summary_factory is not None:
            return self.summary_factory()
        return FilterSummary.of(self.verdicts)

    @property
    def numbers(self) -> tuple[ClusterNumbers, ...]:
        """Feasible clusters in global sort order with scores and estimates (built on demand)."""
        return self.numbers_factory() if self.numbers_factory is not None else ()


@dataclass(slots=True)
class AttemptOutput:
    """A successful run of the algorithm for one affinity term: the targets and the explanation."""

    targets: list[TargetCluster]
    attempt: GroupAttempt


class AttemptFailed(Exception):
    """A failed run of the algorithm for one affinity term: the error and the explanation."""

    def __init__(self, error: SchedulingError, attempt: GroupAttempt) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempt = attempt


@dataclass(frozen=True, slots=True)
class ScheduleResult:
    """What one scheduling attempt decided for one binding.

    ``clusters`` is the new ``spec.clusters`` (``None``: leave unchanged, an empty tuple: clear);
    ``affinity_name`` the new ``schedulerObservingAffinityName`` (``None``: leave unchanged);
    ``condition`` ``None`` means no attempt was made (no Scheduled condition is written).
    """

    key: str
    condition: Condition | None
    clusters: tuple[TargetCluster, ...] | None
    affinity_name: str | None
    write_placement_annotation: bool
    mode: str = "Steady"  # or "Fresh" (explicit reschedule, §9.6)
    strategy: str = ""
    attempts: tuple[GroupAttempt, ...] = field(default_factory=tuple)
    # The schedulerName of the profile that scheduled the binding.
    profile: str = ""

    @property
    def scheduled(self) -> bool:
        return self.condition is not None and self.condition.status

    def cycle_context(self) -> Any:
        """The successful attempt's context (for Reserve/Permit/PreBind/PostBind), or None."""
        if not self.scheduled or not self.attempts:
            return None
        return self.attempts[-1].context


# Struct field order of Karmada's placement types, for the applied-placement annotation (§15).
_KEY_ORDER: dict[str, tuple[str, ...]] = {
    "placement": (
        "clusterAffinity",
        "clusterAffinities",
        "clusterTolerations",
        "spreadConstraints",
        "replicaScheduling",
        "workloadAffinity",
    ),
    "affinity": (
        "affinityName",
        "labelSelector",
        "fieldSelector",
        "clusterNames",
        "exclude",
        "overflowAffinities",
    ),
    "labelSelector": ("matchLabels", "matchExpressions"),
    "requirement": ("key", "operator", "values"),
    "toleration": ("key", "operator", "value", "effect", "tolerationSeconds"),
    "spread": ("spreadByField", "spreadByLabel", "maxGroups", "minGroups"),
    "replicaScheduling": ("replicaSchedulingType", "replicaDivisionPreference", "weightPreference"),
    "weightPreference": ("staticWeightList", "dynamicWeight"),
    "staticWeight": ("targetCluster", "weight"),
    "workloadAffinity": ("affinity", "antiAffinity"),
}


# Written even when empty: non-omitempty fields, and pointers (tolerationSeconds) whose 0 is a value.
_ALWAYS = frozenset({"affinityName", "targetCluster", "weight", "groupByLabelKey", "tolerationSeconds"})


_CHILD_KIND: dict[str, str] = {
    "clusterAffinity": "affinity",
    "clusterAffinities": "affinity",
    "overflowAffinities": "affinity",
    "targetCluster": "affinity",
    "labelSelector": "labelSelector",
    "fieldSelector": "labelSelector",
    "matchExpressions": "requirement",
    "clusterTolerations": "toleration",
    "spreadConstraints": "spread",
    "replicaScheduling": "replicaScheduling",
    "weightPreference": "weightPreference",
    "staticWeightList": "staticWeight",
    "workloadAffinity": "workloadAffinity",
}


def _ordered(value: Any, kind: str) -> Any:
    if not isinstance(value, Mapping):
        return value
    order = _KEY_ORDER.get(kind, ())
    keys = [k for k in order if k in value] + sorted(k for k in value if k not in order)
    out: dict[str, Any] = {}
    for k in keys:
        v = value[k]
        if v is None or (v in ("", 0, [], {}) and k not in _ALWAYS):
            continue
        out[k] = _child(k, v)
    return out


def _child(key: str, v: Any) -> Any:
    child_kind = _CHILD_KIND.get(key, "")
    if isinstance(v, list):
        return [_ordered(x, child_kind) for x in v]
    if key == "matchLabels" and isinstance(v, Mapping):
        return {k: v[k] for k in sorted(v)}
    return _ordered(v, child_kind)


# Annotation texts by the placement's content: the bindings of one policy share a placement, so
# the operator renders the same text for each of them. The key is the placement's JSON with
# sorted keys, which the text depends on alone (unknown keys are sorted too), and costs a few
# microseconds where the ordered rendering costs a hundred.
_TEXT_LIMIT = 4096
_texts: dict[bytes, str] = {}
_texts_lock = threading.Lock()


def applied_placement_json(placement: Mapping[str, Any]) -> str:
    """Compact JSON of the placement in Go's field order, as the annotation stores it (§15)."""
    try:
        key = orjson.dumps(placement, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not plain JSON (orjson.JSONEncodeError is one): render it uncached
        return _placement_text(placement)
    if b"null" in key:  # orjson writes NaN and infinities as null, where the text keeps them
        return _placement_text(placement)
    text = _texts.get(key)
    if text is None:
        text = _placement_text(placement)
        with _texts_lock:
            if len(_texts) >= _TEXT_LIMIT:
                del _texts[next(iter(_texts))]  # the oldest entry
            _texts[key] = text
    return text


def _placement_text(placement: Mapping[str, Any]) -> str:
    text = json.dumps(_ordered(placement, "placement"), separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _target_json(t: TargetCluster) -> dict[str, Any]:
    out: dict[str, Any] = {"name": t.name}
    if t.replicas:
        out["replicas"] = t.replicas
    if t.components:
        out["components"] = [{"name": n, "replicas": r} if r else {"name": n} for n, r in t.components]
    return out


def render_into_binding(
    binding: Mapping[str, Any], result: ScheduleResult, *, now: dt.datetime | None = None
) -> dict[str, Any]:
    """A copy of the JSON-shaped ``binding`` with ``result`` written the way Karmada writes it.

    spec.clusters: replaced (``[{name, replicas}]``, replicas omitted when 0), removed when
    cleared, untouched when the result leaves it; the applied-placement annotation with it;
    status.schedulerObservingAffinityName when the result names one; the Scheduled condition with
    SetStatusCondition semantics (the transition time moves only when the status flips); and on
    success ``schedulerObservedGeneration`` and ``lastScheduledTime``.
    """
    now = now or dt.datetime.now(dt.UTC)
    # Copy only the maps written below; everything else is shared with the (unmodified) input.
    out: dict[str, Any] = dict(binding)
    spec = out["spec"] = dict(out.get("spec") or {})
    metadata = out["metadata"] = dict(out.get("metadata") or {})
    if result.clusters is not None:
        if result.clusters:
            spec["clusters"] = [_target_json(t) for t in result.clusters]
        else:
            spec.pop("clusters", None)
    if result.write_placement_annotation and isinstance(spec.get("placement"), Mapping):
        annotations = dict(metadata.get("annotations") or {})
        annotations[APPLIED_PLACEMENT_ANNOTATION] = applied_placement_json(spec["placement"])
        metadata["annotations"] = annotations
    if result.condition is None:
        return out
    status = out["status"] = dict(out.get("status") or {})
    if result.affinity_name is not None:
        status["schedulerObservingAffinityName"] = result.affinity_name
    conditions = [c for c in (status.get("conditions") or []) if isinstance(c, Mapping)]
    new_status = "True" if result.condition.status else "False"
    previous = next((c for c in conditions if c.get("type") == SCHEDULED_CONDITION), None)
    transition = format_time(now)
    if previous is not None and previous.get("status") == new_status and previous.get("lastTransitionTime"):
        transition = previous["lastTransitionTime"]
    condition = {
        "type": SCHEDULED_CONDITION,
        "status": new_status,
        "reason": result.condition.reason,
        "message": result.condition.message,
        "lastTransitionTime": transition,
    }
    status["conditions"] = (
        [condition if c.get("type") == SCHEDULED_CONDITION else dict(c) for c in conditions]
        if previous is not None
        else [*(dict(c) for c in conditions), condition]
    )
    if result.condition.status:
        generation = metadata.get("generation")
        if generation is not None:
            status["schedulerObservedGeneration"] = generation
        status["lastScheduledTime"] = format_time(now)
    return out
