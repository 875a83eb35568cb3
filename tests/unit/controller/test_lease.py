"""What others wrote in a Lease is bounded (kube/lease.py), and a second writer of our member Lease
is found, stops one of the two and lets the survivor go on; on in-memory stores and a fake clock."""

from __future__ import annotations

from typing import Any

import pytest
from structlog.testing import capture_logs

from fleetsched.controller.runtime.shard import ShardConfig
from fleetsched.kube import lease as kube_lease
from tests.unit.controller.test_leader import Clock as LeaderClock
from tests.unit.controller.test_leader import MemoryLeaseStore, elector
from tests.unit.controller.test_shard import GROUP, Clock, MemoryLeases, join, member

R0 = "fleetsched-scheduler-r0"
R1 = "fleetsched-scheduler-r1"


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"holderIdentity": R1, "leaseDurationSeconds": 2**31 - 1}, "leaseDurationSeconds 2147483647"),
        ({"holderIdentity": R1, "leaseDurationSeconds": 301}, "not an integer in 1..300"),
        ({"holderIdentity": R1, "leaseDurationSeconds": 0}, "not an integer in 1..300"),
        ({"holderIdentity": R1, "leaseDurationSeconds": "15"}, "not an integer"),
        ({"holderIdentity": R1, "leaseDurationSeconds": True}, "not an integer"),
        ({"holderIdentity": R1}, "leaseDurationSeconds None"),
        ({"holderIdentity": "someone-else", "leaseDurationSeconds": 15}, "holderIdentity 'someone-else'"),
    ],
)
def test_a_member_lease_out_of_bounds_or_held_by_another_name_is_not_believed(
    spec: dict[str, Any], reason: str
) -> None:
    problem = kube_lease.member_lease_problem({"metadata": {"name": R1}, "spec": spec})
    assert problem is not None and reason in problem


def test_a_well_formed_or_released_member_lease_is_believed() -> None:
    assert kube_lease.member_lease_problem(
        {"metadata": {"name": R1}, "spec": {"holderIdentity": R1, "leaseDurationSeconds": 300}}
    ) is None
    assert kube_lease.member_lease_problem(
        {"metadata": {"name": R1}, "spec": {"holderIdentity": "", "leaseDurationSeconds": 1}}
    ) is None


def test_our_own_timings_stay_within_the_bound_we_apply_to_others() -> None:
    with pytest.raises(ValueError, match="leaseDuration must be at most 300s"):
        ShardConfig.of(GROUP, "karmada-system", "r0", lease_duration=301, renew_deadline=10)
    ShardConfig.of(GROUP, "karmada-system", "r0", lease_duration=300, renew_deadline=10)


async def test_a_hostile_peer_lease_is_no_member_and_is_logged_once() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    store.put_peer(R1, duration=2**31 - 1)
    store.put_peer("fleetsched-scheduler-fake", duration=15)
    store.leases["fleetsched-scheduler-fake"]["spec"]["holderIdentity"] = "fleetsched-scheduler-r0"
    store.put_peer("fleetsched-scheduler-r2")
    with capture_logs() as logs:
        await join(m, clock)
        for _ in range(5):
            clock.now += 2
            renewed = f"2020-01-01T00:00:{int(clock.now) % 60:02d}Z"
            store.put_peer(R1, duration=2**31 - 1, renew_time=renewed)
            store.put_peer("fleetsched-scheduler-r2", renew_time=renewed)
            await m.step()
    assert m.members == (R0, "fleetsched-scheduler-r2")
    ignored = events(logs, "shard_member_lease_ignored")
    assert sorted(entry["lease"] for entry in ignored) == [
        "karmada-system/fleetsched-scheduler-fake", f"karmada-system/{R1}"
    ]
    # every key has an owner among the live members: none is left to the hostile Lease
    assert all(m.owner(f"u{i}") in m.members for i in range(200))
    # the peer fixes its Lease: a member at once
    store.put_peer(R1, duration=15)
    await m.step()
    assert R1 in m.members
    # and a hostile Lease left alone is collected like a dead one (after 4 of our durations)
    clock.now += 4 * 15
    store.put_peer(R1)
    store.put_peer("fleetsched-scheduler-r2")
    await m.step()
    assert "fleetsched-scheduler-fake" in store.deleted


async def test_a_second_replica_with_our_identity_stops_one_of_the_two_and_says_so() -> None:
    store, clock = MemoryLeases(), Clock()
    a, b = member(store, clock, "r0"), member(store, clock, "r0")
    await join(a, clock)
    uids = [f"u{i}" for i in range(50)]
    with capture_logs() as logs:
        await b.step()  # b takes the Lease over: it owns nothing for a renew deadline
        assert b.holds and not b.owns(uids[0])
        await a.step()  # a finds the Lease renewed by another process: it stops at once
        assert not a.holds and not a.active and not any(a.owns(u) for u in uids)
        assert a.problem is not None and "duplicate shard identity 'r0'" in a.problem
        assert "karmada-system/fleetsched-scheduler-r0" in a.problem
        for _ in range(6):  # b renews, a keeps watching: nobody writes twice
            clock.now += 2
            await b.step()
            await a.step()
            assert not any(a.owns(u) for u in uids)
        assert b.active and all(b.owns(u) for u in uids)
    duplicate = events(logs, "shard_member_identity_duplicate")
    assert len(duplicate) == 1  # once, not once per round
    assert duplicate[0]["identity"] == "r0" and duplicate[0]["namespace"] == "karmada-system"
    assert len(events(logs, "shard_member_lease_taken_over")) == 1

    # b stops gracefully (deletes the Lease): a takes it back and joins again
    await b.release()
    with capture_logs() as logs:
        await a.step()
        assert a.holds and a.problem is None and not a.active
        clock.now += 2  # a new Lease (nobody else wrote it): the usual join delay only
        await a.step()
        assert a.active and all(a.owns(u) for u in uids)
    assert events(logs, "shard_member_identity_free")[0]["lease"] == "deleted"


async def test_when_the_duplicate_dies_the_other_takes_the_lease_after_its_duration() -> None:
    store, clock = MemoryLeases(), Clock()
    a, b = member(store, clock, "r0"), member(store, clock, "r0")
    await join(a, clock)
    await b.step()
    await a.step()
    assert a.problem is not None
    # b is killed: its Lease stays, unrenewed
    clock.now += 14.9
    await a.step()
    assert not a.holds and a.problem is not None
    clock.now += 0.2
    await a.step()
    assert a.holds and a.problem is None
    for _ in range(4):
        clock.now += 2
        await a.step()
        assert not a.active  # it took over another process's Lease: a renew deadline first
    clock.now += 2
    await a.step()
    assert a.active


async def test_two_replicas_creating_the_lease_at_once_leave_one_writer() -> None:
    store, clock = MemoryLeases(), Clock()
    a, b = member(store, clock, "r0"), member(store, clock, "r0")
    original_get = store.get

    async def not_yet(name: str) -> dict[str, Any] | None:
        store.get = original_get  # type: ignore[method-assign]
        return None  # b read before a created

    await a.step()
    store.get = not_yet  # type: ignore[method-assign]
    await b.step()  # b's create is refused (AlreadyExists), the Lease carries a's instance
    assert a.holds and not b.holds and b.problem is not None


async def test_a_renewal_of_ours_that_landed_late_or_a_metadata_edit_is_no_duplicate() -> None:
    store, clock = MemoryLeases(), Clock()
    m = member(store, clock, "r0")
    await join(m, clock)
    store.leases[R0]["metadata"]["labels"]["team"] = "x"  # someone labels the Lease
    store.leases[R0]["metadata"]["resourceVersion"] = "999"
    clock.now += 2
    await m.step()
    assert m.active and m.problem is None
    assert store.leases[R0]["metadata"]["resourceVersion"] != "999"


async def test_a_restart_after_a_kill_takes_the_old_lease_over_and_waits_a_renew_deadline() -> None:
    store, clock = MemoryLeases(), Clock()
    old = member(store, clock, "r0")
    await join(old, clock)
    new = member(store, clock, "r0")  # old was killed: its Lease stays behind
    await new.step()
    clock.now += 2
    await new.step()
    assert new.holds and not new.active  # a retry period after the LIST, but not a renew deadline
    for _ in range(3):
        clock.now += 2
        await new.step()
    assert not new.active
    clock.now += 2
    await new.step()
    assert new.active
    assert kube_lease.instance_of(store.leases[R0]) == new._own.instance


async def test_a_leader_lease_with_an_unbelievable_duration_expires_after_ours() -> None:
    store, clock = MemoryLeaseStore(), LeaderClock()
    hostile = elector(store, clock, "hostile")
    assert await hostile.try_acquire_or_renew()
    assert store.lease is not None
    store.lease["spec"]["leaseDurationSeconds"] = 2**31 - 1
    b = elector(store, clock, "b")
    with capture_logs() as logs:
        for t in (0.0, 2.0, 14.9):
            clock.now = t
            assert not await b.try_acquire_or_renew()
        clock.now = 15.1
        assert await b.try_acquire_or_renew()
    assert store.holder == "b"
    assert len(events(logs, "leader_lease_duration_ignored")) == 1
