"""ClusterResourcesBalancedAllocation score: kube-scheduler's NodeResourcesBalancedAllocation on clusters.

Off by default (not in the default profile). Args, shaped like kube's
``NodeResourcesBalancedAllocationArgs``::

    resources:                  # default: cpu and memory, weight 1 each
    - {name: cpu, weight: 1}
    - {name: nvidia.com/gpu, weight: 2}

Prefers clusters whose resources stay evenly used: per scored resource the requested fraction
``min(requested / allocatable, 1)``, and the raw score is ``int((1 - std) * 100)`` where ``std`` is
the standard deviation of those fractions (kube's ``balanced_allocation.go``: with two resources
``|f1 - f2| / 2``, with more the population standard deviation, with one 0). kube accepts only weight
1; here a weight may be 1..100 and makes a weighted standard deviation (weighted mean and variance,
in exact fractions), which is kube's value when every weight is equal (then kube's float code runs).

What it reads and what "after placement" means are those of ``ClusterResourcesFit`` (see its module
docstring): ``requested = allocated + allocating + one per-replica request``; a cluster that cannot
take even one replica scores 0; extended resources the binding does not request are left out. A
resource the cluster does not report (0 allocatable) is left out of the fractions, as kube does
(there is no fraction of nothing). Declares the cluster facet RESOURCES and the per-replica request
as its binding key. NormalizeScore: min-max onto 0..100, all-equal raw scores map to 100.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from fleetsched.plugin import MAX_SCORE, Handle
from fleetsched.scheduler.plugins.cluster_resources_fit import (
    DEFAULT_RESOURCES,
    ResourceScore,
    ResourceSpec,
    Usage,
    parse_resources,
    requested_and_capacity,
)

__all__ = [
    "NAME",
    "ClusterResourcesBalancedAllocation",
    "ClusterResourcesBalancedAllocationArgs",
    "balanced_score",
    "new",
]

NAME = "ClusterResourcesBalancedAllocation"


@dataclass(frozen=True, slots=True)
class ClusterResourcesBalancedAllocationArgs:
    """The plugin's args as written in ``pluginConfig``; validated on construction."""

    resources: Sequence[Mapping[str, Any]] | None = None

    def __post_init__(self) -> None:
        parse_resources(self.resources, "resources")

    def specs(self) -> tuple[ResourceSpec, ...]:
        return parse_resources(self.resources, "resources")


def balanced_score(parts: Sequence[tuple[int, int, int]]) -> int:
    """``int((1 - std) * 100)`` over ``(requested, allocatable, weight)``.

    Equal weights run kube's code, float for float (float64 rounding included: with three or more
    resources kube may score perfectly balanced fractions 99). Unequal weights, which kube does not
    allow, use the weighted standard deviation computed in exact fractions, so equal fractions give
    exactly 100."""
    counted = [(requested, capacity, weight) for requested, capacity, weight in parts if capacity]
    weights = {weight for _, _, weight in counted}
    std = 0.0
    if len(weights) <= 1:
        fractions = [min(requested / capacity, 1.0) for requested, capacity, _ in counted]
        if len(fractions) == 2:
            std = abs((fractions[0] - fractions[1]) / 2)
        elif len(fractions) > 2:
            mean = sum(fractions) / len(fractions)
            std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    else:
        exact = [
            (min(Fraction(requested, capacity), Fraction(1)), weight)
            for requested, capacity, weight in counted
        ]
        total = sum(weight for _, weight in exact)
        mean = sum(f * weight for f, weight in exact) / total
        std = math.sqrt(sum(weight * (f - mean) ** 2 for f, weight in exact) / total)
    return int((1 - std) * MAX_SCORE)


class ClusterResourcesBalancedAllocation(ResourceScore):
    """Prefers the cluster whose resource fractions stay closest together after one more replica."""

    name = NAME
    args_model = ClusterResourcesBalancedAllocationArgs

    def __init__(self, resources: tuple[ResourceSpec, ...] = DEFAULT_RESOURCES) -> None:
        self.resources = resources

    def score_parts(self, usage: Usage, request: tuple[tuple[str, int], ...]) -> int:
        return balanced_score(requested_and_capacity(usage, dict(request), self.resources))


def new(
    args: ClusterResourcesBalancedAllocationArgs | None, handle: Handle | None
) -> ClusterResourcesBalancedAllocation:
    """The registry's factory."""
    return ClusterResourcesBalancedAllocation((args or ClusterResourcesBalancedAllocationArgs()).specs())
