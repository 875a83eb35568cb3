"""WorkloadRebalancer decisions (Karmada's workload-rebalancer controller): which bindings, the
status a pass computes, the TTL; and the ``--controllers`` flag that turns the controller off."""

from __future__ import annotations

import argparse
import datetime as dt
from typing import Any

import pytest

from fleetsched.api.apps import ObservedWorkload, WorkloadRebalancer, WorkloadReference
from fleetsched.controller.policy.command import resolve_controllers
from fleetsched.controller.rebalancer import decisions

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def deployment(name: str, namespace: str | None = "shop", kind: str = "Deployment") -> dict[str, Any]:
    ref: dict[str, Any] = {"apiVersion": "apps/v1", "kind": kind, "name": name}
    if namespace is not None:
        ref["namespace"] = namespace
    return ref


def rebalancer(
    workloads: list[dict[str, Any]],
    observed: list[dict[str, Any]] | None = None,
    *,
    ttl: int | None = None,
    generation: int = 1,
    finish: str | None = None,
) -> WorkloadRebalancer:
    spec: dict[str, Any] = {"workloads": workloads}
    if ttl is not None:
        spec["ttlSecondsAfterFinished"] = ttl
    status: dict[str, Any] = {}
    if observed is not None:
        status["observedWorkloads"] = observed
        status["observedGeneration"] = 1
    if finish is not None:
        status["finishTime"] = finish
    return WorkloadRebalancer.model_validate(
        {
            "apiVersion": "apps.karmada.io/v1alpha1",
            "kind": "WorkloadRebalancer",
            "metadata": {"name": "demo", "generation": generation,
                         "creationTimestamp": "2026-01-02T03:04:00Z"},
            "spec": spec,
            **({"status": status} if status else {}),
        }
    )


def names(observed: list[ObservedWorkload]) -> list[tuple[str, str | None, str | None]]:
    return [(o.workload.name, o.result, o.reason) for o in observed]


# ---- which bindings ------------------------------------------------------------------------


def test_a_namespaced_workload_is_rebalanced_through_its_resource_binding() -> None:
    ref = decisions.binding_of(WorkloadReference.model_validate(deployment("Web")))
    assert (ref.kind, ref.namespace, ref.name) == ("ResourceBinding", "shop", "web-deployment")


def test_a_cluster_scoped_workload_through_its_cluster_resource_binding() -> None:
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "name": "system:viewer"}
    ref = decisions.binding_of(WorkloadReference.model_validate(role))
    # ':' is not allowed in a binding's name: Karmada writes '.' for it
    assert (ref.kind, ref.namespace, ref.name) == (
        "ClusterResourceBinding", None, "system.viewer-clusterrole"
    )
    empty = decisions.binding_of(WorkloadReference.model_validate({**role, "namespace": ""}))
    assert empty.kind == "ClusterResourceBinding"


def test_a_binding_is_stamped_unless_its_reschedule_is_as_new_as_the_rebalancer() -> None:
    assert decisions.needs_trigger(T0, None)
    assert decisions.needs_trigger(T0, T0 - dt.timedelta(seconds=1))
    assert not decisions.needs_trigger(T0, T0)  # a second rebalancer of the same second: done already
    assert not decisions.needs_trigger(T0, T0 + dt.timedelta(seconds=1))


# ---- the observed workloads ----------------------------------------------------------------


def test_a_new_rebalancer_observes_its_workloads_sorted_and_once() -> None:
    observed = decisions.sync_observed(
        rebalancer([deployment("web"), deployment("api"), deployment("api"), deployment("db", "a-shop")])
    )
    # sorted by apiVersion, kind, namespace, name; a workload listed twice observed once
    assert [(o.workload.namespace, o.workload.name) for o in observed] == [
        ("a-shop", "db"), ("shop", "api"), ("shop", "web")
    ]
    assert all(o.result is None for o in observed)
    assert decisions.pending(observed) == [0, 1, 2]


def test_a_spec_change_keeps_results_adds_new_workloads_and_drops_unfinished_removed_ones() -> None:
    before = [
        {"workload": deployment("kept"), "result": "Successful"},
        {"workload": deployment("gone-ok"), "result": "Successful"},
        {"workload": deployment("gone-failed"), "result": "Failed", "reason": "ReferencedBindingNotFound"},
        {"workload": deployment("gone-retrying")},
    ]
    changed = rebalancer([deployment("kept"), deployment("new")], before, generation=2)
    observed = decisions.sync_observed(changed)
    assert names(observed) == [
        ("gone-ok", "Successful", None),  # done already: kept although no longer asked for
        ("kept", "Successful", None),  # rebalanced once, not again
        ("new", None, None),
    ]
    assert decisions.pending(observed) == [2]


def test_failed_workloads_are_final() -> None:
    before = [{"workload": deployment("x"), "result": "Failed", "reason": "ReferencedBindingNotFound"}]
    assert decisions.pending(decisions.sync_observed(rebalancer([deployment("x")], before))) == []


def test_results_carry_karmadas_words() -> None:
    item = ObservedWorkload(workload=WorkloadReference.model_validate(deployment("web")))
    assert decisions.succeeded(item).to_dict() == {"workload": deployment("web"), "result": "Successful"}
    assert decisions.binding_not_found(item).to_dict() == {
        "workload": deployment("web"), "result": "Failed", "reason": "ReferencedBindingNotFound"
    }


# ---- the status ----------------------------------------------------------------------------


def test_a_finished_pass_sets_observed_generation_and_finish_time() -> None:
    r = rebalancer([deployment("web"), deployment("nope")], generation=3)
    observed = decisions.sync_observed(r)
    observed = [decisions.binding_not_found(observed[0]), decisions.succeeded(observed[1])]
    now = T0.replace(microsecond=654321)
    status = decisions.finished_status(r, observed, retries=0, now=now)
    assert status.to_dict() == {
        "observedWorkloads": [
            {"workload": deployment("nope"), "result": "Failed", "reason": "ReferencedBindingNotFound"},
            {"workload": deployment("web"), "result": "Successful"},
        ],
        "observedGeneration": 3,
        "finishTime": "2026-01-02T03:04:05Z",
    }


def test_a_pass_with_retries_left_has_no_finish_time() -> None:
    r = rebalancer([deployment("web")])
    status = decisions.finished_status(r, decisions.sync_observed(r), retries=1, now=T0)
    assert status.finish_time is None
    assert status.observed_generation == 1
    assert status.observed_workloads is not None and status.observed_workloads[0].result is None


def test_an_unchanged_status_keeps_its_finish_time() -> None:
    done = [{"workload": deployment("web"), "result": "Successful"}]
    r = rebalancer([deployment("web")], done, finish="2026-01-01T00:00:00Z")
    status = decisions.finished_status(r, decisions.sync_observed(r), retries=0, now=T0)
    assert status == r.status  # nothing to write
    assert status.finish_time == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_a_spec_change_after_finishing_finishes_again() -> None:
    done = [{"workload": deployment("web"), "result": "Successful"}]
    r = rebalancer([deployment("web"), deployment("api")], done, generation=2, finish="2026-01-01T00:00:00Z")
    observed = decisions.sync_observed(r)
    observed[0] = decisions.succeeded(observed[0])
    status = decisions.finished_status(r, observed, retries=0, now=T0)
    assert status.finish_time == T0 and status.observed_generation == 2


# ---- the TTL -------------------------------------------------------------------------------


def test_ttl_counts_from_the_finish_time() -> None:
    done = [{"workload": deployment("web"), "result": "Successful"}]
    r = rebalancer([deployment("web")], done, ttl=30, finish="2026-01-02T03:04:05Z")
    assert decisions.ttl_remaining(r, T0) == 30
    assert decisions.ttl_remaining(r, T0 + dt.timedelta(seconds=29.5)) == 0.5
    assert decisions.ttl_remaining(r, T0 + dt.timedelta(seconds=31)) == -1


def test_ttl_zero_deletes_at_once_and_no_ttl_never() -> None:
    done = [{"workload": deployment("web"), "result": "Successful"}]
    zero = rebalancer([deployment("web")], done, ttl=0, finish="2026-01-02T03:04:05Z")
    assert decisions.ttl_remaining(zero, T0) == 0
    kept = rebalancer([deployment("web")], done, finish="2026-01-02T03:04:05Z")
    assert decisions.ttl_remaining(kept, T0 + dt.timedelta(days=365)) is None


def test_ttl_of_an_unfinished_rebalancer_is_an_error_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"status\.finishTime"):
        decisions.ttl_remaining(rebalancer([deployment("web")], ttl=10), T0)


# ---- the model -----------------------------------------------------------------------------


def test_the_model_refuses_an_empty_workload_list_and_a_workload_without_a_name() -> None:
    with pytest.raises(ValueError, match="workloads"):
        rebalancer([])
    with pytest.raises(ValueError, match="name"):
        rebalancer([{"apiVersion": "apps/v1", "kind": "Deployment"}])


def test_the_model_round_trips_karmadas_json() -> None:
    r = rebalancer([deployment("web")], [{"workload": deployment("web"), "result": "Successful"}],
                   ttl=60, finish="2026-01-02T03:04:05Z")
    again = WorkloadRebalancer.model_validate(r.to_dict())
    assert again == r
    assert r.to_dict()["spec"] == {"workloads": [deployment("web")], "ttlSecondsAfterFinished": 60}


# ---- --controllers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "enabled"),
    [("*", True), ("workloadRebalancer", True), ("*,-workloadRebalancer", False),
     ("-workloadRebalancer", False), ("-*", False)],
)
def test_controllers_flag(text: str, enabled: bool) -> None:
    assert ("workloadRebalancer" in resolve_controllers(text)) is enabled


def test_controllers_flag_names_an_unknown_controller() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="unknown controller hpaScaleTargetMarker"):
        resolve_controllers("*,hpaScaleTargetMarker")
