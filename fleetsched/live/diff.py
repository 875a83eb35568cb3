"""What-if, the pure part: the live objects with the files' objects laid over them, and the
comparison of two scheduled states binding by binding, with replica totals per cluster.

``overlay``: an object of the files replaces the live object of the same kind, namespace and name
(in its place), or is added. A live binding a policy derived from a template of the state (its
controlling owner reference names that template) is left out of what is scheduled: the detector
derives it again from the policies and templates as they are, before and after, with the same code
``simulate`` uses; so a changed policy reaches its bindings. Both states are derived and scheduled
the same way, so what differs between them is what the files change.

``compare``: for every binding of either state, its placement before and after (scheduled or not,
the reason when not, the clusters and their replicas); a binding *becomes unschedulable* when it is
not scheduled after and was scheduled (or did not exist) before. No I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from fleetsched.api.load import CLUSTER_SCOPED_TEMPLATE_KINDS
from fleetsched.controller.scheduler import moves
from fleetsched.scheduler import stepping
from fleetsched.scheduler.convert import ConversionError, placement_from_dict
from fleetsched.scheduler.diagnosis import hints
from fleetsched.scheduler.stepping import MoveBudget
from fleetsched.scheduler.types import ClusterInfo

CLUSTER_SCOPED_KINDS = frozenset(
    {"Cluster", "ClusterResourceBinding", "ClusterPropagationPolicy", "ClusterOverridePolicy",
     *CLUSTER_SCOPED_TEMPLATE_KINDS}
)
BINDING_KINDS = frozenset({"ResourceBinding", "ClusterResourceBinding"})
POLICY_KINDS = frozenset({"PropagationPolicy", "ClusterPropagationPolicy"})


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    kind: str
    namespace: str
    name: str

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    kind = str(obj.get("kind") or "")
    metadata = obj.get("metadata") or {}
    namespace = "" if kind in CLUSTER_SCOPED_KINDS else str(metadata.get("namespace") or "default")
    return ObjectKey(kind, namespace, str(metadata.get("name") or ""))


def overlay(
    live: Sequence[Mapping[str, Any]], changes: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """``live`` with each object of ``changes`` in place of the live one of the same key, or added
    (in the order of ``changes``); an object given twice in ``changes``: the last one."""
    out: list[Mapping[str, Any]] = list(live)
    where = {object_key(obj): i for i, obj in enumerate(out)}
    for obj in changes:
        key = object_key(obj)
        if key in where:
            out[where[key]] = obj
        else:
            where[key] = len(out)
            out.append(obj)
    return out


def _owner(binding: Mapping[str, Any]) -> tuple[str, str] | None:
    for ref in (binding.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(ref, Mapping) and ref.get("controller"):
            return str(ref.get("kind") or ""), str(ref.get("name") or "")
    return None


def to_schedule(objects: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``objects`` without the bindings the detector derives again: those a template of the state
    controls, when the state has a policy (without one nothing is derived, and the binding stays)."""
    if not any(obj.get("kind") in POLICY_KINDS for obj in objects):
        return list(objects)
    templates = {
        object_key(obj)
        for obj in objects
        if obj.get("kind") not in BINDING_KINDS | POLICY_KINDS and obj.get("kind") != "Cluster"
    }
    out = []
    for obj in objects:
        if obj.get("kind") in BINDING_KINDS:
            owner = _owner(obj)
            if owner is not None:
                namespace = "" if owner[0] in CLUSTER_SCOPED_KINDS else object_key(obj).namespace
                if ObjectKey(owner[0], namespace, owner[1]) in templates:
                    continue
        out.append(obj)
    return out


@dataclasses.dataclass(frozen=True, slots=True)
class Placement:
    """A binding's scheduling result: ``scheduled`` None when no attempt was made (no profile serves
    it), the reason of a failure, and the clusters with their replicas."""

    scheduled: bool | None
    reason: str
    clusters: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, binding: Mapping[str, Any]) -> Placement:
        conditions = (binding.get("status") or {}).get("conditions") or ()
        condition = next(
            (c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Scheduled"), None
        )
        scheduled = None if condition is None else condition.get("status") == "True"
        reason = "" if condition is None or scheduled else str(condition.get("reason") or "")
        clusters = tuple(
            (str(t.get("name") or ""), int(t.get("replicas") or 0))
            for t in (binding.get("spec") or {}).get("clusters") or ()
            if isinstance(t, Mapping)
        )
        return cls(scheduled, reason, clusters)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scheduled": self.scheduled,
            "clusters": [{"name": n, "replicas": r} for n, r in self.clusters],
        }
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class BindingChange:
    key: ObjectKey
    before: Placement | None  # None: the binding does not exist before
    after: Placement | None  # None: it is gone after
    # with a move budget: the placements the scheduler would write one after another (moves.py)
    steps: tuple[tuple[tuple[str, int], ...], ...] = ()
    # a binding that becomes unschedulable: the mistakes scheduler/diagnosis.py names
    hints: tuple[str, ...] = ()

    @property
    def becomes_unschedulable(self) -> bool:
        return (
            self.after is not None
            and self.after.scheduled is False
            and (self.before is None or self.before.scheduled is not False)
        )

    def to_json(self) -> dict[str, Any]:
        out = {
            "kind": self.key.kind,
            "namespace": self.key.namespace,
            "name": self.key.name,
            "before": None if self.before is None else self.before.to_json(),
            "after": None if self.after is None else self.after.to_json(),
            "becomesUnschedulable": self.becomes_unschedulable,
        }
        if self.steps:  # with a move budget only
            out["steps"] = [[{"name": n, "replicas": r} for n, r in step] for step in self.steps]
        if self.hints:
            out["hints"] = list(self.hints)
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class WhatIf:
    """The bindings that would change (in key order), how many were compared, and the replicas per
    cluster before and after over every binding."""

    changes: tuple[BindingChange, ...]
    compared: int
    totals: tuple[tuple[str, int, int], ...]  # (cluster, before, after)
    # what the files' policies get wrong: kinds the API server does not serve, selecting nothing
    notes: tuple[str, ...] = ()

    @property
    def unschedulable(self) -> tuple[BindingChange, ...]:
        return tuple(c for c in self.changes if c.becomes_unschedulable)

    def to_json(self) -> dict[str, Any]:
        return {
            "compared": self.compared,
            "changed": [c.to_json() for c in self.changes],
            "clusters": [{"name": n, "before": b, "after": a} for n, b, a in self.totals],
            "becomeUnschedulable": [f"{c.key.kind} {c.key.ref}" for c in self.unschedulable],
            "notes": list(self.notes),
        }


def _placements(bindings: Iterable[Mapping[str, Any]]) -> dict[ObjectKey, Placement]:
    return {object_key(b): Placement.of(b) for b in bindings if b.get("kind") in BINDING_KINDS}


def _totals(placements: Iterable[Placement]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for p in placements:
        for name, replicas in p.clusters:
            totals[name] = totals.get(name, 0) + replicas
    return totals


def move_steps(
    before: Placement | None, after: Placement | None, binding: Mapping[str, Any] | None,
    configured: MoveBudget | None,
) -> tuple[tuple[tuple[str, int], ...], ...]:
    """The steps the live scheduler would write from ``before`` to ``after`` under the binding's
    budget (its annotations, else ``configured``), taking the replicas placed before as ready and
    each step's as ready before the next; the last step is where the binding ends (its available
    replicas kept). Empty without a budget or when no ready replica is taken away."""
    if before is None or after is None or binding is None or not before.scheduled or not after.scheduled:
        return ()
    try:
        budget = moves.budget_of(binding, configured)
    except moves.BudgetError:
        return ()
    current, target = dict(before.clusters), dict(after.clusters)
    replicas = (binding.get("spec") or {}).get("replicas")
    if budget is None or not current or not isinstance(replicas, int) or sum(target.values()) != replicas:
        return ()
    target = stepping.preserve_available(current, target, current)
    if not stepping.takes_running(current, target, current):
        return ((tuple(sorted(target.items()))),) if target != current else ()
    steps = stepping.plan(current, target, replicas=replicas, budget=budget)
    return tuple(tuple(sorted(step.items())) for step in steps)


def _hints(binding: Mapping[str, Any] | None, clusters: Sequence[ClusterInfo]) -> tuple[str, ...]:
    if binding is None:
        return ()
    try:
        placement = placement_from_dict((binding.get("spec") or {}).get("placement"))
    except ConversionError:
        return ()
    return tuple(h.message for h in hints(placement, clusters))


def compare(
    before: Sequence[Mapping[str, Any]], after: Sequence[Mapping[str, Any]], *,
    budget: MoveBudget | None = None, clusters: Sequence[ClusterInfo] = (),
) -> WhatIf:
    """The scheduled bindings of two states (simulate's ``-o json`` items) compared; with a move
    budget (the configuration's ``moveBudget``) or bindings carrying one, the steps of each move;
    each binding that becomes unschedulable with the mistakes its placement makes against
    ``clusters`` (the Clusters after)."""
    old, new = _placements(before), _placements(after)
    objects = {object_key(b): b for b in after if b.get("kind") in BINDING_KINDS}
    changes = tuple(
        BindingChange(key, old.get(key), new.get(key),
                      move_steps(old.get(key), new.get(key), objects.get(key), budget))
        for key in sorted(old.keys() | new.keys())
        if old.get(key) != new.get(key)
    )
    changes = tuple(
        dataclasses.replace(c, hints=_hints(objects.get(c.key), clusters)) if c.becomes_unschedulable else c
        for c in changes
    )
    old_totals, new_totals = _totals(old.values()), _totals(new.values())
    totals = tuple(
        (name, old_totals.get(name, 0), new_totals.get(name, 0))
        for name in sorted(old_totals.keys() | new_totals.keys())
    )
    return WhatIf(changes, len(old.keys() | new.keys()), totals)


def _placement_text(p: Placement | None) -> str:
    if p is None:
        return "<none>"
    clusters = ", ".join(f"{n}:{r}" for n, r in p.clusters)
    if p.scheduled is False:
        return f"unschedulable ({p.reason})" + (f", keeps {clusters}" if clusters else "")
    if p.scheduled is None:
        return "not scheduled (no profile serves it)"
    return clusters or "<no clusters>"


def _columns(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["   ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "   " + r[-1] for r in rows]


def text_lines(what_if: WhatIf) -> list[str]:
    """The report a person reads: a summary line, then the changed bindings (before, after) and the
    replicas per cluster whose total changes."""
    n = len(what_if.changes)
    summary = f"{n} of {what_if.compared} bindings would change"
    if what_if.unschedulable:
        summary += f"; {len(what_if.unschedulable)} would become unschedulable"
    lines = [summary + "."]
    if what_if.changes:
        rows = [("KIND", "NAMESPACE", "NAME", "BEFORE", "AFTER")]
        for c in what_if.changes:
            kind = "CRB" if c.key.kind == "ClusterResourceBinding" else "RB"
            rows.append((kind, c.key.namespace or "-", c.key.name, _placement_text(c.before),
                         _placement_text(c.after)))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines.append("")
        lines.extend(
            ("   ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "   " + r[4]).rstrip()
            for r in rows
        )
    told = [c for c in what_if.changes if c.hints]
    if told:
        lines.append("")
        lines.append("WHY (beside the reason: what the placement names that is not there)")
        for c in told:
            kind = "CRB" if c.key.kind == "ClusterResourceBinding" else "RB"
            lines.extend(f"{kind} {c.key.ref}: {hint}" for hint in c.hints)
    paced = [c for c in what_if.changes if len(c.steps) > 1]
    if paced:
        lines.append("")
        lines.append("STEPS (moves within a budget; each step's replicas ready before the next)")
        for c in paced:
            kind = "CRB" if c.key.kind == "ClusterResourceBinding" else "RB"
            lines.append(f"{kind} {c.key.ref}: {len(c.steps)} steps")
            lines.extend(
                f"  {i}. " + ", ".join(f"{n}:{r}" for n, r in step) for i, step in enumerate(c.steps, 1)
            )
    if what_if.notes:
        lines.append("")
        lines.append("NOTES (the files' policies)")
        lines.extend(what_if.notes)
    moved = [(name, b, a) for name, b, a in what_if.totals if b != a]
    if moved:
        lines.append("")
        lines.extend(
            line.rstrip()
            for line in _columns(
                [("CLUSTER", "BEFORE", "AFTER", "CHANGE")]
                + [(name, str(b), str(a), f"{a - b:+d}") for name, b, a in moved]
            )
        )
    return lines
