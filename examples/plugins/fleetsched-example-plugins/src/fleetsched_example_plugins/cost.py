"""``ExampleCost``: a Score plugin that prefers cheap clusters, read from a cluster label.

Each cluster carries its price as a label, by default ``cost.example.com/price-per-hour: "0.42"``
(any non-negative decimal number works, so a tier label ``"1"``, ``"2"``, ``"3"`` does too).

* Score (raw): the price in thousandths, ``"0.42"`` -> 420; ``-1`` where the label is missing or
  is not a non-negative number.
* NormalizeScore: over the feasible clusters that have a price, the cheapest gets 100 and the most
  expensive 0, linearly in between (``(max - price) * 100 // (max - min)``); when they all cost the
  same, each gets 100. A cluster without a price gets ``defaultScore``.
* The profile's weight multiplies the normalised score (the framework applies it).

Declared inputs: the answer reads only the cluster's labels and nothing of the binding, so the
framework reuses the raw scores across bindings until a cluster's labels change.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import ClassVar

from fleetsched.plugin import MAX_SCORE, MIN_SCORE, ClusterFacet, ClusterInfo, FilterContext, Handle

NAME = "ExampleCost"
DEFAULT_LABEL = "cost.example.com/price-per-hour"
# The raw score of a cluster without a usable price.
NO_PRICE = -1


@dataclass(frozen=True, slots=True)
class ExampleCostArgs:
    """``pluginConfig`` args, field names as the configuration file writes them."""

    labelKey: str = DEFAULT_LABEL
    defaultScore: int = MIN_SCORE

    def __post_init__(self) -> None:
        if not isinstance(self.labelKey, str) or not self.labelKey:
            raise ValueError(f"labelKey: must be a non-empty label key, got {self.labelKey!r}")
        score = self.defaultScore
        if isinstance(score, bool) or not isinstance(score, int) or not MIN_SCORE <= score <= MAX_SCORE:
            raise ValueError(f"defaultScore: must be an integer in {MIN_SCORE}..{MAX_SCORE}, got {score!r}")


def price_of(value: str | None) -> int:
    """A label value as thousandths of a price; ``NO_PRICE`` when it is not a non-negative number."""
    if value is None:
        return NO_PRICE
    try:
        price = Decimal(value)
    except InvalidOperation:
        return NO_PRICE
    if not price.is_finite() or price < 0:
        return NO_PRICE
    return int((price * 1000).to_integral_value())


class ExampleCost:
    """Cheapest cluster first: raw score = price, normalised so the cheapest feasible one is 100."""

    name = NAME
    args_model = ExampleCostArgs
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.LABELS

    def __init__(self, args: ExampleCostArgs | None = None, handle: Handle | None = None) -> None:
        args = args or ExampleCostArgs()
        self.label_key = args.labelKey
        self.default_score = args.defaultScore

    def binding_key(self, ctx: FilterContext) -> Hashable:
        """Nothing of the binding counts: every binding shares the same scores."""
        return None

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        return price_of(cluster.labels.get(self.label_key))

    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        priced = [s for s in scores if s != NO_PRICE]
        if not priced:
            return [self.default_score] * len(scores)
        low, high = min(priced), max(priced)
        if low == high:
            return [MAX_SCORE if s != NO_PRICE else self.default_score for s in scores]
        return [
            (high - s) * MAX_SCORE // (high - low) if s != NO_PRICE else self.default_score for s in scores
        ]


def new(args: ExampleCostArgs | None, handle: Handle | None) -> ExampleCost:
    """The factory, for registering the plugin by hand (the entry point names the class)."""
    return ExampleCost(args, handle)
