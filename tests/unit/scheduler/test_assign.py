"""Replica division, through the whole pipeline, with scheduler.md §16's worked examples."""

from __future__ import annotations

import pytest

from fleetsched.scheduler.assign import fnv1a_32, webster

from .builders import a_binding, a_cluster, names, term
from .conftest import Schedule, division

EVEN_UID = "4858ca61-3ff8-4095-8267-f3d059d8074c"
ODD_UID = "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"


def test_fnv1a_parity_of_the_spec_vectors() -> None:
    assert fnv1a_32(EVEN_UID.encode()) & 1 == 0
    assert fnv1a_32(ODD_UID.encode()) & 1 == 1
    assert fnv1a_32(b"") == 0x811C9DC5
    assert fnv1a_32(b"a") == 0xE40C292C


@pytest.mark.parametrize(
    ("seats", "uid", "expected"),
    [
        pytest.param(7, "", {"m1": 3, "m2": 2, "m3": 1, "m4": 1}, id="7 empty uid"),
        pytest.param(7, ODD_UID, {"m1": 3, "m2": 1, "m3": 1, "m4": 2}, id="7 odd uid"),
        pytest.param(8, "", {"m1": 3, "m2": 2, "m3": 2, "m4": 1}, id="8 empty uid"),
        pytest.param(8, ODD_UID, {"m1": 3, "m2": 1, "m3": 2, "m4": 2}, id="8 odd uid"),
        pytest.param(9, EVEN_UID, {"m1": 3, "m2": 2, "m3": 2, "m4": 2}, id="9 even uid"),
        pytest.param(10, ODD_UID, {"m1": 4, "m2": 2, "m3": 2, "m4": 2}, id="10 odd uid"),
    ],
)
def test_static_weights_example_1(schedule: Schedule, seats: int, uid: str, expected: dict[str, int]) -> None:
    binding = a_binding().uid(uid).replicas(seats).static(("m1", 2), ("m2", 1), ("m3", 1), ("m4", 1))
    result = schedule(binding, [a_cluster(n) for n in ("m1", "m2", "m3", "m4")])
    assert division(result) == expected
    assert [t.name for t in result.clusters or ()] == sorted(expected)  # name order


@pytest.mark.parametrize(
    ("replicas", "uid", "expected"),
    [
        pytest.param(10, "", {"A": 4, "B": 3, "C": 3}, id="10 even"),
        pytest.param(10, ODD_UID, {"A": 3, "B": 3, "C": 4}, id="10 odd"),
        pytest.param(5, EVEN_UID, {"A": 2, "B": 2, "C": 1}, id="5 even"),
        pytest.param(5, ODD_UID, {"A": 1, "B": 2, "C": 2}, id="5 odd"),
    ],
)
def test_divide_evenly_example_2(
    schedule: Schedule, replicas: int, uid: str, expected: dict[str, int]
) -> None:
    clusters = [a_cluster(n) for n in "ABC"]
    assert division(schedule(a_binding().uid(uid).replicas(replicas).weighted_evenly(), clusters)) == expected
    # A static list matching none of the selected clusters behaves the same.
    unmatched = a_binding().uid(uid).replicas(replicas).static(("elsewhere", 3))
    assert division(schedule(unmatched, clusters)) == expected


def test_static_weight_cluster_matched_by_no_rule_gets_nothing(schedule: Schedule) -> None:
    result = schedule(a_binding().replicas(4).static(("A", 1), ("B", 3)), [a_cluster(n) for n in "ABC"])
    assert division(result) == {"A": 1, "B": 3}


def test_dynamic_weight_example_3(schedule: Schedule) -> None:
    first = schedule(
        a_binding().replicas(12).dynamic(),
        [a_cluster("A").free(6), a_cluster("B").free(12), a_cluster("C").free(18)],
    )
    assert division(first) == {"A": 2, "B": 4, "C": 6}
    free10 = [a_cluster(n).free(10) for n in "ABC"]
    up = schedule(a_binding().replicas(24).dynamic().targets(A=2, B=4, C=6), free10)
    assert division(up) == {"A": 6, "B": 8, "C": 10}
    down = schedule(a_binding().replicas(12).dynamic().targets(A=6, B=8, C=10), free10)
    assert division(down) == {"A": 3, "B": 4, "C": 5}


def test_aggregated_example_4(schedule: Schedule) -> None:
    first = schedule(
        a_binding().replicas(12).aggregated(),
        [a_cluster("A").free(5), a_cluster("B").free(10), a_cluster("C").free(8)],
    )
    assert division(first) == {"B": 7, "C": 5}
    later = [a_cluster("A").free(5), a_cluster("B").free(3), a_cluster("C").free(3)]
    up = schedule(a_binding().replicas(20).aggregated().targets(B=7, C=5), later)
    assert division(up) == {"A": 4, "B": 9, "C": 7}
    down = schedule(a_binding().replicas(6).aggregated().targets(A=4, B=9, C=7), later)
    assert division(down) == {"B": 6}


def test_unchanged_total_keeps_the_previous_result(schedule: Schedule) -> None:
    result = schedule(
        a_binding().replicas(12).dynamic().targets(B=4, A=8),
        [a_cluster("A").free(0), a_cluster("B").free(0), a_cluster("C").free(12)],
    )
    assert [(t.name, t.replicas) for t in result.clusters or ()] == [("B", 4), ("A", 8)]
    assert result.mode == "Steady"


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param("dynamic", {"A": 4, "B": 2, "C": 6}, id="dynamic"),
        pytest.param("aggregated", {"C": 12}, id="aggregated"),
    ],
)
def test_fresh_mode_example_5(schedule: Schedule, strategy: str, expected: dict[str, int]) -> None:
    binding = (
        getattr(a_binding().replicas(12), strategy)()
        .targets(A=8, B=4)
        .rescheduled(triggered="2026-01-02T00:00:00+00:00", last="2026-01-01T00:00:00+00:00")
    )
    result = schedule(binding, [a_cluster("A").free(0), a_cluster("B").free(0), a_cluster("C").free(12)])
    assert division(result) == expected
    assert result.mode == "Fresh"


def test_reschedule_trigger_older_than_last_schedule_is_steady(schedule: Schedule) -> None:
    binding = (
        a_binding()
        .replicas(12)
        .dynamic()
        .targets(A=8, B=4)
        .rescheduled(triggered="2026-01-01T00:00:00+00:00", last="2026-01-01T00:00:00+00:00")
    )
    result = schedule(binding, [a_cluster("A").free(0), a_cluster("B").free(0), a_cluster("C").free(12)])
    assert division(result) == {"A": 8, "B": 4}
    assert result.mode == "Steady"


def test_scale_up_beyond_capacity_is_unschedulable_and_keeps_targets(schedule: Schedule) -> None:
    result = schedule(
        a_binding().replicas(10).dynamic().targets(m2=3, m3=1),
        [a_cluster("m2").free(3), a_cluster("m3").free(1)],
    )
    assert result.condition is not None
    assert result.condition.reason == "Unschedulable"
    assert result.condition.message == (
        "failed to assign replicas: failed to scale up: "
        "Clusters available replicas 4 are not enough to schedule."
    )
    assert result.clusters is None


def test_fresh_scale_error_text(schedule: Schedule) -> None:
    binding = (
        a_binding()
        .replicas(10)
        .aggregated()
        .rescheduled(triggered="2026-01-02T00:00:00+00:00", last="2026-01-01T00:00:00+00:00")
    )
    result = schedule(binding, [a_cluster("m1").free(3)])
    assert result.condition is not None
    assert result.condition.message == (
        "failed to assign replicas: failed to do fresh scale: "
        "Clusters available replicas 3 are not enough to schedule."
    )


def test_duplicated_example_11_order(schedule: Schedule) -> None:
    clusters = [a_cluster("a").free(10), a_cluster("b").free(3), a_cluster("c").free(10)]
    result = schedule(a_binding().replicas(2).duplicated().targets(b=2), clusters)
    assert [(t.name, t.replicas) for t in result.clusters or ()] == [("b", 2), ("a", 2), ("c", 2)]
    again = schedule(
        a_binding().replicas(2).duplicated().targets(b=2, a=2, c=2),
        [a_cluster("a").free(8), a_cluster("b").free(3), a_cluster("c").free(8)],
    )
    assert [t.name for t in again.clusters or ()] == ["a", "c", "b"]


def test_unsupported_strategy(schedule: Schedule) -> None:
    from fleetsched.scheduler.types import ReplicaScheduling

    result = schedule(a_binding().replicas(3).scheduling(ReplicaScheduling("Divided", "")), [a_cluster("m1")])
    assert result.condition is not None
    assert result.condition.reason == "SchedulerError"
    assert result.condition.message == (
        "failed to assign replicas: unsupported replica scheduling strategy, replicaSchedulingType: Divided, "
        "replicaDivisionPreference: , please try another scheduling strategy"
    )


def test_zero_replica_workloads(schedule: Schedule) -> None:
    clusters = [a_cluster("m1"), a_cluster("m2")]
    # Without requirements: treated like a non-workload, lands everywhere with no replica count.
    plain = schedule(a_binding().replicas(0).dynamic(), clusters)
    assert division(plain) == {"m1": 0, "m2": 0}
    # With requirements: a workload assigned 0 everywhere, so every target is dropped.
    with_requests = schedule(a_binding().replicas(0).requests(cpu="1").dynamic(), clusters)
    assert division(with_requests) == {}
    assert with_requests.condition is not None and with_requests.condition.status


def test_empty_workload_propagation_appends_unused_selected_clusters(schedule: Schedule) -> None:
    clusters = [a_cluster("A").free(5), a_cluster("B").free(10), a_cluster("C").free(8)]
    result = schedule(a_binding().replicas(12).aggregated(), clusters, enable_empty_workload_propagation=True)
    assert [(t.name, t.replicas) for t in result.clusters or ()] == [("B", 7), ("C", 5), ("A", 0)]


def test_overflow_tiers_example_8(schedule: Schedule) -> None:
    groups = (term("onprem", names("c1"), ("cloud", names("c2", "c3"))),)

    def run(replicas: int, free: tuple[int, int, int], **targets: int) -> dict[str, int]:
        binding = (
            a_binding().replicas(replicas).dynamic().groups(*groups).observing("onprem").targets(**targets)
        )
        clusters = [a_cluster(f"c{i + 1}").free(f) for i, f in enumerate(free)]
        result = schedule(binding, clusters)
        assert result.affinity_name == "onprem"
        return division(result)

    assert run(10, (4, 10, 6)) == {"c1": 4, "c2": 4, "c3": 2}
    assert run(14, (0, 6, 4), c1=4, c2=4, c3=2) == {"c1": 4, "c2": 6, "c3": 4}
    assert run(11, (0, 4, 2), c1=4, c2=6, c3=4) == {"c1": 4, "c2": 4, "c3": 3}
    assert run(3, (0, 4, 2), c1=4, c2=4, c3=3) == {"c1": 3}
    assert run(13, (10, 4, 2), c1=4, c2=6, c3=4) == {"c1": 13}


def test_overflow_without_enough_capacity(schedule: Schedule) -> None:
    binding = (
        a_binding()
        .replicas(10)
        .dynamic()
        .observing("onprem")
        .groups(term("onprem", names("c1"), ("cloud", names("c2", "c3"))))
    )
    result = schedule(binding, [a_cluster("c1").free(4), a_cluster("c2").free(3), a_cluster("c3").free(2)])
    assert result.condition is not None
    assert (result.condition.reason, result.condition.message) == (
        "Unschedulable",
        "failed to assign replicas: Clusters available replicas are not enough to schedule.",
    )
    assert result.clusters is None


def test_webster_direct() -> None:
    assert webster(0, {"a": 1}) == {"a": 0}
    assert webster(3, {"a": 0, "b": 0}) == {"a": 0, "b": 0}
    assert webster(5, {"b": 1, "a": 1}) == {"a": 3, "b": 2}
    assert webster(5, {"b": 1, "a": 1}, uid=ODD_UID) == {"a": 2, "b": 3}
