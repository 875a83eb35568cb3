"""Clusters with a full resource summary (allocatable, allocated, allocating) for the resource scores."""

from __future__ import annotations

from collections.abc import Mapping

from fleetsched.api.quantity import parse_quantity
from fleetsched.plugin import FilterContext
from fleetsched.scheduler.types import ClusterInfo, ResourceSummary, SchedulingBinding

from ..builders import a_binding

GPU = "nvidia.com/gpu"


def cluster(
    name: str,
    allocatable: Mapping[str, str | int],
    allocated: Mapping[str, str | int] | None = None,
    allocating: Mapping[str, str | int] | None = None,
) -> ClusterInfo:
    def quantities(m: Mapping[str, str | int] | None) -> dict[str, object]:
        return {k: parse_quantity(str(v)) for k, v in (m or {}).items()}

    summary = ResourceSummary(
        allocatable=quantities(allocatable),  # type: ignore[arg-type]
        allocated=quantities(allocated),  # type: ignore[arg-type]
        allocating=quantities(allocating),  # type: ignore[arg-type]
    )
    return ClusterInfo(name=name, resource_summary=summary)


def binding(replicas: int = 1, **request: str | int) -> SchedulingBinding:
    """A binding whose per-replica request is ``request`` (``nvidia_com_gpu`` is not a name: use
    ``**{GPU: 1}``); no request at all when empty."""
    b = a_binding("job").replicas(replicas)
    if request:
        b = b.requests(**{k: str(v) for k, v in request.items()})
    return b.build()


def context(b: SchedulingBinding) -> FilterContext:
    return FilterContext(b, "", b.target_names(), b.is_workload())
