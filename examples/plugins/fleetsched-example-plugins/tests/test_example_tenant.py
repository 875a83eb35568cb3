"""ExampleTenant through the public plugin API only: a binding goes only to its tenant's clusters."""

from __future__ import annotations

import dataclasses

import pytest
from fleetsched_example_plugins.tenant import ExampleTenant, ExampleTenantArgs

from fleetsched.plugin import (
    ClusterFacet,
    ClusterInfo,
    Code,
    DeclaresInputs,
    FilterContext,
    SchedulingBinding,
)

LABEL = "tenant.example.com/name"


def ctx(namespace: str, kind: str = "ResourceBinding", resource_namespace: str = "") -> FilterContext:
    binding = SchedulingBinding(kind=kind, name="web", namespace=namespace)
    # The resource reference's type is not part of the plugin API; replace() keeps it.
    resource = dataclasses.replace(binding.resource, namespace=resource_namespace)
    binding = dataclasses.replace(binding, resource=resource)
    return FilterContext(binding, "", frozenset(), is_workload=True)


def cluster(tenant: str | None, key: str = LABEL) -> ClusterInfo:
    return ClusterInfo(name="m", labels={} if tenant is None else {key: tenant})


def test_a_binding_passes_only_clusters_of_its_tenant() -> None:
    plugin = ExampleTenant()
    assert plugin.filter(ctx("team-a"), cluster("team-a")).is_success
    other = plugin.filter(ctx("team-a"), cluster("team-b"))
    assert other.code is Code.UNSCHEDULABLE
    assert other.reasons == (f"cluster(s) not labelled {LABEL}=team-a",)
    assert plugin.filter(ctx("team-a"), cluster(None)).is_rejection


def test_a_binding_without_tenant_goes_only_to_unlabelled_clusters() -> None:
    plugin = ExampleTenant()
    crb = ctx("", kind="ClusterResourceBinding")
    assert plugin.filter(crb, cluster(None)).is_success
    assert plugin.filter(crb, cluster("team-a")).reasons == (
        f"cluster(s) reserved for a tenant by label {LABEL}",
    )


def test_a_cluster_binding_of_a_namespaced_resource_has_that_namespace_as_tenant() -> None:
    plugin = ExampleTenant()
    crb = ctx("", kind="ClusterResourceBinding", resource_namespace="team-a")
    assert plugin.filter(crb, cluster("team-a")).is_success
    assert plugin.binding_key(crb) == "team-a"


def test_the_label_key_is_an_arg() -> None:
    plugin = ExampleTenant(ExampleTenantArgs(labelKey="owner"))
    assert plugin.filter(ctx("team-a"), cluster("team-a", key="owner")).is_success
    assert plugin.filter(ctx("team-a"), cluster("team-a")).is_rejection


@pytest.mark.parametrize("key", ["", None, 5])
def test_an_invalid_label_key_is_refused(key: object) -> None:
    with pytest.raises(ValueError, match="labelKey: must be a non-empty label key"):
        ExampleTenantArgs(labelKey=key)  # type: ignore[arg-type]


def test_it_declares_labels_and_the_tenant() -> None:
    plugin = ExampleTenant()
    assert isinstance(plugin, DeclaresInputs)
    assert plugin.cluster_inputs is ClusterFacet.LABELS
    assert (
        plugin.binding_key(ctx("team-a")) == plugin.binding_key(ctx("team-a")) != plugin.binding_key(ctx("b"))
    )
