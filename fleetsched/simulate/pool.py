"""Scheduling the planned bindings: in this process or in ``--jobs`` worker processes that build the
snapshot once and take bindings in chunks; with ``SchedulingOvercommitProtection``, one at a time
in the live queue's order against one assume record."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterator, Mapping, Sequence
from json.encoder import encode_basestring_ascii as _encode_string  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any

from fleetsched.scheduler.assume import AssumeRecord, footprint, left_clusters, name_shortfall
from fleetsched.scheduler.convert import (
    ConversionError,
    binding_from_dict,
    status_from_dict,
)
from fleetsched.scheduler.diagnosis import Hint
from fleetsched.scheduler.diagnosis import hints as diagnose
from fleetsched.scheduler.framework import PluginSelectionError
from fleetsched.scheduler.outcome import ScheduleResult, render_into_binding
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo, PeerBinding, SchedulingBinding

if TYPE_CHECKING:
    pass

from fleetsched.simulate.explain import Assumptions, InQueue, Row, as_written, explain, table_row
from fleetsched.simulate.plan import (
    BadInput,
    WorkerError,
    binding_key,
    binding_ref,
    in_workers,
    json_default,
    scheduler_name_of,
)

# Most bindings per chunk sent to a --jobs worker.
JOB_CHUNK = 64


@dataclasses.dataclass(frozen=True, slots=True)
class Job:
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
class Rendered:
    """One scheduled binding, rendered: its text in the output (json/yaml), its table row, and its
    explanation, each only when asked for."""

    item: str | None
    row: Row | None
    explanation: str | None
    # A scheduling attempt was made and failed (Scheduled=False); --fail-on-unschedulable counts these.
    unschedulable: bool = False


_STATE: tuple[Job, Snapshot] | None = None


def _start(job: Job) -> None:
    """Worker initializer (and the in-process path): the snapshot, built once per process."""
    global _STATE
    _STATE = (job, Snapshot(job.clusters, job.peers))


def _schedule_chunk(chunk: Sequence[tuple[bytes, bool]]) -> list[Rendered]:
    assert _STATE is not None, "_start() first"
    job, snapshot = _STATE
    return [_schedule_data(job, snapshot, data, unserved) for data, unserved in chunk]


def _schedule_data(
    job: Job, snapshot: Snapshot, data: bytes, unserved: bool, queue: InQueue | None = None
) -> Rendered:
    """One compact binding scheduled and rendered; any failure is a WorkerError naming it."""
    raw = json.loads(data)
    try:
        return _schedule_one(job, snapshot, raw, unserved, queue)
    except (ConversionError, PluginSelectionError, BadInput) as exc:
        raise WorkerError(str(exc)) from None
    except Exception as exc:  # a bug: one line naming the binding, not a traceback from a worker
        key = binding_key(raw)
        failure = f"{type(exc).__name__}: {exc}"
        raise WorkerError(f"{key[0]} {binding_ref(key)}: scheduling failed: {failure}") from None


def _schedule_one(
    job: Job, snapshot: Snapshot, raw: dict[str, Any], unserved: bool, queue: InQueue | None = None
) -> Rendered:
    chosen = job.scheduler if job.profiles is None else job.profiles.get(scheduler_name_of(raw))
    seen: Assumptions | None = None
    hints: list[Hint] = []
    if unserved or chosen is None:
        obj: dict[str, Any] = raw
        result = ScheduleResult(binding_ref(binding_key(raw)), None, None, None, False)
    elif queue is None:
        binding = binding_from_dict(raw)
        result = chosen.schedule(binding, status_from_dict(raw), snapshot)
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
    if job.explain and result.condition is not None:
        hints = diagnose(binding.placement, snapshot.clusters)
    item = None
    if job.output != "table":
        obj = as_written(obj)
    if job.output == "json":
        item = _json_item(obj)
    elif job.output == "yaml":
        import yaml

        # Through JSON: plain types only (times and quantities as text), then YAML.
        plain = json.loads(json.dumps(obj, default=json_default))
        item = yaml.safe_dump([plain], sort_keys=False)
    return Rendered(
        item=item,
        row=table_row(obj, result) if job.output == "table" else None,
        explanation=(
            explain(result, obj, unserved=unserved or chosen is None, assumptions=seen, hints=hints)
            if job.explain
            else None
        ),
        unschedulable=result.condition is not None and not result.condition.status,
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
        return json.dumps(obj, indent=2, default=json_default).replace("\n", "\n    ")
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


def schedule_all(job: Job, work: Sequence[tuple[bytes, bool]], *, jobs: int) -> Iterator[list[Rendered]]:
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
    yield from in_workers(
        _schedule_chunk, _chunks(work, size), jobs=jobs, method=method, initializer=_start, initargs=(job,)
    )




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
    """What the live scheduler does after an attempt (``schedule_one._attempt``): a new placement's
    footprint assumed on its clusters (clusters that left it released; non-workloads and
    ClusterResourceBindings hold nothing); an unchanged one assumes nothing (nothing is written);
    a binding short of capacity is told what the record held."""
    if not result.scheduled or result.clusters is None:
        return name_shortfall(record, result, clusters)
    if result.clusters != binding.clusters:
        footprints = footprint(binding, result.clusters)
        record.observe_schedule(binding.key, footprints, left=left_clusters(binding, result.clusters))
    return result


def _schedule_in_queue_order(job: Job, work: Sequence[tuple[bytes, bool]]) -> Iterator[list[Rendered]]:
    """Every binding in queue order, in this process, against one assume record that the ones
    before it fed; rendered bindings come out in input order, as soon as those before them are
    done (at once when the queue's order is the input's)."""
    snapshot = Snapshot(job.clusters, job.peers)
    # A clock that stands still: no assumption expires during a simulation.
    queue = InQueue(AssumeRecord(clock=lambda: 0.0), len(work))
    done: dict[int, Rendered] = {}
    ready: list[Rendered] = []
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
