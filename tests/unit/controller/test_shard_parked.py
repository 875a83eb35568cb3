"""A key refused while the replica is not active for a moment (its LIST or renewal running late,
e.g. on a loaded machine), with the members unchanged, is pushed again once the replica is active:
no membership change follows such a moment, so nothing else would push it and the binding would
wait for the next change (found by tests/e2e/test_sharded.py: bindings left unscheduled)."""

from __future__ import annotations

from test_shard_operator import R0, R1, SHARDING, Shard, binding, key, uid_owned_by

from fleetsched.controller.operator import RB


async def test_a_key_dropped_while_the_list_was_late_is_pushed_again_when_active() -> None:
    shard = Shard()
    shard.operator.on_binding_event(RB, "ADDED", binding("a", uid_owned_by(R0)))
    await shard.join()
    entry = await shard.operator.queue.pop()
    assert entry.key == key("a")
    shard.membership._last_list -= SHARDING.renew_deadline  # the LIST is late: not active this instant
    assert not shard.operator.owns_key(entry.key)
    shard.operator._drop_not_owned(entry)  # what the worker does with it
    # An event for another of ours in that moment is not pushed either.
    shard.operator.on_binding_event(RB, "ADDED", binding("c", uid_owned_by(R0, skip=1)))
    assert shard.queued() == set()

    await shard.membership.step()  # on time again, the same members: no change is published
    assert shard.membership.active and shard.membership.members == (R0, R1)
    assert shard.queued() == set()
    shard.operator.push_parked()
    assert shard.queued() == {key("a"), key("c")}


async def test_a_parked_key_that_became_a_peers_is_not_pushed() -> None:
    shard = Shard(peer=False)
    mine_alone = uid_owned_by(R1, (R0, R1))  # ours while we are alone, r1's once it is back
    shard.operator.on_binding_event(RB, "ADDED", binding("a", mine_alone))
    await shard.join()
    entry = await shard.operator.queue.pop()
    shard.membership._last_list -= SHARDING.renew_deadline
    shard.operator._drop_not_owned(entry)
    shard.leases.put_peer(R1)
    await shard.membership.step()
    shard.operator.push_parked()
    assert shard.queued() == set()
