"""The estimator's request handling, shared by the gRPC server and ``fleetsched estimate``.

Owns the per-request preamble (cluster-name check, empty cluster, feature gates; spec 3.2), runs the
plugins and shapes their combined result (3.10), and turns member-cluster objects (Kubernetes JSON
form) into node-table and store updates. Pure: no grpc, no Kubernetes client.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fleetsched.api.resources import node_allocatable, pod_request
from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.framework import Code, EstimateContext, PluginResult, combine
from fleetsched.estimator.model import (
    EstimatorError,
    MaxAvailableComponentSetsRequest,
    MaxAvailableReplicasRequest,
    UnschedulableReplicasRequest,
)
from fleetsched.estimator.nodefilter import Taint
from fleetsched.estimator.plugins.node_resource import NodeResourceEstimator
from fleetsched.estimator.plugins.resource_quota import QuotaStore, ResourceQuotaEstimator
from fleetsched.estimator.replica import WorkloadSource, unschedulable_pods_of
from fleetsched.flags import RESOURCE_QUOTA_ESTIMATE, SCHEDULING_OVERCOMMIT_PROTECTION, gate_enabled

__all__ = [
    "EstimatorService",
    "FeatureGates",
    "Observer",
    "StepObserver",
    "apply_node",
    "apply_pod",
    "pod_key",
]



@dataclass(frozen=True, slots=True)
class FeatureGates:
    resource_quota_estimate: bool = False
    scheduling_overcommit_protection: bool = False

    @classmethod
    def from_mapping(cls, gates: Mapping[str, bool]) -> FeatureGates:
        return cls(
            # The two of Karmada's gates that change the estimator's answers.
            resource_quota_estimate=gate_enabled(gates, RESOURCE_QUOTA_ESTIMATE),
            scheduling_overcommit_protection=gate_enabled(gates, SCHEDULING_OVERCOMMIT_PROTECTION),
        )


def pod_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name', '')}"


def _taints(spec: Mapping[str, Any]) -> list[Taint]:
    return [Taint(str(t.get("key", "")), str(t.get("value", "") or ""), str(t.get("effect", "")))
            for t in spec.get("taints") or ()]


def apply_node(table: NodeTable, obj: Mapping[str, Any]) -> None:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    table.upsert_node(
        str(meta.get("name", "")),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        taints=_taints(spec),
        unschedulable=bool(spec.get("unschedulable", False)),
        allocatable=node_allocatable(status.get("allocatable") or {}),
    )


def is_terminal(obj: Mapping[str, Any]) -> bool:
    return (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def apply_pod(table: NodeTable, obj: Mapping[str, Any]) -> None:
    """Count an assigned non-terminal pod on its node; forget it otherwise."""
    key = pod_key(obj)
    node_name = (obj.get("spec") or {}).get("nodeName") or ""
    if not node_name or is_terminal(obj):
        table.delete_pod(key)
        return
    table.upsert_pod(key, node_name=str(node_name), request=pod_request(obj.get("spec") or {}))


# Timing hook for Karmada's metrics (spec 2.9): (plugin name or None for the whole extension point,
# extension point "estimate_replicas"/"estimate_components", seconds).
Observer = Callable[[str | None, str, float], None]
ESTIMATE_REPLICAS = "estimate_replicas"
ESTIMATE_COMPONENTS = "estimate_components"
_Plugin = NodeResourceEstimator | ResourceQuotaEstimator
# GetUnschedulableReplicas steps of the algorithm-latency metric; (step, ok, seconds)
StepObserver = Callable[[str, bool, float], None]
STEP_GET_OBJECT = "GetObjectFromCache"
STEP_UNSCHEDULABLE_PODS = "GetWorkloadUnschedulablePods"


class EstimatorService:
    """Answers the three RPCs for one member cluster from the node table and stores."""

    def __init__(self, *, cluster_name: str, gates: FeatureGates, table: NodeTable, quotas: QuotaStore,
                 workloads: WorkloadSource, observer: Observer | None = None,
                 step_observer: StepObserver | None = None) -> None:
        self.cluster_name = cluster_name
        self.gates = gates
        self.table = table
        self.workloads = workloads
        self.observer = observer
        self.step_observer = step_observer
        self._node_resource = NodeResourceEstimator(table)
        self._resource_quota = ResourceQuotaEstimator(quotas, enabled=gates.resource_quota_estimate)

    def _check_cluster(self, cluster: str) -> None:
        if cluster != self.cluster_name:
            raise EstimatorError(f"cluster name does not match, got: {cluster}, desire: {self.cluster_name}")

    def _context(self, assumed: Iterable[Any]) -> EstimateContext:
        if not self.gates.scheduling_overcommit_protection:
            return EstimateContext()
        return EstimateContext(assumed_workloads=tuple(assumed))

    def max_available_replicas(self, request: MaxAvailableReplicasRequest) -> int:
        requirements = request.replica_requirements
        return self._estimate(
            request.cluster, request.assumed_workloads, ESTIMATE_REPLICAS,
            lambda plugin, ctx: plugin.estimate_replicas(ctx, requirements),
            failure="failed to estimate replicas: estimate replica plugins fails with",
        )

    def max_available_component_sets(self, request: MaxAvailableComponentSetsRequest) -> int:
        components, namespace = request.components, request.namespace
        return self._estimate(
            request.cluster, request.assumed_workloads, ESTIMATE_COMPONENTS,
            lambda plugin, ctx: plugin.estimate_components(ctx, components, namespace),
            failure="failed to estimate component sets: estimate components plugins fails with",
        )

    def _estimate(self, cluster: str, assumed: Iterable[Any], extension_point: str,
                  call: Callable[[_Plugin, EstimateContext], PluginResult], *, failure: str) -> int:
        """One extension point over both plugins (spec 3.2, 3.10): no nodes answers 0, the merged
        result's Unschedulable answers 0, its Error fails the RPC with ``failure`` and the reasons."""
        self._check_cluster(cluster)
        if self.table.num_nodes() == 0:
            return 0
        ctx = self._context(assumed)
        start = time.perf_counter()
        results = [self._run(plugin.name, extension_point, call, plugin, ctx)
                   for plugin in (self._node_resource, self._resource_quota)]
        self._observe(None, extension_point, start)
        merged = combine(results)
        if merged.code is Code.UNSCHEDULABLE:
            return 0
        if merged.code is Code.ERROR:
            raise EstimatorError(f"{failure} [{' '.join(merged.reasons)}]")
        return merged.value

    def get_unschedulable_replicas(self, request: UnschedulableReplicasRequest,
                                   now: datetime | None = None) -> int:
        self._check_cluster(request.cluster)
        if request.resource is None:
            raise EstimatorError("resource is nil")
        with self._step(STEP_GET_OBJECT):
            workload = self.workloads.get(request.resource)
        with self._step(STEP_UNSCHEDULABLE_PODS):
            return unschedulable_pods_of(self.workloads, workload, request.resource,
                                         request.unschedulable_threshold_ns, now or datetime.now(UTC))

    @contextlib.contextmanager
    def _step(self, step: str) -> Iterator[None]:
        """Time one step for the algorithm-latency metric; an EstimatorError counts it as failed."""
        start = time.perf_counter()
        try:
            yield
        except EstimatorError:
            self._observe_step(step, False, start)
            raise
        self._observe_step(step, True, start)

    def _observe_step(self, step: str, ok: bool, start: float) -> None:
        if self.step_observer is not None:
            self.step_observer(step, ok, time.perf_counter() - start)

    def _observe(self, plugin: str | None, extension_point: str, start: float) -> None:
        if self.observer is not None:
            self.observer(plugin, extension_point, time.perf_counter() - start)

    def _run(self, plugin: str, extension_point: str, method: Any, *args: Any) -> PluginResult:
        start = time.perf_counter()
        try:
            result: PluginResult = method(*args)
        except (ArithmeticError, ValueError) as exc:
            # a corrupt amount or a bug: this RPC fails, the server lives on
            result = PluginResult.error(str(exc))
        self._observe(plugin, extension_point, start)
        return result
