"""Extenders as the framework runtime sees them, and their semantics: filter, prioritize, ignorable.

Pure apart from the calls it makes on the extender objects it is given: no network code, no aiohttp
(importing this module does not load the HTTP client), so the runtime in the scheduling core can call
it or copy its Protocol. ``Extender`` mirrors the runtime's Protocol in
``fleetsched.scheduler.framework.interface``; ``client.HTTPExtender`` satisfies both.

Semantics, after kube-scheduler's ``findNodesThatPassExtenders`` and ``prioritizeNodes`` with Node
replaced by Cluster:

* Filter: extenders run one after another in configuration order, each given the clusters the
  previous ones kept; once none is left the rest are not asked. A cluster an extender lists in
  ``failedAndUnresolvableClusters`` is recorded as unresolvable (that map wins over
  ``failedClusters``, as in kube). The kept clusters stay in the order the scheduler gave them.
* Prioritize: every extender that has a prioritize verb is asked about the feasible clusters
  (concurrently). Each returns 0..``MAX_EXTENDER_PRIORITY`` (10) per cluster; the cluster's
  extender score is the sum over extenders of ``score * weight * (MAX_CLUSTER_SCORE /
  MAX_EXTENDER_PRIORITY)``, kube's rule (``MaxNodeScore / MaxExtenderPriority``) with Karmada's
  ``MaxClusterScore`` = 100, so an extender of weight 1 weighs as much as a score plugin of weight
  1. A cluster an extender did not list gets 0 from it.
* Failures: an unreachable, slow, erroring or malformed extender (``ExtenderError``), or an
  extender object that raises anything else, is skipped when it is ``ignorable``: the outcome lists
  it in ``skipped`` (for the explanation) and the ``fleetsched_scheduler_extender_ignored_failures_total``
  counter goes up. Otherwise the ``ExtenderError`` propagates and the binding fails with its message,
  which names the extender. This applies to prioritize as well: kube-scheduler always ignores a
  failed prioritize call, fleetsched honours ``ignorable`` there too, so a broken scorer is not
  silently dropped.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, TypeVar, runtime_checkable

import structlog

from fleetsched.extender import metrics
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.scheduler.framework.interface import ExtenderFilterResult as FilterResult
from fleetsched.scheduler.types import ClusterInfo, SchedulingBinding

__all__ = [
    "MAX_CLUSTER_SCORE",
    "MAX_EXTENDER_PRIORITY",
    "MIN_EXTENDER_PRIORITY",
    "AsyncExtender",
    "ClusterRejection",
    "Extender",
    "ExtenderOutcome",
    "ExtenderScore",
    "FilterResult",
    "SkippedExtender",
    "count_ignored_failure",
    "run_extender_filters",
    "run_extender_filters_async",
    "run_extender_prioritizers",
    "run_extender_prioritizers_async",
    "run_extenders",
    "run_extenders_async",
    "weighted_score",
]

log = structlog.get_logger("fleetsched.extender")

# kube-scheduler's extender/v1 constants, and Karmada's framework.MaxClusterScore.
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10
MAX_CLUSTER_SCORE = 100

VERB_FILTER = "filter"
VERB_PRIORITIZE = "prioritize"
NOT_KEPT = "not kept by the extender"

# ``FilterResult`` is the runtime's ``ExtenderFilterResult`` (one type for the core and the edge):
# ``kept`` (in the order given), ``failed`` (may fit later), ``unresolvable`` (kube's
# FailedAndUnresolvable), a reason each.


@runtime_checkable
class Extender(Protocol):
    """An extender whose calls block the calling thread (a scheduling worker, never an event loop)."""

    name: str
    ignorable: bool
    weight: int
    supports_filter: bool
    supports_prioritize: bool

    def filter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> FilterResult:
        """Keep or reject each candidate; raise ``ExtenderError`` when the extender fails."""
        ...

    def prioritize(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> Mapping[str, int]:
        """Raw scores 0..10 per cluster (unlisted clusters score 0); raise ``ExtenderError`` on failure."""
        ...


@runtime_checkable
class AsyncExtender(Protocol):
    """The same extender, awaited (``HTTPExtender.afilter`` / ``aprioritize``)."""

    name: str
    ignorable: bool
    weight: int
    supports_filter: bool
    supports_prioritize: bool

    async def afilter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> FilterResult: ...

    async def aprioritize(
        self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
    ) -> Mapping[str, int]: ...


@dataclass(frozen=True, slots=True)
class ClusterRejection:
    """Why a cluster did not pass the extenders: which extender said no, and its reason."""

    extender: str
    reason: str
    unresolvable: bool = False

    @property
    def message(self) -> str:
        return f"extender {self.extender}: {self.reason}"


class ExtenderScore(NamedTuple):
    """One extender's part of a cluster's score: raw (0..10), its weight, and the scaled product.
    (A NamedTuple, cheap to make: ``ExtenderOutcome.score_parts`` builds one per cluster and extender.)"""

    extender: str
    raw: int
    weight: int
    score: int


@dataclass(frozen=True, slots=True)
class SkippedExtender:
    """An ignorable extender that failed and was skipped for this binding."""

    extender: str
    verb: str
    kind: FaultKind
    detail: str

    @property
    def message(self) -> str:
        """For the explanation: ``extender X skipped (ignorable): filter failed (slow): ...``."""
        return (f"extender {self.extender} skipped (ignorable): {self.verb} failed ({self.kind}): "
                f"{self.detail}")


@dataclass(frozen=True, slots=True)
class ExtenderOutcome:
    """What the extenders made of one binding.

    ``feasible`` are the clusters every asked extender kept, in input order; ``rejections`` maps each
    other candidate to the extender that rejected it; ``scores`` the weighted extender score of each
    feasible cluster (0 when no extender scored it), ``score_parts`` the per-extender parts for
    ``--explain``; ``skipped`` the ignorable extenders that failed. Raw scores are validated against
    the candidates by the client (``protocol.decode_priorities``); names outside ``feasible`` are
    ignored here.
    """

    feasible: tuple[ClusterInfo, ...]
    rejections: Mapping[str, ClusterRejection] = field(default_factory=dict)
    scores: Mapping[str, int] = field(default_factory=dict)
    # (extender, weight, raw scores) per extender that answered; ``score_parts`` is built from it
    # only when asked, since only ``--explain`` and the explanation annotation read it.
    answers: tuple[tuple[str, int, Mapping[str, int]], ...] = ()
    skipped: tuple[SkippedExtender, ...] = ()

    @property
    def score_parts(self) -> dict[str, tuple[ExtenderScore, ...]]:
        """Per feasible cluster, each answering extender's raw score, weight and weighted score."""
        return {
            c.name: tuple(ExtenderScore(ext, raw.get(c.name, 0), weight,
                                        weighted_score(raw.get(c.name, 0), weight))
                          for ext, weight, raw in self.answers)
            for c in self.feasible
        }


def weighted_score(raw: int, weight: int) -> int:
    """kube's rule: ``score * weight * (MaxNodeScore / MaxExtenderPriority)``, here 100 / 10."""
    return raw * weight * (MAX_CLUSTER_SCORE // MAX_EXTENDER_PRIORITY)


# ------------------------------------------------------------------------------------ shared steps
def _as_extender_error(ext_name: str, verb: str, exc: BaseException) -> ExtenderError:
    if isinstance(exc, ExtenderError):
        return exc
    return ExtenderError(ext_name, verb, FaultKind.ERRORING, f"unexpected {type(exc).__name__}: {exc}")


def count_ignored_failure(ext_name: str, verb: str, error: BaseException | str) -> None:
    """Count (and log) one skipped failure of an ignorable extender: the framework runtime's
    ``extender_skipped`` hook in the scheduler process. ``error`` is what the call raised, or what
    was wrong with its answer (a malformed one)."""
    if isinstance(error, ExtenderError):
        kind, detail = error.kind, error.detail
    elif isinstance(error, str):
        kind, detail = FaultKind.MALFORMED, error
    else:
        kind, detail = FaultKind.ERRORING, f"unexpected {type(error).__name__}: {error}"
    metrics.IGNORED_FAILURES.labels(ext_name, verb, str(kind)).inc()
    log.warning("extender_skipped", extender=ext_name, verb=verb, kind=str(kind), detail=detail)


def _skip_or_raise(
    ext_name: str, ignorable: bool, verb: str, exc: BaseException, skipped: list[SkippedExtender]
) -> None:
    error = _as_extender_error(ext_name, verb, exc)
    if not ignorable:
        raise error from (None if error is exc else exc)
    metrics.IGNORED_FAILURES.labels(ext_name, verb, str(error.kind)).inc()
    log.warning("extender_skipped", extender=ext_name, verb=verb, kind=str(error.kind), detail=error.detail)
    skipped.append(SkippedExtender(ext_name, verb, error.kind, error.detail))


def _apply_filter(
    ext_name: str,
    result: FilterResult,
    feasible: tuple[ClusterInfo, ...],
    rejections: dict[str, ClusterRejection],
) -> tuple[ClusterInfo, ...]:
    kept = set(result.kept)
    survivors = []
    for cluster in feasible:
        name = cluster.name
        if name in result.unresolvable:
            rejections[name] = ClusterRejection(ext_name, result.unresolvable[name], unresolvable=True)
        elif name in kept:
            survivors.append(cluster)
        else:
            rejections[name] = ClusterRejection(ext_name, result.failed.get(name, NOT_KEPT))
    return tuple(survivors)


def _merge_scores(
    answers: Sequence[tuple[Extender | AsyncExtender, Mapping[str, int]]], feasible: tuple[ClusterInfo, ...]
) -> tuple[dict[str, int], tuple[tuple[str, int, Mapping[str, int]], ...]]:
    totals = {c.name: 0 for c in feasible}
    for ext, raw_scores in answers:
        factor = ext.weight * (MAX_CLUSTER_SCORE // MAX_EXTENDER_PRIORITY)  # weighted_score, per extender
        for name, raw in raw_scores.items():
            if name in totals:
                totals[name] += raw * factor
    return totals, tuple((ext.name, ext.weight, raw_scores) for ext, raw_scores in answers)


def _checked_scores(ext_name: str, scores: Mapping[str, int]) -> Mapping[str, int]:
    """The HTTP client checks answers on the wire; this holds other extender objects to the range."""
    for name, raw in scores.items():
        if type(raw) is not int or not MIN_EXTENDER_PRIORITY <= raw <= MAX_EXTENDER_PRIORITY:
            raise ExtenderError(ext_name, VERB_PRIORITIZE, FaultKind.MALFORMED,
                                f"score {raw!r} for cluster {name!r} is not an integer in "
                                f"{MIN_EXTENDER_PRIORITY}..{MAX_EXTENDER_PRIORITY}")
    return scores


def _prioritizers(extenders: Sequence[Extender | AsyncExtender]) -> list[Extender | AsyncExtender]:
    return [e for e in extenders if e.supports_prioritize and e.weight > 0]


# ------------------------------------------------------------------------------------- blocking face
def run_extender_filters(
    extenders: Sequence[Extender], binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
) -> ExtenderOutcome:
    """Filter ``clusters`` through every extender with a filter verb (see the module docstring)."""
    feasible = tuple(clusters)
    rejections: dict[str, ClusterRejection] = {}
    skipped: list[SkippedExtender] = []
    for ext in extenders:
        if not ext.supports_filter:
            continue
        if not feasible:
            break
        try:
            result = ext.filter(binding, feasible)
        except Exception as exc:
            _skip_or_raise(ext.name, ext.ignorable, VERB_FILTER, exc, skipped)
            continue
        feasible = _apply_filter(ext.name, result, feasible, rejections)
    return ExtenderOutcome(feasible, rejections, skipped=tuple(skipped))


_T = TypeVar("_T")
_POOL: ThreadPoolExecutor | None = None


def _concurrently(calls: Sequence[Callable[[], _T]]) -> list[_T | BaseException]:
    """Run blocking calls side by side (each mostly waits on its extender) and collect each result or
    exception in order. One call needs no thread."""
    global _POOL
    if len(calls) <= 1:
        out: list[_T | BaseException] = []
        for call in calls:
            try:
                out.append(call())
            except Exception as exc:
                out.append(exc)
        return out
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="extender-prioritize")
    futures = [_POOL.submit(call) for call in calls]
    results: list[_T | BaseException] = []
    for fut in futures:
        exc = fut.exception()
        results.append(exc if exc is not None else fut.result())
    return results


def run_extender_prioritizers(
    extenders: Sequence[Extender],
    binding: SchedulingBinding,
    feasible: Sequence[ClusterInfo],
    *,
    skipped: Sequence[SkippedExtender] = (),
) -> ExtenderOutcome:
    """Score the feasible clusters with every extender that has a prioritize verb; ``skipped`` carries
    the extenders already skipped at filter time into the outcome."""
    clusters = tuple(feasible)
    skipped_now = list(skipped)
    asked = _prioritizers(extenders) if clusters else []
    results = _concurrently([lambda e=ext: e.prioritize(binding, clusters) for ext in asked])  # type: ignore[misc]
    answers: list[tuple[Extender | AsyncExtender, Mapping[str, int]]] = []
    for ext, result in zip(asked, results, strict=True):
        try:
            if isinstance(result, BaseException):
                raise result
            answers.append((ext, _checked_scores(ext.name, result)))
        except Exception as exc:
            _skip_or_raise(ext.name, ext.ignorable, VERB_PRIORITIZE, exc, skipped_now)
    totals, kept_answers = _merge_scores(answers, clusters)
    return ExtenderOutcome(clusters, scores=totals, answers=kept_answers, skipped=tuple(skipped_now))


def run_extenders(
    extenders: Sequence[Extender], binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
) -> ExtenderOutcome:
    """Filter, then prioritize what is left: one binding's whole extender round, blocking.

    Raises ``ExtenderError`` (naming the extender) when a non-ignorable extender fails."""
    filtered = run_extender_filters(extenders, binding, clusters)
    scored = run_extender_prioritizers(extenders, binding, filtered.feasible, skipped=filtered.skipped)
    return ExtenderOutcome(filtered.feasible, filtered.rejections, scored.scores, scored.answers,
                           scored.skipped)


# ---------------------------------------------------------------------------------------- async face
async def run_extender_filters_async(
    extenders: Sequence[AsyncExtender], binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
) -> ExtenderOutcome:
    """``run_extender_filters`` for code on an event loop."""
    feasible = tuple(clusters)
    rejections: dict[str, ClusterRejection] = {}
    skipped: list[SkippedExtender] = []
    for ext in extenders:
        if not ext.supports_filter:
            continue
        if not feasible:
            break
        try:
            result = await ext.afilter(binding, feasible)
        except Exception as exc:
            _skip_or_raise(ext.name, ext.ignorable, VERB_FILTER, exc, skipped)
            continue
        feasible = _apply_filter(ext.name, result, feasible, rejections)
    return ExtenderOutcome(feasible, rejections, skipped=tuple(skipped))


async def run_extender_prioritizers_async(
    extenders: Sequence[AsyncExtender],
    binding: SchedulingBinding,
    feasible: Sequence[ClusterInfo],
    *,
    skipped: Sequence[SkippedExtender] = (),
) -> ExtenderOutcome:
    """``run_extender_prioritizers`` for code on an event loop (the calls are gathered)."""
    clusters = tuple(feasible)
    skipped_now = list(skipped)
    asked = _prioritizers(extenders) if clusters else []
    calls: list[Awaitable[Mapping[str, int]]] = [ext.aprioritize(binding, clusters) for ext in asked]
    results = await asyncio.gather(*calls, return_exceptions=True)
    answers: list[tuple[Extender | AsyncExtender, Mapping[str, int]]] = []
    for ext, result in zip(asked, results, strict=True):
        if isinstance(result, BaseException) and not isinstance(result, Exception):
            raise result  # cancellation and the like are not extender faults
        try:
            if isinstance(result, BaseException):
                raise result
            answers.append((ext, _checked_scores(ext.name, result)))
        except Exception as exc:
            _skip_or_raise(ext.name, ext.ignorable, VERB_PRIORITIZE, exc, skipped_now)
    totals, kept_answers = _merge_scores(answers, clusters)
    return ExtenderOutcome(clusters, scores=totals, answers=kept_answers, skipped=tuple(skipped_now))


async def run_extenders_async(
    extenders: Sequence[AsyncExtender], binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
) -> ExtenderOutcome:
    """``run_extenders`` for code on an event loop."""
    filtered = await run_extender_filters_async(extenders, binding, clusters)
    scored = await run_extender_prioritizers_async(
        extenders, binding, filtered.feasible, skipped=filtered.skipped
    )
    return ExtenderOutcome(filtered.feasible, filtered.rejections, scored.scores, scored.answers,
                           scored.skipped)
