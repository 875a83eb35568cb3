"""``fleetsched controller`` on a live control plane: policies + templates in, bindings out (api.md §7).

A PropagationPolicy claims a Deployment and the controller creates its ResourceBinding with
Karmada's name, labels, owner reference, placement and replica requirements; template changes
reach the binding while the scheduler's ``spec.clusters`` survives; a ClusterPropagationPolicy
turns a ClusterRole into a ClusterResourceBinding; deleting a policy releases its claims and its
finalizer, leaving the bindings in place; so does a policy change after which a template no longer
matches. Deletion (§7.12): a deleted template is only forgotten, and with ``--standalone=true`` the
controller removes Karmada's binding finalizer from its terminating bindings, which no binding
controller does here. A policy selecting a kind the controller does not watch says so in an Event.
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def running_controller(
    control_plane: ControlPlane, tmp_path: Path, *args: str
) -> Iterator[ControllerProcess]:
    control_plane.kubectl("create", "namespace", NAMESPACE, check=False)
    process = ControllerProcess(
        kubeconfig=control_plane.kubeconfig,
        log_path=tmp_path / "controller.log",
        extra_args=("--leader-elect=false", *args),
    )
    process.start(timeout=90)
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def controller(control_plane: ControlPlane, tmp_path: Path) -> Iterator[ControllerProcess]:
    """As beside Karmada's binding controller: binding finalizers are left to it."""
    with running_controller(control_plane, tmp_path) as process:
        yield process


@pytest.fixture
def standalone_controller(control_plane: ControlPlane, tmp_path: Path) -> Iterator[ControllerProcess]:
    """As the standalone install runs it (manifests/controller: --standalone=true)."""
    with running_controller(control_plane, tmp_path, "--standalone=true") as process:
        yield process


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


@pytest.fixture
def rbac_controller(control_plane: ControlPlane, tmp_path: Path) -> Iterator[ControllerProcess]:
    """ClusterRoles are not among the default --resources: opted in, as overlays/propagate-rbac does."""
    with running_controller(
        control_plane, tmp_path, "--resources=*,clusterroles.rbac.authorization.k8s.io"
    ) as process:
        yield process


def test_cluster_policy_gives_a_cluster_resource_binding(
    control_plane: ControlPlane, rbac_controller: ControllerProcess
) -> None:
    controller = rbac_controller
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


def events_for(control_plane: ControlPlane, name: str, reason: str) -> list[dict[str, Any]]:
    out = control_plane.kubectl(
        "get", "events", "-A", "-o", "json", f"--field-selector=involvedObject.name={name},reason={reason}"
    )
    return list(json.loads(out)["items"])


API = f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: api
  namespace: {NAMESPACE}
  labels: {{app: api}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: api}}}}
  template:
    metadata: {{labels: {{app: api}}}}
    spec: {{containers: [{{name: api, image: nginx}}]}}
"""

API_POLICY = f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: api
  namespace: {NAMESPACE}
  labels: {{{PP_LABEL}: 33333333-2222-4333-8444-555555555555}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: api}}]
  placement: {{clusterAffinity: {{clusterNames: [m1]}}}}
"""


def test_standalone_deleted_templates_and_bindings_leave_nothing_terminating(
    control_plane: ControlPlane, standalone_controller: ControllerProcess
) -> None:
    proc = standalone_controller
    control_plane.apply(API_POLICY)
    control_plane.apply(API)
    first = wait_for(
        control_plane,
        lambda b: True,
        "rb",
        "api-deployment",
        "-n",
        NAMESPACE,
        what="binding creation",
        proc=proc,
    )
    assert first["metadata"]["finalizers"] == ["karmada.io/binding-controller"]

    # The template goes: the controller only forgets it (§7.12). This control plane runs no garbage
    # collector, so the binding stays, untouched, until something deletes it.
    control_plane.kubectl("delete", "deployment", "api", "-n", NAMESPACE)
    wait_until(
        lambda: '"template_deleted"' in proc.log_tail(200) and "api-deployment" in proc.log_tail(200),
        timeout=30,
        message=proc.log_tail,
    )
    left = get(control_plane, "rb", "api-deployment", "-n", NAMESPACE)
    assert left is not None and not left["metadata"].get("deletionTimestamp")
    assert left["metadata"]["finalizers"] == ["karmada.io/binding-controller"]

    # What the garbage collector does next (tests/e2e/test_story.py runs the real one): delete it.
    # No binding controller removes Karmada's finalizer here; the standalone controller does.
    control_plane.kubectl("delete", "rb", "api-deployment", "-n", NAMESPACE, "--wait=false")
    wait_until(
        lambda: get(control_plane, "rb", "api-deployment", "-n", NAMESPACE) is None,
        timeout=60,
        message=lambda: f"binding left Terminating:\n{proc.log_tail()}",
    )
    wait_until(
        lambda: events_for(control_plane, "api-deployment", "FinalizerRemoved"),
        timeout=30,
        message=proc.log_tail,
    )
    wait_until(
        lambda: (
            proc.metric(
                "fleetsched_policy_controller_binding_finalizer_removals_total",
                kind="ResourceBinding",
                result="removed",
            )
            >= 1
        ),
        timeout=10,
        message=proc.log_tail,
    )

    # A new Deployment of the same name gets a binding of its own.
    control_plane.apply(API)
    template = get(control_plane, "deployment", "api", "-n", NAMESPACE)
    assert template is not None
    second = wait_for(
        control_plane,
        lambda b: True,
        "rb",
        "api-deployment",
        "-n",
        NAMESPACE,
        what="binding of the new Deployment",
        proc=proc,
    )
    assert second["metadata"]["ownerReferences"][0]["uid"] == template["metadata"]["uid"]
    assert second["metadata"]["uid"] != first["metadata"]["uid"]

    # A binding deleted by a user while template and policy exist: gone at once, and recreated
    # on the next template reconcile (§7.12), here a change to the Deployment.
    control_plane.kubectl("delete", "rb", "api-deployment", "-n", NAMESPACE, "--wait=false")
    wait_until(
        lambda: get(control_plane, "rb", "api-deployment", "-n", NAMESPACE) is None,
        timeout=60,
        message=lambda: f"binding left Terminating:\n{proc.log_tail()}",
    )
    control_plane.kubectl("scale", "deployment", "api", "-n", NAMESPACE, "--replicas=2")
    third = wait_for(
        control_plane,
        lambda b: b["spec"].get("replicas") == 2,
        "rb",
        "api-deployment",
        "-n",
        NAMESPACE,
        what="binding recreated by the template change",
        proc=proc,
    )
    assert third["metadata"]["uid"] != second["metadata"]["uid"]
    assert third["metadata"]["finalizers"] == ["karmada.io/binding-controller"]
    assert proc.alive()


def test_a_policy_that_stops_matching_releases_template_and_binding(
    control_plane: ControlPlane, controller: ControllerProcess
) -> None:
    policy = f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: tiered
  namespace: {NAMESPACE}
  labels: {{{PP_LABEL}: 44444444-2222-4333-8444-555555555555}}
spec:
  resourceSelectors: [{{apiVersion: v1, kind: ConfigMap, labelSelector: {{matchLabels: {{tier: a}}}}}}]
  placement: {{clusterAffinity: {{clusterNames: [m1]}}}}
"""
    control_plane.apply(policy)
    control_plane.apply(
        f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: tiered, namespace: {NAMESPACE}, "
        "labels: {tier: a}}\ndata: {a: '1'}\n"
    )
    wait_for(
        control_plane,
        lambda b: PP_LABEL in b["metadata"].get("labels", {}),
        "rb",
        "tiered-configmap",
        "-n",
        NAMESPACE,
        what="binding creation",
        proc=controller,
    )

    control_plane.apply(policy.replace("tier: a", "tier: b"))
    binding = wait_for(
        control_plane,
        lambda b: PP_LABEL not in (b["metadata"].get("labels") or {}),
        "rb",
        "tiered-configmap",
        "-n",
        NAMESPACE,
        what="the binding's release",
        proc=controller,
    )
    assert "propagationpolicy.karmada.io/name" not in (binding["metadata"].get("annotations") or {})
    assert not binding["metadata"].get("deletionTimestamp"), "released, not deleted (§7.12)"
    template = get(control_plane, "configmap", "tiered", "-n", NAMESPACE)
    assert template is not None
    assert PP_LABEL not in (template["metadata"].get("labels") or {})
    assert "propagationpolicy.karmada.io/namespace" not in (template["metadata"].get("annotations") or {})
    assert '"policy_no_longer_matches"' in controller.log_tail(300)


def test_a_policy_selecting_an_unwatched_kind_gets_a_warning_event(
    control_plane: ControlPlane, controller: ControllerProcess
) -> None:
    """Issue 29: a kind the API server does not serve (``Deploymnet``, a group no CRD provides) is
    told apart from a served kind the controller does not watch (Secrets are opt-in), and a policy
    whose selectors match no template says so."""
    control_plane.apply(
        f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: widgets
  namespace: {NAMESPACE}
  labels: {{{PP_LABEL}: 55555555-2222-4333-8444-555555555555}}
spec:
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: nothing-by-this-name}}
  - {{apiVersion: example.io/v1, kind: Widget}}
  - {{apiVersion: apps/v1, kind: Deploymnet, name: web}}
  - {{apiVersion: v1, kind: Secret, name: web}}
"""
    )
    for reason in ("ResourceKindNotWatched", "ResourceKindNotServed", "NoResourceSelected"):
        wait_until(lambda r=reason: events_for(control_plane, "widgets", r), timeout=60,
                   message=controller.log_tail)
    (event,) = events_for(control_plane, "widgets", "ResourceKindNotWatched")
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "PropagationPolicy"
    assert event["message"].startswith("resourceSelectors[3]: v1 Secret: not a kind this controller")
    assert "--resources" in event["message"]
    served = sorted(e["message"] for e in events_for(control_plane, "widgets", "ResourceKindNotServed"))
    assert served == [
        "resourceSelectors[1]: example.io/v1 Widget: the API server serves no example.io/v1, so no such "
        "template can exist",
        "resourceSelectors[2]: apps/v1 Deploymnet: the API server serves no kind 'Deploymnet' in apps/v1 "
        '(did you mean "Deployment"?)',
    ]
    assert all(e["type"] == "Warning" for e in events_for(control_plane, "widgets", "ResourceKindNotServed"))
    (nothing,) = events_for(control_plane, "widgets", "NoResourceSelected")
    assert nothing["type"] == "Warning"
    assert nothing["message"].startswith("no resource template matches spec.resourceSelectors")
    assert controller.alive() and controller._get("/readyz")[0] == 200
