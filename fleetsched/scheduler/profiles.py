"""One real ``Scheduler`` (one ``Framework``) per configuration profile, for ``simulate`` and the scheduler.

Owns the registry a configuration runs with (the in-tree registry plus the out-of-tree factories
the loader imported, ``LoadedConfiguration.out_of_tree``; a name already registered is refused,
never shadowed) and building each profile's Scheduler from it. Pure: the extenders (edge objects
doing HTTP) come in already built, one tuple per schedulerName.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fleetsched.scheduler.framework.defaults import in_tree_registry
from fleetsched.scheduler.framework.interface import Extender, PluginArgsError
from fleetsched.scheduler.framework.profile import Profile
from fleetsched.scheduler.framework.registry import DuplicatePluginError, Registry
from fleetsched.scheduler.framework.runtime import FrameworkError
from fleetsched.scheduler.pipeline import Scheduler, Settings

__all__ = ["ProfileError", "profile_registry", "profile_schedulers"]


class ProfileError(ValueError):
    """A profile cannot be built (unknown plugin, missing method, bad args, duplicate name): one line.
    ``args_error``: the plugin args' error it words, when it is one (``config.unknown_arg_message``
    places an unknown field in the file)."""

    def __init__(self, message: str, args_error: PluginArgsError | None = None) -> None:
        super().__init__(message)
        self.args_error = args_error


def profile_registry(
    out_of_tree: Mapping[str, Callable[..., object]], *, workload_affinity: bool = False
) -> Registry:
    """The in-tree registry with ``out_of_tree`` merged in; ProfileError for a name registered twice."""
    registry = in_tree_registry(workload_affinity=workload_affinity)
    try:
        registry.merge(dict(out_of_tree))  # type: ignore[arg-type]
    except DuplicatePluginError as exc:
        raise ProfileError(f"out-of-tree plugins: {exc}") from None
    return registry


def profile_schedulers(
    profiles: Sequence[Profile],
    settings: Settings,
    *,
    out_of_tree: Mapping[str, Callable[..., object]] | None = None,
    enable_empty_workload_propagation: bool | None = None,
    extenders: Mapping[str, Sequence[Extender]] | None = None,
    **scheduler_options: Any,
) -> dict[str, Scheduler]:
    """schedulerName -> a Scheduler running that profile over one shared registry.

    ``enable_empty_workload_propagation`` (the file's setting) overrides ``settings``' when given;
    ``extenders`` holds each profile's built extenders; other options go to every ``Scheduler``.
    Raises ``ProfileError`` with one line naming the profile and the plugin.
    """
    if enable_empty_workload_propagation is not None:
        settings = dataclasses.replace(
            settings, enable_empty_workload_propagation=enable_empty_workload_propagation
        )
    registry = profile_registry(out_of_tree or {}, workload_affinity=settings.workload_affinity)
    built: dict[str, Scheduler] = {}
    for profile in profiles:
        try:
            built[profile.scheduler_name] = Scheduler(
                settings=settings,
                profile=profile,
                registry=registry,
                extenders=tuple((extenders or {}).get(profile.scheduler_name, ())),
                **scheduler_options,
            )
        except (FrameworkError, PluginArgsError) as exc:
            raise ProfileError(str(exc), exc if isinstance(exc, PluginArgsError) else None) from None
    return built
