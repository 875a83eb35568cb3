"""One attempt's outcome of the filter and score points (``FitOutcome``), and the runtime's slots of
the filter and score plugins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from fleetsched.scheduler.framework.extenders import EXTENDER_SCALE
from fleetsched.scheduler.framework.interface import (
    ClusterFacet,
    FilterPlugin,
    PostFilterResult,
    ScorePlugin,
    Status,
)
from fleetsched.scheduler.outcome import (
    ClusterVerdict,
    ExtenderVerdict,
    FilterSummary,
    PluginScore,
    SkippedPlugin,
)
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo


@dataclass(slots=True)
class FitOutcome:
    """Filter and score results of one attempt (one affinity term) over one snapshot.

    ``failures``: per filter plugin, extender or PreFilter rejection (in run order), its name and its
    rejections by snapshot index; the first one listed for a cluster is the one reported.
    ``rows`` per feasible cluster (same order as ``feasible``): each score plugin's and extender's part.
    """

    feasible: list[ClusterInfo]
    totals: list[int]
    snapshot: Snapshot
    failures: tuple[tuple[str, dict[int, Status]], ...]
    feasible_index: list[int]
    score_names: tuple[str, ...] = ()
    raw: tuple[Sequence[int], ...] = ()  # per score plugin: raw scores by snapshot index
    normalized: tuple[Sequence[int] | None, ...] = ()  # per score plugin: by feasible position
    weights: tuple[int, ...] = ()
    extender_scores: tuple[tuple[str, int, Sequence[int]], ...] = ()  # (name, weight, by feasible position)
    extender_verdicts: tuple[ExtenderVerdict, ...] = ()
    skipped: tuple[SkippedPlugin, ...] = ()
    post_filter: tuple[tuple[str, PostFilterResult], ...] = ()
    _verdicts: tuple[ClusterVerdict, ...] | None = None
    _summary: FilterSummary | None = None

    def summary(self) -> FilterSummary:
        """The verdicts' counts, from the rejection vectors (no verdict object per cluster)."""
        if self._summary is None:
            deleting = self.snapshot.deleting_index()
            rejected: dict[str, int] = {"Deleting": len(deleting)} if deleting else {}
            claimed = set(deleting)
            for name, failed in self.failures:  # in filter order: the first rejection counts
                for i, r in failed.items():
                    if i not in claimed:
                        claimed.add(i)
                        label = r.plugin or name
                        rejected[label] = rejected.get(label, 0) + 1
            self._summary = FilterSummary(
                len(self.snapshot.clusters) - len(claimed), tuple(sorted(rejected.items()))
            )
        return self._summary  # type: ignore[no-any-return]

    def verdicts(self) -> tuple[ClusterVerdict, ...]:
        """Per cluster in snapshot order: feasible, being deleted, or the first rejecting plugin."""
        if self._verdicts is None:
            out = []
            for i, base in enumerate(self.snapshot.base_verdicts()):
                verdict = base
                if base.feasible:
                    for name, failed in self.failures:
                        r = failed.get(i)
                        if r is not None:
                            verdict = ClusterVerdict(base.cluster, False, r.plugin or name, r.reasons)
                            break
                out.append(verdict)
            self._verdicts = tuple(out)
        return self._verdicts

    def diagnosis(self) -> dict[str, tuple[str, ...]]:
        """Rejected clusters (not being deleted) and their reasons, for the FitError message."""
        return {v.cluster: v.reasons for v in self.verdicts() if not v.feasible and not v.deleting}

    def plugin_scores(self, position: int) -> tuple[PluginScore, ...]:
        """Each score plugin's and extender's part of the feasible cluster at ``position``."""
        i = self.feasible_index[position]
        out = []
        for k, name in enumerate(self.score_names):
            raw = self.raw[k][i]
            normalized = self.normalized[k]
            out.append(
                PluginScore(name, raw, raw if normalized is None else normalized[position], self.weights[k])
            )
        for name, weight, scores in self.extender_scores:
            raw = scores[position]
            out.append(PluginScore(name, raw, raw * EXTENDER_SCALE, weight, extender=True))
        return tuple(out)


@dataclass(slots=True)
class ScoreSlot:
    plugin: ScorePlugin
    name: str
    weight: int
    normalize: bool
    batch: bool
    inputs: ClusterFacet | None
    # The binding side of the Score answers: ``score_key`` where the plugin has one, else
    # ``binding_key`` (named in errors by ``key_name``).
    key_name: str = "binding_key"


@dataclass(slots=True)
class FilterSlot:
    plugin: FilterPlugin
    name: str
    batch: bool
    inputs: ClusterFacet | None
