"""Out-of-tree plugins: ordinary Python packages found through the entry-point group ``fleetsched.plugins``.

Each entry point is one plugin: its name is the plugin name the configuration file uses, its object
the plugin's factory (what the runtime's registry calls to build it). Discovery reads the installed
distributions' metadata only; a plugin's module is imported when a profile enables its name, never
otherwise. Refusals are one line naming the plugin and the distribution: a name an in-tree plugin
already has, a name two distributions give, a module that fails to import. Returns plain
``name -> factory`` mappings that the runtime's registry merges with the in-tree one.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from fleetsched.scheduler.framework.profile import ExtensionPoint

__all__ = [
    "ENTRY_POINT_GROUP",
    "OutOfTreePlugin",
    "PluginLoadError",
    "discover",
    "extension_points_of",
    "load",
]

ENTRY_POINT_GROUP = "fleetsched.plugins"

# The method each extension point calls on a plugin (kube-scheduler's method names in Python casing;
# a QueueSort plugin answers ``less``).
METHOD_OF_POINT: Mapping[ExtensionPoint, str] = MappingProxyType(
    {
        ExtensionPoint.QUEUE_SORT: "less",
        ExtensionPoint.PRE_FILTER: "pre_filter",
        ExtensionPoint.FILTER: "filter",
        ExtensionPoint.POST_FILTER: "post_filter",
        ExtensionPoint.PRE_SCORE: "pre_score",
        ExtensionPoint.SCORE: "score",
        ExtensionPoint.RESERVE: "reserve",
        ExtensionPoint.PERMIT: "permit",
        ExtensionPoint.PRE_BIND: "pre_bind",
        ExtensionPoint.POST_BIND: "post_bind",
    }
)


class PluginLoadError(ValueError):
    """An out-of-tree plugin cannot be used; ``str()`` is one line naming it."""


@dataclass(frozen=True, slots=True)
class OutOfTreePlugin:
    """One entry point of the group: the plugin's name, ``module:attribute``, and who ships it."""

    name: str
    value: str
    distribution: str
    entry_point: importlib.metadata.EntryPoint

    def describe(self) -> str:
        return f"plugin {self.name!r} (entry point {self.value!r} of distribution {self.distribution!r})"


def _distribution_name(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    return (dist.metadata["Name"] if dist is not None else None) or "?"


def discover(*, in_tree: Collection[str]) -> Mapping[str, OutOfTreePlugin]:
    """Every installed entry point of ``fleetsched.plugins`` by plugin name, nothing imported.

    Raises ``PluginLoadError`` for a name an in-tree plugin has or two distributions both provide:
    either would make the configuration file's meaning depend on what happens to be installed.
    """
    found: dict[str, OutOfTreePlugin] = {}
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = _distribution_name(entry_point)
        plugin = OutOfTreePlugin(entry_point.name, entry_point.value, dist, entry_point)
        if plugin.name in in_tree:
            raise PluginLoadError(
                f"{plugin.describe()}: the name of an in-tree plugin; rename the entry point"
            )
        other = found.get(plugin.name)
        if other is not None and other.value != plugin.value:
            raise PluginLoadError(
                f"{plugin.describe()}: distribution {other.distribution!r} also provides "
                "a plugin of that name"
            )
        found[plugin.name] = plugin
    return MappingProxyType(found)


def load(names: Iterable[str], found: Mapping[str, OutOfTreePlugin]) -> Mapping[str, Callable[..., object]]:
    """Import the factories of the plugins named in ``names`` that ``found`` has (others are left to
    the configuration's "unknown plugin" check). Raises ``PluginLoadError`` naming the plugin."""
    factories: dict[str, Callable[..., object]] = {}
    for name in sorted(set(names)):
        plugin = found.get(name)
        if plugin is None:
            continue
        try:
            factory = plugin.entry_point.load()
        except Exception as exc:  # any import-time failure of third-party code is a refusal, by name
            detail = " ".join(str(exc).split()) or type(exc).__name__
            raise PluginLoadError(
                f"{plugin.describe()}: failed to import: {type(exc).__name__}: {detail}"
            ) from exc
        if not callable(factory):
            raise PluginLoadError(f"{plugin.describe()}: is not callable (a plugin factory is)")
        factories[name] = factory
    return MappingProxyType(factories)


def extension_points_of(factory: Callable[..., object]) -> frozenset[ExtensionPoint] | None:
    """The points a factory's plugins implement, from its methods when the factory is a class (or
    declares ``extension_points``); None when that cannot be told without building one."""
    declared = getattr(factory, "extension_points", None)
    if declared is not None:
        return frozenset(ExtensionPoint(p) if isinstance(p, str) else p for p in declared)
    if inspect.isclass(factory):
        return frozenset(
            point for point, method in METHOD_OF_POINT.items() if callable(getattr(factory, method, None))
        )
    return None
