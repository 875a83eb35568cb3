"""``ExampleTenant``: a Filter plugin that keeps each tenant's bindings on the tenant's clusters.

A binding's tenant is its namespace (a ClusterResourceBinding's: its resource's namespace, usually
none). A cluster serves the tenant named by its label, by default ``tenant.example.com/name``. A
binding may go only to clusters whose label equals its tenant; a binding without a tenant only to
clusters without the label. (fleetsched's binding view carries no labels of the binding, so the
namespace is the tenant.)

Declared inputs: the verdict reads the cluster's labels and, of the binding, its tenant only, so
the framework reuses verdicts across the bindings of one namespace.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar

from fleetsched.plugin import ClusterFacet, ClusterInfo, FilterContext, Handle, SchedulingBinding, Status

NAME = "ExampleTenant"
DEFAULT_LABEL = "tenant.example.com/name"


@dataclass(frozen=True, slots=True)
class ExampleTenantArgs:
    """``pluginConfig`` args, field names as the configuration file writes them."""

    labelKey: str = DEFAULT_LABEL

    def __post_init__(self) -> None:
        if not isinstance(self.labelKey, str) or not self.labelKey:
            raise ValueError(f"labelKey: must be a non-empty label key, got {self.labelKey!r}")


def tenant_of(binding: SchedulingBinding) -> str:
    """The binding's namespace, or its resource's for a cluster-scoped binding; "" for none."""
    return binding.namespace or binding.resource.namespace


class ExampleTenant:
    """Only clusters labelled for the binding's tenant."""

    name = NAME
    args_model = ExampleTenantArgs
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.LABELS

    def __init__(self, args: ExampleTenantArgs | None = None, handle: Handle | None = None) -> None:
        self.label_key = (args or ExampleTenantArgs()).labelKey

    def binding_key(self, ctx: FilterContext) -> Hashable:
        return tenant_of(ctx.binding)

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        tenant = tenant_of(ctx.binding)
        if cluster.labels.get(self.label_key, "") == tenant:
            return Status.success()
        if not tenant:
            return Status.unschedulable(f"cluster(s) reserved for a tenant by label {self.label_key}")
        return Status.unschedulable(f"cluster(s) not labelled {self.label_key}={tenant}")


def new(args: ExampleTenantArgs | None, handle: Handle | None) -> ExampleTenant:
    """The factory, for registering the plugin by hand (the entry point names the class)."""
    return ExampleTenant(args, handle)
