"""Sharded mode's member Leases and ownership, on an in-memory Lease store and a fake clock."""

from __future__ import annotations

import copy
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from fleetsched.controller.runtime.shard import (
    GROUP_LABEL,
    PROOF_PREFIX,
    MembershipChange,
    ShardConfig,
    ShardMembership,
    member_name,
    member_score,
    proof_name,
    rendezvous_owner,
)
from fleetsched.kube.client import ApiError
from fleetsched.kube.lease import INSTANCE_ANNOTATION

GROUP = "fleetsched-scheduler"


class MemoryLeases:
    """The group's Leases with resourceVersion checks, like the API server's."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.fail = False
        self.deleted: list[str] = []

    def _check(self) -> None:
        if self.fail:
            raise OSError("apiserver down")

    async def get(self, name: str) -> dict[str, Any] | None:
        self._check()
        return copy.deepcopy(self.leases.get(name))

    async def create(self, lease: dict[str, Any]) -> dict[str, Any]:
        self._check()
        if lease["metadata"]["name"] in self.leases:
            raise ApiError(409, "AlreadyExists", "exists")
        return self._store(lease)

    async def replace(self, lease: dict[str, Any]) -> dict[str, Any]:
        self._check()
        current = self.leases.get(lease["metadata"]["name"])
        if current is None:
            raise ApiError(404, "NotFound", "gone")
        if lease["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "stale")
        return self._store(lease)

    async def list(self) -> list[dict[str, Any]]:
        self._check()
        return [
            copy.deepcopy(lease)
            for lease in self.leases.values()
            if lease["metadata"].get("labels", {}).get(GROUP_LABEL) == GROUP
        ]

    async def delete(self, name: str, resource_version: str | None) -> None:
        self._check()
        current = self.leases.get(name)
        if current is None:
            return
        if resource_version is not None and current["metadata"]["resourceVersion"] != resource_version:
            raise ApiError(409, "Conflict", "precondition failed")
        del self.leases[name]
        self.deleted.append(name)

    def _store(self, lease: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        lease = copy.deepcopy(lease)
        lease["metadata"]["resourceVersion"] = str(self.version)
        self.leases[lease["metadata"]["name"]] = lease
        return copy.deepcopy(lease)

    def put_peer(
        self, name: str, renew_time: str = "2020-01-01T00:00:00.000000Z", duration: int = 15,
        *, proven: bool = True,
    ) -> None:
        """A peer's Lease as another process would write it (its renewTime in its own clock); with
        ``proven``, as another replica of the group would: its proof renewed with it."""
        instance = f"instance-of-{name}"
        self._store(
            {
                "metadata": {
                    "name": name, "namespace": "karmada-system", "labels": {GROUP_LABEL: GROUP},
                    "annotations": {INSTANCE_ANNOTATION: instance},
                },
                "spec": {"holderIdentity": name, "leaseDurationSeconds": duration, "renewTime": renew_time},
            }
        )
        if proven:
            self.put_proof(name, f"{instance} {renew_time}")

    def put_proof(self, name: str, value: str) -> None:
        proofs = self.leases.get(proof_name(GROUP)) or {"metadata": {"name": proof_name(GROUP)}, "spec": {}}
        proofs = copy.deepcopy(proofs)
        proofs["metadata"].setdefault("annotations", {})[PROOF_PREFIX + name] = value
        self._store(proofs)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def member(store: MemoryLeases, clock: Clock, identity: str, changes: list[MembershipChange] | None = None,
           **timings: float) -> ShardMembership:
    config = ShardConfig.of(GROUP, "karmada-system", identity, **timings)
    return ShardMembership(
        config=config, store=store, clock=clock, on_change=None if changes is None else changes.append
    )


async def join(m: ShardMembership, clock: Clock) -> None:
    """Acquire, list, wait the join delay, list again: ``m`` owns its share."""
    await m.step()
    clock.now += m.config.retry_period
    await m.step()
    assert m.active


# ---- names and ownership -------------------------------------------------------------------------


def test_member_names_are_dns_labels_and_long_ones_stay_distinct() -> None:
    assert member_name(GROUP, "r0") == "fleetsched-scheduler-r0"
    assert member_name(GROUP, "Node_1.example.COM") == "fleetsched-scheduler-node-1-example-com"
    a, b = member_name(GROUP, "x" * 80 + "a"), member_name(GROUP, "x" * 80 + "b")
    assert len(a) == len(b) == 63 and a != b
    assert a == member_name(GROUP, "x" * 80 + "a")  # the same every time


def test_the_config_refuses_what_a_member_lease_cannot_have() -> None:
    with pytest.raises(ValueError, match="valid label value"):
        ShardConfig.of("bad group!", "karmada-system", "r0")
    with pytest.raises(ValueError, match="leaseDuration must be greater than renewDeadline"):
        ShardConfig.of(GROUP, "karmada-system", "r0", lease_duration=5, renew_deadline=5)
    with pytest.raises(ValueError, match="renewDeadline must be greater than retryPeriod"):
        ShardConfig.of(GROUP, "karmada-system", "r0", renew_deadline=2, retry_period=2)


def test_the_owner_is_the_highest_score_and_none_without_members() -> None:
    assert rendezvous_owner("uid-1", []) is None
    assert rendezvous_owner("uid-1", ["only"]) == "only"
    members = ["a", "b", "c"]
    assert rendezvous_owner("uid-1", members) == rendezvous_owner("uid-1", reversed(members))


@settings(deadline=None, max_examples=50)
@given(uid=st.text(max_size=40), members=st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=5))
def test_the_owner_is_the_member_with_the_highest_score(uid: str, members: list[str]) -> None:
    best = max(members, key=lambda m: (member_score(m, uid), m))
    assert rendezvous_owner(uid, members) == best


def test_the_owner_is_the_same_in_another_process() -> None:
    uids = [f"uid-{i}" for i in range(50)]
    members = ["fleetsched-scheduler-r0", "fleetsched-scheduler-r1", "fleetsched-scheduler-r2"]
    code = (
        "from fleetsched.controller.runtime.shard import rendezvous_owner\n"
        f"print(' '.join(rendezvous_owner(u, {members!r}) for u in {uids!r}))"
    )
    # a fresh interpreter has another hash() salt: the owner must not depend on it
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={"PYTHONHASHSEED": "12345"},
    ).stdout.split()
    assert other == [rendezvous_owner(u, members) for u in uids]
    assert len(set(other)) == 3


@settings(deadline=None, max_examples=30)
@given(
    members=st.sets(st.text("abcdefghij0123456789", min_size=1, max_size=8), min_size=1, max_size=6),
    newcomer=st.text("klmnopqrst", min_size=1, max_size=8),
)
def test_a_join_moves_only_keys_to_the_newcomer_and_about_one_in_n(members: set[str], newcomer: str) -> None:
    uids = [f"uid-{i}" for i in range(3000)]
    before = {u: rendezvous_owner(u, members) for u in uids}
    after = {u: rendezvous_owner(u, members | {newcomer}) for u in uids}
    moved = [u for u in uids if before[u] != after[u]]
    assert all(after[u] == newcomer for u in moved)  # nothing moves between the old members
    share = 1 / (len(members) + 1)
    assert abs(len(moved) / len(uids) - share) < 0.05 + share * 0.25
    # and a leave is the reverse: only the leaver's keys move
    back = {u: rendezvous_owner(u, members) for u in uids}
    assert all(back[u] == before[u] for u in uids)


@settings(deadline=None, max_examples=30)
@given(
    members=st.sets(st.text("abcdef012345", min_size=1, max_size=6), min_size=2, max_size=6),
    data=st.data(),
)
def test_a_leave_moves_only_the_leavers_keys(members: set[str], data: st.DataObject) -> None:
    leaver = data.draw(st.sampled_from(sorted(members)))
    uids = [f"u{i}" for i in range(2000)]
    for u in uids:
        before = rendezvous_owner(u, members)
        after = rendezvous_owner(u, members - {leaver})
        assert before in (after, leaver)


# ---- the member Lease ------------------------------------------------------------------------------


async def test_the_first_round_creates_the_lease_and_owns_nothing_until_the_join_delay() -> None:
    store, clock, changes = MemoryLeases(), Clock(), []
    m = member(store, clock, "r0", changes)
    await m.step()
    lease = store.leases["fleetsched-scheduler-r0"]
    assert lease["metadata"]["labels"] == {GROUP_LABEL: GROUP}
    assert lease["spec"]["holderIdentity"] == "fleetsched-scheduler-r0"
    assert lease["spec"]["leaseDurationSeconds"] == 15
    assert m.holds and not m.active and not m.owns("uid-1")
    clock.now += 1.9
    await m.step()
    assert not m.active  # listed, but the retry period since has not passed
    clock.now += 0.1
    await m.step()
    assert m.active and m.owns("uid-1")
    assert changes[-1] == MembershipChange(("fleetsched-scheduler-r0",), (), (), True)


async def test_fencing_stops_owning_at_the_renew_deadline_by_our_clock() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    await join(m, clock)
    store.fail = True
    clock.now += 2
    await m.step()  # renewal fails; the last success is 2 s old
    assert m.holds and m.active
    clock.now += 7.9
    assert m.holds  # 9.9 s
    clock.now += 0.1
    assert not m.holds and not m.active and not m.owns("uid-1")  # 10 s: before anyone could take over


async def test_a_peer_is_live_by_our_clock_whatever_its_renew_time_says() -> None:
    store, clock, changes = MemoryLeases(), Clock(), []
    m = member(store, clock, "r0", changes)
    store.put_peer("fleetsched-scheduler-r1", renew_time="1970-01-01T00:00:00.000000Z")  # a skewed clock
    await join(m, clock)
    assert m.members == ("fleetsched-scheduler-r0", "fleetsched-scheduler-r1")
    # The peer stops renewing: live until its spec is a lease duration old by OUR clock.
    clock.now += 12.9
    await m.step()
    assert "fleetsched-scheduler-r1" in m.members
    clock.now += 0.2  # 15.1 s since we first saw that spec
    await m.step()
    assert m.members == ("fleetsched-scheduler-r0",)
    assert changes[-1].left == ("fleetsched-scheduler-r1",)
    # A renewal far in the "past" still counts as a renewal: the spec changed.
    store.put_peer("fleetsched-scheduler-r1", renew_time="1970-01-01T00:00:01.000000Z")
    await m.step()
    assert "fleetsched-scheduler-r1" in m.members


async def test_a_peer_lease_written_in_the_future_does_not_keep_it_alive() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    store.put_peer("fleetsched-scheduler-r1", renew_time="2999-01-01T00:00:00.000000Z")
    await join(m, clock)
    clock.now += 15.1
    await m.step()
    assert m.members == ("fleetsched-scheduler-r0",)


async def test_a_sigstop_past_the_deadline_owns_nothing_until_listed_again_and_a_retry_period() -> None:
    store, clock, changes = MemoryLeases(), Clock(), []
    m = member(store, clock, "r0", changes)
    store.put_peer("fleetsched-scheduler-r1")
    await join(m, clock)
    uid = next(u for u in (f"u{i}" for i in range(100)) if m.owns(u))
    clock.now += 30  # stopped: no round ran, the clock jumped past the renew deadline
    assert not m.holds and not m.owns(uid)
    store.put_peer("fleetsched-scheduler-r1")  # the peer renewed meanwhile
    await m.step()  # the first round after SIGCONT renews the Lease again
    assert m.holds and not m.active and not m.owns(uid)
    assert changes[-1].active is False
    clock.now += 1.0
    await m.step()
    assert not m.owns(uid)  # one retry period after the fresh LIST is not over yet
    clock.now += 1.0
    await m.step()
    assert m.owns(uid)


async def test_a_lapse_with_the_api_down_is_seen_by_the_next_round() -> None:
    store, clock, changes = MemoryLeases(), Clock(), []
    m = member(store, clock, "r0", changes)
    await join(m, clock)
    store.fail = True
    clock.now += 11
    await m.step()
    assert changes[-1] == MembershipChange((), (), ("fleetsched-scheduler-r0",), False)
    assert not m.active_event.is_set()


async def test_shutdown_deletes_our_lease_and_stops_owning() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    await join(m, clock)
    await m.release()
    assert "fleetsched-scheduler-r0" not in store.leases
    assert not m.holds and not m.owns("uid-1")
    await m.step()  # a round after the release writes nothing
    assert "fleetsched-scheduler-r0" not in store.leases


async def test_a_peer_that_released_leaves_at_the_next_list() -> None:
    store, clock = MemoryLeases(), Clock()
    a, b = member(store, clock, "r0"), member(store, clock, "r1")
    await a.step()
    await b.step()
    clock.now += 2
    await a.step()
    await b.step()
    assert a.members == b.members == ("fleetsched-scheduler-r0", "fleetsched-scheduler-r1")
    uids = [f"u{i}" for i in range(200)]
    assert all(a.owns(u) != b.owns(u) for u in uids)  # each key has exactly one owner
    await b.release()
    await a.step()
    assert a.members == ("fleetsched-scheduler-r0",)
    assert all(a.owns(u) for u in uids)


async def test_long_dead_peers_are_collected_with_a_resource_version_precondition() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    store.put_peer("fleetsched-scheduler-dead")
    await join(m, clock)
    clock.now += 4 * 15 - 2.1
    await m.step()
    assert "fleetsched-scheduler-dead" in store.leases  # dead, but not long enough
    clock.now += 0.2
    store.fail = False
    # The peer comes back between our LIST and our delete: the precondition keeps its Lease.
    original_list = store.list

    async def list_then_renew() -> list[dict[str, Any]]:
        seen = await original_list()
        store.put_peer("fleetsched-scheduler-dead", renew_time="2020-01-01T00:00:09.000000Z")
        return seen

    store.list = list_then_renew  # type: ignore[method-assign]
    await m.step()
    assert "fleetsched-scheduler-dead" in store.leases and store.deleted == []
    store.list = original_list  # type: ignore[method-assign]
    await m.step()  # the renewal is observed: live again, nothing to collect
    assert "fleetsched-scheduler-dead" in m.members
    clock.now += 4 * 15
    await m.step()
    assert store.deleted == ["fleetsched-scheduler-dead"]
    assert "fleetsched-scheduler-dead" not in m.members


async def test_our_lease_collected_while_we_were_away_is_created_again() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    await join(m, clock)
    del store.leases["fleetsched-scheduler-r0"]
    clock.now += 2
    await m.step()
    assert "fleetsched-scheduler-r0" in store.leases and m.holds


async def test_a_conflicting_renewal_is_retried_from_a_fresh_read() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    await join(m, clock)
    # a renewal that timed out here but landed there
    store.leases["fleetsched-scheduler-r0"]["metadata"]["resourceVersion"] = "999"
    clock.now += 2
    await m.step()
    assert m.holds  # the last success is recent: still holding
    clock.now += 2
    await m.step()
    assert store.leases["fleetsched-scheduler-r0"]["metadata"]["resourceVersion"] != "999"


async def test_nothing_is_owned_while_the_list_after_a_lapse_is_awaited() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    await join(m, clock)
    original_list = store.list
    seen_during_list: list[bool] = []

    async def slow_list() -> list[dict[str, Any]]:
        clock.now += 0.8  # the LIST answers 0.8 s after the renewal
        return await original_list()

    store.list = slow_list  # type: ignore[method-assign]
    clock.now += 2
    await m.step()
    clock.now += 10.5 - 0.8  # stopped: the renewal is past the deadline, the LIST is not yet

    async def watching_list() -> list[dict[str, Any]]:
        seen_during_list.append(m.owns("uid-1"))  # renewed by now, the view not yet refreshed
        return await original_list()

    store.list = watching_list  # type: ignore[method-assign]
    assert not m.holds
    await m.step()
    assert m.holds and seen_during_list == [False]


async def test_a_failing_callback_does_not_stop_the_renewals() -> None:
    store, clock = MemoryLeases(), Clock()
    timings = {"lease_duration": 4.5, "renew_deadline": 3.0, "retry_period": 1.0}
    config = ShardConfig.of(GROUP, "karmada-system", "r0", **timings)

    def broken(_: MembershipChange) -> None:
        raise RuntimeError("controller bug")

    m = ShardMembership(config=config, store=store, clock=clock, on_change=broken)
    await m.step()
    clock.now += 1
    await m.step()
    assert m.active  # the view was published despite the callback
    # a fractional lease duration is written rounded up: peers never wait less than we do
    assert store.leases["fleetsched-scheduler-r0"]["spec"]["leaseDurationSeconds"] == 5


# ---- member Leases prove themselves (issue 30, item 2) --------------------------------------------

GHOST = "fleetsched-scheduler-ghost"


async def test_a_lease_renewed_by_something_that_schedules_nothing_counts_one_lease_duration() -> None:
    """A well-formed member Lease that a third party keeps renewing, with no proof: counted for its
    first lease duration (a joining replica proves itself within a round), then dropped, said once,
    and kept out while the renewals go on."""
    store, clock, changes = MemoryLeases(), Clock(), []
    m = member(store, clock, "r0", changes)
    store.put_peer(GHOST, proven=False)
    with capture_logs() as logs:
        await join(m, clock)
        assert GHOST in m.members
        for second in range(1, 40):
            clock.now += 1
            store.put_peer(GHOST, renew_time=f"2020-01-01T00:00:{second:02d}.000000Z", proven=False)
            await m.step()
            if second == 12:
                assert GHOST in m.members  # 14 s after it was first listed
    assert m.members == ("fleetsched-scheduler-r0",) and all(m.owns(f"u{i}") for i in range(50))
    assert changes[-1].left == (GHOST,)
    said = [e for e in logs if e["event"] == "shard_member_unproven"]
    assert len(said) == 1 and said[0]["lease"] == f"karmada-system/{GHOST}"
    assert "not counted as a member" in said[0]["reason"]


async def test_replicas_of_the_group_prove_each_other_for_as_long_as_they_run() -> None:
    store, clock = MemoryLeases(), Clock()
    a, b, c = (member(store, clock, f"r{i}") for i in range(3))
    for _ in range(60):  # two minutes of rounds
        for m in (a, b, c):
            await m.step()
        clock.now += 2
    assert a.members == b.members == c.members == tuple(f"fleetsched-scheduler-r{i}" for i in range(3))
    proofs = store.leases[proof_name(GROUP)]["metadata"]["annotations"]
    assert sorted(proofs) == [PROOF_PREFIX + f"fleetsched-scheduler-r{i}" for i in range(3)]
    assert a.known == frozenset(a.members)


async def test_a_replica_gone_whose_lease_something_else_renews_is_dropped_within_its_duration() -> None:
    """The proof stops changing when its process stops, whoever renews the Lease afterwards."""
    store, clock = MemoryLeases(), Clock()
    a, b = member(store, clock, "r0"), member(store, clock, "r1")
    for _ in range(3):
        await a.step()
        await b.step()
        clock.now += 2
    assert "fleetsched-scheduler-r1" in a.members
    lease = store.leases["fleetsched-scheduler-r1"]  # b stops; its Lease is renewed as it was
    for second in range(16):
        lease["spec"]["renewTime"] = f"2030-01-01T00:00:{second:02d}.000000Z"
        store._store(lease)
        await a.step()
        clock.now += 1
    await a.step()
    assert a.members == ("fleetsched-scheduler-r0",)


async def test_a_proof_naming_another_process_does_not_count() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    store.put_peer(GHOST, proven=False)
    await join(m, clock)
    for second in range(20):
        clock.now += 1
        store.put_peer(GHOST, renew_time=f"2020-01-01T00:00:{second:02d}.000000Z", proven=False)
        store.put_proof(GHOST, f"some-other-process 2020-01-01T00:00:{second:02d}.000000Z")
        await m.step()
    assert GHOST not in m.members


async def test_nothing_is_held_against_the_others_while_the_proofs_cannot_be_read() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    store.put_peer(GHOST, proven=False)
    original_get = store.get

    async def get(name: str) -> dict[str, Any] | None:
        if name == proof_name(GROUP):
            raise ApiError(403, "Forbidden", "no")
        return await original_get(name)

    store.get = get  # type: ignore[method-assign]
    await join(m, clock)
    for second in range(30):
        clock.now += 1
        store.put_peer(GHOST, renew_time=f"2020-01-01T00:00:{second:02d}.000000Z", proven=False)
        await m.step()
    assert GHOST in m.members  # believed as before proofs existed: no view split on an RBAC gap
