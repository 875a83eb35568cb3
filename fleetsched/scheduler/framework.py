"""Extension points of the scheduling core: filter and score plugins, replica estimators, the registry.

Owns the plugin interfaces (Protocols), the result value a filter returns, the estimator Protocol
every estimator implements (general, gRPC client, in-process node inventory), and the in-tree
registry with Karmada's ``--plugins`` selection syntax (``*``, ``-Name``, ``Name``). Plugins live in
``plugins/``, one per file; this module knows their names only through the registry it builds.
Must not do I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from fleetsched.scheduler.types import (
    ClusterInfo,
    Component,
    PeerBinding,
    ReplicaRequirements,
    SchedulingBinding,
)

__all__ = [
    "DEFAULT_FILTERS",
    "DEFAULT_SCORES",
    "UNAUTHENTIC_REPLICA",
    "Code",
    "ComponentSetEstimator",
    "FilterContext",
    "FilterPlugin",
    "PluginSelectionError",
    "ReplicaEstimator",
    "Result",
    "ScorePlugin",
    "in_tree_registry",
    "select_plugins",
]

# An estimator answers -1 for a cluster it cannot judge; the merge skips it (scheduler.md §7.1).
UNAUTHENTIC_REPLICA = -1


class Code(enum.Enum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    ERROR = "Error"


@dataclass(frozen=True, slots=True)
class Result:
    """A filter verdict. A rejection is a value; ``ERROR`` is for the unexpected."""

    code: Code
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @classmethod
    def success(cls) -> Result:
        return _SUCCESS

    @classmethod
    def unschedulable(cls, *reasons: str) -> Result:
        return cls(Code.UNSCHEDULABLE, reasons)

    @classmethod
    def error(cls, reason: str) -> Result:
        return cls(Code.ERROR, (reason,))

    @property
    def is_success(self) -> bool:
        return self.code is Code.SUCCESS


_SUCCESS = Result(Code.SUCCESS)


@dataclass(frozen=True, slots=True)
class FilterContext:
    """Everything a filter or score plugin may read about the binding being scheduled.

    ``observed_affinity_name`` is the status' ``schedulerObservingAffinityName`` as the
    affinity-group loop set it for this attempt (§3.7), not necessarily the stored one.
    """

    binding: SchedulingBinding
    observed_affinity_name: str
    target_names: frozenset[str]
    is_workload: bool
    # Other ResourceBindings with their targets; read only by the gated workload (anti-)affinity plugins.
    peers: tuple[PeerBinding, ...] = ()

    def group_peers(self, group_of: Callable[[PeerBinding], str], group: str) -> Iterator[PeerBinding]:
        """The other bindings of ``group`` (as ``group_of`` reads a binding's group) in this binding's
        namespace, shared by WorkloadAffinity and WorkloadAntiAffinity (§5.7). The binding itself is
        told apart by its generated name, as Karmada does."""
        namespace, own_name = self.binding.namespace, self.binding.generated_name()
        return (
            peer for peer in self.peers
            if group_of(peer) == group and peer.namespace == namespace and peer.name != own_name
        )


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Result:
        """Pass, or reject with Karmada's reason text."""
        ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        """Score of one feasible cluster (Karmada scores are 0..100)."""
        ...


@runtime_checkable
class ReplicaEstimator(Protocol):
    """How many more replicas of one per-replica requirement fit in each cluster.

    Returns one int per cluster, in the order given; ``UNAUTHENTIC_REPLICA`` (-1) means "cannot
    tell" for that cluster. Raising means the whole answer is ignored for this attempt (§7.1, §7.4).
    """

    name: str

    def max_available_replicas(
        self, clusters: Sequence[ClusterInfo], replica_requirements: ReplicaRequirements | None
    ) -> list[int]: ...


@runtime_checkable
class ComponentSetEstimator(Protocol):
    """Optional second face of an estimator: complete component sets per cluster (§12, alpha).

    Only asked when the ``MultiplePodTemplatesScheduling`` gate is on and the binding qualifies;
    estimators without it are skipped on that path. Same -1 and raising rules as above.
    """

    name: str

    def max_available_component_sets(
        self, clusters: Sequence[ClusterInfo], components: Sequence[Component]
    ) -> list[int]: ...


PluginFactory = Callable[[], object]


class PluginSelectionError(ValueError):
    """A ``--plugins`` entry names no in-tree plugin."""


# The order is data. Karmada iterates a Go map, so its order is random per process (§5.1, §13);
# only the reason recorded for a cluster failing several filters depends on it. We pick the
# registry order Karmada lists.
DEFAULT_FILTERS: tuple[str, ...] = (
    "APIEnablement",
    "TaintToleration",
    "ClusterAffinity",
    "SpreadConstraint",
    "ClusterEviction",
    "WorkloadAffinity",
    "WorkloadAntiAffinity",
)
DEFAULT_SCORES: tuple[str, ...] = ("ClusterAffinity", "ClusterLocality")

# The generic scheduler's steps, under Karmada's names (the ``schedule_step`` label of
# karmada_scheduler_scheduling_algorithm_duration_seconds).
STEP_FILTER = "Filter"
STEP_SCORE = "Score"
STEP_SELECT = "Select"
STEP_ASSIGN_REPLICAS = "AssignReplicas"
STEPS: tuple[str, ...] = (STEP_FILTER, STEP_SCORE, STEP_SELECT, STEP_ASSIGN_REPLICAS)


def in_tree_registry(*, workload_affinity: bool = False) -> dict[str, PluginFactory]:
    """Name -> factory of every in-tree plugin; the workload (anti-)affinity plugins only with
    their alpha gate ``WorkloadAffinity`` on (off by default, §1)."""
    from fleetsched.scheduler.plugins import (
        api_enablement,
        cluster_affinity,
        cluster_eviction,
        cluster_locality,
        spread_constraint,
        taint_toleration,
    )

    registry: dict[str, PluginFactory] = {
        api_enablement.NAME: api_enablement.APIEnablement,
        taint_toleration.NAME: taint_toleration.TaintToleration,
        cluster_affinity.NAME: cluster_affinity.ClusterAffinity,
        spread_constraint.NAME: spread_constraint.SpreadConstraint,
        cluster_locality.NAME: cluster_locality.ClusterLocality,
        cluster_eviction.NAME: cluster_eviction.ClusterEviction,
    }
    if workload_affinity:
        from fleetsched.scheduler.plugins import workload_affinity as affinity
        from fleetsched.scheduler.plugins import workload_anti_affinity as anti_affinity

        registry[affinity.NAME] = affinity.WorkloadAffinity
        registry[anti_affinity.NAME] = anti_affinity.WorkloadAntiAffinity
    return registry


def select_plugins(spec: str | Iterable[str], registry: dict[str, PluginFactory]) -> tuple[str, ...]:
    """Apply Karmada's ``--plugins`` list: ``*`` adds all, ``-Name`` removes, ``Name`` adds.

    Returns the enabled names in registry order (our fixed order, see ``DEFAULT_FILTERS``).
    """
    items = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else [s.strip() for s in spec]
    enabled: set[str] = set()
    for item in items:
        if not item:
            continue
        if item == "*":
            enabled.update(registry)
            continue
        name = item[1:] if item.startswith("-") else item
        if name not in registry:
            known = ", ".join(sorted(registry))
            raise PluginSelectionError(f"unknown scheduler plugin {name!r} (known: {known})")
        if item.startswith("-"):
            enabled.discard(name)
        else:
            enabled.add(name)
    return tuple(n for n in registry if n in enabled)
