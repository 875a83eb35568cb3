"""Prometheus metrics of extender calls, for the scheduler process to register.

kube-scheduler and Karmada export no metric per extender, so these are fleetsched's own, named like
the scheduler's other ones (``fleetsched_scheduler_*``):

* ``fleetsched_scheduler_extender_duration_seconds{extender, verb, result}``: one observation per
  HTTP call, from sending the request to the decoded answer; ``result`` is ``success`` or the fault
  kind (``unreachable``, ``slow``, ``erroring``, ``malformed``).
* ``fleetsched_scheduler_extender_ignored_failures_total{extender, verb, kind}``: failures of an
  ``ignorable`` extender that were skipped instead of failing the binding.

The collectors belong to no registry until ``register`` adds them (the scheduler adds them to
``fleetsched.controller.runtime.metrics.REGISTRY``); they count either way, so tests can read them.
``count_ignored_failure`` is the framework runtime's ``extender_skipped`` hook that feeds the
counter. Light: neither the HTTP client nor pydantic is imported here.
"""

from __future__ import annotations

import structlog
from prometheus_client import CollectorRegistry, Counter, Histogram

from fleetsched.extender.errors import ExtenderError, FaultKind

__all__ = ["CALL_DURATION", "IGNORED_FAILURES", "RESULT_SUCCESS", "count_ignored_failure", "register"]

log = structlog.get_logger("fleetsched.extender")

RESULT_SUCCESS = "success"

# 0.5 ms .. ~8 s: an extender on loopback answers in about a millisecond, one at its timeout in seconds.
_BUCKETS = [0.0005 * 2**i for i in range(15)]

CALL_DURATION = Histogram(
    "fleetsched_scheduler_extender_duration_seconds",
    "Duration of HTTP calls to scheduler extenders, by extender, verb and result.",
    ["extender", "verb", "result"],
    buckets=_BUCKETS,
    registry=None,
)
IGNORED_FAILURES = Counter(
    "fleetsched_scheduler_extender_ignored_failures_total",
    "Failed calls to ignorable extenders that were skipped, by extender, verb and fault kind.",
    ["extender", "verb", "kind"],
    registry=None,
)

_registered: set[int] = set()


def register(registry: CollectorRegistry) -> None:
    """Add the extender metrics to ``registry``; calling it again for the same registry is a no-op."""
    if id(registry) in _registered:
        return
    registry.register(CALL_DURATION)
    registry.register(IGNORED_FAILURES)
    _registered.add(id(registry))


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
    IGNORED_FAILURES.labels(ext_name, verb, str(kind)).inc()
    log.warning("extender_skipped", extender=ext_name, verb=verb, kind=str(kind), detail=detail)
