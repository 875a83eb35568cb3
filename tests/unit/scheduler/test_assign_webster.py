"""The Sainte-Laguë division over its candidates only gives the literal division's seats (§9.2).

A differential test: ``assign._webster_winners`` (and ``webster`` built on it) heaps only the parties
among the ``seats`` largest votes; ``_webster_reference`` below is the literal division over every
party, as the scheduler had it. Random votes with many ties at the boundary, zeros, negative votes
(int32 wraps), sums of zero, and both UID tie-breaker directions.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.scheduler import assign
from fleetsched.scheduler.assign import fnv1a_32, webster


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
