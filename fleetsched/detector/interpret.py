"""Replica interpretation of resource templates (Karmada's default interpreter, GetReplicas): replicas
and per-replica requirements.

Only Karmada's built-in default interpreters exist here, keyed by exact apiVersion + kind
(``pkg/resourceinterpreter/default/native``); every other kind has 0 replicas and no requirements.
Pure: reads the template's raw dict, never changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from fleetsched.api.meta import NodeSelector, Toleration
from fleetsched.api.quantity import Format, Quantity, parse_quantity
from fleetsched.api.resources import is_scalar_resource
from fleetsched.api.work import NodeClaim, ReplicaRequirements

__all__ = [
    "InterpretError",
    "PodRequest",
    "effective_pod_request",
    "interpret_replicas",
    "is_scalar_resource_name",
    "replica_requirements",
]

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
_BINARY_NAMES = (MEMORY, EPHEMERAL_STORAGE)


_POD_TEMPLATE_KINDS = {
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
}


# Kubernetes' IsScalarResourceName; one copy, shared with the estimators.
is_scalar_resource_name = is_scalar_resource


class InterpretError(ValueError):
    """A template field the interpreter needs has the wrong shape; ``path`` names it."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(slots=True)
class PodRequest:
    """Karmada's util.Resource: cpu in millicores, everything else as integer ``Value()``."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    pods: int = 0
    scalars: dict[str, int] | None = None

    def _values(self, resources: Mapping[str, Quantity]) -> dict[str, int]:
        out: dict[str, int] = {}
        for name, quantity in resources.items():
            if name == CPU:
                out[name] = quantity.milli_value()
            elif name in (MEMORY, EPHEMERAL_STORAGE, PODS) or is_scalar_resource_name(name):
                out[name] = quantity.value()
        return out

    def add(self, resources: Mapping[str, Quantity]) -> None:
        for name, value in self._values(resources).items():
            self._set(name, self._get(name) + value)

    def set_max(self, resources: Mapping[str, Quantity]) -> None:
        for name, value in self._values(resources).items():
            self._set(name, max(self._get(name), value))

    def _get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.pods
        return (self.scalars or {}).get(name, 0)

    def _set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.pods = value
        else:
            if self.scalars is None:
                self.scalars = {}
            self.scalars[name] = value

    def to_resource_list(self) -> dict[str, Quantity]:
        """Non-zero resources as quantities, each serialized in its canonical form."""
        out: dict[str, Quantity] = {}
        if self.milli_cpu:
            out[CPU] = Quantity(Fraction(self.milli_cpu, 1000), Format.DECIMAL_SI)
        if self.memory:
            out[MEMORY] = Quantity(self.memory, Format.BINARY_SI)
        if self.ephemeral_storage:
            out[EPHEMERAL_STORAGE] = Quantity(self.ephemeral_storage, Format.BINARY_SI)
        if self.pods:
            out[PODS] = Quantity(self.pods, Format.DECIMAL_SI)
        for name in sorted(self.scalars or {}):
            value = (self.scalars or {})[name]
            if value:
                fmt = Format.BINARY_SI if name.startswith("hugepages-") else Format.DECIMAL_SI
                out[name] = Quantity(value, fmt)
        return out


def _resource_list(raw: Any, path: str) -> dict[str, Quantity]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InterpretError(path, "must be a map of quantities")
    out: dict[str, Quantity] = {}
    for name, value in raw.items():
        try:
            out[str(name)] = parse_quantity(value)
        except ValueError as exc:
            raise InterpretError(f"{path}[{name}]", str(exc)) from None
    return out


def _completed_requests(container: Mapping[str, Any], path: str) -> dict[str, Quantity]:
    """Requests, with every limit that has no request counted as requested at the limit."""
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InterpretError(f"{path}.resources", "must be an object")
    requests = _resource_list(resources.get("requests"), f"{path}.resources.requests")
    limits = _resource_list(resources.get("limits"), f"{path}.resources.limits")
    for name, limit in limits.items():
        requests.setdefault(name, limit)
    return requests


def _containers(pod_spec: Mapping[str, Any], field: str, path: str) -> list[Mapping[str, Any]]:
    containers = pod_spec.get(field) or []
    if not isinstance(containers, list) or not all(isinstance(c, Mapping) for c in containers):
        raise InterpretError(f"{path}.{field}", "must be a list of objects")
    return containers


def effective_pod_request(pod_spec: Mapping[str, Any], *, path: str = "spec") -> PodRequest:
    """The pod's effective request: sum of containers, max with each init container, plus overhead."""
    request = PodRequest()
    for index, container in enumerate(_containers(pod_spec, "containers", path)):
        request.add(_completed_requests(container, f"{path}.containers[{index}]"))
    for index, container in enumerate(_containers(pod_spec, "initContainers", path)):
        request.set_max(_completed_requests(container, f"{path}.initContainers[{index}]"))
    overhead = _resource_list(pod_spec.get("overhead"), f"{path}.overhead")
    if overhead:
        request.add(overhead)
    return request


def _node_claim(pod_spec: Mapping[str, Any], path: str) -> NodeClaim | None:
    node_selector = pod_spec.get("nodeSelector")
    tolerations = pod_spec.get("tolerations") or []
    affinity = pod_spec.get("affinity") or {}
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = (
        node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(node_affinity, Mapping)
        else None
    )
    if node_selector is None and not tolerations and required is None:
        return None
    try:
        return NodeClaim(
            # Go's omitempty: an empty map or list is not written, but the claim itself still is.
            node_selector=dict(node_selector) if node_selector else None,
            tolerations=[Toleration.model_validate(t) for t in tolerations] or None,
            hard_node_affinity=NodeSelector.model_validate(required) if required is not None else None,
        )
    except ValueError as exc:
        raise InterpretError(path, f"invalid scheduling constraints: {exc}") from None


def replica_requirements(
    pod_spec: Mapping[str, Any],
    *,
    namespace: str | None = None,
    resource_quota_estimate: bool = False,
    path: str = "spec",
) -> ReplicaRequirements | None:
    """The per-replica requirements of one pod spec, or None when nothing is known."""
    if not isinstance(pod_spec, Mapping):
        raise InterpretError(path, "must be an object")
    node_claim = _node_claim(pod_spec, path)
    resource_request = effective_pod_request(pod_spec, path=path).to_resource_list() or None
    if node_claim is None and resource_request is None:
        return None
    requirements = ReplicaRequirements(node_claim=node_claim, resource_request=resource_request)
    if resource_quota_estimate:
        requirements.namespace = namespace
        requirements.priority_class_name = pod_spec.get("priorityClassName") or None
    return requirements


def _count(spec: Mapping[str, Any], name: str) -> int:
    value = spec.get(name)
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InterpretError(f"spec.{name}", f"must be a non-negative integer, got {value!r}")
    return value


def interpret_replicas(
    api_version: str,
    kind: str,
    raw: Mapping[str, Any],
    *,
    resource_quota_estimate: bool = False,
) -> tuple[int, ReplicaRequirements | None]:
    """``(replicas, replicaRequirements)`` of a template, per the built-in interpreters."""
    spec = raw.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InterpretError("spec", "must be an object")
    namespace = (raw.get("metadata") or {}).get("namespace")
    if (api_version, kind) == ("v1", "Pod"):
        return 1, replica_requirements(
            spec, namespace=namespace, resource_quota_estimate=resource_quota_estimate, path="spec"
        )
    if (api_version, kind) not in _POD_TEMPLATE_KINDS:
        return 0, None
    if kind == "Job":
        parallelism = _count(spec, "parallelism")
        completions = _count(spec, "completions") if spec.get("completions") is not None else parallelism
        replicas = min(parallelism, completions)
    else:
        replicas = _count(spec, "replicas")
    template = spec.get("template") or {}
    if not isinstance(template, Mapping):
        raise InterpretError("spec.template", "must be an object")
    pod_spec = template.get("spec") or {}
    requirements = replica_requirements(
        pod_spec,
        namespace=namespace,
        resource_quota_estimate=resource_quota_estimate,
        path="spec.template.spec",
    )
    return replicas, requirements
