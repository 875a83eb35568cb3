"""The resolved ``SchedulerConfiguration``: the profiles plus the process settings the scheduler's
flags carry (workers, leader election, API client, estimators, feature gates, assumption TTL), at
today's flag defaults.

Plain frozen values, like ``types.py``: no file format, no pydantic, no I/O. The defaults here are
the defaults of ``fleetsched scheduler``'s flags; ``fleetsched config default`` prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from fleetsched.scheduler.assume import DEFAULT_TTL
from fleetsched.scheduler.framework.defaults import default_profile
from fleetsched.scheduler.framework.profile import Profile
from fleetsched.scheduler.stepping import MoveBudget

__all__ = [
    "API_VERSION",
    "DEFAULT_ASSUMPTION_TTL",
    "KIND",
    "ClientConnection",
    "EstimatorSettings",
    "LeaderElection",
    "SchedulerConfiguration",
]

API_VERSION = "config.fleetsched.io/v1alpha1"
KIND = "SchedulerConfiguration"
# --shard-mode: one elected leader (none), or replicas sharing the bindings through member Leases
SHARD_MODES = ("none", "lease")
DEFAULT_ASSUMPTION_TTL = DEFAULT_TTL  # Karmada's DefaultAssumptionTTL, 5 minutes


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """The coordination.k8s.io Lease (``--leader-elect*``); durations in seconds. With
    ``shard_mode`` "lease" (``--shard-mode``) the replicas hold member Leases instead, with these
    timings, ``resource_name`` as the group and ``shard_identity`` (``--shard-identity``; empty:
    the host name) naming the member."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_name: str = "fleetsched-scheduler"
    resource_namespace: str = "karmada-system"
    shard_mode: str = "none"
    shard_identity: str = ""


@dataclass(frozen=True, slots=True)
class ClientConnection:
    """The control plane's API client (``--kubeconfig``, ``--kube-api-qps``, ``--kube-api-burst``);
    an empty kubeconfig means in-cluster."""

    kubeconfig: str = ""
    qps: float = 500.0
    burst: int = 1000


@dataclass(frozen=True, slots=True)
class EstimatorSettings:
    """The accurate estimators (``--enable-scheduler-estimator`` and the ``--scheduler-estimator-*``
    flags); the timeout is per binding, in seconds."""

    enabled: bool = False
    disable_in_pull_mode: bool = False
    timeout_seconds: float = 3.0
    port: int = 10352
    service_prefix: str = "karmada-scheduler-estimator"
    service_namespace: str = "karmada-system"
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    insecure_skip_verify: bool = False


def _default_profiles() -> tuple[Profile, ...]:
    return (default_profile(),)


@dataclass(frozen=True, slots=True)
class SchedulerConfiguration:
    """One scheduler process: its profiles (one per ``schedulerName``) and its settings."""

    profiles: tuple[Profile, ...] = field(default_factory=_default_profiles)
    workers: int = 32
    enable_empty_workload_propagation: bool = False
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    estimator: EstimatorSettings = field(default_factory=EstimatorSettings)
    # Karmada's gates the file names (``--feature-gates``), by name; a gate not named keeps its
    # default (fleetsched.flags.KARMADA_FEATURE_GATES) or the flag's value.
    feature_gates: Mapping[str, bool] = field(default_factory=lambda: MappingProxyType({}))
    # ``--assumption-ttl`` (gate SchedulingOvercommitProtection), seconds: Karmada's 5 minutes.
    assumption_ttl: float = DEFAULT_ASSUMPTION_TTL
    # ``moveBudget`` (issue 27): moves written in steps within maxUnavailable/maxSurge, available
    # replicas kept on a reschedule; None (the default): no budget, Karmada's writes and results.
    move_budget: MoveBudget | None = None

    def scheduler_names(self) -> frozenset[str]:
        return frozenset(p.scheduler_name for p in self.profiles)

    def profile_for(self, scheduler_name: str) -> Profile | None:
        """The profile serving bindings of ``scheduler_name``; None: no profile does (leave it alone)."""
        return next((p for p in self.profiles if p.scheduler_name == scheduler_name), None)
