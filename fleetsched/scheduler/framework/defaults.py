"""The in-tree plugin catalogue and the default profile: the one source of truth for both.

Owns the default plugin set per extension point (the order is data, as kube-scheduler's
``default_plugins.go``), ``default_profile`` (what a command line without a configuration file, a
``--plugins`` selection, or ``fleetsched config default`` means), ``in_tree_registry`` (every in-tree
plugin, built in ``scheduler/plugins/registry.py``) and ``in_tree_points`` (which extension points
each registered plugin implements, read off the plugins the registry builds, so the configuration
loader accepts exactly what the runtime can run). The default profile gives exactly Karmada's
results: every score plugin has weight 1 and none normalises, so totals are Karmada's unweighted
sums. The plugins are imported only inside ``in_tree_registry`` / ``in_tree_points``, so importing
this module (or the framework package) never loads a plugin.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from fleetsched.scheduler.framework.profile import (
    DEFAULT_SCHEDULER_NAME,
    ExtensionPoint,
    PluginEntry,
    Profile,
)
from fleetsched.scheduler.framework.registry import PluginSelectionError, select_plugins

if TYPE_CHECKING:
    from fleetsched.scheduler.framework.registry import Registry

__all__ = [
    "DEFAULT_FILTERS",
    "DEFAULT_QUEUE_SORT",
    "DEFAULT_SCORES",
    "KARMADA_PLUGINS",
    "PRIORITY_SORT",
    "WORKLOAD_AFFINITY_PLUGINS",
    "PluginSelectionError",
    "default_plugins",
    "default_profile",
    "in_tree_points",
    "in_tree_registry",
    "karmada_plugin_names",
    "plugin_points",
]

# The order is data. Karmada iterates a Go map, so its order is random per process (§5.1, §13);
# only the reason recorded for a cluster failing several filters depends on it. We pick the
# registry order Karmada lists. The workload (anti-)affinity filters count only with their gate on.
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
PRIORITY_SORT = DEFAULT_QUEUE_SORT

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


def plugin_points(plugin: object) -> frozenset[ExtensionPoint]:
    """The extension points ``plugin`` (an instance) implements, by the runtime's own Protocols."""
    from fleetsched.scheduler.framework.runtime import POINT_PROTOCOLS

    return frozenset(point for point, protocol in POINT_PROTOCOLS.items() if isinstance(plugin, protocol))


@functools.cache
def in_tree_points(*, workload_affinity: bool = False) -> Mapping[str, frozenset[ExtensionPoint]]:
    """Every in-tree plugin name -> the extension points it implements, in registry order.

    Read off the registry: each factory is called once with no args and no handle (every in-tree
    plugin's args have defaults), so a plugin added to the registry is known to the configuration
    loader with no further list to keep in step.
    """
    registry = in_tree_registry(workload_affinity=workload_affinity)
    return MappingProxyType({name: plugin_points(registry[name](None, None)) for name in registry})


def default_plugins(*, workload_affinity: bool = False) -> Mapping[ExtensionPoint, tuple[PluginEntry, ...]]:
    """The default enabled plugins per extension point, in run order (score weights 1)."""
    return default_profile(workload_affinity=workload_affinity).plugins


def default_profile(
    plugins_flag: str = "*",
    *,
    workload_affinity: bool = False,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
) -> Profile:
    """The profile equivalent to karmada-scheduler run with ``--plugins=plugins_flag``: the selected
    in-tree plugins keep their default points and order (ClusterAffinity, which filters and scores,
    goes from both); the queue sort is not a Karmada plugin and stays.

    Raises ``PluginSelectionError`` for an unknown name in the flag.
    """
    enabled = set(select_plugins(plugins_flag, karmada_plugin_names(workload_affinity=workload_affinity)))
    plugins = {
        ExtensionPoint.QUEUE_SORT: (PluginEntry(DEFAULT_QUEUE_SORT),),
        ExtensionPoint.FILTER: tuple(PluginEntry(n) for n in DEFAULT_FILTERS if n in enabled),
        ExtensionPoint.SCORE: tuple(PluginEntry(n, 1) for n in DEFAULT_SCORES if n in enabled),
    }
    return Profile(
        scheduler_name=scheduler_name,
        plugins=MappingProxyType({point: entries for point, entries in plugins.items() if entries}),
    )
