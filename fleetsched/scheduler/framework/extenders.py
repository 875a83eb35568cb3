"""Extender calls and the drivers that perform the requests of one step.

The runtime states the extender calls of a step as request values and hands them to a ``Driver``;
prioritize requests of all extenders go in one batch, and the algorithm (``pipeline.py``) does the
same for all estimators' requests. ``SerialDriver`` performs them in turn in the calling thread
(``fleetsched simulate``, in-process estimators); ``ConcurrentDriver`` performs one batch at once on
an executor (the operator's worker pool), so the slowest call, not the sum, bounds a step. A driver
turns failures into answers (a ``SystemExit`` of a call too: ``CallRaised``); the algorithm decides
what they mean (an estimator's is ignored, an extender's fails the binding unless it is ignorable).
Nothing here waits on a network itself, and results do not depend on the driver.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from typing import Any, Protocol

from fleetsched.scheduler.framework.containment import PluginError, describe, escapes
from fleetsched.scheduler.framework.instrumentation import ExtenderSkipObserver, Instrumented
from fleetsched.scheduler.framework.interface import (
    MAX_EXTENDER_PRIORITY,
    MAX_SCORE,
    MIN_SCORE,
    Code,
    EstimateRequest,
    Extender,
    ExtenderFilterRequest,
    ExtenderPrioritizeRequest,
    FilterContext,
    Status,
)
from fleetsched.scheduler.outcome import ExtenderVerdict, SkippedPlugin
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo

# kube-scheduler's rule: an extender's 0..MAX_EXTENDER_PRIORITY score counts x MAX_SCORE/10, so an
# extender of weight 1 weighs as much as a score plugin of weight 1.
EXTENDER_SCALE = MAX_SCORE // MAX_EXTENDER_PRIORITY


class Driver(Protocol):
    """Performs the requests of one step; returns one answer per request, in order, where an answer
    is the call's value or the exception it raised (never raised itself)."""

    def perform(self, requests: Sequence[Any]) -> list[Any]: ...


class SerialDriver:
    """Performs each request in turn, in the calling thread."""

    def perform(self, requests: Sequence[Any]) -> list[Any]:
        answers: list[Any] = []
        for request in requests:
            try:
                answers.append(perform_one(request))
            except BaseException as e:  # an answer, not a crash: the algorithm decides what it means
                if escapes(e):
                    raise
                answers.append(as_exception(e))
        return answers


class ConcurrentDriver:
    """Performs the requests of one step at the same time on an executor (e.g. the operator's
    thread pool), so a slow estimator or extender costs its own latency, not the sum. The answers
    are the same as ``SerialDriver``'s, in request order."""

    def __init__(self, executor: Executor) -> None:
        self.executor = executor

    def perform(self, requests: Sequence[Any]) -> list[Any]:
        if len(requests) <= 1:
            return SerialDriver().perform(requests)
        futures = [self.executor.submit(perform_one, r) for r in requests]
        answers: list[Any] = []
        for future in futures:
            try:
                answers.append(future.result())
            except BaseException as e:
                if escapes(e):
                    raise
                answers.append(as_exception(e))
        return answers


class CallRaised(Exception):
    """An estimator or extender call raised something other than an ``Exception`` (a SystemExit, a
    KeyboardInterrupt of its own): an answer like any failure, not the end of the process."""


def as_exception(e: BaseException) -> Exception:
    return e if isinstance(e, Exception) else CallRaised(describe(e))


def perform_one(request: Any) -> Any:
    if isinstance(request, EstimateRequest):
        if request.components:
            return request.estimator.max_available_component_sets(  # type: ignore[attr-defined]
                request.clusters, request.components
            )
        return request.estimator.max_available_replicas(request.clusters, request.replica_requirements)
    if isinstance(request, ExtenderFilterRequest):
        return request.extender.filter(request.binding, request.clusters)
    if isinstance(request, ExtenderPrioritizeRequest):
        return request.extender.prioritize(request.binding, request.clusters)
    raise TypeError(f"unknown request {type(request).__name__}")


def extender_message(error: BaseException) -> str:
    """What a failed extender call says, without its name (the runtime adds that once): the edge's
    error carries ``kind`` and ``detail``; any other exception is its type and text."""
    detail = getattr(error, "detail", None)
    if isinstance(detail, str):
        kind = getattr(error, "kind", None)
        return f"{kind}: {detail}" if kind else detail
    return str(error) or type(error).__name__


class ExtenderCalls(Instrumented):
    """The Framework's extender filter and prioritize (set up in its constructor)."""

    driver: Driver
    extender_skipped: ExtenderSkipObserver | None
    prioritize_extenders: tuple[Extender, ...]

    def _extender_failed(
        self,
        extender: Extender,
        verb: str,
        message: str,
        skipped: list[SkippedPlugin],
        error: BaseException | None = None,
    ) -> None:
        if extender.ignorable:
            skipped.append(SkippedPlugin(extender.name, f"Extender{verb}", message))
            if self.extender_skipped is not None:
                self.extender_skipped(extender.name, verb.lower(), error if error is not None else message)
            return
        raise PluginError(
            extender.name, f"Extender{verb}", f"extender {extender.name} failed at {verb}: {message}"
        )

    def _extender_filter(
        self,
        extender: Extender,
        ctx: FilterContext,
        snapshot: Snapshot,
        feasible_index: list[int],
        failures: list[tuple[str, dict[int, Status]]],
        verdicts: list[ExtenderVerdict],
        skipped: list[SkippedPlugin],
    ) -> list[int]:
        clusters = snapshot.clusters
        request = ExtenderFilterRequest(extender, ctx.binding, tuple(clusters[i] for i in feasible_index))
        t0 = self._timer()
        (answer,) = self.driver.perform([request])
        seconds = self._timer() - t0
        # Any value of ExtenderFilterResult's shape will do (the HTTPS edge has its own class).
        kept_names = None if isinstance(answer, BaseException) else getattr(answer, "kept", None)
        failed_reasons = getattr(answer, "failed", None) or {}
        unresolvable = getattr(answer, "unresolvable", None) or {}
        if (
            kept_names is None
            or not isinstance(failed_reasons, Mapping)
            or not isinstance(unresolvable, Mapping)
        ):
            message = (
                extender_message(answer)
                if isinstance(answer, BaseException)
                else f"malformed answer {type(answer).__name__}"
            )
            self._observe(extender.name, "ExtenderFilter", Code.ERROR, seconds)
            self._extender_failed(
                extender, "Filter", message, skipped, answer if isinstance(answer, BaseException) else None
            )
            verdicts.append(ExtenderVerdict(extender.name, len(feasible_index), 0, skipped=message))
            return feasible_index
        self._observe(extender.name, "ExtenderFilter", Code.SUCCESS, seconds)
        kept = set(kept_names)
        out: list[int] = []
        failed: dict[int, Status] = {}
        for i in feasible_index:
            name = clusters[i].name
            if name in kept:
                out.append(i)
            elif name in unresolvable:
                failed[i] = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (unresolvable[name],), extender.name)
            else:
                reason = failed_reasons.get(name) or f"cluster(s) rejected by extender {extender.name}"
                failed[i] = Status(Code.UNSCHEDULABLE, (reason,), extender.name)
        if failed:
            failures.append((extender.name, failed))
        verdicts.append(ExtenderVerdict(extender.name, len(out), len(failed)))
        return out

    def _extender_prioritize(
        self, ctx: FilterContext, feasible: list[ClusterInfo], skipped: list[SkippedPlugin]
    ) -> list[tuple[str, int, Sequence[int]]]:
        if not self.prioritize_extenders:
            return []
        requests = [
            ExtenderPrioritizeRequest(e, ctx.binding, tuple(feasible)) for e in self.prioritize_extenders
        ]
        t0 = self._timer()
        answers = self.driver.perform(requests)
        seconds = self._timer() - t0
        out = []
        for extender, answer in zip(self.prioritize_extenders, answers, strict=True):
            if isinstance(answer, Exception) or not isinstance(answer, Mapping):
                message = (
                    extender_message(answer)
                    if isinstance(answer, Exception)
                    else f"malformed answer {type(answer).__name__}"
                )
                self._observe(extender.name, "ExtenderPrioritize", Code.ERROR, seconds)
                error = answer if isinstance(answer, Exception) else None
                self._extender_failed(extender, "Prioritize", message, skipped, error)
                continue
            try:
                scores = [int(answer.get(c.name, 0)) for c in feasible]
                outside = [v for v in scores if not MIN_SCORE <= v <= MAX_EXTENDER_PRIORITY]
                if outside:
                    raise ValueError(f"score {outside[0]} outside {MIN_SCORE}..{MAX_EXTENDER_PRIORITY}")
            except (TypeError, ValueError) as e:
                self._observe(extender.name, "ExtenderPrioritize", Code.ERROR, seconds)
                self._extender_failed(extender, "Prioritize", f"malformed answer: {e}", skipped)
                continue
            self._observe(extender.name, "ExtenderPrioritize", Code.SUCCESS, seconds)
            out.append((extender.name, extender.weight, scores))
        return out
