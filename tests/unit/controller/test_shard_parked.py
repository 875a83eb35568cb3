"""A key refused while the replica is not active for a moment INSIDE a membership round (its last
LIST getting too old while the round's renewal is awaited, e.g. on a loaded machine), with the
members unchanged at the round's end, is pushed again once the replica is active: no membership
change is published for such a moment, so nothing else would push it and the binding would wait
for the next change (found by tests/e2e/test_sharded.py: bindings left unscheduled)."""

from __future__ import annotations

from test_shard_operator import R0, R1, SHARDING, Shard, binding, key, uid_owned_by

from fleetsched.controller.scheduler.store import RB


async def test_a_key_dropped_while_the_list_was_late_is_pushed_again_when_active() -> None:
    shard = Shard()
    shard.operator.on_binding_event(RB, "ADDED", binding("a", uid_owned_by(R0)))
    await shard.join()
    entry = await shard.operator.queue.pop()
    assert entry.key == key("a")
    # Inside a round, while its renewal is awaited, the last LIST gets too old: not active for a
    # moment (the round's start saw it fresh, so no lapse is published).
    fresh = shard.membership._last_list
    assert fresh is not None
    shard.membership._last_list = fresh - SHARDING.renew_deadline
    assert not shard.operator.runtime.owns_key(entry.key)
    shard.operator.runtime._drop_not_owned(entry)  # what the worker does with it
    # An event for another of ours in that moment is not pushed either.
    shard.operator.on_binding_event(RB, "ADDED", binding("c", uid_owned_by(R0, skip=1)))
    assert shard.queued() == set()

    shard.membership._last_list = fresh  # the round's LIST completes: the same members, active
    shard.membership._publish()  # nothing changed: no membership change is published
    assert shard.membership.active and shard.membership.members == (R0, R1)
    assert shard.queued() == set()
    shard.operator.runtime.push_parked()
    assert shard.queued() == {key("a"), key("c")}


async def test_a_parked_key_that_became_a_peers_is_not_pushed() -> None:
    shard = Shard(peer=False)
    mine_alone = uid_owned_by(R1, (R0, R1))  # ours while we are alone, r1's once it is back
    shard.operator.on_binding_event(RB, "ADDED", binding("a", mine_alone))
    await shard.join()
    entry = await shard.operator.queue.pop()
    fresh = shard.membership._last_list
    assert fresh is not None
    shard.membership._last_list = fresh - SHARDING.renew_deadline
    shard.operator.runtime._drop_not_owned(entry)
    shard.membership._last_list = fresh
    shard.leases.put_peer(R1)
    await shard.membership.step()
    shard.clock.now += SHARDING.retry_period
    await shard.membership.step()
    shard.operator.runtime.push_parked()
    assert key("a") not in shard.queued()
