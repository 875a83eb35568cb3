"""TEMPORARY, until the framework runtime (branch fw-runtime) builds a Framework from a ``Profile``:
today's ``Scheduler`` runs a profile by turning it back into its ``Settings(plugins=...)``.

Only profiles equal to some ``--plugins`` selection can be said that way (in-tree filter and
score plugins in their default order, weight 1, the priority queue sort, nothing else); any other
profile is refused with one line naming it and what it needs. Delete this module, and its two
callers' use of it (``simulate``, ``controller/scheduler_cmd``), when the runtime lands.
"""

from __future__ import annotations

import dataclasses

from fleetsched.scheduler.config.defaults import PRIORITY_SORT, default_profile, in_tree_points
from fleetsched.scheduler.config.types import ExtensionPoint, Profile
from fleetsched.scheduler.pipeline import Settings

__all__ = ["UnsupportedProfile", "settings_for"]

_RUNTIME = "needs the framework runtime, which this build does not have yet"


class UnsupportedProfile(ValueError):
    """A profile today's Scheduler cannot run."""


def settings_for(profile: Profile, *, base: Settings) -> Settings:
    """``base`` with the ``plugins`` selection that ``profile`` means; UnsupportedProfile otherwise."""
    where = f"profile {profile.scheduler_name!r}"
    if profile.plugin_args:
        raise UnsupportedProfile(f"{where}: pluginConfig {_RUNTIME}")
    if profile.extenders:
        raise UnsupportedProfile(f"{where}: extenders {_RUNTIME}")
    if profile.ignorable_plugins or profile.plugin_timeout_seconds is not None:
        raise UnsupportedProfile(f"{where}: ignorablePlugins and pluginTimeout {_RUNTIME}")
    in_tree = in_tree_points(workload_affinity=base.workload_affinity)
    names = {entry.name for entries in profile.plugins.values() for entry in entries}
    outside = sorted(names - set(in_tree))
    if outside:
        raise UnsupportedProfile(f"{where}: out-of-tree plugin {outside[0]!r} {_RUNTIME}")
    selection = ",".join(name for name in in_tree if name in names and name != PRIORITY_SORT)
    equivalent = default_profile(
        selection, workload_affinity=base.workload_affinity, scheduler_name=profile.scheduler_name
    )
    if dict(equivalent.plugins) != dict(profile.plugins):
        points = [p.value for p in ExtensionPoint if equivalent.enabled(p) != profile.enabled(p)]
        raise UnsupportedProfile(
            f"{where}: {', '.join(points)}: only the in-tree plugins in their default order and weight 1, "
            f"as a --plugins selection gives them, run before the framework runtime lands; this {_RUNTIME}"
        )
    return dataclasses.replace(base, plugins=selection)
