"""What ``fleetsched simulate`` will schedule: the bindings given and those derived from policies and
workload templates (in ``--jobs`` worker processes for large inputs), each validated and converted
once up front and kept as compact JSON, so bad input is refused before anything is written."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence, Set
from typing import TYPE_CHECKING, Any, TypeVar

from fleetsched.api.document import BindingDocument, plain_json_default
from fleetsched.scheduler.convert import (
    ConversionError,
    binding_from_dict,
    peer_from_dict,
    status_from_dict,
)
from fleetsched.scheduler.framework.profile import DEFAULT_SCHEDULER_NAME
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.types import PeerBinding

if TYPE_CHECKING:
    from fleetsched.api.load import LoadResult

from fleetsched.simulate.progress import Progress

_T = TypeVar("_T")


_A = TypeVar("_A")


# Templates derived per call of the detector: its results (models) for one chunk at a time.
DERIVE_CHUNK = 512


class BadInput(Exception):
    pass


def dump_model(model: Any) -> dict[str, Any]:
    # Only fields present in the input: bindings are taken as written, no defaults (§3.7a).
    return model.model_dump(mode="python", by_alias=True, exclude_unset=True)  # type: ignore[no-any-return]


def binding_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    kind = obj.get("kind") or "ResourceBinding"
    md = obj.get("metadata") or {}
    namespace = "" if kind == "ClusterResourceBinding" else (md.get("namespace") or "")
    return (kind, namespace, md.get("name") or "")


def binding_ref(key: tuple[str, str, str]) -> str:
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
    seen = {binding_key(b) for b in explicit}
    out: list[Mapping[str, Any]] = list(explicit)
    notes: list[str] = []
    for b in derived:
        key = binding_key(b)
        if key in seen:
            notes.append(_given_and_derived_note(key))
            continue
        seen.add(key)
        out.append(b)
    return out, notes


def _given_and_derived_note(key: tuple[str, str, str]) -> str:
    given = f"{key[0]} {binding_ref(key)} is given in the input"
    return f"{given} and also derived from a policy; using the given one"


def unknown_target_notes(bindings: Sequence[Mapping[str, Any]], cluster_names: Set[str]) -> list[str]:
    """One note per previous target that names no Cluster of the input.

    Not an error: Karmada meets the same when a member was removed, and simply re-places those
    replicas. But a typo looks the same, so the user hears about it.
    """
    notes = []
    for b in bindings:
        kind, namespace, name = binding_key(b)
        ref = f"{namespace}/{name}" if namespace else name
        for i, target in enumerate((b.get("spec") or {}).get("clusters") or []):
            if target.get("name") not in cluster_names:
                notes.append(
                    f"{kind} {ref}: spec.clusters[{i}].name: {target.get('name')!r} is not a Cluster of the "
                    "input; treated as a removed cluster (its replicas are placed again)"
                )
    return notes


def check_inventory_clusters(loaded: Any, cluster_names: Set[str]) -> None:
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


json_default = plain_json_default


@dataclasses.dataclass(slots=True)
class Plan:
    """What is scheduled, in order (the compact JSON of each binding, and whether no profile serves
    it), the workload-affinity peers, and the notes for stderr."""

    work: list[tuple[bytes, bool]] = dataclasses.field(default_factory=list)
    peers: list[PeerBinding] = dataclasses.field(default_factory=list)
    merge_notes: list[str] = dataclasses.field(default_factory=list)
    unserved_notes: list[str] = dataclasses.field(default_factory=list)
    unknown_notes: list[str] = dataclasses.field(default_factory=list)
    selects_nothing_notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        return [*self.merge_notes, *self.unserved_notes, *self.unknown_notes, *self.selects_nothing_notes]


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
class Checks:
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
            key, name = binding_key(raw), scheduler_name_of(raw)
            unserved_note = (
                f"{key[0]} {binding_ref(key)}: no profile serves schedulerName {name!r}; left alone"
            )
        if data is None:
            md = raw.get("metadata") or {}
            namespace, name = md.get("namespace"), md.get("name") or ""
            data = BindingDocument.of_fields(raw, namespace=namespace, name=name).data
        unknown = tuple(unknown_target_notes([raw], self.cluster_names))
        return _Admitted(data, unserved, peer, unknown, unserved_note)


# A derived binding as planning needs it: its key, and the binding checked (None: given in the
# input as well, so not checked; a string: the one-line error checking it gave).
_Derived = tuple[_Key, "_Admitted | str | None"]


def plan_work(
    explicit: Iterable[Any],
    derived: Callable[[Checks, Set[_Key]], Iterable[_Derived]],
    *,
    checks: Checks,
    progress: Progress,
) -> Plan:
    """Given bindings, then derived ones not given (``merge_bindings``), each checked once now
    (``Checks.admit``), then kept as compact JSON only. ``derived(checks, given_keys)`` yields the
    derived bindings in order, checked (except those given), here or in worker processes."""
    plan = Plan()
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
            raw, data = dump_model(b), None
        seen.add(binding_key(raw))
        take(checks.admit(raw, data))
        progress.advance()
    for key, admitted in derived(checks, frozenset(seen)):
        if key in seen:  # given in the input, or derived twice (names differing in case only)
            plan.merge_notes.append(_given_and_derived_note(key))
            continue
        seen.add(key)
        if isinstance(admitted, str):
            raise BadInput(admitted)
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

    def derive_chunk(self, start: int, checks: Checks, given: Set[_Key]) -> list[_Derived]:
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
            key = binding_key(raw)
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
        raise BadInput("policies and workload templates need the detector, which is not available") from None
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


def derived_bindings(
    loaded: LoadResult, progress: Progress, *, jobs: int
) -> Callable[[Checks, Set[_Key]], Iterator[_Derived]]:
    """The bindings the detector derives from the policies and workload templates of the input,
    in their JSON form (no binding model is built, only what its dump would be), a chunk of
    templates at a time: the same bindings, in the same order, as ``derive_bindings(loaded)``.

    With ``jobs`` > 1 (and fork), the chunks are derived and checked in worker processes forked
    once the input is loaded, so they read the templates and policies without any pickling;
    only the compact results come back, in order."""

    def derived(checks: Checks, given: Set[_Key]) -> Iterator[_Derived]:
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
            chunks = in_workers(_derive_chunk_in_worker, starts, jobs=jobs)
            for start, chunk in zip(starts, chunks, strict=True):
                yield from chunk
                progress.advance(min(DERIVE_CHUNK, total - start))
        finally:
            _DERIVING = None

    return derived


# What forked derivation workers read (set in the parent just before they are forked).
_DERIVING: tuple[_Derivation, Checks, Set[_Key]] | None = None


def _derive_chunk_in_worker(start: int) -> list[_Derived]:
    assert _DERIVING is not None, "forked from a parent that set _DERIVING"
    derivation, checks, given = _DERIVING
    return derivation.derive_chunk(start, checks, given)


def _can_fork() -> bool:
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def in_workers(
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


class WorkerError(Exception):
    """A binding could not be scheduled; the message is one line naming it."""
