"""A policy applied without the webhook is loud, not silent.

Without ``fleetsched webhook`` nothing gives a PropagationPolicy its permanent-id label, so the
binding the policy controller derives carries an empty one and the scheduler's event filter passes
it by. Before, the only trace was an ``ApplyPolicySucceed`` Event. Now the policy gets a Warning
Event (``PermanentIDMissing``) and the controller's gauge counts it; the scheduler counts the
skipped binding once (not once per event) under ``reason="no-permanent-id"`` and logs it once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.e2e.test_policy_controller import running_controller
from tests.support.controlplane import ControlPlane, wait_until
from tests.support.processes import SchedulerProcess

NAMESPACE = "loud"
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"
POLICY_AND_WORKLOAD = f"""
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: unadmitted
  namespace: {NAMESPACE}
spec:
  resourceSelectors:
  - {{apiVersion: apps/v1, kind: Deployment, name: unadmitted}}
  placement:
    clusterAffinity: {{clusterNames: [member1]}}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: unadmitted
  namespace: {NAMESPACE}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: unadmitted}}}}
  template:
    metadata: {{labels: {{app: unadmitted}}}}
    spec:
      containers: [{{name: app, image: nginx}}]
"""


def unlabelled_policies(control_plane: ControlPlane) -> int:
    """PropagationPolicies on the control plane without the permanent-id label."""
    items = json.loads(control_plane.kubectl("get", "pp", "-A", "-o", "json"))["items"]
    return sum(1 for pp in items if not (pp["metadata"].get("labels") or {}).get(PP_LABEL))


def test_a_policy_without_permanent_id_gets_a_warning_and_its_binding_is_counted_as_skipped(
    control_plane: ControlPlane, tmp_path: Path, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    control_plane.kubectl("create", "namespace", NAMESPACE, check=False)
    scheduler = start_scheduler(control_plane.apiserver, "--leader-elect=false")
    before = scheduler.metric("fleetsched_scheduler_bindings_skipped_total", reason="no-permanent-id")
    # policies other tests left on the shared control plane without the label count too
    others = unlabelled_policies(control_plane)
    with running_controller(control_plane, tmp_path) as controller:
        control_plane.apply(POLICY_AND_WORKLOAD)

        def warning() -> list[dict[str, object]]:
            out = control_plane.kubectl("get", "events", "-n", NAMESPACE, "-o", "json",
                                        "--field-selector=involvedObject.name=unadmitted,reason=PermanentIDMissing")
            return list(json.loads(out)["items"])

        events = wait_until(warning, timeout=60, message=controller.log_tail)
        assert events[0]["type"] == "Warning"
        assert events[0]["involvedObject"]["kind"] == "PropagationPolicy"
        assert PP_LABEL in events[0]["message"] and "webhook" in events[0]["message"]
        assert controller.metric("fleetsched_policy_controller_policies_without_permanent_id",
                                 kind="PropagationPolicy") == others + 1

        # the binding exists, with an empty permanent-id: the scheduler passes it by, counted once
        binding = wait_until(
            lambda: json.loads(control_plane.kubectl("get", "rb", "-n", NAMESPACE, "unadmitted-deployment",
                                                     "-o", "json", check=False) or "null"),
            timeout=60, message=controller.log_tail,
        )
        assert not binding["metadata"].get("labels", {}).get(PP_LABEL)
        wait_until(lambda: scheduler.metric("fleetsched_scheduler_bindings_skipped_total",
                                            reason="no-permanent-id") == before + 1,
                   timeout=30, message=scheduler.log_tail)
        # more events for the same binding are not counted or logged again
        control_plane.kubectl("label", "rb", "-n", NAMESPACE, "unadmitted-deployment", "touched=yes")
        control_plane.kubectl("label", "rb", "-n", NAMESPACE, "unadmitted-deployment", "touched=again",
                              "--overwrite")
        wait_until(lambda: '"touched"' in control_plane.kubectl("get", "rb", "-n", NAMESPACE, "-o", "json"),
                   timeout=10)
        assert scheduler.metric("fleetsched_scheduler_bindings_skipped_total",
                                reason="no-permanent-id") == before + 1
        logged = [line for line in scheduler.log_tail(400).splitlines()
                  if "binding_skipped" in line and "unadmitted-deployment" in line]
        assert len(logged) == 1, logged

        # the webhook's label arrives: the policy is no longer counted
        control_plane.kubectl("label", "pp", "-n", NAMESPACE, "unadmitted",
                              f"{PP_LABEL}=66666666-2222-4333-8444-555555555555")
        wait_until(lambda: controller.metric("fleetsched_policy_controller_policies_without_permanent_id",
                                             kind="PropagationPolicy") == others,
                   timeout=30, message=controller.log_tail)
