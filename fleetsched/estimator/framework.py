"""Estimate plugin results and how they combine (karmada-scheduler-estimator's
estimate framework).

Plugins return a value and a code. The combined value is the minimum over Success and Unschedulable
results (starting at 2147483647); the combined code is Error if any plugin erred, else Unschedulable if
any said so, else NoOperation if all did, else Success.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from fleetsched.estimator.model import (
    MAX_INT32,
    AssumedWorkload,
    Component,
    ReplicaRequirements,
)

__all__ = ["Code", "ComponentsEstimator", "EstimateContext", "PluginResult", "ReplicasEstimator", "combine"]


class Code(Enum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    NO_OPERATION = "NoOperation"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class PluginResult:
    value: int
    code: Code
    reasons: tuple[str, ...] = field(default=())

    @classmethod
    def success(cls, value: int) -> PluginResult:
        return cls(value, Code.SUCCESS)

    @classmethod
    def no_operation(cls) -> PluginResult:
        return cls(MAX_INT32, Code.NO_OPERATION)

    @classmethod
    def error(cls, reason: str) -> PluginResult:
        return cls(0, Code.ERROR, (reason,))


@dataclass(frozen=True, slots=True)
class EstimateContext:
    """What every plugin sees: the assumed workloads that count (empty when the overcommit gate is off)."""

    assumed_workloads: tuple[AssumedWorkload, ...] = ()


class ReplicasEstimator(Protocol):
    name: str

    def estimate_replicas(self, ctx: EstimateContext,
                          requirements: ReplicaRequirements | None) -> PluginResult:
        """How many replicas with these requirements fit."""
        ...


class ComponentsEstimator(Protocol):
    name: str

    def estimate_components(self, ctx: EstimateContext, components: Sequence[Component],
                            namespace: str) -> PluginResult:
        """How many complete sets of these components fit."""
        ...


def combine(results: Sequence[PluginResult]) -> PluginResult:
    value = MAX_INT32
    codes = {r.code for r in results}
    for r in results:
        if r.code in (Code.SUCCESS, Code.UNSCHEDULABLE):
            value = min(value, r.value)
    reasons = tuple(reason for r in results for reason in r.reasons)
    if Code.ERROR in codes:
        return PluginResult(value, Code.ERROR, reasons)
    if Code.UNSCHEDULABLE in codes:
        return PluginResult(value, Code.UNSCHEDULABLE, reasons)
    if codes and codes == {Code.NO_OPERATION}:
        return PluginResult(value, Code.NO_OPERATION, reasons)
    return PluginResult(value, Code.SUCCESS, reasons)
