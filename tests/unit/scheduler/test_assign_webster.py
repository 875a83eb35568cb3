"""Replica division shortcuts give the literal division's results (§9.2, §9.3).

A differential test: ``assign._webster_winners`` (and ``webster`` built on it) heaps only the parties
among the ``seats`` largest votes; ``_webster_reference`` below is the literal division over every
party, as the scheduler had it. Random votes with many ties at the boundary, zeros, negative votes
(int32 wraps), sums of zero, and both UID tie-breaker directions. ``assign._static_weights`` finds
the clusters of a rule that only names clusters by name; the literal loop asks every cluster.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.scheduler import assign
from fleetsched.scheduler.assign import ClusterDetail, fnv1a_32, webster
from fleetsched.scheduler.matching import cluster_matches
from fleetsched.scheduler.types import (
    ClusterAffinity,
    ClusterInfo,
    FieldSelector,
    LabelRequirement,
    LabelSelector,
    StaticWeightRule,
)


def _webster_reference(seats: int, votes: Mapping[str, int], *, uid: str = "") -> dict[str, int]:
    """The literal division: every party in the heap, every party in the result."""
    names = sorted(votes)
    result = dict.fromkeys(names, 0)
    if seats <= 0 or sum(votes.values()) == 0:
        return result
    desc = uid != "" and (fnv1a_32(uid.encode()) & 1) == 1
    heap: list[tuple[float, int, str]] = []
    for n in names:
        heap.append((-(float(votes[n]) / 1.0), 0, assign._Desc(n) if desc else n))
    heapq.heapify(heap)
    for _ in range(seats):
        _p, s, n = heapq.heappop(heap)
        s += 1
        result[str(n)] = s
        heapq.heappush(heap, (-(float(votes[str(n)]) / float(2 * s + 1)), s, n))
    return result


# Few distinct vote values, so ties (at the boundary too) are the rule, not the exception.
vote_values = st.one_of(
    st.sampled_from([0, 1, 2, 3, 5, 8, 13, 100]),
    st.integers(-5, 60),
    st.sampled_from([2**31 - 1, -(2**31)]),
)
votes_maps = st.dictionaries(
    st.text(alphabet="abcxyz-0123", min_size=1, max_size=4), vote_values, min_size=0, max_size=40
)
uids = st.sampled_from(["", "uid-a", "uid-b", "6c4b0b1e-0000-4000-8000-000000000001", "x"])


@settings(max_examples=600, deadline=None, derandomize=True)
@given(seats=st.integers(-1, 80), votes=votes_maps, uid=uids)
def test_webster_matches_the_literal_division(seats: int, votes: dict[str, int], uid: str) -> None:
    expected = _webster_reference(seats, votes, uid=uid)
    assert webster(seats, votes, uid=uid) == expected
    assert list(webster(seats, votes, uid=uid)) == list(expected)  # name order
    winners = assign._webster_winners(seats, votes, uid=uid)
    assert winners == {n: s for n, s in expected.items() if s > 0}
    assert list(winners) == [n for n, s in expected.items() if s > 0]


def test_both_uid_directions_are_exercised() -> None:
    # The tie-breaker test above means something only if both directions occur among its uids.
    parities = {
        fnv1a_32(u.encode()) & 1 for u in ("uid-a", "uid-b", "x", "6c4b0b1e-0000-4000-8000-000000000001")
    }
    assert parities == {0, 1}


def test_ties_at_the_boundary_go_by_name_and_direction() -> None:
    votes = {"a": 5, "b": 5, "c": 5, "d": 1}
    for uid in ("uid-a", "uid-b"):
        assert assign._webster_winners(2, votes, uid=uid) == {
            n: s for n, s in _webster_reference(2, votes, uid=uid).items() if s > 0
        }
    assert assign._webster_winners(2, votes) == {"a": 1, "b": 1}


# ---- static weights: rules naming clusters are matched by name, the others by asking each --------

cluster_names = st.sampled_from(["m1", "m2", "m3", "m4", "m5", "m6"])
affinities = st.builds(
    ClusterAffinity,
    label_selector=st.one_of(
        st.none(), st.builds(LabelSelector, match_labels=st.sampled_from([(), (("env", "prod"),)]))
    ),
    field_selector=st.one_of(
        st.none(),
        st.builds(
            FieldSelector,
            match_expressions=st.sampled_from(
                [(), (LabelRequirement("region", "In", ("r1",)),), (LabelRequirement("provider", "Exists"),)]
            ),
        ),
    ),
    cluster_names=st.lists(cluster_names, max_size=4).map(tuple),
    exclude=st.lists(cluster_names, max_size=2).map(tuple),
)
rules = st.lists(st.builds(StaticWeightRule, target=affinities, weight=st.integers(-2, 5)), max_size=5)


def _literal_static_weights(selected: list[ClusterDetail], rules: list[StaticWeightRule]) -> dict[str, int]:
    weights: dict[str, int] = {}
    for c in selected:
        w = max((r.weight for r in rules if cluster_matches(c.cluster, r.target)), default=0)
        if w > 0:
            weights[c.name] = w
    return weights


@settings(max_examples=500, deadline=None, derandomize=True)
@given(
    clusters=st.lists(
        st.tuples(cluster_names, st.sampled_from(["prod", "dev"]), st.sampled_from(["", "r1", "r2"])),
        min_size=1,
        max_size=8,
    ),
    rules=rules,
)
def test_static_weights_match_the_literal_rule_loop(
    clusters: list[tuple[str, str, str]], rules: list[StaticWeightRule]
) -> None:
    selected = [
        ClusterDetail(
            ClusterInfo(name, labels={"env": env}, region=region, provider="p" if region else ""), 0, 0, 1, 1
        )
        for name, env, region in clusters
    ]
    got = assign._static_weights(selected, rules)
    expected = _literal_static_weights(selected, rules)
    assert got == expected
