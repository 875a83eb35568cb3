"""HTTP(S) scheduler extenders: the protocol, the client edge, and their filter/prioritize semantics.

An edge package: the scheduling core never imports it; the scheduler process builds one
``HTTPExtender`` per configured extender and hands them to the framework runtime, which sees them
through its extender Protocol (mirrored in ``run.Extender``). Modules:

* ``protocol``: the versioned JSON wire types (``extender.fleetsched.io/v1alpha1``) and their strict
  decoding;
* ``objects``: the binding and clusters rendered as Karmada objects for the request;
* ``client``: ``HTTPExtender`` (pooled keep-alive HTTPS, timeouts, fault classification; a blocking
  and an async face; how it fits the pure core is written there);
* ``run``: ``run_extenders`` and friends, which apply ``ignorable`` and the score weighting;
* ``errors``: ``ExtenderError`` and ``FaultKind``; ``metrics``: the Prometheus collectors.

Exports resolve lazily (PEP 562), so ``fleetsched.extender.run`` can be imported without aiohttp.
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
    from fleetsched.extender.protocol import API_VERSION
    from fleetsched.extender.run import (
        AsyncExtender,
        Extender,
        ExtenderOutcome,
        FilterResult,
        SkippedExtender,
        count_ignored_failure,
        run_extenders,
        run_extenders_async,
    )

_EXPORTS = {
    "API_VERSION": "protocol",
    "AsyncExtender": "run",
    "EdgeLoop": "client",
    "Extender": "run",
    "ExtenderConfigError": "client",
    "ExtenderError": "errors",
    "ExtenderOutcome": "run",
    "FaultKind": "errors",
    "FilterResult": "run",
    "HTTPExtender": "client",
    "SkippedExtender": "run",
    "build_extenders": "client",
    "build_profile_extenders": "client",
    "count_ignored_failure": "run",
    "run_extenders": "run",
    "run_extenders_async": "run",
}

__all__ = [
    "API_VERSION",
    "AsyncExtender",
    "EdgeLoop",
    "Extender",
    "ExtenderConfigError",
    "ExtenderError",
    "ExtenderOutcome",
    "FaultKind",
    "FilterResult",
    "HTTPExtender",
    "SkippedExtender",
    "build_extenders",
    "build_profile_extenders",
    "count_ignored_failure",
    "run_extenders",
    "run_extenders_async",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"fleetsched.extender.{module}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
