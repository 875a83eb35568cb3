"""Prometheus metrics of the scheduler operator, under karmada-scheduler's metric names.

Names, types, buckets and labels follow Karmada's scheduler metrics so existing dashboards and
alerts keep working: attempts and end-to-end latency by ``result`` (scheduled/error) and
``schedule_type``, algorithm latency per ``schedule_step`` (Filter, Score, Select, AssignReplicas,
reported by the core), incoming queue events, and pending bindings per queue. Karmada's per-plugin
and per-extension-point histograms are not exported: the core memoises each plugin's verdicts per
cluster snapshot, so a plugin runs once per snapshot and placement rather than once per binding and
cluster, and such timings would not mean what Karmada's do.
"""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)

# Karmada's metrics have no *_created series.
disable_created_metrics()
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)
PlatformCollector(registry=REGISTRY)
GCCollector(registry=REGISTRY)
GC_SECONDS = Counter(
    "fleetsched_python_gc_seconds_total",
    "Time spent in Python's cyclic garbage collector, by generation",
    ["generation"],
    registry=REGISTRY,
)


def _exponential(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


SCHEDULE_ATTEMPTS = Counter(
    "karmada_scheduler_schedule_attempts_total",
    "Number of attempts to schedule resourceBinding",
    ["result", "schedule_type"],
    registry=REGISTRY,
)
E2E_SCHEDULING_DURATION = Histogram(
    "karmada_scheduler_e2e_scheduling_duration_seconds",
    "E2e scheduling latency in seconds",
    ["result", "schedule_type"],
    buckets=_exponential(0.001, 2, 15),
    registry=REGISTRY,
)
SCHEDULING_ALGORITHM_DURATION = Histogram(
    "karmada_scheduler_scheduling_algorithm_duration_seconds",
    "Scheduling algorithm latency in seconds (exclude scale scheduler)",
    ["schedule_step"],
    buckets=_exponential(0.001, 2, 15),
    registry=REGISTRY,
)
QUEUE_INCOMING_BINDINGS = Counter(
    "karmada_scheduler_queue_incoming_bindings_total",
    "Number of bindings added to scheduling queues by event type.",
    ["event"],
    registry=REGISTRY,
)
PENDING_BINDINGS = Gauge(
    "scheduler_pending_bindings",
    "Number of pending bindings, by the queue type.",
    ["queue"],
    registry=REGISTRY,
)
# fleetsched's own: API writes per binding kind and verb, to check "at most two writes per binding".
API_WRITES = Counter(
    "fleetsched_scheduler_binding_writes_total",
    "Writes the scheduler sent for bindings, by part (spec, status) and outcome.",
    ["part", "result"],
    registry=REGISTRY,
)
LEADER = Gauge("fleetsched_scheduler_is_leader", "1 while this replica holds the Lease.", registry=REGISTRY)
# The core runs in threads of its own, within --scheduling-timeout per binding (controller/compute.py).
CORE_THREADS = Gauge(
    "fleetsched_scheduler_core_threads",
    "Threads the scheduling core runs in (one per worker, --workers).",
    registry=REGISTRY,
)
BUDGET_EXCEEDED = Counter(
    "fleetsched_scheduler_budget_exceeded_total",
    "Bindings whose scheduling took longer than --scheduling-timeout, by how they were stopped "
    "(checkpoint: the core stopped itself; abandoned: the worker stopped waiting).",
    ["stop"],
    registry=REGISTRY,
)
ABANDONED_COMPUTATIONS = Gauge(
    "fleetsched_scheduler_abandoned_computations",
    "Computations past their budget still holding a core thread; their results will be discarded.",
    registry=REGISTRY,
)
# Accurate estimator calls (--enable-scheduler-estimator), one per cluster per batch.
ESTIMATOR_RPCS_IN_FLIGHT = Gauge(
    "fleetsched_scheduler_estimator_rpcs_in_flight",
    "Accurate estimator RPCs waiting for an answer now.",
    registry=REGISTRY,
)
ESTIMATOR_RPCS_IN_FLIGHT_PEAK = Gauge(
    "fleetsched_scheduler_estimator_rpcs_in_flight_peak",
    "The most accurate estimator RPCs that were waiting at the same time since the start.",
    registry=REGISTRY,
)
ESTIMATOR_RPCS = Counter(
    "fleetsched_scheduler_estimator_rpcs_total",
    "Accurate estimator RPCs by method and gRPC status code (OK, DEADLINE_EXCEEDED, ...).",
    ["method", "code"],
    registry=REGISTRY,
)

# Label values, as karmada-scheduler uses them.
RESULT_SUCCESS = "scheduled"
RESULT_ERROR = "error"
RECONCILE_SCHEDULE = "ReconcileSchedule"
SCALE_SCHEDULE = "ScaleSchedule"
EVENT_BINDING_ADD = "BindingAdd"
EVENT_BINDING_UPDATE = "BindingUpdate"
EVENT_SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
EVENT_CLUSTER_CHANGED = "ClusterChanged"


def observe_step(step: str, seconds: float) -> None:
    """The core's per-step timings (``Scheduler(observe_step=...)``)."""
    SCHEDULING_ALGORITHM_DURATION.labels(step).observe(seconds)


def exposition() -> bytes:
    return generate_latest(REGISTRY)
