"""Answers that name the mistake behind a binding's result, beside Karmada's condition message
(which stays Karmada's, word for word): a ``clusterNames`` entry that names no Cluster, and candidate
Clusters that have never reported a status. ``explain``, ``simulate --explain``, ``what-if`` and a
Warning Event on the binding (the scheduler operator) say them. Pure: no I/O.

Karmada's words for these are about the filters: a missing name makes every cluster "not match the
placement cluster affinity constraint", a Cluster without status "did not have the API resource".
Both are true, and neither says what to fix.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterator, Sequence

from fleetsched.scheduler.matching import cluster_matches
from fleetsched.scheduler.types import ClusterAffinity, ClusterInfo, Placement

__all__ = [
    "CLUSTER_NAME_UNKNOWN",
    "CLUSTER_STATUS_NEVER_REPORTED",
    "Hint",
    "hints",
    "never_reported",
]

# The reasons of the Warning Events that carry these hints.
CLUSTER_NAME_UNKNOWN = "ClusterNameUnknown"
CLUSTER_STATUS_NEVER_REPORTED = "ClusterStatusNeverReported"
# Clusters named in one hint at most; the rest are counted.
MAX_NAMED = 5


@dataclasses.dataclass(frozen=True, slots=True)
class Hint:
    """One mistake: its Event reason and the sentence that names it."""

    reason: str
    message: str


def never_reported(cluster: ClusterInfo) -> bool:
    """The Cluster has never reported a status: no API enablements and no resource summary (what
    the cluster-status controller, or a Pull member's agent, writes first)."""
    return not cluster.api_enablements and cluster.resource_summary is None


def _affinities(placement: Placement) -> Iterator[tuple[str, ClusterAffinity]]:
    """Every cluster affinity of the placement with its field path."""
    if placement.cluster_affinity is not None:
        yield "spec.placement.clusterAffinity", placement.cluster_affinity
    for i, term in enumerate(placement.cluster_affinities or ()):
        yield f"spec.placement.clusterAffinities[{i}]", term.affinity
    weights = placement.replica_scheduling.weight_preference if placement.replica_scheduling else None
    static = "spec.placement.replicaScheduling.weightPreference.staticWeightList"
    for i, rule in enumerate(weights.static_weight_list if weights is not None else ()):
        yield f"{static}[{i}].targetCluster", rule.target


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(f'"{n}"' for n in names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def hints(placement: Placement | None, clusters: Sequence[ClusterInfo]) -> list[Hint]:
    """What is wrong with ``placement`` against ``clusters`` (every Cluster of the snapshot), in
    field order: each ``clusterNames`` entry that names no Cluster (with the nearest name when one
    is close), then the candidates (Clusters some affinity of the placement selects; every Cluster
    without one) that have never reported a status."""
    placement = placement or Placement()
    known = [c.name for c in clusters]
    names = set(known)
    out: list[Hint] = []
    affinities = list(_affinities(placement))
    for path, affinity in affinities:
        for i, name in enumerate(affinity.cluster_names):
            if name in names:
                continue
            close = difflib.get_close_matches(name, known, n=1)
            near = f' (did you mean "{close[0]}"?)' if close else ""
            message = f'{path}.clusterNames[{i}]: "{name}" names no Cluster{near}'
            out.append(Hint(CLUSTER_NAME_UNKNOWN, message))
    selecting = [a for path, a in affinities if "staticWeightList" not in path]
    silent = [
        c.name for c in clusters
        if never_reported(c) and (not selecting or any(cluster_matches(c, a) for a in selecting))
    ]
    if silent:
        one = len(silent) == 1
        out.append(Hint(
            CLUSTER_STATUS_NEVER_REPORTED,
            f"Cluster{'' if one else 's'} {_names(silent)} {'has' if one else 'have'} never reported a "
            "status "
            "(no status.apiEnablements, no status.resourceSummary): no binding can be placed there until "
            "the cluster-status controller or the member's agent writes it",
        ))
    return out
