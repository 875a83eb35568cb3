"""What the policy controller is configured with (``fleetsched controller``'s flags)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fleetsched.controller.policy.resources import DEFAULT_RESOURCES, KNOWN_RESOURCES, TemplateResource
from fleetsched.controller.runtime.leader import LeaderElectionConfig
from fleetsched.controller.runtime.shard import ShardConfig
from fleetsched.detector import FeatureGates
from fleetsched.detector import constants as keys


@dataclass(frozen=True, slots=True)
class PolicyControllerConfig:
    resources: tuple[TemplateResource, ...] = tuple(KNOWN_RESOURCES[n] for n in DEFAULT_RESOURCES)
    workers: int = 2
    gates: FeatureGates = field(default_factory=FeatureGates)
    skipped_namespaces: tuple[str, ...] = keys.DEFAULT_SKIPPED_NAMESPACE_PATTERNS
    leader_election: LeaderElectionConfig | None = None
    graceful_timeout: float = 20.0
    # No Karmada binding controller runs: remove its finalizer from terminating derived bindings.
    standalone: bool = False
    # --shard-mode=lease: this replica's member Lease (policy_shard.py); exclusive with leader_election
    sharding: ShardConfig | None = None
    # --controllers: Karmada's workloadRebalancer (WorkloadRebalancers stamp their bindings' reschedule)
    workload_rebalancer: bool = True
