"""The test control plane itself: a real kube-apiserver answers kubectl, members are separate clusters."""

from __future__ import annotations

from collections.abc import Callable

from tests.support.controlplane import APIServer, ControlPlane


def test_kubectl_lists_the_builtin_namespaces(control_plane: ControlPlane) -> None:
    names = control_plane.kubectl("get", "ns", "-o", "jsonpath={.items[*].metadata.name}").split()
    assert {"default", "kube-system"} <= set(names)
    version = control_plane.kubectl("version", "-o", "json")
    assert '"gitVersion": "v1.' in version


def test_member_apiserver_is_a_separate_cluster(
    control_plane: ControlPlane, add_apiserver: Callable[..., APIServer]
) -> None:
    member = add_apiserver("member1")
    member.kubectl("create", "namespace", "only-in-member")
    assert "only-in-member" in member.kubectl("get", "ns", "-o", "name")
    assert "only-in-member" not in control_plane.kubectl("get", "ns", "-o", "name")
    # Nodes are plain objects on a member cluster (no kubelet): the estimator reads them.
    member.apply(
        """apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1}
"""
    )
    assert member.kubectl("get", "node", "n1", "-o", "jsonpath={.metadata.name}") == "n1"
