"""Spread constraints (scheduler.md §8) with §16's examples 6 and 7."""

from __future__ import annotations

import pytest

from .builders import a_binding, a_cluster
from .conftest import Schedule, division


def test_spread_by_cluster_capacity_swap_example_6(schedule: Schedule) -> None:
    binding = a_binding().replicas(80).aggregated().spread("cluster", 1, 2).targets(A=20, B=20)
    result = schedule(binding, [a_cluster("A").free(20), a_cluster("B").free(10), a_cluster("C").free(60)])
    assert result.attempts[0].selected == ("A", "C")
    assert division(result) == {"A": 35, "C": 45}


def _regions() -> list:
    return [
        a_cluster("a").region("R1").free(10),
        a_cluster("b").region("R1").free(10),
        a_cluster("c").region("R2").free(50),
        a_cluster("d").region("R3").free(5),
        a_cluster("e").region("R3").free(5),
    ]


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        pytest.param("dynamic", {"a": 6, "b": 6, "c": 28}, id="dynamic"),
        pytest.param("aggregated", {"c": 40}, id="aggregated ignores the spread when splitting"),
    ],
)
def test_spread_by_region_example_7(schedule: Schedule, strategy: str, expected: dict[str, int]) -> None:
    binding = getattr(a_binding().replicas(40), strategy)().spread("region", 2, 2).spread("cluster", 2, 3)
    result = schedule(binding, _regions())
    assert result.attempts[0].selected == ("a", "c", "b")
    assert division(result) == expected


@pytest.mark.parametrize(
    ("binding", "message"),
    [
        pytest.param(
            a_binding().replicas(4).dynamic().spread("cluster", 6, 8),
            "failed to select clusters: the number of feasible clusters is less than "
            "spreadConstraint.MinGroups",
            id="too few clusters",
        ),
        pytest.param(
            a_binding().replicas(4).dynamic().spread("cluster", 1, 0),
            "failed to select clusters: no enough resource when selecting 0 clusters",
            id="maxGroups 0 on a divided workload",
        ),
        pytest.param(
            a_binding().replicas(4).duplicated().spread("cluster", 1, 0),
            "failed to assign replicas: no clusters available to schedule",
            id="maxGroups 0 on a duplicated workload",
        ),
        pytest.param(
            a_binding().replicas(200).dynamic().spread("cluster", 1, 1),
            "failed to select clusters: no enough resource when selecting 1 clusters",
            id="not enough capacity in maxGroups clusters",
        ),
        pytest.param(
            a_binding().replicas(4).dynamic().spread("region", 4, 4).spread("cluster", 1, 5),
            "failed to select clusters: the number of feasible region is less than "
            "spreadConstraint.MinGroups",
            id="too few regions",
        ),
        pytest.param(
            a_binding().replicas(4).dynamic().spread("region", 2, 2).spread("cluster", 9, 9),
            "failed to select clusters: the number of clusters is less than the cluster "
            "spreadConstraint.MinGroups",
            id="regions without enough clusters",
        ),
        pytest.param(
            a_binding().replicas(4).dynamic().spread("zone", 1, 1),
            "failed to select clusters: just support cluster and region spread constraint",
            id="zone alone",
        ),
    ],
)
def test_select_errors_are_scheduler_errors(schedule: Schedule, binding, message: str) -> None:  # type: ignore[no-untyped-def]
    clusters = [c.zones("z1") for c in _regions()]
    result = schedule(binding, clusters)
    assert result.condition is not None
    assert (result.condition.reason, result.condition.message) == ("SchedulerError", message)
    assert result.clusters is None


def test_static_weights_ignore_spread_constraints(schedule: Schedule) -> None:
    binding = a_binding().replicas(3).static(("a", 1), ("c", 2)).spread("cluster", 1, 1)
    assert division(schedule(binding, _regions())) == {"a": 1, "c": 2}


def test_duplicated_with_cluster_constraint_takes_the_first_k(schedule: Schedule) -> None:
    result = schedule(a_binding().replicas(2).duplicated().spread("cluster", 1, 2), _regions())
    # global order: available desc, then name
    assert [t.name for t in result.clusters or ()] == ["c", "a"]


def _details(*spec: tuple[str, str, int, int]):  # type: ignore[no-untyped-def]
    from fleetsched.scheduler.assign import ClusterDetail

    return [
        ClusterDetail(a_cluster(n).region(r).build(), score, 0, avail, avail) for n, r, avail, score in spec
    ]


def test_group_scores_example_7() -> None:
    from fleetsched.scheduler.select import _group_score

    binding = a_binding().replicas(40).dynamic().build()
    r1 = _details(("a", "R1", 10, 0), ("b", "R1", 10, 0))
    r2 = _details(("c", "R2", 50, 0))
    r3 = _details(("d", "R3", 5, 0), ("e", "R3", 5, 0))
    assert [_group_score(g, binding, 2, 2) for g in (r1, r2, r3)] == [20000, 20000, 10000]


def test_group_score_duplicated_counts_clusters_that_fit_whole() -> None:
    from fleetsched.scheduler.select import _group_score

    binding = a_binding().replicas(8).duplicated().build()
    group = _details(("a", "R", 10, 100), ("b", "R", 9, 0), ("c", "R", 3, 0))
    assert _group_score(group, binding, 1, 1) == 2 * 1000 + 100 // 2
    assert _group_score(_details(("c", "R", 3, 0)), binding, 1, 1) == 0


def test_select_groups_prefers_weight_then_value_then_a_strict_prefix() -> None:
    from fleetsched.scheduler.select import _Group, _select_groups

    def g(name: str, clusters: int, score: int) -> _Group:
        return _Group(name, _details(*[(f"{name}{i}", name, 1, 0) for i in range(clusters)]), score)

    # Exactly two of three regions, enough clusters (2): the heaviest pair wins.
    chosen = _select_groups([g("R1", 2, 20000), g("R2", 1, 20000), g("R3", 2, 10000)], 2, 2, 2)
    assert [x.name for x in chosen or ()] == ["R1", "R2"]
    # min 1, max 2, target 1 cluster: single regions satisfy; the strict prefix of the best path wins.
    chosen = _select_groups([g("A", 1, 500), g("B", 1, 700)], 1, 2, 1)
    assert [x.name for x in chosen or ()] == ["B"]
    assert _select_groups([], 1, 1, 1) is None
    assert _select_groups([g("A", 1, 1)], 1, 0, 1) is None  # maxGroups 0: no path
