"""The capacity re-check at reservation (gate SchedulingOvercommitProtection).

A decision is computed against the assume record at some version; when another decision changed a
target cluster's assumptions since, the record asks whether that cluster still holds what the
decision gives it (``AssumeRecord.reserve``'s ``fits``). The answer is the general estimator's, on
the cluster as it is now with its assumptions laid over; an accurate estimator's answer cannot be
repeated here, so under one every such cluster is refused and the binding decided again. Pure.
"""

from __future__ import annotations

from collections.abc import Callable

from fleetsched.scheduler.assume import AssumeRecord
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import SchedulingBinding, TargetCluster


def still_fits(
    scheduler: Scheduler,
    record: AssumeRecord,
    snapshot: Snapshot,
    binding: SchedulingBinding,
    targets: tuple[TargetCluster, ...] | list[TargetCluster],
) -> Callable[[str], bool]:
    """Whether a cluster of ``snapshot`` still holds the replicas ``targets`` give it, over what the
    binding holds there already, with ``record``'s assumptions as they are now."""
    new = {t.name: t.replicas for t in targets}
    held: dict[str, int] = {}
    for t in binding.clusters:
        held.setdefault(t.name, t.replicas)
    position = snapshot.position()
    general = scheduler.general

    def fits(cluster: str) -> bool:
        if scheduler.estimators != (general,):
            return False  # an accurate estimator's answer cannot be re-checked here: decide again
        at = position.get(cluster)
        if at is None:
            return False
        info = record.overlaid(snapshot.clusters[at])
        if binding.components and scheduler.settings.multiple_pod_templates:
            sets = general.max_available_component_sets([info], binding.components)[0]
            return cluster in held or sets >= 1
        if binding.replicas == 0:
            return True
        free = general.max_available_replicas([info], binding.replica_requirements)[0]
        return new.get(cluster, 0) <= free + held.get(cluster, 0)

    return fits
