"""Cluster (``cluster.karmada.io/v1alpha1``), spec and status as Karmada's
pkg/apis/cluster/v1alpha1 types define them.

Karmada serves Cluster from an aggregated API server; fleetsched ships it as a CRD with this schema.
``spec.syncMode`` is required by the CRD but optional here, so that scheduling inputs that only
describe capacity (as the recorded conformance cases do) still load.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from fleetsched.api._base import Int32, KarmadaModel, QuantityField, ResourceList
from fleetsched.api.meta import Condition, ObjectMeta, Taint

CLUSTER_API_VERSION = "cluster.karmada.io/v1alpha1"

CONDITION_READY = "Ready"
CONDITION_COMPLETE_API_ENABLEMENTS = "CompleteAPIEnablements"


class LocalSecretReference(KarmadaModel):
    namespace: str
    name: str


class ResourceModelRange(KarmadaModel):
    name: str
    min: QuantityField
    max: QuantityField


class ResourceModel(KarmadaModel):
    grade: int = Field(ge=0)
    ranges: list[ResourceModelRange]


class ClusterSpec(KarmadaModel):
    model_config = ConfigDict(json_schema_extra={"required": ["syncMode"]})

    id: str | None = Field(default=None, max_length=128000)
    sync_mode: Literal["Push", "Pull"] | None = None
    api_endpoint: str | None = None
    secret_ref: LocalSecretReference | None = None
    impersonator_secret_ref: LocalSecretReference | None = None
    insecure_skip_tls_verification: bool | None = Field(default=None, alias="insecureSkipTLSVerification")
    proxy_url: str | None = Field(default=None, alias="proxyURL")
    proxy_header: dict[str, str] | None = None
    provider: str | None = None
    region: str | None = None
    zone: str | None = None
    zones: list[str] | None = None
    taints: list[Taint] | None = None
    resource_models: list[ResourceModel] | None = None

    def zone_list(self) -> list[str]:
        """Effective zones: the deprecated single ``zone`` counts when ``zones`` is empty (CD5)."""
        if self.zones:
            return self.zones
        return [self.zone] if self.zone else []


class APIResource(KarmadaModel):
    name: str
    kind: str


class APIEnablement(KarmadaModel):
    group_version: str
    resources: list[APIResource] | None = None


class NodeSummary(KarmadaModel):
    total_num: Int32 | None = None
    ready_num: Int32 | None = None


class AllocatableModeling(KarmadaModel):
    grade: int = Field(ge=0)
    count: int = Field(ge=0)


class ResourceSummary(KarmadaModel):
    allocatable: ResourceList | None = None
    allocating: ResourceList | None = None
    allocated: ResourceList | None = None
    allocatable_modelings: list[AllocatableModeling] | None = None


class ClusterStatus(KarmadaModel):
    kubernetes_version: str | None = None
    api_enablements: list[APIEnablement] | None = None
    conditions: list[Condition] | None = None
    node_summary: NodeSummary | None = None
    resource_summary: ResourceSummary | None = None
    remedy_actions: list[str] | None = None

    def condition(self, condition_type: str) -> Condition | None:
        for condition in self.conditions or ():
            if condition.type == condition_type:
                return condition
        return None


class Cluster(KarmadaModel):
    KIND: ClassVar[str] = "Cluster"
    NAMESPACED: ClassVar[bool] = False

    api_version: Literal["cluster.karmada.io/v1alpha1"] = CLUSTER_API_VERSION
    kind: Literal["Cluster"] = "Cluster"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ClusterSpec = Field(default_factory=ClusterSpec)
    status: ClusterStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""


__all__ = [
    "CLUSTER_API_VERSION",
    "CONDITION_COMPLETE_API_ENABLEMENTS",
    "CONDITION_READY",
    "APIEnablement",
    "APIResource",
    "AllocatableModeling",
    "Cluster",
    "ClusterSpec",
    "ClusterStatus",
    "LocalSecretReference",
    "NodeSummary",
    "ResourceModel",
    "ResourceModelRange",
    "ResourceSummary",
]
