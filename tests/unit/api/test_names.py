"""The bindings' REST paths, built in one place for every controller and command."""

from __future__ import annotations

from fleetsched.api.names import (
    CLUSTER_RESOURCE_BINDING,
    RESOURCE_BINDING,
    WORK_PLURALS,
    binding_path,
    binding_path_of_key,
)


def test_binding_paths_of_both_kinds_and_their_status() -> None:
    assert binding_path(RESOURCE_BINDING, "team-a", "web-deployment") == (
        "/apis/work.karmada.io/v1alpha2/namespaces/team-a/resourcebindings/web-deployment"
    )
    assert binding_path(CLUSTER_RESOURCE_BINDING, None, "crd-x", status=True) == (
        "/apis/work.karmada.io/v1alpha2/clusterresourcebindings/crd-x/status"
    )


def test_a_queue_key_gives_the_same_path_as_its_parts() -> None:
    by_key = binding_path_of_key(RESOURCE_BINDING, "team-a/web")
    assert by_key == binding_path(RESOURCE_BINDING, "team-a", "web")
    assert binding_path_of_key(CLUSTER_RESOURCE_BINDING, "x", status=True) == binding_path(
        CLUSTER_RESOURCE_BINDING, None, "x", status=True
    )
    assert set(WORK_PLURALS) == {RESOURCE_BINDING, CLUSTER_RESOURCE_BINDING}
