"""``fleetsched controller`` on a live control plane: policies + templates in, bindings out (api.md §7).

A PropagationPolicy claims a Deployment and the controller creates its ResourceBinding with
Karmada's name, labels, owner reference, placement and replica requirements; template changes
reach the binding while the scheduler's ``spec.clusters`` survives; a ClusterPropagationPolicy
turns a ClusterRole into a ClusterResourceBinding; deleting a policy releases its claims and its
finalizer, leaving the bindings in place.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.controlplane import ControlPlane, wait_until
from tests.support.processes import SchedulerProcess

NAMESPACE = "detector"
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"


class ControllerProcess(SchedulerProcess):
    """The same process harness as the scheduler's, running ``fleetsched controller``."""

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "fleetsched",
            "controller",
            f"--kubeconfig={self.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{self.port}",
            f"--metrics-bind-address=127.0.0.1:{self.port}",
            *self.extra_args,
        ]


@pytest.fixture
def controller(control_plane: ControlPlane, tmp_path: Path) -> Iterator[ControllerProcess]:
    control_plane.kubectl("create", "namespace", NAMESPACE, check=False)
    process = ControllerProcess(
        kubeconfig=control_plane.kubeconfig,
        log_path=tmp_path / "controller.log",
        extra_args=("--leader-elect=false",),
    )
    process.start(timeout=90)
    try:
        yield process
    finally:
        process.stop()


def get(control_plane: ControlPlane, *args: str) -> dict[str, Any] | None:
    out = control_plane.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(out) if out.strip() else None


def wait_for(
    control_plane: ControlPlane, predicate: Any, *args: str, what: str, proc: ControllerProcess
) -> Any:
    found: list[Any] = []

    def check() -> bool:
        obj = get(control_plane, *args)
        if obj is not None and predicate(obj):
            found.append(obj)
            return True
        return False

    wait_until(check, timeout=60, message=lambda: f"{what} never happened:\n{proc.log_tail()}")
    return found[-1]


DEPLOYMENT = f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: {NAMESPACE}
  labels: {{app: web}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      nodeSelector: {{disk: ssd}}
      containers:
      - name: web
        image: nginx
        resources: {{requests: {{cpu: 500m, memory: 128Mi}}}}
"""

POLICY = f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: {NAMESPACE}
  labels: {{{PP_LABEL}: 11111111-2222-4333-8444-555555555555}}
  finalizers: [karmada.io/propagation-policy-controller]
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    labelSelector: {{matchLabels: {{app: web}}}}
  placement:
    clusterAffinity: {{clusterNames: [m1, m2]}}
    replicaScheduling: {{replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}}
"""


def test_policy_and_deployment_give_a_resource_binding(
    control_plane: ControlPlane, controller: ControllerProcess
) -> None:
    control_plane.apply(POLICY)
    control_plane.apply(DEPLOYMENT)
    deployment = get(control_plane, "deployment", "web", "-n", NAMESPACE)
    assert deployment is not None
    binding = wait_for(
        control_plane,
        lambda b: b["spec"].get("replicas") == 2,
        "rb",
        "web-deployment",
        "-n",
        NAMESPACE,
        what="binding creation",
        proc=controller,
    )
    meta, spec = binding["metadata"], binding["spec"]
    assert meta["labels"][PP_LABEL] == "11111111-2222-4333-8444-555555555555"
    assert meta["annotations"]["propagationpolicy.karmada.io/name"] == "web"
    assert meta["finalizers"] == ["karmada.io/binding-controller"]
    (owner,) = meta["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "Deployment",
        "web",
        deployment["metadata"]["uid"],
        True,
    )
    assert spec["resource"]["uid"] == deployment["metadata"]["uid"]
    assert spec["replicaRequirements"] == {
        "nodeClaim": {"nodeSelector": {"disk": "ssd"}},
        "resourceRequest": {"cpu": "500m", "memory": "128Mi"},
    }
    assert spec["placement"]["clusterAffinity"] == {"clusterNames": ["m1", "m2"]}
    assert spec["schedulerName"] == "default-scheduler"
    template = get(control_plane, "deployment", "web", "-n", NAMESPACE)
    assert template is not None
    assert template["metadata"]["labels"][PP_LABEL] == "11111111-2222-4333-8444-555555555555"
    assert template["metadata"]["annotations"]["propagationpolicy.karmada.io/namespace"] == NAMESPACE

    # The scheduler's result is preserved when the template changes.
    control_plane.kubectl(
        "patch",
        "rb",
        "web-deployment",
        "-n",
        NAMESPACE,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"clusters": [{"name": "m1", "replicas": 2}]}}),
    )
    control_plane.kubectl("scale", "deployment", "web", "-n", NAMESPACE, "--replicas=5")
    binding = wait_for(
        control_plane,
        lambda b: b["spec"].get("replicas") == 5,
        "rb",
        "web-deployment",
        "-n",
        NAMESPACE,
        what="replica update",
        proc=controller,
    )
    assert binding["spec"]["clusters"] == [{"name": "m1", "replicas": 2}]

    # Deleting the policy releases the claims, then its finalizer; the binding stays.
    control_plane.kubectl("delete", "pp", "web", "-n", NAMESPACE, "--wait=false")
    wait_until(
        lambda: get(control_plane, "pp", "web", "-n", NAMESPACE) is None,
        timeout=60,
        message=lambda: f"policy finalizer never removed:\n{controller.log_tail()}",
    )
    binding = get(control_plane, "rb", "web-deployment", "-n", NAMESPACE)
    assert binding is not None and PP_LABEL not in (binding["metadata"].get("labels") or {})
    template = get(control_plane, "deployment", "web", "-n", NAMESPACE)
    assert template is not None and PP_LABEL not in (template["metadata"].get("labels") or {})


def test_cluster_policy_gives_a_cluster_resource_binding(
    control_plane: ControlPlane, controller: ControllerProcess
) -> None:
    control_plane.apply(
        f"""
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata:
  name: roles
  labels: {{{CPP_LABEL}: 99999999-2222-4333-8444-555555555555}}
spec:
  resourceSelectors:
  - apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    name: "fleet:reader"
"""
    )
    control_plane.apply(
        """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "fleet:reader"}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
"""
    )
    binding = wait_for(
        control_plane,
        lambda b: True,
        "crb",
        "fleet.reader-clusterrole",
        what="cluster binding creation",
        proc=controller,
    )
    assert binding["metadata"]["labels"][CPP_LABEL] == "99999999-2222-4333-8444-555555555555"
    assert binding["metadata"]["finalizers"] == ["karmada.io/cluster-resource-binding-controller"]
    assert binding["spec"]["resource"] == {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "name": "fleet:reader",
        "uid": binding["metadata"]["ownerReferences"][0]["uid"],
        "resourceVersion": binding["spec"]["resource"]["resourceVersion"],
    }
    assert "replicas" not in binding["spec"]


def test_lazy_policy_changes_wait_for_a_user_change(
    control_plane: ControlPlane, controller: ControllerProcess
) -> None:
    lazy = f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: lazy
  namespace: {NAMESPACE}
  labels: {{{PP_LABEL}: 22222222-2222-4333-8444-555555555555}}
spec:
  activationPreference: Lazy
  resourceSelectors: [{{apiVersion: v1, kind: ConfigMap, name: settings}}]
  placement: {{clusterAffinity: {{clusterNames: [m1]}}}}
"""
    control_plane.apply(lazy)
    control_plane.apply(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings, namespace: {NAMESPACE}}}\n"
        "data: {a: '1'}\n"
    )

    def names(binding: dict[str, Any]) -> list[str]:
        return binding["spec"].get("placement", {}).get("clusterAffinity", {}).get("clusterNames", [])

    wait_for(
        control_plane,
        lambda b: names(b) == ["m1"],
        "rb",
        "settings-configmap",
        "-n",
        NAMESPACE,
        what="a new template is applied at once",
        proc=controller,
    )
    control_plane.apply(lazy.replace("clusterNames: [m1]", "clusterNames: [m2]"))
    # The controller reconciles the template for the policy change but defers it (its log says so).
    wait_until(
        lambda: "lazy_policy_change_deferred" in controller.log_tail(200),
        timeout=60,
        message=controller.log_tail,
    )
    binding = get(control_plane, "rb", "settings-configmap", "-n", NAMESPACE)
    assert binding is not None and names(binding) == ["m1"], "a Lazy policy change waits"
    control_plane.kubectl(
        "patch", "configmap", "settings", "-n", NAMESPACE, "--type=merge", "-p", '{"data": {"a": "2"}}'
    )
    wait_for(
        control_plane,
        lambda b: names(b) == ["m2"],
        "rb",
        "settings-configmap",
        "-n",
        NAMESPACE,
        what="the user change applies the pending policy change",
        proc=controller,
    )
