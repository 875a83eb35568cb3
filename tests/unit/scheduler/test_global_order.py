"""The pipeline's numbers phase over arrays gives the literal per-cluster results (§6.1, §6.2, §7.1).

Differential tests: ``pipeline._global_order`` (numpy's lexsort from 48 clusters, tuple keys below)
against the literal ``sorted(details, key=select.order_key)``; ``pipeline._available`` against the
held-replicas dict it replaced; the one-answer path of ``Scheduler._allocatable_replicas`` against
the minimum over answers. Random names (duplicates too), scores, availability with ties, overflow
tiers, and values too large for int64.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.scheduler import pipeline
from fleetsched.scheduler.assign import ClusterDetail
from fleetsched.scheduler.framework.interface import UNAUTHENTIC_REPLICA
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.select import order_key
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import MAX_INT32, ClusterInfo, ReplicaRequirements, TargetCluster

from .builders import a_binding

names = st.text(alphabet="abm-01", min_size=1, max_size=3)
small = st.sampled_from([0, 0, 1, 2, 100, 7])
values = st.one_of(small, st.integers(-(2**31), 2**31), st.sampled_from([2**62, -(2**63), 2**70]))


@st.composite
def fleets(draw: st.DrawFn) -> tuple[Snapshot, list[int], list[int], list[int], list[int] | None]:
    n = draw(st.integers(1, 130))
    cluster_names = draw(st.lists(names, min_size=n, max_size=n))
    snapshot = Snapshot(ClusterInfo(name) for name in cluster_names)
    positions = sorted(draw(st.sets(st.integers(0, n - 1), min_size=1)))
    k = len(positions)
    wide = draw(st.booleans())
    scores = draw(st.lists(values if wide else small, min_size=k, max_size=k))
    available = draw(st.lists(values if wide else small, min_size=k, max_size=k))
    orders = draw(st.one_of(st.none(), st.lists(st.sampled_from([0, 1, 2, 1000]), min_size=k, max_size=k)))
    return snapshot, positions, scores, available, orders


@settings(max_examples=400, deadline=None, derandomize=True)
@given(fleet=fleets())
def test_global_order_is_the_literal_sort(
    fleet: tuple[Snapshot, list[int], list[int], list[int], list[int] | None],
) -> None:
    snapshot, positions, scores, available, orders = fleet
    details = [
        ClusterDetail(
            snapshot.clusters[p],
            scores[k],
            orders[k] if orders is not None else 0,
            available[k],
            available[k],
        )
        for k, p in enumerate(positions)
    ]
    expected = sorted(range(len(details)), key=lambda k: order_key(details[k]))
    assert pipeline._global_order(snapshot, positions, orders, scores, available) == expected


def test_both_sort_paths_are_exercised() -> None:
    snapshot = Snapshot(ClusterInfo(f"m{i % 50:02d}") for i in range(200))
    positions = list(range(200))
    scores = [i % 3 for i in range(200)]
    available = [(i * 7) % 5 for i in range(200)]
    details = [
        ClusterDetail(snapshot.clusters[p], scores[p], 0, available[p], available[p]) for p in positions
    ]
    expected = sorted(range(200), key=lambda k: order_key(details[k]))
    for n in (10, 47, 48, 200):
        want = sorted(range(n), key=lambda k: order_key(details[k]))
        got = pipeline._global_order(snapshot, positions[:n], None, scores[:n], available[:n])
        assert got == want
    assert pipeline._global_order(snapshot, positions, None, scores, available) == expected


def _literal_available(
    binding_clusters: Sequence[TargetCluster], clusters: Sequence[ClusterInfo], allocatable: list[int]
) -> list[int]:
    held: dict[str, int] = {}
    for t in binding_clusters:
        held.setdefault(t.name, t.replicas)
    return [a + held.get(c.name, 0) for a, c in zip(allocatable, clusters, strict=True)]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    cluster_names=st.lists(names, min_size=1, max_size=40),
    data=st.data(),
)
def test_available_adds_the_first_held_entry(cluster_names: list[str], data: st.DataObject) -> None:
    snapshot = Snapshot(ClusterInfo(n) for n in cluster_names)
    positions = sorted(data.draw(st.sets(st.integers(0, len(cluster_names) - 1), min_size=1)))
    targets = data.draw(
        st.lists(
            st.builds(TargetCluster, st.one_of(names, st.sampled_from(cluster_names)), st.integers(0, 9))
        )
    )
    binding = dataclasses.replace(a_binding().build(), clusters=tuple(targets))
    allocatable = data.draw(st.lists(st.integers(-5, 50), min_size=len(positions), max_size=len(positions)))
    feasible = [snapshot.clusters[p] for p in positions]
    got = pipeline._available(binding, allocatable, snapshot, positions)
    assert got == _literal_available(binding.clusters, feasible, allocatable)


class _Fixed:
    """An estimator answering fixed numbers."""

    name = "fixed"

    def __init__(self, answer: list[int]) -> None:
        self.answer = answer

    def max_available_replicas(self, clusters: Sequence[ClusterInfo], requirements: object) -> list[int]:
        return list(self.answer)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    answers=st.lists(
        st.lists(
            st.sampled_from([UNAUTHENTIC_REPLICA, 0, 3, MAX_INT32, MAX_INT32 + 5, -7]), min_size=6, max_size=6
        ),
        min_size=1,
        max_size=3,
    )
)
def test_allocatable_is_the_minimum_over_estimators(answers: list[list[int]]) -> None:
    clusters = [ClusterInfo(f"m{i}") for i in range(6)]
    binding = dataclasses.replace(a_binding().replicas(4).build(), replica_requirements=ReplicaRequirements())
    scheduler = Scheduler(estimators=[_Fixed(a) for a in answers])
    scheduler.estimators = tuple(_Fixed(a) for a in answers)  # without the general estimator
    result = [MAX_INT32] * 6
    for answer in answers:
        for i, n in enumerate(answer):
            if n != UNAUTHENTIC_REPLICA and n < result[i]:
                result[i] = n
    expected = [4 if n == MAX_INT32 else n for n in result]
    snapshot = Snapshot(clusters)
    assert scheduler._allocatable_replicas(binding, clusters, snapshot, list(range(6))) == expected
    assert scheduler._allocatable_replicas(binding, clusters) == expected
