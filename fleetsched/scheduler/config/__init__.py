"""The scheduler's versioned configuration: ``config.fleetsched.io/v1alpha1`` ``SchedulerConfiguration``.

Owns the file format (``v1alpha1``), the merge and validation rules with field paths
(``resolve``), reading a file (``load``, the package's only I/O besides importing the out-of-tree
plugins a profile enables, ``plugins``), and writing one back (``render``). The in-tree catalogue
and the default profile have one source, ``fleetsched.scheduler.framework.defaults`` (re-exported
here). Its product is plain values: ``types.Profile`` per ``schedulerName`` (what the framework
runtime builds a Framework from) inside a ``configuration.SchedulerConfiguration``. Must not run
anything: the runtime validates each plugin's args.

Exports resolve lazily (PEP 562): ``import fleetsched.scheduler.framework.profile``, as the scheduling
core does, does not import pydantic or YAML.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetsched.scheduler.config.configuration import (
        API_VERSION,
        KIND,
        ClientConnection,
        EstimatorSettings,
        LeaderElection,
        SchedulerConfiguration,
    )
    from fleetsched.scheduler.config.load import (
        ConfigError,
        LoadedConfiguration,
        load_configuration,
        parse_configuration,
    )
    from fleetsched.scheduler.config.plugins import ENTRY_POINT_GROUP, PluginLoadError
    from fleetsched.scheduler.config.render import configuration_to_dict, configuration_to_yaml
    from fleetsched.scheduler.framework.defaults import default_plugins, default_profile, in_tree_points
    from fleetsched.scheduler.framework.profile import (
        DEFAULT_SCHEDULER_NAME,
        ExtenderConfig,
        ExtenderTLS,
        ExtensionPoint,
        PluginEntry,
        Profile,
    )

_EXPORTS: dict[str, str] = {
    "API_VERSION": "configuration",
    "KIND": "configuration",
    "ClientConnection": "configuration",
    "EstimatorSettings": "configuration",
    "LeaderElection": "configuration",
    "SchedulerConfiguration": "configuration",
    "default_plugins": "fleetsched.scheduler.framework.defaults",
    "default_profile": "fleetsched.scheduler.framework.defaults",
    "in_tree_points": "fleetsched.scheduler.framework.defaults",
    "ConfigError": "load",
    "LoadedConfiguration": "load",
    "load_configuration": "load",
    "parse_configuration": "load",
    "ENTRY_POINT_GROUP": "plugins",
    "PluginLoadError": "plugins",
    "configuration_to_dict": "render",
    "configuration_to_yaml": "render",
    "DEFAULT_SCHEDULER_NAME": "types",
    "ExtenderConfig": "types",
    "ExtenderTLS": "types",
    "ExtensionPoint": "types",
    "PluginEntry": "types",
    "Profile": "types",
}

__all__ = [
    "API_VERSION",
    "DEFAULT_SCHEDULER_NAME",
    "ENTRY_POINT_GROUP",
    "KIND",
    "ClientConnection",
    "ConfigError",
    "EstimatorSettings",
    "ExtenderConfig",
    "ExtenderTLS",
    "ExtensionPoint",
    "LeaderElection",
    "LoadedConfiguration",
    "PluginEntry",
    "PluginLoadError",
    "Profile",
    "SchedulerConfiguration",
    "configuration_to_dict",
    "configuration_to_yaml",
    "default_plugins",
    "default_profile",
    "in_tree_points",
    "load_configuration",
    "parse_configuration",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module if "." in module else f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
