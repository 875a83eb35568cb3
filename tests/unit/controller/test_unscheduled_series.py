"""``fleetsched_scheduler_unscheduled_bindings{reason}`` follows every outcome of the operator (against
the in-memory API of test_operator_writes), ``karmada_scheduler_schedule_attempts_total`` keeps
Karmada's ``result`` (a NoClusterFit attempt is "scheduled", an Unschedulable one "error"), and each
process serves only its own series."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from test_operator_writes import WEB, MemoryApi, a_binding, a_cluster, operator_for

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.cache import ObjectCache
from fleetsched.controller.runtime.queue import Outcome, QueuedBinding
from fleetsched.controller.scheduler import unscheduled
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import ApiError
from fleetsched.scheduler import ScheduleResult
from fleetsched.scheduler.outcome import Condition

GAUGE = unscheduled.NAME


def gauge() -> dict[str, float]:
    return {reason: metrics.REGISTRY.get_sample_value(GAUGE, {"reason": reason}) or 0.0
            for reason in unscheduled.REASONS}


def attempts(result: str) -> float:
    labels = {"result": result, "schedule_type": metrics.RECONCILE_SCHEDULE}
    return metrics.REGISTRY.get_sample_value("karmada_scheduler_schedule_attempts_total", labels) or 0.0


def only(reason: str | None) -> dict[str, float]:
    return {r: (1.0 if r == reason else 0.0) for r in unscheduled.REASONS}


async def attempt(operator: SchedulerOperator) -> Outcome:
    """One worker pass as the runtime makes it: process, then after_outcome."""
    entry = QueuedBinding(WEB, 0, 0.0, 1)
    try:
        outcome = await operator.process(entry)
    except Exception:
        outcome = Outcome.ERROR  # the runtime's worker_error
    operator.after_outcome(entry, outcome)
    return outcome


def placed_on(binding: dict[str, Any], clusters: list[str], replicas: int = 3) -> dict[str, Any]:
    binding["spec"]["placement"]["clusterAffinity"] = {"clusterNames": clusters}
    binding["spec"]["replicas"] = replicas
    binding["metadata"]["generation"] += 1
    return binding


def changed(api: MemoryApi, operator: SchedulerOperator, **spec: Any) -> None:
    """A user's change of the binding, seen through the watch."""
    api.binding["spec"].update(spec)
    api.binding["metadata"]["generation"] += 1
    api.bump()
    operator.on_binding_event(RB, "MODIFIED", copy.deepcopy(api.binding))


async def test_a_no_cluster_fit_binding_is_counted_until_it_schedules() -> None:
    api = MemoryApi(placed_on(a_binding(), ["nowhere"]))
    operator = operator_for(api)
    scheduled, errors = attempts("scheduled"), attempts("error")
    assert await attempt(operator) is Outcome.DONE  # Karmada does not retry a FitError from the queue
    assert api.binding["status"]["conditions"][0]["reason"] == "NoClusterFit"
    assert gauge() == only("NoClusterFit")
    # Karmada's getConditionByError ignores a lone FitError: the attempt counts "scheduled"
    assert (attempts("scheduled") - scheduled, attempts("error") - errors) == (1, 0)
    changed(api, operator, placement={**api.binding["spec"]["placement"],
                                      "clusterAffinity": {"clusterNames": ["m1"]}})
    assert gauge() == only("NoClusterFit")  # not scheduled yet: it waits in the queue
    assert await attempt(operator) is Outcome.DONE
    assert gauge() == only(None)


async def test_an_unschedulable_binding_counts_error_attempts_and_leaves_when_deleted() -> None:
    binding = placed_on(a_binding(), ["m1"], replicas=10)
    binding["spec"]["replicaRequirements"] = {"resourceRequest": {"cpu": "1"}}
    binding["spec"]["placement"]["replicaScheduling"]["replicaDivisionPreference"] = "Aggregated"
    api = MemoryApi(binding)
    operator = operator_for(api)
    small = a_cluster("m1")
    small["metadata"]["resourceVersion"] = "2"
    small["status"]["resourceSummary"]["allocatable"]["cpu"] = "2"  # room for 2 of the 10 replicas
    operator.on_cluster_event("MODIFIED", small)
    errors = attempts("error")
    assert await attempt(operator) is Outcome.UNSCHEDULABLE
    assert api.binding["status"]["conditions"][0]["reason"] == "Unschedulable"
    assert gauge() == only("Unschedulable")
    assert attempts("error") - errors == 1  # as karmada-scheduler: UnschedulableError is an error
    operator.on_binding_event(RB, "DELETED", copy.deepcopy(api.binding))
    assert gauge() == only(None)


async def test_a_failed_write_counts_as_scheduler_error_until_the_next_attempt_ends() -> None:
    api = MemoryApi(a_binding())
    operator = operator_for(api)
    patch = api.merge_patch

    async def refused(path: str, body: dict[str, Any]) -> dict[str, Any]:
        raise ApiError(500, "InternalError", "etcd is away")

    api.merge_patch = refused  # type: ignore[method-assign]
    assert await attempt(operator) is Outcome.ERROR
    assert "status" not in api.binding  # no condition could be written
    assert gauge() == only("SchedulerError")
    api.merge_patch = patch  # type: ignore[method-assign]
    assert await attempt(operator) is Outcome.DONE
    assert gauge() == only(None)
    # a failed binding that is deleted leaves too
    api.merge_patch = refused  # type: ignore[method-assign]
    changed(api, operator, replicas=4)
    assert await attempt(operator) is Outcome.ERROR
    assert gauge() == only("SchedulerError")
    operator.on_binding_event(RB, "DELETED", copy.deepcopy(api.binding))
    assert gauge() == only(None)


async def test_what_another_scheduler_or_a_standby_sees_is_not_counted() -> None:
    other = placed_on(a_binding(), ["nowhere"])
    other["spec"]["schedulerName"] = "someone-else"
    other["status"] = {"conditions": [{"type": "Scheduled", "status": "False", "reason": "NoClusterFit"}]}
    api = MemoryApi(placed_on(a_binding(), ["nowhere"]))
    operator = operator_for(api)
    other["metadata"]["name"] = "other"
    other["metadata"]["resourceVersion"] = "1"
    operator.on_binding_event(RB, None, other)
    assert gauge() == only(None)  # not ours; ours not tried yet
    await attempt(operator)
    assert gauge() == only("NoClusterFit")

    class Standby:
        is_leader = False

    operator.runtime.elector = Standby()  # type: ignore[assignment]
    assert gauge() == only(None)  # the leader counts it; summing the replicas counts it once


def test_the_result_label_is_karmadas() -> None:
    def result(status: bool, reason: str) -> str:
        written = ScheduleResult("k", Condition(status, reason, ""), None, None, False)
        return unscheduled.attempt_result(written)

    assert [result(True, "Success"), result(False, "NoClusterFit"), result(False, "Unschedulable"),
            result(False, "SchedulerError"), result(False, "QuotaExceeded")] == [
        "scheduled", "scheduled", "error", "error", "error"]


@pytest.fixture
def serving() -> Iterator[None]:
    before = metrics._serving
    yield
    metrics._serving = before


def served_names() -> set[str]:
    text = metrics.exposition().decode()
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


@pytest.mark.usefixtures("serving")
def test_each_process_serves_its_own_series_and_the_common_ones() -> None:
    # the imports register the policy controller's and the descheduler's series
    import fleetsched.controller.policy.command
    import fleetsched.descheduler.runner  # noqa: F401

    metrics.serve_as("policy-controller")
    controller = served_names()
    assert not {n for n in controller if n.startswith(("fleetsched_scheduler_", "karmada_scheduler_",
                                                      "scheduler_", "fleetsched_descheduler_"))}
    common = {"karmada_build_info", "process_cpu_seconds_total"}
    assert {"fleetsched_policy_controller_is_leader", *common} <= controller
    metrics.serve_as("scheduler")
    scheduler = served_names()
    assert {GAUGE, "fleetsched_scheduler_is_leader", "karmada_build_info"} <= scheduler
    others = ("fleetsched_policy_controller_", "fleetsched_descheduler_")
    assert not {n for n in scheduler if n.startswith(others)}
    metrics.serve_as("descheduler")
    descheduler = served_names()
    assert "fleetsched_scheduler_estimator_rpcs_total" in descheduler  # its own calls to the estimators
    assert "fleetsched_descheduler_rounds_total" in descheduler
    assert "fleetsched_scheduler_is_leader" not in descheduler
    with pytest.raises(ValueError, match="unknown process 'webhook'"):
        metrics.serve_as("webhook")


class _Operator:
    """What the collector reads of an operator: its caches, names and runtime."""

    def __init__(self, owned: set[str]) -> None:
        self.bindings = {RB: ObjectCache(), "ClusterResourceBinding": ObjectCache()}
        self.config = OperatorConfig()
        self.runtime = SimpleNamespace(is_leader=True, sharding=object(), owns=lambda uid: uid in owned)


def test_sharded_each_replica_counts_its_own_share() -> None:
    collector = unscheduled.UnscheduledBindings()
    first, second = _Operator({"uid-0", "uid-2"}), _Operator({"uid-1"})
    collector.watch(first)
    other = unscheduled.UnscheduledBindings()
    other.watch(second)
    for operator in (first, second):
        for i in range(3):
            binding = placed_on(a_binding(), ["nowhere"])
            binding["metadata"].update(name=f"b{i}", uid=f"uid-{i}", resourceVersion="5")
            condition = {"type": "Scheduled", "status": "False", "reason": "NoClusterFit"}
            binding["status"] = {"conditions": [condition]}
            operator.bindings[RB].upsert(binding)
    assert collector.counts()["NoClusterFit"] == 2
    assert other.counts()["NoClusterFit"] == 1  # summed over the replicas: each binding once
