"""The in-tree registry: the one place that imports every in-tree plugin (Karmada's plugins/registry.go).

The framework never imports a plugin; ``framework.defaults.in_tree_registry`` calls this.
"""

from __future__ import annotations

from fleetsched.scheduler.framework.registry import Registry
from fleetsched.scheduler.plugins import (
    api_enablement,
    cluster_affinity,
    cluster_eviction,
    cluster_locality,
    cluster_resources_balanced_allocation,
    cluster_resources_fit,
    priority_sort,
    spread_constraint,
    taint_toleration,
    workload_anti_affinity,
)
from fleetsched.scheduler.plugins import workload_affinity as affinity_plugin

__all__ = ["build_in_tree_registry"]


def build_in_tree_registry(*, workload_affinity: bool = False) -> Registry:
    """Name -> factory of every in-tree plugin, in Karmada's registry order; the workload
    (anti-)affinity plugins only with their alpha gate ``WorkloadAffinity`` on (§1)."""
    registry = Registry()
    registry.register(api_enablement.NAME, api_enablement.new)
    registry.register(taint_toleration.NAME, taint_toleration.new)
    registry.register(cluster_affinity.NAME, cluster_affinity.new)
    registry.register(spread_constraint.NAME, spread_constraint.new)
    registry.register(cluster_locality.NAME, cluster_locality.new)
    registry.register(cluster_eviction.NAME, cluster_eviction.new)
    if workload_affinity:
        registry.register(affinity_plugin.NAME, affinity_plugin.new)
        registry.register(workload_anti_affinity.NAME, workload_anti_affinity.new)
    registry.register(priority_sort.NAME, priority_sort.new)
    # Resource-aware scores (issue 12 item 5): registered, but no default profile enables them.
    registry.register(
        cluster_resources_fit.NAME,
        cluster_resources_fit.new,
        args_model=cluster_resources_fit.ClusterResourcesFitArgs,
    )
    registry.register(
        cluster_resources_balanced_allocation.NAME,
        cluster_resources_balanced_allocation.new,
        args_model=cluster_resources_balanced_allocation.ClusterResourcesBalancedAllocationArgs,
    )
    return registry
