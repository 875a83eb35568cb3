"""Resource names and the integer views the node math uses (Kubernetes' resource
names and Quantity's Value/MilliValue).

CPU is counted in millicores (``milli_value``), everything else in units (``value``), both rounded up.
``pods`` is a resource of its own: a node's allocatable pod slots. A name is *scalar* when Kubernetes
calls it an extended, hugepages, ``kubernetes.io/``-prefixed or attachable-volumes resource; any other
name (``storage``, ``foo``, ``requests.cpu``) is ignored by the node math.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from fleetsched.api.quantity import Quantity, parse_quantity
from fleetsched.labels import is_qualified_name

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "PODS",
    "column_of",
    "demand_of",
    "is_extended_resource",
    "is_scalar_resource",
    "node_allocatable",
    "parse_cached",
    "pod_request",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

_REQUESTS_PREFIX = "requests."
_NATIVE_PREFIX = "kubernetes.io/"


@lru_cache(maxsize=4096)
def is_extended_resource(name: str) -> bool:
    native = "/" not in name or _NATIVE_PREFIX in name
    if native or name.startswith(_REQUESTS_PREFIX):
        return False
    return is_qualified_name(_REQUESTS_PREFIX + name)


@lru_cache(maxsize=4096)
def is_scalar_resource(name: str) -> bool:
    """Kubernetes' IsScalarResourceName: extended, ``hugepages-``, ``*kubernetes.io/*``,
    ``attachable-volumes-``. The one copy: the general estimator and the interpreter use it too."""
    return (is_extended_resource(name) or name.startswith("hugepages-") or _NATIVE_PREFIX in name
            or name.startswith("attachable-volumes-"))


@lru_cache(maxsize=4096)
def column_of(name: str) -> str | None:
    """The node-math column a resource name counts in, or None when the node math ignores it."""
    if name in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS):
        return name
    if is_scalar_resource(name):
        return name
    return None


@lru_cache(maxsize=65536)
def parse_cached(text: str) -> Quantity:
    return parse_quantity(text)


def as_quantity(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, str):
        return parse_cached(value)
    return parse_quantity(value)


def integer_view(name: str, quantity: Quantity) -> int:
    """Millicores for CPU, units for everything else (both rounded up)."""
    return quantity.milli_value() if name == CPU else quantity.value()


def node_allocatable(allocatable: Mapping[str, Any]) -> dict[str, int]:
    """A node's ``status.allocatable`` as integer columns; names the node math ignores are dropped."""
    out: dict[str, int] = {}
    for name, raw in allocatable.items():
        column = column_of(name)
        if column is None:
            continue
        out[column] = integer_view(name, as_quantity(raw))
    return out


def _add_into(total: dict[str, Quantity], resources: Mapping[str, Any]) -> None:
    for name, raw in resources.items():
        q = as_quantity(raw)
        previous = total.get(name)
        total[name] = q if previous is None else previous + q


def pod_request(spec: Mapping[str, Any]) -> dict[str, int]:
    """A pod's request: app containers summed, then the per-resource maximum with each init container,
    then ``spec.overhead`` added; computed exactly and converted to integer columns once."""
    total: dict[str, Quantity] = {}
    for container in spec.get("containers") or ():
        requests = ((container or {}).get("resources") or {}).get("requests") or {}
        _add_into(total, requests)
    for container in spec.get("initContainers") or ():
        requests = ((container or {}).get("resources") or {}).get("requests") or {}
        for name, raw in requests.items():
            q = as_quantity(raw)
            current = total.get(name)
            if current is None or current < q:
                total[name] = q
    _add_into(total, spec.get("overhead") or {})
    out: dict[str, int] = {}
    for name, q in total.items():
        column = column_of(name)
        if column is None or column == PODS:
            continue
        out[column] = integer_view(name, q)
    return out


def demand_of(resource_request: Iterable[tuple[str, Quantity]]) -> list[tuple[str, int]]:
    """The per-replica demand that divides a node's free resources (spec 3.5): positive CPU millicores,
    positive memory/ephemeral/scalar units; ``pods`` and ignored names drop out."""
    out: list[tuple[str, int]] = []
    for name, q in resource_request:
        column = column_of(name)
        if column is None or column == PODS:
            continue
        amount = integer_view(name, q)
        if amount > 0:
            out.append((column, amount))
    return out
