"""NodeResourceEstimator: replicas and component sets that fit on the member cluster's nodes
(shared/spec/estimator.md sections 3.7 and 3.8).

Replicas: free amounts per node, after first-fit deduction of assumed workloads, divided by the
per-replica demand on the nodes the request's claim admits, summed. Sets: first fit of whole sets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.framework import Code, EstimateContext, PluginResult
from fleetsched.estimator.model import EMPTY_CLAIM, MAX_INT32, Component, ReplicaRequirements
from fleetsched.estimator.resources import PODS, demand_of
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

    def _sim_components(self, components: Iterable[Component]) -> list[SimComponent]:
        out = []
        for component in components:
            claim = component.requirements.claim if component.requirements is not None else EMPTY_CLAIM
            out.append(SimComponent(self._table.claim_mask(claim), _demand(component.requirements),
                                    component.replicas))
        return out

    def _simulator(self, ctx: EstimateContext, extra_columns: Iterable[str]) -> tuple[FirstFit, dict]:
        columns = set(extra_columns)
        for workload in ctx.assumed_workloads:
            for component in workload.components:
                columns.update(name for name, _ in _demand(component.requirements))
        free = self._table.free(columns)
        simulator = FirstFit(free, self._table.ordered_slots())
        for workload in ctx.assumed_workloads:
            if workload.components:
                simulator.simulate(self._sim_components(workload.components), 1)
        return simulator, free

    def estimate_replicas(self, ctx: EstimateContext,
                          requirements: ReplicaRequirements | None) -> PluginResult:
        demand = _demand(requirements)
        claim = requirements.claim if requirements is not None else EMPTY_CLAIM
        table = self._table
        with table.lock:
            if ctx.assumed_workloads:
                simulator, like = self._simulator(ctx, (name for name, _ in demand))
                free = simulator.arrays(like)
            else:
                free = table.free(name for name, _ in demand)
            mask = table.claim_mask(claim)
            exact = table.exact()
        fits = free[PODS][mask]
        for name, amount in demand:
            column = free[name][mask]
            if not exact and amount >= _INT64_SAFE:
                fits = np.zeros_like(fits)  # every stored amount is smaller than this demand
                break
            fits = np.minimum(fits, column // amount)
        total = int(np.minimum(fits, MAX_INT32).sum()) if fits.size else 0
        return PluginResult.success(min(total, MAX_INT32))

    def estimate_components(self, ctx: EstimateContext, components: Sequence[Component],
                            namespace: str) -> PluginResult:
        if not components:
            return PluginResult.no_operation()
        with self._table.lock:
            columns = {name for c in components for name, _ in _demand(c.requirements)}
            simulator, _ = self._simulator(ctx, columns)
            sets = simulator.simulate(self._sim_components(components), MAX_INT32, keep_state=False)
        return PluginResult(sets, Code.UNSCHEDULABLE if sets == 0 else Code.SUCCESS)
