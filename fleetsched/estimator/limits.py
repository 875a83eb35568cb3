"""Bounds on one estimator request: its size in bytes and the size of what it asks the filter to do.

Karmada's estimator has none beyond gRPC's 4 MiB message limit, and a request inside that limit (a node
affinity of 2,000 terms x 50 expressions is 2.9 MB) costs seconds of filter work per request. These
bounds stop such a request before it is decoded into values, with INVALID_ARGUMENT and a message naming
the field, its size and the flag (``replicaRequirements.nodeClaim.nodeAffinity.nodeSelectorTerms has
2000 entries, more than --max-affinity-terms=100``). The defaults are far above what a Kubernetes
workload carries in practice (a handful of terms and tolerations) and low enough that the worst
admitted request costs milliseconds.

Pure values: the wire decoder (:mod:`fleetsched.estimator.wire`) applies them, the server command builds
them from its flags.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from fleetsched.estimator.model import EstimatorError

__all__ = ["DEFAULT_LIMITS", "FLAGS", "LimitExceeded", "RequestLimits", "check"]


@dataclass(frozen=True, slots=True)
class RequestLimits:
    max_request_bytes: int = 4 * 1024 * 1024
    """bytes in one request message (gRPC's and Karmada's default receive limit)"""
    max_affinity_terms: int = 100
    """nodeSelectorTerms in one required node affinity"""
    max_affinity_expressions: int = 100
    """matchExpressions (and, separately, matchFields) in one node selector term"""
    max_affinity_values: int = 1000
    """values of one node selector requirement"""
    max_affinity_total_expressions: int = 10000
    """node selector requirements in the whole request, over every claim in it"""
    max_node_selector: int = 100
    """entries of one nodeSelector map"""
    max_tolerations: int = 100
    """tolerations of one node claim"""
    max_resource_entries: int = 64
    """entries of one resourceRequest map"""
    max_components: int = 64
    """components of one component-set request or one assumed workload"""
    max_assumed_workloads: int = 1000
    """assumed workloads of one request (read only with SchedulingOvercommitProtection)"""


DEFAULT_LIMITS = RequestLimits()
# dataclass field -> command-line flag, for messages and for the command's parser
FLAGS = {f.name: "--" + f.name.replace("_", "-") for f in fields(RequestLimits)}


class LimitExceeded(EstimatorError):
    """A request over one of the bounds: gRPC INVALID_ARGUMENT. ``limit`` is the field of
    :class:`RequestLimits` (the ``limit`` label of the rejection metric)."""

    def __init__(self, field_path: str, count: int, limit: str, value: int, *, what: str = "entries") -> None:
        super().__init__(f"{field_path} has {count} {what}, more than {FLAGS[limit]}={value}",
                         code="InvalidArgument")
        self.limit = limit


def check(field_path: str, count: int, limits: RequestLimits, limit: str, *, what: str = "entries") -> None:
    value = getattr(limits, limit)
    if count > value:
        raise LimitExceeded(field_path, count, limit, value, what=what)
