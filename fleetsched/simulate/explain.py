"""What ``fleetsched simulate`` prints about a binding: the table's rows and ``--explain``'s per-cluster
story (filters, scores, estimates, the capacity the assume record deducted), safe for a terminal."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fleetsched.api.text import fit_conditions, for_terminal
from fleetsched.scheduler.assume import AssumeRecord, format_load
from fleetsched.scheduler.diagnosis import Hint
from fleetsched.scheduler.framework.profile import DEFAULT_SCHEDULER_NAME
from fleetsched.scheduler.outcome import SCHEDULED_CONDITION, PluginScore, ScheduleResult

if TYPE_CHECKING:
    pass

from fleetsched.simulate.plan import scheduler_name_of


def _target(t: Mapping[str, Any]) -> str:
    return f"{t['name']}:{t['replicas']}" if "replicas" in t else str(t["name"])


Row = tuple[str, str, str, str, str, str, str]


_HEADER: Row = ("KIND", "NAMESPACE", "NAME", "SCHEDULED", "REASON", "AFFINITY", "CLUSTERS")


def table_row(obj: Mapping[str, Any], result: ScheduleResult) -> Row:
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    clusters = ", ".join(_target(t) for t in spec.get("clusters") or []) or "<none>"
    cond = result.condition
    return (
        "RB" if obj.get("kind") != "ClusterResourceBinding" else "CRB",
        md.get("namespace") or "-",
        md.get("name") or "",
        "-" if cond is None else ("True" if cond.status else "False"),
        "-" if cond is None else cond.reason,
        status.get("schedulerObservingAffinityName") or "-",
        clusters,
    )


def table_lines(rows: Sequence[Row]) -> Iterator[str]:
    """The table, line by line: every column but the last padded to its widest cell."""
    widths = [len(h) for h in _HEADER[:-1]]
    for row in rows:
        for i in range(len(widths)):
            if len(row[i]) > widths[i]:
                widths[i] = len(row[i])
    for r in _chain_header(rows):
        line = "   ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "   " + r[-1]
        yield for_terminal(line.rstrip(), limit=_TABLE_LINE_LIMIT)


def _chain_header(rows: Sequence[Row]) -> Iterator[Row]:
    yield _HEADER
    yield from rows


def _table(results: list[tuple[dict[str, Any], ScheduleResult]]) -> str:
    return "\n".join(table_lines([table_row(obj, result) for obj, result in results]))


# A table line holds every target of a binding: longer than an explanation's lines, still bounded.
_TABLE_LINE_LIMIT = 65536


def as_written(obj: dict[str, Any]) -> dict[str, Any]:
    """The binding as the scheduler writes it: condition messages fitted to the CRD's limit (the
    operator's writer does the same), so ``-o json``/``-o yaml`` show what the API would hold."""
    conditions = (obj.get("status") or {}).get("conditions")
    if not isinstance(conditions, list):
        return obj
    fitted = fit_conditions(conditions, types=(SCHEDULED_CONDITION,))
    if all(a is b for a, b in zip(fitted, conditions, strict=True)):
        return obj
    return {**obj, "status": {**obj["status"], "conditions": fitted}}


def _shown(lines: Sequence[str]) -> str:
    """Lines of an explanation, each safe for a terminal: reasons, names and messages come from
    plugins, extenders and the input, and may carry escape sequences, newlines or megabytes."""
    return "\n".join(for_terminal(line) for line in lines)


def explain(
    result: ScheduleResult,
    obj: Mapping[str, Any],
    *,
    unserved: bool = False,
    assumptions: Assumptions | None = None,
    hints: Sequence[Hint] = (),
) -> str:
    """Human-readable account of one binding's attempt: per affinity group, every decision.
    ``unserved``: no profile serves the binding's schedulerName, so it was left alone.
    ``assumptions`` (gate SchedulingOvercommitProtection): the binding's place in the queue and,
    under each candidate, the capacity the bindings scheduled before it hold there. ``hints``: the
    mistakes ``scheduler.diagnosis`` names (a clusterNames entry naming no Cluster, candidates that
    never reported a status), each on a ``hint:`` line before the result."""
    kind = obj.get("kind") or "ResourceBinding"
    lines = [f"{kind} {result.key}"]
    spec = obj.get("spec") or {}
    if unserved:
        lines.append(f"  left alone: no profile serves schedulerName {scheduler_name_of(obj)!r}")
        return _shown(lines)
    lines.append(f"  replicas: {spec.get('replicas', 0)}   strategy: {result.strategy}   mode: {result.mode}")
    if assumptions is not None:
        n = assumptions.bindings
        holders = "1 binding before it holds" if n == 1 else f"{n} bindings before it hold"
        lines.append(
            f"  queue position: {assumptions.position} of {assumptions.total} "
            f"(SchedulingOvercommitProtection: {holders} capacity)"
        )
    if result.profile and result.profile != DEFAULT_SCHEDULER_NAME:
        lines.append(f"  profile: {result.profile}")
    if result.condition is None:
        lines.append("  not scheduled: the binding has no spec.placement")
        return _shown(lines)
    if not result.attempts:
        lines.append(
            "  clusterAffinities is an empty list: nothing to try (reported as success, nothing written)"
        )
    for attempt in result.attempts:
        title = f"affinity group {attempt.affinity_name!r}" if attempt.affinity_name else "placement"
        lines.append(f"  {title}{' (with overflow tiers)' if attempt.overflow else ''}:")
        rejected = [v for v in attempt.verdicts if not v.feasible]
        feasible = [v for v in attempt.verdicts if v.feasible]
        lines.append(f"    filter: {len(feasible)} feasible, {len(rejected)} rejected")
        for v in rejected:
            if v.deleting:
                lines.append(f"      x {v.cluster}: being deleted")
            else:
                lines.append(f"      x {v.cluster}: {v.plugin}: {'; '.join(v.reasons)}")
        for e in attempt.extenders:
            verdict = f"skipped: {e.skipped}" if e.skipped else f"kept {e.kept}, rejected {e.rejected}"
            lines.append(f"    extender {e.extender} (filter): {verdict}")
        for name, text in attempt.post_filter:
            lines.append(f"    post-filter {name}: {text}")
        for skipped in attempt.skipped:
            lines.append(f"    skipped (ignorable) {skipped.plugin} at {skipped.point}: {skipped.reason}")
        if attempt.numbers:
            lines.append("    candidates (sort order: tier, score desc, available desc, name):")
            lines.append(
                "      (allocatable: more replicas the estimators say fit there; available: that plus"
                " the replicas this binding already has there)"
            )
            for n in attempt.numbers:
                if n.plain:
                    per_plugin = ", ".join(f"{p}={s}" for p, s in n.scores)
                else:
                    per_plugin = ", ".join(_part(p) for p in n.parts)
                tier = f" tier={n.overflow_order}" if attempt.overflow else ""
                lines.append(
                    f"      {n.cluster}: score={n.score} ({per_plugin}){tier} "
                    f"allocatable={n.allocatable} available={n.available}"
                )
                held = assumptions.by_cluster.get(n.cluster) if assumptions is not None else None
                if held:
                    lines.append(f"        assumed: {held}")
        if attempt.selected:
            lines.append(f"    selected: {', '.join(attempt.selected)}")
        if attempt.targets is not None:
            division = ", ".join(f"{t.name}:{t.replicas}" for t in attempt.targets) or "<none>"
            lines.append(f"    division: {division}")
        if attempt.error:
            lines.append(f"    failed ({attempt.error_reason}): {attempt.error}")
    lines.extend(f"  hint: {hint.message}" for hint in hints)
    cond = result.condition
    lines.append(f"  => Scheduled={'True' if cond.status else 'False'} reason={cond.reason}: {cond.message}")
    clusters = (obj.get("spec") or {}).get("clusters") or []
    lines.append(
        "  => spec.clusters: "
        + (", ".join(f"{t['name']}:{t.get('replicas', 0)}" for t in clusters) or "<none>")
    )
    observed = (obj.get("status") or {}).get("schedulerObservingAffinityName")
    if observed:
        lines.append(f"  => schedulerObservingAffinityName: {observed}")
    return _shown(lines)


@dataclasses.dataclass(frozen=True, slots=True)
class Assumptions:
    """What a binding was scheduled against, for ``--explain``: its place in the queue (from 1),
    how many bindings held assumptions then, and per cluster what they held (as printed)."""

    position: int
    total: int
    bindings: int
    by_cluster: Mapping[str, str]


@dataclasses.dataclass(slots=True)
class InQueue:
    """The run's assume record and the place of the binding being scheduled."""

    record: AssumeRecord
    total: int
    position: int = 0

    def seen(self) -> Assumptions:
        record = self.record
        held = {name: _held(record, name) for name in record.clusters()}
        return Assumptions(self.position, self.total, len(record), held)


def _held(record: AssumeRecord, cluster: str) -> str:
    """``cpu 30, pods 30 (3 bindings)``: what the bindings assumed on one cluster hold."""
    count = record.count(cluster)
    return f"{format_load(record.load(cluster))} ({count} binding{'' if count == 1 else 's'})"


def _part(part: PluginScore) -> str:
    """One plugin's (or extender's) share of a total: raw[->normalised][ x weight = weighted]."""
    text = f"{'extender ' if part.extender else ''}{part.plugin}={part.raw}"
    if part.normalized != part.raw:
        text += f"->{part.normalized}"
    if part.weight != 1:
        text += f" x{part.weight}={part.weighted}"
    return text
