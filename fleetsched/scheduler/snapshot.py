"""The clusters one scheduling cycle runs against (``Snapshot``), and what follows from them alone.

Plugin answers are not kept here: the Framework memoises them per snapshot ``generation`` and per
cluster. Pure.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping

import numpy as np

from fleetsched.scheduler.outcome import ClusterVerdict
from fleetsched.scheduler.types import ClusterInfo, PeerBinding

__all__ = ["Snapshot"]

_generations = itertools.count(1)


class Snapshot:
    """An immutable list of clusters for one scheduling cycle.

    Holds only what follows from the clusters themselves; plugin answers are memoised by the
    Framework, keyed by ``generation`` (unique per snapshot in the process) and per cluster.

    ``replaced`` derives the snapshot after some clusters changed in place (a status heartbeat): the
    same names in the same order, shared, and ``parent`` = (the generation derived from, the changed
    positions), so the Framework revalidates its memos in the time of the changed clusters.
    """

    __slots__ = (
        "_base_verdicts",
        "_deleting",
        "_live",
        "_position",
        "_rank_list",
        "_ranks",
        "clusters",
        "generation",
        "names",
        "parent",
        "peers",
    )

    def __init__(self, clusters: Iterable[ClusterInfo], peers: Iterable[PeerBinding] = ()) -> None:
        self.clusters: tuple[ClusterInfo, ...] = tuple(clusters)
        self.names: tuple[str, ...] = tuple(c.name for c in self.clusters)
        # ResourceBindings and their targets, for the gated workload (anti-)affinity plugins only.
        self.peers: tuple[PeerBinding, ...] = tuple(peers)
        self.generation = next(_generations)
        self.parent: tuple[int, tuple[int, ...]] | None = None
        self._base_verdicts: tuple[ClusterVerdict, ...] | None = None
        self._deleting: list[int] | None = None
        self._live: list[int] | None = None
        self._position: dict[str, int] | None = None
        self._ranks: np.ndarray | None = None
        self._rank_list: list[int] | None = None

    def replaced(self, changes: Mapping[int, ClusterInfo]) -> Snapshot:
        """This snapshot with the cluster at each position of ``changes`` replaced by a new value of
        the same cluster (same name); the other clusters, the names and the peers are shared."""
        clusters = list(self.clusters)
        deletion_changed = False
        for i, cluster in changes.items():
            old = clusters[i]
            if old.name != cluster.name:
                raise ValueError(f"replaced: position {i} holds cluster {old.name!r}, not {cluster.name!r}")
            deletion_changed = deletion_changed or old.deleting != cluster.deleting
            clusters[i] = cluster
        new = Snapshot.__new__(Snapshot)
        new.clusters = tuple(clusters)
        new.names = self.names
        new.peers = self.peers
        new.generation = next(_generations)
        new.parent = (self.generation, tuple(sorted(changes)))
        # they follow from the names alone
        new._position, new._ranks, new._rank_list = self._position, self._ranks, self._rank_list
        if deletion_changed:
            new._base_verdicts = new._deleting = new._live = None
        else:  # they follow from names and deletion only
            new._base_verdicts, new._deleting, new._live = self._base_verdicts, self._deleting, self._live
        return new

    def with_peers(self, peers: Iterable[PeerBinding]) -> Snapshot:
        """This snapshot with other workload-affinity peers: the same clusters (the Framework's
        per-cluster memos carry over), a new generation."""
        new = self.replaced({})
        new.peers = tuple(peers)
        return new

    def deleting_index(self) -> list[int]:
        """Positions of the clusters being deleted (never offered to a plugin)."""
        if self._deleting is None:
            self._deleting = [i for i, c in enumerate(self.clusters) if c.deleting]
        return self._deleting

    def live_index(self) -> list[int]:
        """Positions of the clusters not being deleted."""
        if self._live is None:
            self._live = [i for i, c in enumerate(self.clusters) if not c.deleting]
        return self._live

    def position(self) -> dict[str, int]:
        """Cluster name -> its (first) position."""
        if self._position is None:
            position: dict[str, int] = {}
            for i, name in enumerate(self.names):
                position.setdefault(name, i)
            self._position = position
        return self._position

    def unique_names(self) -> bool:
        return len(self.position()) == len(self.names)

    def name_ranks(self) -> np.ndarray:
        """Per position, the rank of the cluster's name in name order (equal names, equal ranks):
        the name part of the global cluster order (§6.2) as an integer."""
        if self._ranks is None:
            rank = {name: r for r, name in enumerate(sorted(set(self.names)))}
            self._rank_list = [rank[name] for name in self.names]
            self._ranks = np.array(self._rank_list, dtype=np.intp)
        return self._ranks

    def name_rank_list(self) -> list[int]:
        if self._rank_list is None:
            self.name_ranks()
        assert self._rank_list is not None
        return self._rank_list

    def base_verdicts(self) -> tuple[ClusterVerdict, ...]:
        """Per cluster: feasible unless being deleted, before any plugin has spoken."""
        if self._base_verdicts is None:
            self._base_verdicts = tuple(
                ClusterVerdict(c.name, False, deleting=True) if c.deleting else ClusterVerdict(c.name, True)
                for c in self.clusters
            )
        return self._base_verdicts

    def __len__(self) -> int:
        return len(self.clusters)
