"""Multi-template workloads (alpha gate MultiplePodTemplatesScheduling; scheduler.md §12)."""

from __future__ import annotations

from dataclasses import replace

from fleetsched.api.quantity import parse_quantity
from fleetsched.scheduler.framework import ComponentSetEstimator
from fleetsched.scheduler.general_estimator import GeneralEstimator, estimate_component_sets
from fleetsched.scheduler.pipeline import Scheduler, Settings
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import Component, ReplicaRequirements

from .builders import a_binding, a_cluster


def _component(name: str, replicas: int, **requests: str) -> Component:
    req = ReplicaRequirements(tuple((k, parse_quantity(v)) for k, v in requests.items()))
    return Component(name, replicas, req if requests else None)


FLINK = (
    _component("jobmanager", 1, cpu="1", memory="2Gi"),
    _component("taskmanager", 2, cpu="1", memory="2Gi"),
)


def test_summary_bound_estimator_example_5() -> None:
    cluster = a_cluster("m").free(220).allocatable(cpu="8", memory="16Gi").build()
    estimator: ComponentSetEstimator = GeneralEstimator()
    assert estimator.max_available_component_sets([cluster], FLINK) == [2]


def test_pod_headroom_bounds_sets() -> None:
    cluster = a_cluster("m").free(7).allocatable(cpu="100", memory="100Gi").build()
    assert estimate_component_sets(cluster, FLINK) == 2  # 7 pods // 3 pods per set
    assert estimate_component_sets(cluster, (_component("x", 0),)) == 7  # no pods per set: the headroom


def test_decimal_requests_compare_in_milli_units_against_binary_allocatable() -> None:
    cluster = a_cluster("m").free(110).allocatable(memory="16Gi").build()
    assert estimate_component_sets(cluster, (_component("a", 1, memory="2Gi"),)) == 8
    # "2G" is DecimalSI: compared in milli-bytes against bytes, so nothing fits (kept as Karmada does).
    assert estimate_component_sets(cluster, (_component("a", 1, memory="2G"),)) == 0


def test_model_nodes_first_fit_estimator_example_5() -> None:
    grades = ((0, {"cpu": "3", "memory": "64Gi"}), (1, {"cpu": "5", "memory": "64Gi"}))
    cluster = (
        a_cluster("m")
        .free(110)
        .allocatable(cpu="8", memory="128Gi")
        .models(*grades, modelings={0: 1, 1: 1})
        .build()
    )
    worker = (_component("worker", 2, cpu="2"),)
    assert estimate_component_sets(cluster, worker) == 1
    assert estimate_component_sets(cluster, worker, resource_modeling=False) == 2


def test_gate_selects_one_cluster_and_copies_components() -> None:
    binding = replace(a_binding().spread("cluster", 1, 1).dynamic().build(), components=FLINK)
    snapshot = Snapshot(
        [
            a_cluster("small").free(110).allocatable(cpu="3", memory="64Gi").build(),
            a_cluster("big").free(110).allocatable(cpu="30", memory="64Gi").build(),
        ]
    )
    on = Scheduler(settings=Settings(multiple_pod_templates=True)).schedule(
        binding, a_binding().status(), snapshot
    )
    assert on.clusters is not None
    assert [(t.name, t.replicas, t.components) for t in on.clusters] == [
        ("big", 0, (("jobmanager", 1), ("taskmanager", 2)))
    ]
    numbers = {n.cluster: n.allocatable for n in on.attempts[0].numbers}
    assert numbers == {"small": 1, "big": 10}
    off = Scheduler().schedule(binding, a_binding().status(), snapshot)
    assert off.clusters is not None and all(t.components == () for t in off.clusters)
