"""``fleetsched simulate``: the whole scheduling pipeline offline, from YAML files to scheduled bindings.

Owns the command line (files, output format, ``--explain``, plugins or ``--config``, ``--jobs``,
``--progress``), turning loaded objects into a cluster snapshot and bindings (given directly, or
derived from policies and workload templates by the detector), scheduling each binding
independently against the same snapshot (scheduler.md §3.7a) and printing the result. Bad input is
one line on stderr and exit status 2; a binding that cannot be placed is a result, not an error.

Without ``--config`` every binding is scheduled by the one profile the flags describe, whatever its
``spec.schedulerName`` (as before configuration files existed). With ``--config`` each binding goes
to the profile of its ``spec.schedulerName`` (empty: ``default-scheduler``), as the live scheduler
does; a binding no profile serves is printed as given, with a note.

Large inputs, binding by binding: every binding is validated and converted once up front (so bad
input is refused before anything is written), then kept only as the compact JSON of its fields as
given (``BindingDocument``); scheduling decodes, schedules, renders and writes one binding at a
time, in input order, in this process or in ``--jobs`` worker processes that each build the
snapshot once and take bindings in chunks. ``-o json|yaml`` is written as it is produced, with the
same bytes as one dump of the whole ``List``; only the table (its column widths need every row)
keeps one row of text per binding.

With the gate ``SchedulingOvercommitProtection`` (``--feature-gates`` or the file's
``featureGates``) the bindings are not independent: they are scheduled one at a time, in this
process, in the order the live queue takes them (``spec.schedulePriority.priority`` descending,
then input order), each against one assume record (``scheduler/assume.py``, its clock standing
still so nothing expires) that every placement before it fed, as the live scheduler does
(``operator._attempt``). A binding short of capacity says what the record held; ``--explain``
shows each binding's place in the queue and, per candidate cluster, the capacity deducted. The
output keeps input order.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import datetime as dt
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from json.encoder import encode_basestring_ascii as _encode_string  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from fleetsched.api.document import BindingDocument, plain_json_default
from fleetsched.flags import explicit_flags, merge_feature_gates, parse_feature_gates, record_explicit_flags
from fleetsched.scheduler.assume import AssumeRecord, footprint, format_load, left_clusters, name_shortfall
from fleetsched.scheduler.config.types import DEFAULT_SCHEDULER_NAME
from fleetsched.scheduler.convert import (
    ConversionError,
    binding_from_dict,
    cluster_from_dict,
    peer_from_dict,
    status_from_dict,
)
from fleetsched.scheduler.framework import PluginSelectionError, containment
from fleetsched.scheduler.outcome import PluginScore, ScheduleResult, render_into_binding
from fleetsched.scheduler.pipeline import Scheduler, Settings, Snapshot
from fleetsched.scheduler.types import ClusterInfo, PeerBinding, SchedulingBinding

if TYPE_CHECKING:
    from fleetsched.api.load import LoadResult
    from fleetsched.scheduler.config import LoadedConfiguration

__all__ = ["add_arguments", "merge_bindings", "run", "simulate_objects"]

EXIT_BAD_INPUT = 2
_T = TypeVar("_T")
_A = TypeVar("_A")
# Templates derived per call of the detector: its results (models) for one chunk at a time.
DERIVE_CHUNK = 512
# Most bindings per chunk sent to a --jobs worker.
JOB_CHUNK = 64


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="YAML files with Clusters and bindings and/or policies + workloads ('-' = stdin)",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=("table", "yaml", "json"),
        default="table",
        help="table (default): one row per binding; yaml/json: a List of the scheduled bindings",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="print per binding and affinity group: filter verdicts, scores, estimates, division",
    )
    parser.add_argument(
        "--plugins",
        default="*",
        help="scheduler plugins, Karmada syntax: '*' all, '-Name' disables, 'Name' enables "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--enable-empty-workload-propagation",
        action="store_true",
        help="also list selected clusters that got 0 replicas (Karmada flag of the same name)",
    )
    parser.add_argument(
        "--feature-gates",
        default="",
        help="Karmada's gates; those that change results here: CustomizedClusterResourceModeling "
        "(default true), WorkloadAffinity (default false; peers are the input ResourceBindings as "
        "written), MultiplePodTemplatesScheduling (default false), SchedulingOvercommitProtection "
        "(default false; when on, the bindings are scheduled one at a time in queue order, priority "
        "then input order, each against the capacity assumed for those placed before it, so a burst "
        "shows which would fail; --jobs then only derives, and --explain shows the capacity "
        "deducted per cluster; the output keeps input order)",
    )
    parser.add_argument(
        "--config",
        metavar="FILE",
        help="a SchedulerConfiguration file (config.fleetsched.io/v1alpha1, see `fleetsched config "
        "default`): each binding is scheduled by the profile of its spec.schedulerName; --plugins and "
        "--enable-empty-workload-propagation, when given, must agree with it; its featureGates add "
        "to --feature-gates (a gate named in both must agree)",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=1,
        metavar="N",
        help="derive and schedule in N worker processes (0: one per CPU); the output is the same, in "
        "the same order, as with one (default: %(default)s)",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="print the progress line (phase and counts) on stderr even when stderr is not a "
        "terminal; on a terminal it appears by itself when the work takes more than 2 seconds",
    )
    record_explicit_flags(parser)


def _jobs(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (one per CPU) or more, got {value}")
    return value

class _BadInput(Exception):
    pass


def _gates(text: str) -> dict[str, bool]:
    try:
        return parse_feature_gates(text)
    except ValueError as exc:
        raise _BadInput(f"--feature-gates: {exc}") from None


def _dump(model: Any) -> dict[str, Any]:
    # Only fields present in the input: bindings are taken as written, no defaults (§3.7a).
    return model.model_dump(mode="python", by_alias=True, exclude_unset=True)  # type: ignore[no-any-return]


def _binding_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    kind = obj.get("kind") or "ResourceBinding"
    md = obj.get("metadata") or {}
    namespace = "" if kind == "ClusterResourceBinding" else (md.get("namespace") or "")
    return (kind, namespace, md.get("name") or "")


def _ref(key: tuple[str, str, str]) -> str:
    _, namespace, name = key
    return f"{namespace}/{name}" if namespace else name


def merge_bindings(
    explicit: Sequence[Mapping[str, Any]], derived: Sequence[Mapping[str, Any]]
) -> tuple[list[Mapping[str, Any]], list[str]]:
    """The bindings to schedule: every given one, then each derived one not already given.

    A binding given in the input and also derived from a policy + template (same kind, namespace
    and name) is one object in Karmada; the given one wins, because it may carry a previous
    result and status. Returns the bindings and one note per derived binding dropped.
    """
    seen = {_binding_key(b) for b in explicit}
    out: list[Mapping[str, Any]] = list(explicit)
    notes: list[str] = []
    for b in derived:
        key = _binding_key(b)
        if key in seen:
            notes.append(_given_and_derived_note(key))
            continue
        seen.add(key)
        out.append(b)
    return out, notes


def _given_and_derived_note(key: tuple[str, str, str]) -> str:
    return f"{key[0]} {_ref(key)} is given in the input and also derived from a policy; using the given one"


def unknown_target_notes(bindings: Sequence[Mapping[str, Any]], cluster_names: Set[str]) -> list[str]:
    """One note per previous target that names no Cluster of the input.

    Not an error: Karmada meets the same when a member was removed, and simply re-places those
    replicas. But a typo looks the same, so the user hears about it.
    """
    notes = []
    for b in bindings:
        kind, namespace, name = _binding_key(b)
        ref = f"{namespace}/{name}" if namespace else name
        for i, target in enumerate((b.get("spec") or {}).get("clusters") or []):
            if target.get("name") not in cluster_names:
                notes.append(
                    f"{kind} {ref}: spec.clusters[{i}].name: {target.get('name')!r} is not a Cluster of the "
                    "input; treated as a removed cluster (its replicas are placed again)"
                )
    return notes


def _check_inventory_clusters(loaded: Any, cluster_names: Set[str]) -> None:
    """Nodes assigned to a member cluster the input does not define are a mistake, not a what-if."""
    from fleetsched.api.load import LoadError
    from fleetsched.estimator.inprocess import MEMBER_CLUSTER_ANNOTATION, member_cluster_of

    for item in loaded.objects:
        if getattr(item.obj, "kind", None) != "Node":
            continue
        name = member_cluster_of(item.obj.raw)
        if name and name not in cluster_names:
            raise LoadError(
                f"unknown cluster {name!r}: no Cluster of that name in the input",
                source=item.source,
                path=f"metadata.annotations[{MEMBER_CLUSTER_ANNOTATION}]",
            )


def scheduler_name_of(binding: Mapping[str, Any]) -> str:
    """The profile a binding asks for: ``spec.schedulerName``, Karmada's default when empty."""
    return (binding.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME


def simulate_objects(
    clusters: Sequence[Mapping[str, Any]],
    bindings: Sequence[Mapping[str, Any]],
    scheduler: Scheduler,
    *,
    now: dt.datetime | None = None,
    progress: Any = None,
    profiles: Mapping[str, Scheduler] | None = None,
) -> list[tuple[dict[str, Any], ScheduleResult]]:
    """Schedule every JSON-shaped binding independently against one snapshot of ``clusters``.

    With ``profiles`` (schedulerName -> Scheduler) each binding is scheduled by its profile's
    scheduler, and one that no profile serves is returned as given, with no condition. (The
    library form, every result in a list; the command streams, binding by binding.)
    """
    peers: tuple[PeerBinding, ...] = ()
    if scheduler.settings.workload_affinity:
        # Workload (anti-)affinity peers: the ResourceBindings as given (ClusterResourceBindings are
        # not tracked, §11).
        peers = tuple(peer_from_dict(b) for b in bindings if b.get("kind") != "ClusterResourceBinding")
    snapshot = Snapshot((cluster_from_dict(c) for c in clusters), peers)
    now = now or dt.datetime.now(dt.UTC)
    out = []
    for i, raw in enumerate(bindings):
        chosen = scheduler if profiles is None else profiles.get(scheduler_name_of(raw))
        if chosen is None:
            out.append((dict(raw), ScheduleResult(_ref(_binding_key(raw)), None, None, None, False)))
        else:
            result = chosen.schedule(binding_from_dict(raw), status_from_dict(raw), snapshot)
            out.append((render_into_binding(raw, result, now=now), result))
        if progress is not None:
            progress(i + 1, len(bindings))
    return out


_json_default = plain_json_default


def _target(t: Mapping[str, Any]) -> str:
    return f"{t['name']}:{t['replicas']}" if "replicas" in t else str(t["name"])


_Row = tuple[str, str, str, str, str, str, str]
_HEADER: _Row = ("KIND", "NAMESPACE", "NAME", "SCHEDULED", "REASON", "AFFINITY", "CLUSTERS")


def _table_row(obj: Mapping[str, Any], result: ScheduleResult) -> _Row:
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


def _table_lines(rows: Sequence[_Row]) -> Iterator[str]:
    """The table, line by line: every column but the last padded to its widest cell."""
    widths = [len(h) for h in _HEADER[:-1]]
    for row in rows:
        for i in range(len(widths)):
            if len(row[i]) > widths[i]:
                widths[i] = len(row[i])
    for r in _chain_header(rows):
        line = "   ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)) + "   " + r[-1]
        yield line.rstrip()


def _chain_header(rows: Sequence[_Row]) -> Iterator[_Row]:
    yield _HEADER
    yield from rows


def _table(results: list[tuple[dict[str, Any], ScheduleResult]]) -> str:
    return "\n".join(_table_lines([_table_row(obj, result) for obj, result in results]))


def explain(
    result: ScheduleResult,
    obj: Mapping[str, Any],
    *,
    unserved: bool = False,
    assumptions: _Assumptions | None = None,
) -> str:
    """Human-readable account of one binding's attempt: per affinity group, every decision.
    ``unserved``: no profile serves the binding's schedulerName, so it was left alone.
    ``assumptions`` (gate SchedulingOvercommitProtection): the binding's place in the queue and,
    under each candidate, the capacity the bindings scheduled before it hold there."""
    kind = obj.get("kind") or "ResourceBinding"
    lines = [f"{kind} {result.key}"]
    spec = obj.get("spec") or {}
    if unserved:
        lines.append(f"  left alone: no profile serves schedulerName {scheduler_name_of(obj)!r}")
        return "\n".join(lines)
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
        return "\n".join(lines)
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
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Progress


class Progress:
    """One status line on stderr for long runs: the phase and its counts.

    Shown on a terminal once the run has taken more than ``delay`` seconds (redrawn in place, at
    most ten times a second), or whenever asked (``--progress``: no delay; on a file or pipe one
    line per phase and at most one a second). Silent otherwise: a pipe never sees it by default.
    """

    DELAY = 2.0

    def __init__(self, stream: TextIO, *, enabled: bool, delay: float | None = None) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = _isatty(stream)
        self.delay = self.DELAY if delay is None else delay
        self.interval = 0.1 if self.tty else 1.0
        self.started = time.monotonic()
        self.phase_name = ""
        self.done = 0
        self.total: int | None = None
        self.unit = ""
        self._last = 0.0
        self._visible = False  # a line is on the terminal now (tty only)
        self._shown = False  # anything was ever printed

    def phase(self, name: str, *, total: int | None = None, unit: str = "") -> None:
        self.phase_name, self.done, self.total, self.unit = name, 0, total, unit
        self._draw(force=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw(force=self.total is not None and self.done >= self.total)

    def clear(self) -> None:
        """Take the line off the terminal before something else is written there."""
        if self._visible:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._visible = False

    def finish(self, summary: str) -> None:
        """The last line, kept: only when a line was shown before."""
        if not self.enabled or not self._shown:
            return
        self.clear()
        self.stream.write(f"fleetsched simulate: {summary} in {time.monotonic() - self.started:.1f} s\n")
        self.stream.flush()

    def _draw(self, *, force: bool) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < self.delay or (not force and now - self._last < self.interval):
            return
        self._last = now
        count = str(self.done) if self.done else ""
        if self.total is not None:
            count = f"{self.done}/{self.total}"
        text = f"fleetsched simulate: {self.phase_name}" + (f" {count}" if count else "")
        text += f" {self.unit}" if self.unit and count else ""
        if self.tty:
            self.stream.write(f"\r{text}\x1b[K")
            self._visible = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self._shown = True


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# Planning: every binding checked and compacted before anything is scheduled or written


@dataclasses.dataclass(slots=True)
class _Plan:
    """What is scheduled, in order (the compact JSON of each binding, and whether no profile serves
    it), the workload-affinity peers, and the notes for stderr."""

    work: list[tuple[bytes, bool]] = dataclasses.field(default_factory=list)
    peers: list[PeerBinding] = dataclasses.field(default_factory=list)
    merge_notes: list[str] = dataclasses.field(default_factory=list)
    unserved_notes: list[str] = dataclasses.field(default_factory=list)
    unknown_notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        return [*self.merge_notes, *self.unserved_notes, *self.unknown_notes]


_Key = tuple[str, str, str]


@dataclasses.dataclass(frozen=True, slots=True)
class _Admitted:
    """One binding checked for the plan: its compact JSON, whether no profile serves it, its
    workload-affinity peer, and its notes. Small and picklable (it comes back from workers)."""

    data: bytes
    unserved: bool
    peer: PeerBinding | None
    unknown_notes: tuple[str, ...]
    unserved_note: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class _Checks:
    """What checking a binding needs to know about the run."""

    cluster_names: Set[str]
    profiles: Mapping[str, Scheduler] | None
    workload_affinity: bool

    def admit(self, raw: Mapping[str, Any], data: bytes | None) -> _Admitted:
        """Converted once now, so that a conversion error is refused before any output."""
        binding_from_dict(raw)
        status_from_dict(raw)
        peer = None
        if self.workload_affinity and raw.get("kind") != "ClusterResourceBinding":
            peer = peer_from_dict(raw)
        unserved = self.profiles is not None and scheduler_name_of(raw) not in self.profiles
        unserved_note = None
        if unserved:
            key, name = _binding_key(raw), scheduler_name_of(raw)
            unserved_note = f"{key[0]} {_ref(key)}: no profile serves schedulerName {name!r}; left alone"
        if data is None:
            md = raw.get("metadata") or {}
            namespace, name = md.get("namespace"), md.get("name") or ""
            data = BindingDocument.of_fields(raw, namespace=namespace, name=name).data
        unknown = tuple(unknown_target_notes([raw], self.cluster_names))
        return _Admitted(data, unserved, peer, unknown, unserved_note)


# A derived binding as planning needs it: its key, and the binding checked (None: given in the
# input as well, so not checked; a string: the one-line error checking it gave).
_Derived = tuple[_Key, "_Admitted | str | None"]


def _plan(
    explicit: Iterable[Any],
    derived: Callable[[_Checks, Set[_Key]], Iterable[_Derived]],
    *,
    checks: _Checks,
    progress: Progress,
) -> _Plan:
    """Given bindings, then derived ones not given (``merge_bindings``), each checked once now
    (``_Checks.admit``), then kept as compact JSON only. ``derived(checks, given_keys)`` yields the
    derived bindings in order, checked (except those given), here or in worker processes."""
    plan = _Plan()
    seen: set[_Key] = set()

    def take(admitted: _Admitted) -> None:
        if admitted.peer is not None:
            plan.peers.append(admitted.peer)
        plan.unknown_notes.extend(admitted.unknown_notes)
        if admitted.unserved_note is not None:
            plan.unserved_notes.append(admitted.unserved_note)
        plan.work.append((admitted.data, admitted.unserved))

    for b in explicit:
        if isinstance(b, BindingDocument):
            raw, data = b.to_dict(), b.data
        else:
            raw, data = _dump(b), None
        seen.add(_binding_key(raw))
        take(checks.admit(raw, data))
        progress.advance()
    for key, admitted in derived(checks, frozenset(seen)):
        if key in seen:  # given in the input, or derived twice (names differing in case only)
            plan.merge_notes.append(_given_and_derived_note(key))
            continue
        seen.add(key)
        if isinstance(admitted, str):
            raise _BadInput(admitted)
        assert admitted is not None
        take(admitted)
    return plan


@dataclasses.dataclass(frozen=True, slots=True)
class _Derivation:
    """The detector's inputs, once: templates, admitted and indexed policies, PriorityClasses."""

    templates: Sequence[Any]
    propagation_policies: Sequence[Any]
    cluster_propagation_policies: Sequence[Any]
    index: Any
    priority_classes: Callable[[str], int | None]

    def derive_chunk(self, start: int, checks: _Checks, given: Set[_Key]) -> list[_Derived]:
        """The bindings of templates[start : start + DERIVE_CHUNK], each checked unless given."""
        from fleetsched.detector import derive

        derivation = derive(
            self.templates[start : start + DERIVE_CHUNK],
            self.propagation_policies,
            self.cluster_propagation_policies,
            priority_class_value=self.priority_classes,
            index=self.index,
            as_fields=True,
        )
        out: list[_Derived] = []
        for raw in derivation.binding_fields:
            key = _binding_key(raw)
            if key in given:
                out.append((key, None))
                continue
            try:
                out.append((key, checks.admit(raw, None)))
            except ConversionError as exc:
                out.append((key, str(exc)))
        return out


def _derivation(loaded: LoadResult, progress: Progress) -> _Derivation | None:
    """Policies admitted (as the API server and Karmada's webhooks would) and indexed once, what
    each puts into its bindings computed once; None when there is nothing to derive."""
    if not loaded.policies or not loaded.templates:
        return None
    try:
        from fleetsched.detector import admit_offline
        from fleetsched.detector.derive import priority_class_values
        from fleetsched.detector.index import PolicySet
    except ImportError:
        raise _BadInput("policies and workload templates need the detector, which is not available") from None
    from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy

    templates = loaded.templates
    progress.phase("admitting policies", total=len(loaded.policies), unit="policies")
    policies = []
    for p in loaded.policies:
        policies.append(admit_offline(p, source=loaded.source_of(p)))
        progress.advance()
    pps = [p for p in policies if isinstance(p, PropagationPolicy)]
    cpps = [p for p in policies if isinstance(p, ClusterPropagationPolicy)]
    return _Derivation(templates, pps, cpps, PolicySet(pps, cpps), priority_class_values(templates))


def _derived_bindings(
    loaded: LoadResult, progress: Progress, *, jobs: int
) -> Callable[[_Checks, Set[_Key]], Iterator[_Derived]]:
    """The bindings the detector derives from the policies and workload templates of the input,
    in their JSON form (no binding model is built, only what its dump would be), a chunk of
    templates at a time: the same bindings, in the same order, as ``derive_bindings(loaded)``.

    With ``jobs`` > 1 (and fork), the chunks are derived and checked in worker processes forked
    once the input is loaded, so they read the templates and policies without any pickling;
    only the compact results come back, in order."""

    def derived(checks: _Checks, given: Set[_Key]) -> Iterator[_Derived]:
        derivation = _derivation(loaded, progress)
        if derivation is None:
            return
        total = len(derivation.templates)
        progress.phase("deriving bindings", total=total, unit="templates")
        starts = range(0, total, DERIVE_CHUNK)
        if jobs <= 1 or len(starts) < 2 or not _can_fork():
            for start in starts:
                yield from derivation.derive_chunk(start, checks, given)
                progress.advance(min(DERIVE_CHUNK, total - start))
            return
        global _DERIVING
        _DERIVING = (derivation, checks, given)
        try:
            chunks = _in_workers(_derive_chunk_in_worker, starts, jobs=jobs)
            for start, chunk in zip(starts, chunks, strict=True):
                yield from chunk
                progress.advance(min(DERIVE_CHUNK, total - start))
        finally:
            _DERIVING = None

    return derived


# What forked derivation workers read (set in the parent just before they are forked).
_DERIVING: tuple[_Derivation, _Checks, Set[_Key]] | None = None


def _derive_chunk_in_worker(start: int) -> list[_Derived]:
    assert _DERIVING is not None, "forked from a parent that set _DERIVING"
    derivation, checks, given = _DERIVING
    return derivation.derive_chunk(start, checks, given)


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def _in_workers(
    function: Callable[[_A], _T],
    arguments: Iterable[_A],
    *,
    jobs: int,
    method: str = "fork",
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> Iterator[_T]:
    """``function(a)`` for each argument in ``jobs`` processes (started by ``method``, each first
    running ``initializer(*initargs)``, Ctrl-C left to the parent); results in order, through a
    bounded window so neither side runs far ahead. A worker that dies is a ``WorkerError``."""
    import concurrent.futures
    import multiprocessing
    from concurrent.futures.process import BrokenProcessPool

    pool = concurrent.futures.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context(method),
        initializer=_ignore_interrupts,
        initargs=(initializer, initargs),
    )
    pending: collections.deque[concurrent.futures.Future[_T]] = collections.deque()
    try:
        for argument in arguments:
            pending.append(pool.submit(function, argument))
            if len(pending) >= 4 * jobs:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    except BrokenProcessPool:
        raise WorkerError(
            "a --jobs worker process died (out of memory or killed?); try fewer --jobs"
        ) from None
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


def _ignore_interrupts(
    initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = ()
) -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if initializer is not None:
        initializer(*initargs)


# ---------------------------------------------------------------------------------------------
# Scheduling, binding by binding, here or in worker processes


@dataclasses.dataclass(frozen=True, slots=True)
class _Job:
    """Everything a worker needs to schedule and render any binding of the run (fork: inherited;
    spawn: pickled once per worker)."""

    clusters: tuple[ClusterInfo, ...]
    peers: tuple[PeerBinding, ...]
    scheduler: Scheduler
    profiles: Mapping[str, Scheduler] | None
    now: dt.datetime
    output: str
    explain: bool
    # gate SchedulingOvercommitProtection: in queue order, in this process, each binding against
    # the assumptions of those scheduled before it
    overcommit_protection: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class _Rendered:
    """One scheduled binding, rendered: its text in the output (json/yaml), its table row, and its
    explanation, each only when asked for."""

    item: str | None
    row: _Row | None
    explanation: str | None


class WorkerError(Exception):
    """A binding could not be scheduled; the message is one line naming it."""


_STATE: tuple[_Job, Snapshot] | None = None


def _start(job: _Job) -> None:
    """Worker initializer (and the in-process path): the snapshot, built once per process."""
    global _STATE
    _STATE = (job, Snapshot(job.clusters, job.peers))


def _schedule_chunk(chunk: Sequence[tuple[bytes, bool]]) -> list[_Rendered]:
    assert _STATE is not None, "_start() first"
    job, snapshot = _STATE
    return [_schedule_data(job, snapshot, data, unserved) for data, unserved in chunk]


def _schedule_data(
    job: _Job, snapshot: Snapshot, data: bytes, unserved: bool, queue: _InQueue | None = None
) -> _Rendered:
    """One compact binding scheduled and rendered; any failure is a WorkerError naming it."""
    raw = json.loads(data)
    try:
        return _schedule_one(job, snapshot, raw, unserved, queue)
    except (ConversionError, PluginSelectionError, _BadInput) as exc:
        raise WorkerError(str(exc)) from None
    except Exception as exc:  # a bug: one line naming the binding, not a traceback from a worker
        key = _binding_key(raw)
        raise WorkerError(f"{key[0]} {_ref(key)}: scheduling failed: {type(exc).__name__}: {exc}") from None


def _schedule_one(
    job: _Job, snapshot: Snapshot, raw: dict[str, Any], unserved: bool, queue: _InQueue | None = None
) -> _Rendered:
    chosen = job.scheduler if job.profiles is None else job.profiles.get(scheduler_name_of(raw))
    seen: _Assumptions | None = None
    if unserved or chosen is None:
        obj: dict[str, Any] = raw
        result = ScheduleResult(_ref(_binding_key(raw)), None, None, None, False)
    elif queue is None:
        result = chosen.schedule(binding_from_dict(raw), status_from_dict(raw), snapshot)
        obj = render_into_binding(raw, result, now=job.now)
    else:
        # SchedulingOvercommitProtection: against the capacity the bindings before it took.
        binding = binding_from_dict(raw)
        overlaid = queue.record.overlay(snapshot)
        assert isinstance(overlaid, Snapshot)
        if job.explain:
            seen = queue.seen()
        result = chosen.schedule(binding, status_from_dict(raw), overlaid)
        result = _assume(queue.record, raw, binding, result, overlaid.names)
        obj = render_into_binding(raw, result, now=job.now)
    item = None
    if job.output == "json":
        item = _json_item(obj)
    elif job.output == "yaml":
        import yaml

        # Through JSON: plain types only (times and quantities as text), then YAML.
        plain = json.loads(json.dumps(obj, default=_json_default))
        item = yaml.safe_dump([plain], sort_keys=False)
    return _Rendered(
        item=item,
        row=_table_row(obj, result) if job.output == "table" else None,
        explanation=(
            explain(result, obj, unserved=unserved or chosen is None, assumptions=seen)
            if job.explain
            else None
        ),
    )


class _NotPlain(Exception):
    pass


def _json_item(obj: Any) -> str:
    """``obj`` as an item of the List: ``json.dumps(obj, indent=2)`` four spaces in, the same bytes.

    The standard encoder writes indented JSON in pure Python, generator by generator; this does the
    same for plain values (what a rendered binding is made of) about three times faster, and hands
    anything else back to the standard encoder."""
    out: list[str] = []
    try:
        _indented(obj, out, "    ")
    except (_NotPlain, RecursionError):
        return json.dumps(obj, indent=2, default=_json_default).replace("\n", "\n    ")
    return "".join(out)


def _indented(value: Any, out: list[str], level: str) -> None:
    kind = type(value)
    if kind is str:
        out.append(_encode_string(value))
    elif kind is dict:
        if not value:
            out.append("{}")
            return
        inner = level + "  "
        separator = "{\n" + inner
        for key, item in value.items():
            if type(key) is not str:
                raise _NotPlain
            out.append(separator)
            out.append(_encode_string(key))
            out.append(": ")
            _indented(item, out, inner)
            separator = ",\n" + inner
        out.append("\n" + level + "}")
    elif kind is list:
        if not value:
            out.append("[]")
            return
        inner = level + "  "
        separator = "[\n" + inner
        for item in value:
            out.append(separator)
            _indented(item, out, inner)
            separator = ",\n" + inner
        out.append("\n" + level + "]")
    elif kind is int:
        out.append(int.__repr__(value))
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif value is None:
        out.append("null")
    elif kind is float and value == value and value not in (float("inf"), float("-inf")):
        out.append(float.__repr__(value))
    else:  # NaN, infinities, times, quantities, tuples: the standard encoder's business
        raise _NotPlain


def _chunks(work: Sequence[tuple[bytes, bool]], size: int) -> Iterator[Sequence[tuple[bytes, bool]]]:
    for start in range(0, len(work), size):
        yield work[start : start + size]


def _schedule_all(job: _Job, work: Sequence[tuple[bytes, bool]], *, jobs: int) -> Iterator[list[_Rendered]]:
    """Rendered bindings chunk by chunk, in input order, from ``jobs`` processes (1: this one)."""
    if job.overcommit_protection:
        yield from _schedule_in_queue_order(job, work)
        return
    if jobs <= 1 or not work:
        _start(job)
        for chunk in _chunks(work, JOB_CHUNK):
            yield _schedule_chunk(chunk)
        return
    import multiprocessing

    # Small enough that every worker gets several chunks, at most JOB_CHUNK bindings each.
    size = max(1, min(JOB_CHUNK, len(work) // (jobs * 4)))
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    yield from _in_workers(
        _schedule_chunk, _chunks(work, size), jobs=jobs, method=method, initializer=_start, initargs=(job,)
    )


# ---------------------------------------------------------------------------------------------
# Gate SchedulingOvercommitProtection: the queue's order, one assume record for the run

OVERCOMMIT_GATE = "SchedulingOvercommitProtection"


@dataclasses.dataclass(frozen=True, slots=True)
class _Assumptions:
    """What a binding was scheduled against, for ``--explain``: its place in the queue (from 1),
    how many bindings held assumptions then, and per cluster what they held (as printed)."""

    position: int
    total: int
    bindings: int
    by_cluster: Mapping[str, str]


@dataclasses.dataclass(slots=True)
class _InQueue:
    """The run's assume record and the place of the binding being scheduled."""

    record: AssumeRecord
    total: int
    position: int = 0

    def seen(self) -> _Assumptions:
        record = self.record
        held = {name: _held(record, name) for name in record.clusters()}
        return _Assumptions(self.position, self.total, len(record), held)


def _held(record: AssumeRecord, cluster: str) -> str:
    """``cpu 30, pods 30 (3 bindings)``: what the bindings assumed on one cluster hold."""
    count = record.count(cluster)
    return f"{format_load(record.load(cluster))} ({count} binding{'' if count == 1 else 's'})"


def _priority(data: bytes) -> int:
    """``spec.schedulePriority.priority`` of a compact binding: the live queue's first key."""
    if b'"schedulePriority"' not in data:
        return 0
    spec = json.loads(data).get("spec") or {}
    return int((spec.get("schedulePriority") or {}).get("priority") or 0)


def queue_order(work: Sequence[tuple[bytes, bool]]) -> list[int]:
    """The positions of ``work`` in the order the live queue takes them (controller/runtime/queue.py):
    priority descending, then the order they entered it (here: input order)."""
    priorities = [_priority(data) for data, _ in work]
    return sorted(range(len(work)), key=lambda i: -priorities[i])


def _assume(
    record: AssumeRecord,
    raw: Mapping[str, Any],
    binding: SchedulingBinding,
    result: ScheduleResult,
    clusters: Sequence[str],
) -> ScheduleResult:
    """What the live scheduler does after an attempt (``operator._attempt``): a new placement's
    footprint assumed on its clusters (clusters that left it released; non-workloads and
    ClusterResourceBindings hold nothing); an unchanged one assumes nothing (nothing is written);
    a binding short of capacity is told what the record held."""
    if not result.scheduled or result.clusters is None:
        return name_shortfall(record, result, clusters)
    if result.clusters != binding.clusters:
        footprints = footprint(binding, result.clusters)
        record.observe_schedule(binding.key, footprints, left=left_clusters(binding, result.clusters))
    return result


def _schedule_in_queue_order(job: _Job, work: Sequence[tuple[bytes, bool]]) -> Iterator[list[_Rendered]]:
    """Every binding in queue order, in this process, against one assume record that the ones
    before it fed; rendered bindings come out in input order, as soon as those before them are
    done (at once when the queue's order is the input's)."""
    snapshot = Snapshot(job.clusters, job.peers)
    # A clock that stands still: no assumption expires during a simulation.
    queue = _InQueue(AssumeRecord(clock=lambda: 0.0), len(work))
    done: dict[int, _Rendered] = {}
    ready: list[_Rendered] = []
    written = 0
    for position, i in enumerate(queue_order(work), start=1):
        data, unserved = work[i]
        queue.position = position
        done[i] = _schedule_data(job, snapshot, data, unserved, queue)
        while written in done:
            ready.append(done.pop(written))
            written += 1
        if len(ready) >= JOB_CHUNK:
            yield ready
            ready = []
    if ready:
        yield ready


# ---------------------------------------------------------------------------------------------
# Output, written as bindings are scheduled

_JSON_HEAD = '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": ['


class _Writer:
    """Writes the output as results arrive, with the bytes one dump of the whole result would have
    had: ``-o json`` as ``json.dumps(List, indent=2)``, ``-o yaml`` as ``yaml.safe_dump(List)``,
    the table (after ``--explain`` blocks, on stdout) once every row is known."""

    def __init__(
        self, *, output: str, explain: bool, stdout: TextIO, stderr: TextIO, progress: Progress
    ) -> None:
        self.output = output
        self.explain = explain
        self.stdout = stdout
        # Keep machine-readable output on stdout clean: with -o json/yaml, explanations go to stderr.
        self.explain_stream = stdout if output == "table" else stderr
        self.progress = progress
        self.terminal = _isatty(stdout) or self.explain_stream is stderr
        self.items = 0
        self.explanations = 0
        self.rows: list[_Row] = []

    def begin(self) -> None:
        if self.output == "json":
            self.stdout.write(_JSON_HEAD)
        elif self.output == "yaml":
            self.stdout.write("apiVersion: v1\nkind: List\n")

    def add(self, rendered: Sequence[_Rendered]) -> None:
        if self.terminal:
            self.progress.clear()
        if self.explain:
            parts = []
            for r in rendered:
                parts.append(("\n\n" if self.explanations else "") + str(r.explanation))
                self.explanations += 1
            self.explain_stream.write("".join(parts))
        if self.output == "json":
            parts = []
            for r in rendered:
                parts.append((",\n    " if self.items else "\n    ") + str(r.item))
                self.items += 1
            self.stdout.write("".join(parts))
        elif self.output == "yaml":
            parts = []
            for r in rendered:
                parts.append(("" if self.items else "items:\n") + str(r.item))
                self.items += 1
            self.stdout.write("".join(parts))
        else:
            self.rows.extend(r.row for r in rendered if r.row is not None)

    def end(self) -> None:
        self.progress.clear()
        if self.explain:
            self.explain_stream.write("\n")
            if self.output == "table":
                self.explain_stream.write("\n")
        if self.output == "json":
            self.stdout.write("\n  ]\n}\n" if self.items else "]\n}\n")
        elif self.output == "yaml":
            if not self.items:
                self.stdout.write("items: []\n")
        else:
            self.progress.phase("writing the table", total=len(self.rows), unit="rows")
            self.progress.clear()
            for line in _table_lines(self.rows):
                self.stdout.write(line + "\n")
        self.stdout.flush()


def _configuration(
    args: argparse.Namespace, gates: dict[str, bool]
) -> tuple[LoadedConfiguration | None, dict[str, bool]]:
    """The ``--config`` file resolved and checked against the flags given beside it (None without
    one), and the feature gates: ``gates`` (``--feature-gates``) and the file's ``featureGates``."""
    if not args.config:
        return None, gates
    from fleetsched.scheduler import config

    try:
        loaded = config.load_configuration(
            args.config, workload_affinity=gates.get("WorkloadAffinity", False)
        )
    except (config.ConfigError, config.PluginLoadError) as exc:
        raise _BadInput(str(exc)) from None
    configuration = loaded.configuration
    try:
        gates = merge_feature_gates(gates, configuration.feature_gates, source=args.config)
    except ValueError as exc:
        raise _BadInput(str(exc)) from None
    workload_affinity = gates.get("WorkloadAffinity", False)
    explicit = explicit_flags(args)
    if "plugins" in explicit:
        try:
            wanted = config.default_profile(args.plugins, workload_affinity=workload_affinity).plugins
        except ValueError as exc:
            raise _BadInput(f"--plugins: {exc}") from None
        for i, profile in enumerate(configuration.profiles):
            if dict(profile.plugins) != dict(wanted):
                raise _BadInput(
                    f"--plugins={args.plugins} contradicts {args.config}: profiles[{i}] "
                    f"({profile.scheduler_name}) enables other plugins; set the plugins in one place"
                )
    in_file = configuration.enable_empty_workload_propagation
    if "enable_empty_workload_propagation" in explicit and args.enable_empty_workload_propagation != in_file:
        raise _BadInput(
            f"--enable-empty-workload-propagation contradicts {args.config} "
            f"(enableEmptyWorkloadPropagation: {str(in_file).lower()}); set it in one place"
        )
    return loaded, gates


def _profile_schedulers(loaded: LoadedConfiguration, base: Settings, **options: Any) -> dict[str, Scheduler]:
    """One real Scheduler (Framework) per profile, out-of-tree plugins merged into the registry."""
    from fleetsched.scheduler.profiles import ProfileError, profile_schedulers

    configuration = loaded.configuration
    try:
        return profile_schedulers(
            configuration.profiles,
            base,
            out_of_tree=loaded.out_of_tree,
            enable_empty_workload_propagation=configuration.enable_empty_workload_propagation,
            **options,
        )
    except ProfileError as exc:
        raise _BadInput(str(exc)) from None


def _clock() -> dt.datetime:
    """The one time of the run: every binding scheduled "now" carries the same timestamps."""
    return dt.datetime.now(dt.UTC)


def _job_count(requested: int) -> int:
    if requested:
        return requested
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _extenders(loaded: LoadedConfiguration | None) -> tuple[Mapping[str, Sequence[Any]], Sequence[Any]]:
    """The file's HTTP(S) extenders, built once (imported only when a profile lists one)."""
    if loaded is None or not any(p.extenders for p in loaded.configuration.profiles):
        return {}, ()
    from fleetsched.extender import ExtenderConfigError, build_profile_extenders

    try:
        return build_profile_extenders(loaded.configuration.profiles)
    except ExtenderConfigError as exc:
        raise _BadInput(str(exc)) from None


def _part(part: PluginScore) -> str:
    """One plugin's (or extender's) share of a total: raw[->normalised][ x weight = weighted]."""
    text = f"{'extender ' if part.extender else ''}{part.plugin}={part.raw}"
    if part.normalized != part.raw:
        text += f"->{part.normalized}"
    if part.weight != 1:
        text += f" x{part.weight}={part.weighted}"
    return text


def run(args: argparse.Namespace) -> int:
    # A plugin's SystemExit/KeyboardInterrupt fails its binding; Ctrl-C (marked as the process's own
    # shutdown by this block's SIGINT handler) still stops the run.
    with containment.interrupts_shut_down():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from fleetsched.api.load import LoadError

    progress = Progress(
        sys.stderr, enabled=args.progress or _isatty(sys.stderr), delay=0.0 if args.progress else None
    )
    all_extenders: Sequence[Any] = ()
    try:
        configuration, gates = _configuration(args, _gates(args.feature_gates))
        settings = Settings(
            plugins=args.plugins,
            enable_empty_workload_propagation=args.enable_empty_workload_propagation,
            customized_cluster_resource_modeling=gates.get("CustomizedClusterResourceModeling", True),
            workload_affinity=gates.get("WorkloadAffinity", False),
            multiple_pod_templates=gates.get("MultiplePodTemplatesScheduling", False),
        )
        extenders, all_extenders = _extenders(configuration)
        profiles = (
            None
            if configuration is None
            else _profile_schedulers(configuration, settings, extenders=extenders)
        )
        scheduler = Scheduler(settings=settings) if profiles is None else next(iter(profiles.values()))
        jobs = _job_count(args.jobs)
        # An extender's connection pool runs on a thread of this process, which a forked worker
        # would not have: with extenders, one process derives and schedules.
        ignore_jobs = bool(all_extenders) and jobs > 1
        jobs = 1 if ignore_jobs else jobs
        overcommit = gates.get(OVERCOMMIT_GATE, False)
        with _collector_paused():
            plan, clusters, scheduler, profiles = _load_and_plan(
                args, scheduler, profiles, configuration, settings, extenders, progress, jobs=jobs
            )
        progress.clear()
        for note in plan.notes:
            print(f"fleetsched simulate: note: {note}", file=sys.stderr)
        job = _Job(
            clusters=clusters,
            peers=tuple(plan.peers),
            scheduler=scheduler,
            profiles=profiles,
            now=_clock(),
            output=args.output,
            explain=args.explain,
            overcommit_protection=overcommit,
        )
        work = plan.work
        del plan
        if ignore_jobs:
            print("fleetsched simulate: note: --jobs ignored: the profiles call HTTP extenders",
                  file=sys.stderr)
        elif overcommit and jobs > 1:
            # Derivation used the workers; scheduling is one sequence, each binding after the last.
            print(f"fleetsched simulate: note: --jobs ignored for scheduling: with {OVERCOMMIT_GATE} each "
                  "binding is scheduled against the assumptions of those before it, one at a time",
                  file=sys.stderr)
            jobs = 1
        _write(job, work, jobs=jobs, progress=progress)
    except (LoadError, ConversionError, PluginSelectionError, _BadInput, WorkerError) as e:
        progress.clear()
        print(f"fleetsched simulate: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours; silence the final flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        gc.unfreeze()  # what _collector_paused froze: collectable again (in-process callers)
        for extender in all_extenders:  # their connection pools
            extender.close()
    return 0


def _load_and_plan(
    args: argparse.Namespace,
    scheduler: Scheduler,
    profiles: dict[str, Scheduler] | None,
    configuration: LoadedConfiguration | None,
    settings: Settings,
    extenders: Mapping[str, Sequence[Any]],
    progress: Progress,
    *,
    jobs: int,
) -> tuple[_Plan, tuple[ClusterInfo, ...], Scheduler, dict[str, Scheduler] | None]:
    """Read the files and check and compact every binding (given or derived): the plan, the
    clusters, and the schedulers (node-accurate when the input has Nodes). What is loaded goes
    when this returns; from then on a binding is its compact JSON until it is scheduled."""
    from fleetsched.api.load import load_files

    progress.phase("loading", unit="documents")
    loaded = load_files(args.files, compact_bindings=True, progress=progress.advance)
    # Nodes (and Pods) of member clusters in the input make those clusters node-accurate.
    cluster_names = {c.metadata.name for c in loaded.clusters}
    if loaded.nodes:  # imported only then: it brings numpy along
        from fleetsched.estimator.inprocess import InventoryEstimator, inventories_from_objects

        inventories = inventories_from_objects(loaded.nodes, loaded.pods)
        _check_inventory_clusters(loaded, cluster_names)
        if inventories:
            estimator = InventoryEstimator(inventories)
            scheduler = Scheduler(settings=scheduler.settings, estimators=[estimator])
            if configuration is not None:
                profiles = _profile_schedulers(
                    configuration, settings, estimators=[estimator], extenders=extenders
                )
    clusters = tuple(cluster_from_dict(_dump(c)) for c in loaded.clusters)
    explicit = loaded.bindings
    progress.phase("checking bindings", total=len(explicit), unit="bindings")
    checks = _Checks(cluster_names, profiles, scheduler.settings.workload_affinity)
    plan = _plan(explicit, _derived_bindings(loaded, progress, jobs=jobs), checks=checks, progress=progress)
    return plan, clusters, scheduler, profiles


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the input is loaded and planned.

    Those phases build a large heap of small containers that lives until they end and holds no
    cycles; the collector would only traverse it again and again as it grows (a sixth of the
    CPU on 50,000 workloads). What they leave is collected once, then frozen, so the collections
    while bindings are scheduled look at the new objects only (and forked --jobs workers share
    those pages instead of copying them).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
    gc.collect()
    gc.freeze()


def _write(job: _Job, work: list[tuple[bytes, bool]], *, jobs: int, progress: Progress) -> None:
    """Schedule ``work`` and write each result as it comes, in input order."""
    writer = _Writer(
        output=job.output, explain=job.explain, stdout=sys.stdout, stderr=sys.stderr, progress=progress
    )
    progress.phase("scheduling", total=len(work), unit="bindings")
    started = False
    for rendered in _schedule_all(job, work, jobs=jobs):
        if not started:  # nothing on stdout before the first binding is scheduled
            writer.begin()
            started = True
        writer.add(rendered)
        progress.advance(len(rendered))
    if not started:
        writer.begin()
    writer.end()
    progress.finish(f"scheduled {len(work)} bindings" + (f" ({jobs} processes)" if jobs > 1 else ""))
