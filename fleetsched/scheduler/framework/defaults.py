"""The default profile: today's ``--plugins`` selection as a ``Profile``, and the in-tree registry.

Owns the default plugin set per extension point (the order is data, as kube-scheduler's
``default_plugins.go``), ``default_profile`` (what a configuration without a file, or
``fleetsched config default``, means) and ``in_tree_registry``. The default profile gives exactly
Karmada's results: every score plugin has weight 1 and none normalises, so totals are Karmada's
unweighted sums. This module imports the in-tree plugins only inside ``in_tree_registry``, so the
framework package itself never loads a plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleetsched.scheduler.config.types import DEFAULT_SCHEDULER_NAME, ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.framework.registry import select_plugins

if TYPE_CHECKING:
    from fleetsched.scheduler.framework.registry import Registry

__all__ = [
    "DEFAULT_FILTERS",
    "DEFAULT_QUEUE_SORT",
    "DEFAULT_SCORES",
    "KARMADA_PLUGINS",
    "WORKLOAD_AFFINITY_PLUGINS",
    "default_profile",
    "in_tree_registry",
    "karmada_plugin_names",
]

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
# kube-scheduler's name for the queue order Karmada hard-codes (priority, then FIFO; §3.2).
DEFAULT_QUEUE_SORT = "PrioritySort"

# The names ``--plugins`` selects from, in Karmada's registry order (plugins/registry.go).
KARMADA_PLUGINS: tuple[str, ...] = (
    "APIEnablement",
    "TaintToleration",
    "ClusterAffinity",
    "SpreadConstraint",
    "ClusterLocality",
    "ClusterEviction",
)
# Registered only with the alpha gate WorkloadAffinity (§1).
WORKLOAD_AFFINITY_PLUGINS: tuple[str, ...] = ("WorkloadAffinity", "WorkloadAntiAffinity")


def karmada_plugin_names(*, workload_affinity: bool = False) -> tuple[str, ...]:
    """The names ``--plugins`` knows, in order."""
    return KARMADA_PLUGINS + (WORKLOAD_AFFINITY_PLUGINS if workload_affinity else ())


def in_tree_registry(*, workload_affinity: bool = False) -> Registry:
    """Every in-tree plugin; the workload (anti-)affinity plugins only with their gate on."""
    from fleetsched.scheduler.plugins.registry import build_in_tree_registry

    return build_in_tree_registry(workload_affinity=workload_affinity)


def default_profile(
    plugins_flag: str = "*",
    *,
    workload_affinity: bool = False,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
) -> Profile:
    """The profile equivalent to karmada-scheduler run with ``--plugins=plugins_flag``.

    Raises ``PluginSelectionError`` for an unknown name in the flag.
    """
    enabled = set(select_plugins(plugins_flag, karmada_plugin_names(workload_affinity=workload_affinity)))
    return Profile(
        scheduler_name=scheduler_name,
        plugins={
            ExtensionPoint.QUEUE_SORT: (PluginEntry(DEFAULT_QUEUE_SORT),),
            ExtensionPoint.FILTER: tuple(PluginEntry(n) for n in DEFAULT_FILTERS if n in enabled),
            ExtensionPoint.SCORE: tuple(PluginEntry(n, 1) for n in DEFAULT_SCORES if n in enabled),
        },
    )
