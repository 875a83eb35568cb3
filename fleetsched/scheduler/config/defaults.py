"""The in-tree plugin catalogue and today's defaults, as data.

Owns which in-tree plugins exist, which extension points each one implements, and the default
plugin set per extension point (Karmada's filter and score plugins plus the priority queue sort),
in run order. Also the profile equivalent to a Karmada ``--plugins`` selection, so a command line
without a configuration file and ``fleetsched config default`` mean the same thing. No imports of
the plugins themselves: this module only knows their names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from fleetsched.scheduler.config.types import (
    DEFAULT_SCHEDULER_NAME,
    ExtensionPoint,
    PluginEntry,
    Profile,
)

__all__ = [
    "DEFAULT_FILTERS",
    "DEFAULT_SCORES",
    "PRIORITY_SORT",
    "WORKLOAD_AFFINITY_FILTERS",
    "PluginSelectionError",
    "default_plugins",
    "default_profile",
    "in_tree_points",
    "select_plugins",
]

# Karmada's scheduling queue orders by the binding's priority, then by arrival (scheduler.md §3.2).
PRIORITY_SORT = "PrioritySort"

# The order is data (scheduler.md §5.1, §13): Karmada iterates a Go map; we use its registry order.
DEFAULT_FILTERS: tuple[str, ...] = (
    "APIEnablement",
    "TaintToleration",
    "ClusterAffinity",
    "SpreadConstraint",
    "ClusterEviction",
)
# Registered only with the alpha gate WorkloadAffinity on (off by default, scheduler.md §1).
WORKLOAD_AFFINITY_FILTERS: tuple[str, ...] = ("WorkloadAffinity", "WorkloadAntiAffinity")
DEFAULT_SCORES: tuple[str, ...] = ("ClusterAffinity", "ClusterLocality")

_F, _S, _Q = ExtensionPoint.FILTER, ExtensionPoint.SCORE, ExtensionPoint.QUEUE_SORT


def in_tree_points(*, workload_affinity: bool = False) -> Mapping[str, frozenset[ExtensionPoint]]:
    """Every in-tree plugin name -> the extension points it implements, in registry order."""
    points: dict[str, frozenset[ExtensionPoint]] = {PRIORITY_SORT: frozenset({_Q})}
    for name in (*DEFAULT_FILTERS, *(WORKLOAD_AFFINITY_FILTERS if workload_affinity else ())):
        points[name] = frozenset({_F})
    for name in DEFAULT_SCORES:
        points[name] = points.get(name, frozenset()) | {_S}
    return MappingProxyType(points)


def default_plugins(*, workload_affinity: bool = False) -> Mapping[ExtensionPoint, tuple[PluginEntry, ...]]:
    """The default enabled plugins per extension point, in run order (score weights 1)."""
    filters = (*DEFAULT_FILTERS, *(WORKLOAD_AFFINITY_FILTERS if workload_affinity else ()))
    return MappingProxyType(
        {
            _Q: (PluginEntry(PRIORITY_SORT),),
            _F: tuple(PluginEntry(name) for name in filters),
            _S: tuple(PluginEntry(name, 1) for name in DEFAULT_SCORES),
        }
    )


class PluginSelectionError(ValueError):
    """A ``--plugins`` entry names no in-tree plugin."""


def select_plugins(spec: str | Iterable[str], known: Iterable[str]) -> frozenset[str]:
    """Karmada's ``--plugins`` list over ``known`` names: ``*`` adds all, ``-Name`` removes, ``Name`` adds."""
    names = tuple(known)
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    enabled: set[str] = set()
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        if item == "*":
            enabled.update(names)
            continue
        name = item.removeprefix("-")
        if name not in names:
            known = ", ".join(sorted(names))
            raise PluginSelectionError(f"unknown scheduler plugin {name!r} (known: {known})")
        if item.startswith("-"):
            enabled.discard(name)
        else:
            enabled.add(name)
    return frozenset(enabled)


def default_profile(
    plugins_flag: str = "*",
    *,
    workload_affinity: bool = False,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
) -> Profile:
    """The profile today's ``--plugins`` flag means: the selected in-tree plugins keep their default
    points and order (a plugin that filters and scores, ClusterAffinity, goes from both); the queue
    sort is not a Karmada plugin and stays."""
    points = in_tree_points(workload_affinity=workload_affinity)
    selectable = [name for name in points if name != PRIORITY_SORT]
    enabled = select_plugins(plugins_flag, selectable)
    plugins = {
        point: kept
        for point, entries in default_plugins(workload_affinity=workload_affinity).items()
        if (kept := tuple(e for e in entries if e.name in enabled or e.name == PRIORITY_SORT))
    }
    return Profile(scheduler_name=scheduler_name, plugins=MappingProxyType(plugins))
