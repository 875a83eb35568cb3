"""Group combination search (scheduler.md §8.5.1): the polynomial selection against the enumeration.

``enumerated_select_groups`` is the exhaustive path search that ``select._select_groups`` used before
issue 14, kept literally (scheduler.md §8.5.1, as Karmada does it). It is exponential in
the number of groups, so the differential property test stays at up to 14 groups.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fleetsched.scheduler.assign import ClusterDetail
from fleetsched.scheduler.select import _Group, _select_groups, order_key, select_clusters

from .builders import a_binding, a_cluster

settings.register_profile(
    "select-groups",
    max_examples=int(os.environ.get("SELECT_GROUPS_EXAMPLES", "400")),
    derandomize=True,  # a fixed sequence of examples: the same run in CI and on every machine
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)


@dataclass(slots=True)
class _Path:
    id: int
    groups: list[_Group]
    weight: int
    value: int


def enumerated_select_groups(
    groups: list[_Group], min_g: int, max_g: int, target: int
) -> list[_Group] | None:
    """The pre-issue-14 ``_select_groups``, verbatim: records every path, then ranks them."""
    if not groups:
        return None
    groups = sorted(groups, key=lambda g: (len(g.clusters), -g.score, g.name))
    paths: list[_Path] = []
    path: list[_Group] = []
    next_id = 1

    def dfs(total: int, begin: int) -> None:
        nonlocal next_id
        if total >= target and min_g <= len(path) <= max_g:
            members = sorted(path, key=lambda g: (-g.score, g.name))
            paths.append(
                _Path(next_id, members, sum(g.score for g in members), sum(len(g.clusters) for g in members))
            )
            next_id += 1
            return
        if len(path) >= max_g:
            return
        for i in range(begin, len(groups)):
            path.append(groups[i])
            dfs(total + len(groups[i].clusters), i + 1)
            if len(groups) == min_g:
                return
            path.pop()

    dfs(0, 0)
    if not paths:
        return None
    if len(paths) == 1:
        return paths[0].groups
    paths.sort(key=lambda p: (-p.weight, -p.value, p.id))
    best = paths[0]
    for p in paths[1:]:
        if len(p.groups) < len(best.groups) and all(
            best.groups[j].name == g.name for j, g in enumerate(p.groups)
        ):
            best = p
    return best.groups


_LABELS = [f"g{i:02d}" for i in range(30)]
_CLUSTER = ClusterDetail(a_cluster("x").build(), 0, 0, 1, 1)


def group(name: str, clusters: int, score: int) -> _Group:
    return _Group(name, [_CLUSTER] * clusters, score)


def names(chosen: list[_Group] | None) -> list[str] | None:
    return None if chosen is None else [g.name for g in chosen]


@dataclass(frozen=True, slots=True)
class Case:
    groups: list[_Group]
    min_g: int
    max_g: int
    target: int


@st.composite
def cases(draw: st.DrawFn) -> Case:
    count = draw(st.integers(0, 14))
    labels = draw(st.lists(st.sampled_from(_LABELS), min_size=count, max_size=count, unique=True))
    # Few distinct scores so ties (broken by clusters, name or discovery order) are common.
    palette = draw(st.lists(st.integers(-5000, 5000), min_size=1, max_size=4))
    scores = st.one_of(st.sampled_from(palette), st.integers(-(2**63), 2**63 - 1))
    groups = [group(label, draw(st.integers(1, 4)), draw(scores)) for label in labels]
    total = sum(len(g.clusters) for g in groups)
    # Mostly bounds and targets that leave paths to rank; sometimes the edges: min == len(groups)
    # (the early return of the search), max < min, target 0 or negative, target above every cluster.
    min_g = draw(st.one_of(st.integers(1, max(count, 1)), st.sampled_from([count, 0, -1, count + 1])))
    max_g = draw(st.one_of(st.integers(min_g, max(count, min_g)), st.integers(-1, count + 1)))
    target = draw(st.one_of(st.integers(0, total + 1), st.sampled_from([-1, 0, total])))
    return Case(groups, min_g, max_g, target)


@settings(settings.get_profile("select-groups"))
@given(case=cases())
def test_selection_equals_the_enumeration(case: Case) -> None:
    expected = enumerated_select_groups(list(case.groups), case.min_g, case.max_g, case.target)
    event("no selection" if expected is None else f"{len(expected)} of {len(case.groups)} groups")
    assert names(_select_groups(list(case.groups), case.min_g, case.max_g, case.target)) == names(expected)


@pytest.mark.parametrize(
    ("groups", "min_g", "max_g", "target", "expected"),
    [
        pytest.param([], 1, 1, 1, None, id="no groups"),
        pytest.param([group("A", 1, 1)], 1, 0, 1, None, id="maxGroups 0 records no path"),
        pytest.param([group("A", 1, 1), group("B", 1, 2)], 2, 1, 0, None, id="max below min"),
        pytest.param([group("A", 1, 1)], 0, 1, 0, [], id="target 0 and min 0: the empty root path"),
        pytest.param(
            [group("A", 1, 500), group("B", 1, 700)], 1, 2, 1, ["B"], id="a satisfied path is not extended"
        ),
        pytest.param(
            [group("R1", 2, 20000), group("R2", 1, 20000), group("R3", 2, 10000)],
            2,
            2,
            2,
            ["R1", "R2"],
            id="heaviest pair",
        ),
        pytest.param(
            [group("A", 1, 5), group("B", 2, 5), group("C", 1, 9)],
            3,
            3,
            9,
            None,
            id="min == len(groups) needs every group and enough clusters",
        ),
        pytest.param(
            [group("A", 1, 5), group("B", 2, 5), group("C", 1, 9)],
            3,
            3,
            4,
            ["C", "A", "B"],
            id="min == len(groups) takes all of them",
        ),
        pytest.param(
            [group("A", 2, 10), group("B", 2, 10), group("C", 1, 10)],
            1,
            3,
            3,
            ["A", "B"],
            id="equal weight: more clusters first, then discovery order",
        ),
        pytest.param(
            [group("A", 3, 10), group("B", 1, -4), group("C", 1, -1)],
            1,
            3,
            4,
            ["A", "C"],
            id="negative scores: the least negative partner",
        ),
    ],
)
def test_table(groups: list[_Group], min_g: int, max_g: int, target: int, expected: list[str] | None) -> None:
    assert names(enumerated_select_groups(list(groups), min_g, max_g, target)) == expected
    assert names(_select_groups(list(groups), min_g, max_g, target)) == expected


def test_issue_14_binding_picks_the_ten_best_regions() -> None:
    # 48 clusters in 24 regions, minGroups 10 / maxGroups 12 and no cluster constraint: every
    # 10-region combination is a path (about 2M, which the enumeration took 30-48 s to rank).
    # Without a cluster target the first 10 groups satisfy, so the 10 best region scores win.
    binding = a_binding().replicas(24).dynamic().spread("region", 10, 12).build()
    details = [
        ClusterDetail(a_cluster(f"m{r:02d}{i}").region(f"r{r:02d}").build(), r * 10 + i, 0, 50, 50)
        for r in range(24)
        for i in range(2)
    ]
    details.sort(key=order_key)
    chosen = select_clusters(details, binding)
    # one cluster per region (the cluster constraint's maxGroups is 0), the region's best
    assert [d.name for d in chosen] == [f"m{r:02d}1" for r in range(23, 13, -1)]
