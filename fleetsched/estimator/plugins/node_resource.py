"""NodeResourceEstimator: replicas and component sets that fit on the member cluster's nodes
(karmada-scheduler-estimator's NodeResourceEstimator).

Replicas: free amounts per node, after first-fit deduction of assumed workloads, divided by the
per-replica demand on the nodes the request's claim admits, summed. Sets: first fit of whole sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from fleetsched.api.resources import PODS, demand_of
from fleetsched.estimator.cache import NodeTable, TableSnapshot
from fleetsched.estimator.framework import Code, EstimateContext, PluginResult
from fleetsched.estimator.model import EMPTY_CLAIM, MAX_INT32, Component, ReplicaRequirements
from fleetsched.estimator.simulator import FirstFit, SimComponent

__all__ = ["NAME", "NodeResourceEstimator"]

NAME = "NodeResourceEstimator"
_INT64_SAFE = 2**62


def _demand(requirements: ReplicaRequirements | None) -> tuple[tuple[str, int], ...]:
    return tuple(demand_of(requirements.resource_request)) if requirements is not None else ()


class NodeResourceEstimator:
    name = NAME

    def __init__(self, table: NodeTable) -> None:
        self._table = table

    def _sim_components(self, snapshot: TableSnapshot, components: Iterable[Component]) -> list[SimComponent]:
        out = []
        for component in components:
            claim = component.requirements.claim if component.requirements is not None else EMPTY_CLAIM
            out.append(SimComponent(snapshot.claim_mask(claim), _demand(component.requirements),
                                    component.replicas))
        return out

    def _snapshot(self, ctx: EstimateContext, extra_columns: Iterable[str]) -> TableSnapshot:
        """One version of the table with every column this estimate reads (cache.py: the lock is held
        only while it is taken, never while the estimate runs)."""
        columns = set(extra_columns)
        for workload in ctx.assumed_workloads:
            for component in workload.components:
                columns.update(name for name, _ in _demand(component.requirements))
        return self._table.snapshot(columns)

    def _simulator(self, ctx: EstimateContext, snapshot: TableSnapshot) -> FirstFit:
        simulator = FirstFit(snapshot.free, snapshot.order)
        for workload in ctx.assumed_workloads:
            if workload.components:
                simulator.simulate(self._sim_components(snapshot, workload.components), 1)
        return simulator

    def estimate_replicas(self, ctx: EstimateContext,
                          requirements: ReplicaRequirements | None) -> PluginResult:
        demand = _demand(requirements)
        claim = requirements.claim if requirements is not None else EMPTY_CLAIM
        snapshot = self._snapshot(ctx, (name for name, _ in demand))
        if ctx.assumed_workloads:
            free = self._simulator(ctx, snapshot).arrays(snapshot.free)
        else:
            free = snapshot.free
        mask = snapshot.claim_mask(claim)
        fits = free[PODS][mask]
        for name, amount in demand:
            column = free[name][mask]
            if not snapshot.exact and amount >= _INT64_SAFE:
                fits = np.zeros_like(fits)  # every stored amount is smaller than this demand
                break
            fits = np.minimum(fits, column // amount)
        total = int(np.minimum(fits, MAX_INT32).sum()) if fits.size else 0
        return PluginResult.success(min(total, MAX_INT32))

    def estimate_components(self, ctx: EstimateContext, components: Sequence[Component],
                            namespace: str) -> PluginResult:
        if not components:
            return PluginResult.no_operation()
        snapshot = self._snapshot(ctx, {name for c in components for name, _ in _demand(c.requirements)})
        simulator = self._simulator(ctx, snapshot)
        sets = simulator.simulate(self._sim_components(snapshot, components), MAX_INT32, keep_state=False)
        return PluginResult(sets, Code.UNSCHEDULABLE if sets == 0 else Code.SUCCESS)
