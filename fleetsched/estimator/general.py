"""The general estimator: replicas that fit a cluster, from its resource summary and resource models.

Owns scheduler.md §7.2/§7.3 (estimator.md §5.1, §5.3): pod headroom, the summary arithmetic
(CPU in millicores, everything else in whole units) and the closed form of Karmada's first-fit
simulation over resource-model grades. Pure: it reads frozen ``ClusterInfo`` values and memoises
per cluster and per request, because a cluster value never changes and the answer depends only on
the cluster and the per-replica request.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from fractions import Fraction

from fleetsched.scheduler.types import ClusterInfo, ReplicaRequirements

__all__ = ["GeneralEstimator", "estimate_cluster", "is_scalar_resource"]

NAME = "general-estimator"
MODEL_NODE_PODS = 110
_QUALIFIED_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class _ModelError(Exception):
    """The model path cannot answer; the summary path is used instead."""


def _qualified(name: str) -> bool:
    parts = name.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2 and (not parts[0] or len(parts[0]) > 253 or not _DNS_SUBDOMAIN_RE.match(parts[0])):
        return False
    last = parts[-1]
    return 0 < len(last) <= 63 and bool(_QUALIFIED_RE.match(last))


def is_scalar_resource(name: str) -> bool:
    """Kubernetes' IsScalarResourceName: extended, hugepages-, *kubernetes.io/*, attachable-volumes-."""
    if name.startswith("hugepages-") or "kubernetes.io/" in name or name.startswith("attachable-volumes-"):
        return True
    return "/" in name and not name.startswith("requests.") and _qualified("requests." + name)


def _to_int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


def _ceil(x: Fraction) -> int:
    return math.ceil(x)


def _ceil_milli(x: Fraction) -> int:
    return math.ceil(x * 1000)


class _ClusterBase:
    """What the estimate needs from one cluster, computed once."""

    __slots__ = ("available", "model_error", "model_nodes", "pods")

    def __init__(self, cluster: ClusterInfo) -> None:
        s = cluster.resource_summary
        self.available: dict[str, Fraction] = {}
        self.pods = 0
        self.model_nodes: list[tuple[int, dict[str, int]]] = []  # (count, capacity) in grade order
        self.model_error = True
        if s is None:
            return
        zero = Fraction(0)

        def exact(m: object, name: str) -> Fraction:
            q = m.get(name)  # type: ignore[attr-defined]
            return q.value_exact if q is not None else zero

        pods = (
            _ceil(exact(s.allocatable, "pods"))
            - _ceil(exact(s.allocated, "pods"))
            - _ceil(exact(s.allocating, "pods"))
        )
        self.pods = max(pods, 0)
        for name, q in s.allocatable.items():
            self.available[name] = q.value_exact - exact(s.allocated, name) - exact(s.allocating, name)
        if s.allocatable_modelings:
            self._build_models(cluster)

    def _build_models(self, cluster: ClusterInfo) -> None:
        s = cluster.resource_summary
        assert s is not None
        if not cluster.resource_models:
            return
        count: dict[int, int] = {}
        for grade, n in s.allocatable_modelings:
            if n < 0:
                return
            count[grade] = count.get(grade, 0) + n
        templates: dict[int, dict[str, int]] = {}
        for model in cluster.resource_models:
            cap: dict[str, int] = {}
            for name, low, _high in model.ranges:
                if name == "cpu":
                    cap[name] = low.milli_value()
                elif name in ("memory", "ephemeral-storage") or is_scalar_resource(name):
                    cap[name] = low.value()
            cap["pods"] = MODEL_NODE_PODS
            templates[model.grade] = cap
        for grade in sorted(templates):
            n = count.get(grade, 0)
            if n > 0:
                self.model_nodes.append((n, templates[grade]))
        self.model_error = False


def _base(cluster: ClusterInfo) -> _ClusterBase:
    base = cluster.memo.get(_ClusterBase)
    if base is None:
        base = cluster.memo[_ClusterBase] = _ClusterBase(cluster)
    return base


def _summary_estimate(base: _ClusterBase, request: tuple[tuple[str, Fraction], ...]) -> int | None:
    best: int | None = None
    for name, q in request:
        r = _ceil(q)
        if r <= 0:
            continue
        avail = base.available.get(name)
        if avail is None:
            return 0
        if _ceil(avail) <= 0:
            return 0
        n = _ceil_milli(avail) // _ceil_milli(q) if name == "cpu" else _ceil(avail) // r
        best = n if best is None else min(best, n)
    return best


def _model_estimate(base: _ClusterBase, request: tuple[tuple[str, Fraction], ...]) -> int:
    # Closed form of the first-fit simulation for identical one-pod replicas: every virtual node
    # takes as many replicas as fit it (estimator.md §5.3).
    needs: list[tuple[str, int]] = []
    for name, q in request:
        if name == "cpu":
            need = _ceil_milli(q)
        elif name in ("memory", "ephemeral-storage") or is_scalar_resource(name):
            need = _ceil(q)
        else:
            continue
        if need > 0:
            needs.append((name, need))
    total = 0
    for count, cap in base.model_nodes:
        fit = cap["pods"]
        for name, need in needs:
            fit = min(fit, cap.get(name, 0) // need)
        total += count * fit
    return total


_REQUEST_IDS: dict[tuple[tuple[str, Fraction], ...] | None, int] = {}


def _request_id(request: tuple[tuple[str, Fraction], ...] | None) -> int:
    """A small id per distinct request, so per-cluster memo lookups hash an int, not Fractions."""
    rid = _REQUEST_IDS.get(request)
    if rid is None:
        rid = _REQUEST_IDS.setdefault(request, len(_REQUEST_IDS))
    return rid


def estimate_cluster(
    cluster: ClusterInfo,
    request: tuple[tuple[str, Fraction], ...] | None,
    *,
    resource_modeling: bool = True,
    request_id: int | None = None,
) -> int:
    """Replicas of one per-replica request (``None`` = no requirements) that fit ``cluster``."""
    rid = _request_id(request) if request_id is None else request_id
    memo_key = (resource_modeling, rid)
    cached = cluster.memo.get(memo_key)
    if cached is not None:
        return int(cached)
    base = _base(cluster)
    answer: int
    if base.pods <= 0:
        answer = 0
    elif request is None:
        answer = base.pods
    elif resource_modeling and not base.model_error:
        answer = min(_model_estimate(base, request), base.pods)
    else:
        summary = _summary_estimate(base, request)
        answer = base.pods if summary is None else min(summary, base.pods)
    answer = _to_int32(answer)
    cluster.memo[memo_key] = answer
    return answer


class GeneralEstimator:
    """The estimator every scheduler has (Karmada's "general-estimator"); never raises, never -1."""

    name = NAME

    def __init__(self, *, resource_modeling: bool = True) -> None:
        # Feature gate CustomizedClusterResourceModeling (beta, on by default).
        self.resource_modeling = resource_modeling

    def max_available_replicas(
        self, clusters: Sequence[ClusterInfo], replica_requirements: ReplicaRequirements | None
    ) -> list[int]:
        request = replica_requirements.request_key() if replica_requirements is not None else None
        rid = _request_id(request)
        modeling = self.resource_modeling
        return [estimate_cluster(c, request, resource_modeling=modeling, request_id=rid) for c in clusters]
