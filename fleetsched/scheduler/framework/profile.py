"""The resolved scheduler configuration: what a ``SchedulerConfiguration`` file means once it has
been read, defaulted and validated, and what a Framework is built from.

It lives with the framework, below the configuration loader, so the loader may import the
framework (its defaults, the in-tree registry) and the framework never imports the loader.
This is the contract between the configuration loader (``scheduler/config``: the versioned file
format, defaults, validation with field paths, ``fleetsched config default``) and the framework
runtime (``scheduler/framework/runtime.py``), which builds one Framework per ``Profile``. Plain
frozen values: no file format, no pydantic, no I/O. Plugin arguments stay raw mappings here; each
plugin validates its own with its typed args model when the runtime builds it.
"""

from __future__ import annotations

import enum
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_SCHEDULER_NAME",
    "ExtenderConfig",
    "ExtenderTLS",
    "ExtensionPoint",
    "PluginEntry",
    "Profile",
    "redact_url",
]

# Karmada's default ``spec.schedulerName``: bindings without one belong to this profile.
DEFAULT_SCHEDULER_NAME = "default-scheduler"


class ExtensionPoint(enum.Enum):
    """Extension points in the order a binding meets them; values are the file's field names."""

    QUEUE_SORT = "queueSort"
    PRE_FILTER = "preFilter"
    FILTER = "filter"
    POST_FILTER = "postFilter"
    PRE_SCORE = "preScore"
    SCORE = "score"
    RESERVE = "reserve"
    PERMIT = "permit"
    PRE_BIND = "preBind"
    POST_BIND = "postBind"


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """One enabled plugin at one extension point, in run order. ``weight`` counts at ``score``
    only (kube-scheduler's convention: an unset weight is 1)."""

    name: str
    weight: int = 1


@dataclass(frozen=True, slots=True)
class ExtenderTLS:
    """TLS towards one extender: the CA that signs its certificate, and an optional client pair."""

    ca_file: str | None = None
    ca_data: bytes | None = None
    cert_file: str | None = None
    key_file: str | None = None
    server_name: str | None = None
    insecure: bool = False


@dataclass(frozen=True, slots=True)
class ExtenderConfig:
    """One HTTP(S) extender (kube-scheduler's ``Extender`` with Node replaced by Cluster)."""

    url_prefix: str
    filter_verb: str = ""
    prioritize_verb: str = ""
    weight: int = 1
    http_timeout_seconds: float = 5.0
    ignorable: bool = False
    tls: ExtenderTLS | None = None

    @property
    def name(self) -> str:
        """How errors, metrics and explanations name the extender: its URL, without user info.

        The configuration file refuses a URL with user info; an ``ExtenderConfig`` built in code
        may still carry one, and its password must not reach a condition, a label or a log."""
        return redact_url(self.url_prefix)


def redact_url(url: str) -> str:
    """``url`` with any user info (``user:password@``) replaced by ``***@``; other URLs unchanged."""
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError:
        return url if "@" not in url else "<a URL that cannot be shown>"
    if "@" not in parsed.netloc:
        return url
    host = parsed.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parsed._replace(netloc=f"***@{host}"))


@dataclass(frozen=True, slots=True)
class Profile:
    """One scheduling profile: the bindings whose ``spec.schedulerName`` is ``scheduler_name``
    are scheduled by a Framework built from it.

    ``plugins`` holds, per extension point, the enabled plugins in run order after the defaults
    and the file's ``enabled``/``disabled`` lists (and ``multiPoint``) were merged; a point that is
    absent has no plugin. ``plugin_args`` maps a plugin name to its raw ``pluginConfig`` args.
    A plugin named in ``ignorable_plugins`` that fails or overruns ``plugin_timeout_seconds`` is
    skipped for that binding (and the explanation says so) instead of failing the binding.
    """

    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    plugins: Mapping[ExtensionPoint, tuple[PluginEntry, ...]] = field(default_factory=dict)
    plugin_args: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    extenders: tuple[ExtenderConfig, ...] = ()
    ignorable_plugins: frozenset[str] = frozenset()
    plugin_timeout_seconds: float | None = None

    def enabled(self, point: ExtensionPoint) -> tuple[PluginEntry, ...]:
        return self.plugins.get(point, ())
