"""Prometheus metrics of the scheduler operator, under karmada-scheduler's metric names.

Names, types, buckets and labels follow Karmada's scheduler metrics so existing dashboards and
alerts keep working: attempts and end-to-end latency by ``result`` (scheduled/error) and
``schedule_type``, algorithm latency per ``schedule_step`` (Filter, Score, Select, AssignReplicas,
reported by the core), incoming queue events, pending bindings per queue, and the framework's
per-extension-point and per-plugin histograms (Karmada's ``framework_extension_point_duration_seconds``
and ``plugin_execution_duration_seconds``, fed by the runtime's point and plugin observers).

The runtime reports one timing per extension point and one per plugin and point per attempt (the
work actually done: a plugin's answers reused from the memo cost nothing and are not timed per
cluster). Extension points are observed for every attempt; plugins, like kube-scheduler's
``pluginMetricsSamplePercent``, for one attempt in ``PLUGIN_SAMPLE_EVERY`` (10%), so the per-binding
cost stays a few label look-ups. The extender edge's own collectors
(``fleetsched.extender.metrics``) are registered here too.
"""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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
from prometheus_client.core import GaugeMetricFamily

from fleetsched import buildinfo
from fleetsched.controller.runtime.queue import SchedulingQueue
from fleetsched.extender import metrics as extender_metrics

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
@dataclass(frozen=True, slots=True)
class ShardMetrics:
    """One controller's sharded-mode (--shard-mode=lease) metrics of the membership it sees; the
    owned count is the controller's own gauge (its objects differ)."""

    members: Gauge
    lease_held: Gauge
    membership_changes: Counter
    handoffs: Counter
    not_owner_drops: Counter

    @classmethod
    def of(cls, prefix: str, *, registry: CollectorRegistry, objects: str, noun: str) -> ShardMetrics:
        """``<prefix>_shard_*`` and ``<prefix>_not_owner_drops_total``; ``objects`` ("Bindings")
        and ``noun`` ("the binding") word the help texts."""
        return cls(
            Gauge(
                f"{prefix}_shard_members",
                "Live members of the shard group as this replica sees them (itself included while "
                "it holds its member Lease).",
                registry=registry,
            ),
            Gauge(
                f"{prefix}_shard_member_lease_held",
                "1 while this replica holds its member Lease (renewed within the renew deadline).",
                registry=registry,
            ),
            Counter(
                f"{prefix}_shard_membership_changes_total",
                "Changes of the shard group's live members (or of this replica's own share) it has seen.",
                registry=registry,
            ),
            Counter(
                f"{prefix}_shard_handoffs_total",
                f"{objects} whose ownership moved to (in) or away from (out) this replica on a "
                "membership change.",
                ["direction"],
                registry=registry,
            ),
            Counter(
                f"{prefix}_not_owner_drops_total",
                f"Queue keys dropped because another replica owns {noun} (at pop or before a write).",
                registry=registry,
            ),
        )

    def membership_changed(self, members: int, *, gained: int, lost: int, held: bool) -> None:
        self.membership_changes.inc()
        self.members.set(members)
        self.lease_held.set(1 if held else 0)
        self.handoffs.labels("in").inc(gained)
        self.handoffs.labels("out").inc(lost)


LEADER = Gauge("fleetsched_scheduler_is_leader", "1 while this replica holds the Lease.", registry=REGISTRY)
# Sharded mode (--shard-mode=lease): this replica's share and the membership it sees.
OWNED_BINDINGS = Gauge(
    "fleetsched_scheduler_owned_bindings",
    "Bindings of this scheduler's names that this replica owns now (sharded mode).",
    registry=REGISTRY,
)
SHARD = ShardMetrics.of("fleetsched_scheduler", registry=REGISTRY, objects="Bindings", noun="the binding")
BINDINGS_SKIPPED = Counter(
    "fleetsched_scheduler_bindings_skipped_total",
    "Bindings the event filter passed by, once per binding and reason (other-scheduler, suspended, "
    "no-permanent-id).",
    ["reason"],
    registry=REGISTRY,
)
WRITE_CONFLICTS = Counter(
    "fleetsched_scheduler_write_conflicts_total",
    "Binding writes the API server refused with 409 Conflict (re-read, re-decided by the owner).",
    registry=REGISTRY,
)
# The core runs in threads of its own, within --scheduling-timeout per binding (scheduler/compute.py).
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
CORE_MOVED_OFF_LOOP = Counter(
    "fleetsched_scheduler_core_moved_off_loop_total",
    "Computations started on the event loop that used up their slice there and ran again in a core thread.",
    registry=REGISTRY,
)
# The assume record (gate SchedulingOvercommitProtection, scheduler/assume.py).
ASSUMED_RESOURCES = Gauge(
    "fleetsched_scheduler_assumed_resources",
    "Capacity decided onto a member cluster but not yet visible in its status, by resource (cpu in "
    "cores, pods in pods, other resources in their units); deducted by the estimators.",
    ["cluster", "resource"],
    registry=REGISTRY,
)
ASSUMED_BINDINGS = Gauge(
    "fleetsched_scheduler_assumed_bindings",
    "ResourceBindings holding assumptions now.",
    registry=REGISTRY,
)
ASSUMPTIONS_RELEASED = Counter(
    "fleetsched_scheduler_assumptions_released_total",
    "(binding, cluster) assumptions released, by reason: healthy (the cluster reported the workload "
    "Healthy), rescheduled (the cluster left the placement), deleted, expired (the TTL passed), "
    "unreserved (the decision's write failed or a plugin refused it).",
    ["reason"],
    registry=REGISTRY,
)
RESERVE_REDECISIONS = Counter(
    "fleetsched_scheduler_reserve_redecisions_total",
    "Decisions made again because, at Reserve, capacity they counted on had been taken by a "
    "concurrent decision since their snapshot.",
    registry=REGISTRY,
)
LEDGER_WRITES = Counter(
    "fleetsched_scheduler_ledger_writes_total",
    "Group commits of decisions to the shard group's reservation ledger (sharded mode with "
    "SchedulingOvercommitProtection), by result: success, conflict (another replica committed first: "
    "re-read, decisions taken again), error.",
    ["result"],
    registry=REGISTRY,
)
LEDGER_SKIPPED = Counter(
    "fleetsched_scheduler_ledger_entries_skipped_total",
    "Entries of other members in the shard group's reservation ledger that count for nothing, by "
    "reason: unparsable (not JSON, wrong shape or field), unknown_version (a newer replica's layout), "
    "unknown_member (no member Lease of the group), future (stamped ahead of this replica's clock).",
    ["reason"],
    registry=REGISTRY,
)
_assumed_labels: dict[str, set[str]] = {}


def set_assumed(cluster: str, load: Any) -> None:
    """The assumed-resources gauge of one cluster, from what its assumed workloads add up to
    (``AssumedLoad``; series of resources no longer held are removed)."""
    totals = load.totals()
    for resource in _assumed_labels.get(cluster, set()) - set(totals):
        ASSUMED_RESOURCES.remove(cluster, resource)
    for resource, amount in totals.items():
        ASSUMED_RESOURCES.labels(cluster, resource).set(float(amount))
    if totals:
        _assumed_labels[cluster] = set(totals)
    else:
        _assumed_labels.pop(cluster, None)


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

# The scheduling framework, under Karmada's names and buckets (pkg/scheduler/metrics/metrics.go).
FRAMEWORK_EXTENSION_POINT_DURATION = Histogram(
    "karmada_scheduler_framework_extension_point_duration_seconds",
    "Latency for running all plugins of a specific extension point.",
    ["extension_point", "result"],
    buckets=_exponential(0.0001, 2, 12),
    registry=REGISTRY,
)
PLUGIN_EXECUTION_DURATION = Histogram(
    "karmada_scheduler_plugin_execution_duration_seconds",
    "Duration for running a plugin at a specific extension point.",
    ["plugin", "extension_point", "result"],
    buckets=_exponential(0.00001, 1.5, 20),
    registry=REGISTRY,
)
# One plugin timing in this many is recorded (kube-scheduler samples 10% of its plugin metrics).
PLUGIN_SAMPLE_EVERY = 10

extender_metrics.register(REGISTRY)

# Label values, as karmada-scheduler uses them.
RESULT_SUCCESS = "scheduled"
RESULT_ERROR = "error"
RECONCILE_SCHEDULE = "ReconcileSchedule"
SCALE_SCHEDULE = "ScaleSchedule"
EVENT_BINDING_ADD = "BindingAdd"
EVENT_BINDING_UPDATE = "BindingUpdate"
EVENT_SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
EVENT_CLUSTER_CHANGED = "ClusterChanged"
# Queueing hints (KEP-4247; scheduler/framework/hints.py): every hint asked of an unschedulable
# binding for an event, by the event and the answer (Queue: it went back; Skip: it stays), and the
# time from the event that moved a binding to that binding's next decision.
QUEUEING_HINTS = Counter(
    "fleetsched_scheduler_queueing_hints_total",
    "Queueing hints asked of unschedulable bindings, by event and hint result (Queue requeues).",
    ["event", "hint"],
    registry=REGISTRY,
)
EVENT_TO_DECISION = Histogram(
    "fleetsched_scheduler_event_to_decision_seconds",
    "Time from an event that requeued an unschedulable binding to that binding's next decision.",
    ["event"],
    buckets=_exponential(0.001, 2, 15),
    registry=REGISTRY,
)


class HintMetrics:
    """The queue's ``HintObserver``: the two series above."""

    def hinted(self, event: str, hint: Any) -> None:
        QUEUEING_HINTS.labels(event, hint.value).inc()

    def decided(self, event: str, seconds: float) -> None:
        EVENT_TO_DECISION.labels(event).observe(seconds)


def observe_step(step: str, seconds: float) -> None:
    """The core's per-step timings (``Scheduler(observe_step=...)``)."""
    SCHEDULING_ALGORITHM_DURATION.labels(step).observe(seconds)


# Labelled children by label values: ``labels()`` resolves and locks on every call; these do not.
_point_children: dict[tuple[str, str], Any] = {}
_plugin_children: dict[tuple[str, str, str], Any] = {}
_plugin_calls = itertools.count()


def observe_point(extension_point: str, result: str, seconds: float) -> None:
    """The runtime's extension-point observer (``Scheduler(observe_point=...)``)."""
    key = (extension_point, result)
    child = _point_children.get(key)
    if child is None:
        child = _point_children.setdefault(key, FRAMEWORK_EXTENSION_POINT_DURATION.labels(*key))
    child.observe(seconds)


def observe_plugin(plugin: str, extension_point: str, result: str, seconds: float) -> None:
    """The runtime's per-plugin observer (``Scheduler(observe_plugin=...)``), sampled 1 in
    ``PLUGIN_SAMPLE_EVERY``; failures (any result but Success) are always recorded."""
    if result == "Success" and next(_plugin_calls) % PLUGIN_SAMPLE_EVERY:
        return
    key = (plugin, extension_point, result)
    child = _plugin_children.get(key)
    if child is None:
        child = _plugin_children.setdefault(key, PLUGIN_EXECUTION_DURATION.labels(*key))
    child.observe(seconds)


# Each process serves its own series and the common ones (process, build info, work queues, REST
# client), not another process's (issue 29): the scheduler's, the policy controller's and the
# descheduler's series share this registry (so one import registers them, and tests read them
# here), and a policy controller serving the scheduler's unlabelled gauges at 0 would be counted as a
# scheduler by queries that sum or compare over jobs. A series whose name starts with one of these
# prefixes is served only by the process it is listed under (the descheduler calls the accurate
# estimators too, through the scheduler's client and its RPC series); the commands call ``serve_as``.
OWN_SERIES: dict[str, tuple[str, ...]] = {
    "scheduler": ("karmada_scheduler_", "fleetsched_scheduler_", "scheduler_"),
    "policy-controller": ("fleetsched_policy_controller_",),
    "descheduler": ("fleetsched_descheduler_", "fleetsched_scheduler_estimator_rpcs"),
}
_OWNED = tuple(prefix for prefixes in OWN_SERIES.values() for prefix in prefixes)
_serving: tuple[str, ...] | None = None


def serve_as(process: str) -> None:
    """This process is ``process`` (a key of ``OWN_SERIES``): /metrics leaves out the series other
    processes own. Until called, everything registered is served."""
    global _serving
    if process not in OWN_SERIES:
        raise ValueError(f"serve_as: unknown process {process!r}: one of {sorted(OWN_SERIES)}")
    _serving = OWN_SERIES[process]


def served(name: str) -> bool:
    """Whether this process serves the family ``name`` (a counter's without ``_total``)."""
    return _serving is None or not name.startswith(_OWNED) or name.startswith(_serving)


class _Served:
    """The registry as this process serves it."""

    def collect(self) -> Iterator[Any]:
        return (family for family in REGISTRY.collect() if served(family.name))


def exposition() -> bytes:
    return generate_latest(_Served())  # type: ignore[arg-type]


# Plugins contained (issue 23; scheduler/framework/containment.py, controller/scheduler/compute.py).
PLUGIN_OVERRUNS = Counter(
    "fleetsched_scheduler_plugin_overruns_total",
    "Plugin calls that overran their time budget: returned after the profile's pluginTimeoutSeconds, "
    "or still running when the worker gave up on the binding (--scheduling-timeout).",
    ["profile", "plugin", "extension_point"],
    registry=REGISTRY,
)
PLUGIN_BROKEN = Gauge(
    "fleetsched_scheduler_plugin_broken",
    "1 while the plugin is marked broken after repeated overruns (its bindings fail at once), else 0.",
    ["profile", "plugin"],
    registry=REGISTRY,
)
PLUGIN_REFUSED = Counter(
    "fleetsched_scheduler_plugin_broken_refusals_total",
    "Calls of a plugin marked broken that were refused, failing their binding at once.",
    ["profile", "plugin"],
    registry=REGISTRY,
)
CORE_SATURATED = Counter(
    "fleetsched_scheduler_core_saturated_total",
    "Bindings failed at once because every core thread of their profile was held by a computation "
    "stopped past its budget.",
    ["profile"],
    registry=REGISTRY,
)


# ---- the standard series (issue 22): build info, client-go's workqueue and REST client metrics ----

BUILD_INFO = buildinfo.register(REGISTRY)

# client-go's workqueue buckets (k8s.io/component-base/metrics/prometheus/workqueue): 10 ns .. 10 s.
_WORKQUEUE_BUCKETS = _exponential(10e-9, 10, 10)
WORKQUEUE_ADDS = Counter("workqueue_adds_total", "Total number of adds handled by workqueue", ["name"],
                         registry=REGISTRY)
WORKQUEUE_RETRIES = Counter("workqueue_retries_total", "Total number of retries handled by workqueue",
                            ["name"], registry=REGISTRY)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested.",
    ["name"], buckets=_WORKQUEUE_BUCKETS, registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds", "How long in seconds processing an item from workqueue takes.",
    ["name"], buckets=_WORKQUEUE_BUCKETS, registry=REGISTRY,
)


class _QueueGauges:
    """``workqueue_depth``, ``workqueue_unfinished_work_seconds`` and
    ``workqueue_longest_running_processor_seconds`` of the instrumented queues, read from each queue
    when scraped (client-go recomputes the last two every 500 ms; reading them is as cheap). The
    queues are held weakly: the last one instrumented under a name is the one reported."""

    def __init__(self) -> None:
        self.queues: dict[str, weakref.ref[SchedulingQueue]] = {}

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=["name"])
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads.", labels=["name"])
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.", labels=["name"])
        for name, ref in sorted(self.queues.items()):
            queue = ref()
            if queue is None:
                continue
            total, oldest = queue.in_progress()
            depth.add_metric([name], queue.sizes().active)
            unfinished.add_metric([name], total)
            longest.add_metric([name], oldest)
        yield from (depth, unfinished, longest)


_QUEUE_GAUGES = _QueueGauges()
REGISTRY.register(_QUEUE_GAUGES)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class WorkqueueObserver:
    """A queue's ``QueueObserver`` feeding the ``workqueue_*`` counters and histograms of one name."""

    adds: Any
    retries: Any
    queue_duration: Any
    work_duration: Any

    @classmethod
    def named(cls, name: str) -> WorkqueueObserver:
        return cls(WORKQUEUE_ADDS.labels(name), WORKQUEUE_RETRIES.labels(name),
                   WORKQUEUE_QUEUE_DURATION.labels(name), WORKQUEUE_WORK_DURATION.labels(name))

    def added(self) -> None:
        self.adds.inc()

    def taken(self, waited: float) -> None:
        self.queue_duration.observe(max(waited, 0.0))

    def finished(self, worked: float) -> None:
        self.work_duration.observe(max(worked, 0.0))

    def retried(self) -> None:
        self.retries.inc()


# The queue names, as Karmada names its queues (pkg/scheduler/scheduler.go: "scheduler-queue";
# pkg/detector/detector.go: "resource detector" — fleetsched's policy controller is the detector and
# the policy reconcilers in one queue).
SCHEDULER_QUEUE = "scheduler-queue"
POLICY_CONTROLLER_QUEUE = "resource detector"


def instrument_queue(queue: SchedulingQueue, name: str) -> None:
    """Export ``queue`` as client-go's ``workqueue_*{name=...}`` series (the commands call this)."""
    queue.observer = WorkqueueObserver.named(name)
    _QUEUE_GAUGES.queues[name] = weakref.ref(queue)


# client-go's REST client metrics (k8s.io/client-go/tools/metrics, registered by
# k8s.io/component-base/metrics/prometheus/restclient), fed by the KubeClient's ``observe_request``.
REST_CLIENT_REQUESTS = Counter(
    "rest_client_requests_total", "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"], registry=REGISTRY,
)
REST_CLIENT_REQUEST_DURATION = Histogram(
    "rest_client_request_duration_seconds", "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"], buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0),
    registry=REGISTRY,
)


def observe_request(method: str, host: str, code: str, seconds: float) -> None:
    """The KubeClient's ``observe_request`` hook: one answered (or failed: ``code`` "<error>", as
    client-go says) HTTP request."""
    REST_CLIENT_REQUESTS.labels(code, method, host).inc()
    REST_CLIENT_REQUEST_DURATION.labels(method, host).observe(seconds)
