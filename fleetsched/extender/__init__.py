"""HTTP(S) scheduler extenders: the wire protocol and the client edge.

An edge package: the scheduling core never imports it; the scheduler process builds one
``HTTPExtender`` per configured extender and hands them to the framework runtime
(``Scheduler(extenders=...)``), which owns their semantics (filters chained in order, weighted
prioritize scores, ``ignorable``) and sees them through its ``Extender`` Protocol
(``fleetsched.scheduler.framework.interface``). Modules:

* ``protocol``: the versioned JSON wire types (``extender.fleetsched.io/v1alpha1``) and their strict
  decoding;
* ``objects``: the binding and clusters rendered as Karmada objects for the request;
* ``client``: ``HTTPExtender`` (pooled keep-alive HTTPS, timeouts, fault classification; a blocking
  and an async face; how it fits the pure core is written there);
* ``errors``: ``ExtenderError`` and ``FaultKind``; ``metrics``: the Prometheus collectors and
  ``count_ignored_failure``, the runtime's hook for skipped failures.

Exports resolve lazily (PEP 562), so ``errors`` and ``metrics`` can be imported without aiohttp.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleetsched.extender.client import (
        EdgeLoop,
        ExtenderConfigError,
        HTTPExtender,
        build_extenders,
        build_profile_extenders,
    )
    from fleetsched.extender.errors import ExtenderError, FaultKind
    from fleetsched.extender.metrics import count_ignored_failure
    from fleetsched.extender.protocol import API_VERSION

_EXPORTS = {
    "API_VERSION": "protocol",
    "EdgeLoop": "client",
    "ExtenderConfigError": "client",
    "ExtenderError": "errors",
    "FaultKind": "errors",
    "HTTPExtender": "client",
    "build_extenders": "client",
    "build_profile_extenders": "client",
    "count_ignored_failure": "metrics",
}

__all__ = [
    "API_VERSION",
    "EdgeLoop",
    "ExtenderConfigError",
    "ExtenderError",
    "FaultKind",
    "HTTPExtender",
    "build_extenders",
    "build_profile_extenders",
    "count_ignored_failure",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"fleetsched.extender.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
