from __future__ import annotations

import pytest

from fleetsched.scheduler import framework
from fleetsched.scheduler.framework import STEPS, PluginSelectionError, ReplicaEstimator, select_plugins
from fleetsched.scheduler.pipeline import Scheduler, Settings
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo, ReplicaRequirements

from .builders import a_binding, a_cluster
from .conftest import Schedule, division

REGISTRY = framework.defaults.karmada_plugin_names()  # what --plugins selects from


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            "*",
            (
                "APIEnablement",
                "TaintToleration",
                "ClusterAffinity",
                "SpreadConstraint",
                "ClusterLocality",
                "ClusterEviction",
            ),
            id="all",
        ),
        pytest.param(
            "*,-ClusterLocality",
            ("APIEnablement", "TaintToleration", "ClusterAffinity", "SpreadConstraint", "ClusterEviction"),
            id="all but one",
        ),
        pytest.param("TaintToleration", ("TaintToleration",), id="only one"),
        pytest.param("-TaintToleration,*", tuple(REGISTRY), id="a later * adds it back"),
        pytest.param("", (), id="nothing"),
    ],
)
def test_select_plugins(spec: str, expected: tuple[str, ...]) -> None:
    assert select_plugins(spec, REGISTRY) == expected


def test_unknown_plugin_is_an_error() -> None:
    with pytest.raises(PluginSelectionError, match="NoSuchPlugin"):
        select_plugins("*,-NoSuchPlugin", REGISTRY)


def test_disabled_filter_no_longer_rejects(schedule: Schedule) -> None:
    fleet = [a_cluster("m1").tainted("k", "NoSchedule")]
    assert schedule(a_binding().replicas(1), fleet).condition.reason == "NoClusterFit"  # type: ignore[union-attr]
    assert division(schedule(a_binding().replicas(1), fleet, plugins="*,-TaintToleration")) == {"m1": 1}


def test_disabled_locality_drops_the_target_preference(schedule: Schedule) -> None:
    fleet = [a_cluster("a").free(10), a_cluster("b").free(3)]
    binding = a_binding().replicas(1).duplicated().targets(b=1)
    assert [t.name for t in schedule(binding, fleet).clusters or ()] == ["b", "a"]
    assert [t.name for t in schedule(binding, fleet, plugins="*,-ClusterLocality").clusters or ()] == [
        "a",
        "b",
    ]


class _FixedEstimator:
    name = "fixed"

    def __init__(self, answers: dict[str, int], fail: bool = False) -> None:
        self.answers = answers
        self.fail = fail
        self.calls = 0

    def max_available_replicas(
        self, clusters: list[ClusterInfo], replica_requirements: ReplicaRequirements | None
    ) -> list[int]:
        self.calls += 1
        if self.fail:
            raise RuntimeError("estimator down")
        return [self.answers.get(c.name, -1) for c in clusters]


def test_extra_estimators_lower_estimates_and_minus_one_is_ignored() -> None:
    estimator: ReplicaEstimator = _FixedEstimator({"A": 1})
    scheduler = Scheduler(settings=Settings(), estimators=[estimator])
    snapshot = Snapshot([a_cluster("A").free(10).build(), a_cluster("B").free(10).build()])
    binding = a_binding().replicas(10).dynamic()
    result = scheduler.schedule(binding.build(), binding.status(), snapshot)
    assert division(result) == {"A": 1, "B": 9}
    numbers = {n.cluster: n.allocatable for n in result.attempts[0].numbers}
    assert numbers == {"A": 1, "B": 10}


def test_a_failing_estimator_is_ignored_for_the_attempt() -> None:
    failing = _FixedEstimator({"A": 0}, fail=True)
    scheduler = Scheduler(estimators=[failing])
    snapshot = Snapshot([a_cluster("A").free(10).build()])
    binding = a_binding().replicas(10).dynamic()
    assert division(scheduler.schedule(binding.build(), binding.status(), snapshot)) == {"A": 10}
    assert failing.calls == 1


def test_non_workloads_are_not_estimated() -> None:
    estimator = _FixedEstimator({"A": 0})
    scheduler = Scheduler(estimators=[estimator])
    binding = a_binding().configmap().replicas(0)
    result = scheduler.schedule(binding.build(), binding.status(), Snapshot([a_cluster("A").build()]))
    assert estimator.calls == 0
    assert result.attempts[0].numbers[0].allocatable == 2**31 - 1


def test_each_attempt_reports_karmadas_steps_in_order() -> None:
    seen: list[tuple[str, float]] = []
    scheduler = Scheduler(observe_step=lambda step, seconds: seen.append((step, seconds)))
    snapshot = Snapshot([a_cluster("m1").free(10).build(), a_cluster("m2").free(10).build()])
    binding = a_binding().replicas(4).dynamic()
    scheduler.schedule(binding.build(), binding.status(), snapshot)
    assert [step for step, _ in seen] == list(STEPS)
    assert all(seconds >= 0 for _, seconds in seen)
    # Again on the same snapshot: verdicts and scores are reused, every step is still reported.
    seen.clear()
    scheduler.schedule(binding.build(), binding.status(), snapshot)
    assert [step for step, _ in seen] == list(STEPS)
    # An attempt that no cluster fits stops after filtering (and scoring nothing).
    seen.clear()
    scheduler.schedule(binding.build(), binding.status(), Snapshot([a_cluster("m3").deleting().build()]))
    assert [step for step, _ in seen] == ["Filter", "Score"]
