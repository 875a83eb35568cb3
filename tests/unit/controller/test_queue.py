"""The scheduling queue (spec/scheduler.md §3.2): order, dedup, dirty re-queue, backoff, unschedulable."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.controller.runtime.queue import Outcome, QueueClosed, SchedulingQueue
from tests.support.clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> SchedulingQueue:
    return SchedulingQueue(clock=clock)


def drain(queue: SchedulingQueue) -> list[str]:
    keys = []
    while (entry := queue.pop_nowait()) is not None:
        keys.append(entry.key)
        queue.done(entry, Outcome.DONE)
    return keys


def test_higher_priority_first_then_fifo(queue: SchedulingQueue, clock: FakeClock) -> None:
    for key, priority in [("a", 0), ("b", 5), ("c", 0), ("d", 5), ("e", -1)]:
        queue.push(key, priority)
        clock.advance(0.001)
    assert drain(queue) == ["b", "d", "a", "c", "e"]


def test_pushing_a_waiting_key_is_a_noop(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.push("a")
    clock.advance(1)
    queue.push("b")
    clock.advance(1)
    queue.push("a")  # must not move behind b
    assert drain(queue) == ["a", "b"]


def test_push_while_processing_requeues_exactly_once(queue: SchedulingQueue) -> None:
    queue.push("a")
    entry = queue.pop_nowait()
    assert entry is not None and entry.attempts == 1
    queue.push("a")
    queue.push("a")
    assert queue.pop_nowait() is None  # not handed to a second worker while being processed
    queue.done(entry, Outcome.DONE)
    again = queue.pop_nowait()
    assert again is not None and again.key == "a" and again.attempts == 1
    queue.done(again, Outcome.DONE)
    assert queue.pop_nowait() is None


def test_error_backs_off_exponentially_up_to_ten_seconds(queue: SchedulingQueue, clock: FakeClock) -> None:
    queue.push("a")
    waits = []
    for _ in range(6):
        entry = queue.pop_nowait()
        assert entry is not None
        queue.done(entry, Outcome.ERROR)
        assert queue.sizes().backoff == 1
        # Find the smallest whole-second wait after which the flusher releases the entry.
        waited = 0
        start = clock.now
        while queue.flush_backoff() == 0:
            clock.advance(0.5)
            waited += 0.5
            assert waited <= 20
        waits.append(clock.now - start)
    # Backoff counts from the entry's timestamp (set when it last entered activeQ), so the wait is
    # at most the backoff duration: 1, 2, 4, 8, 10, 10 seconds.
    assert waits == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_unschedulable_waits_five_minutes_or_an_event(queue: SchedulingQueue, clock: FakeClock) -> None:
    for key in ("a", "b"):
        queue.push(key)
        entry = queue.pop_nowait()
        assert entry is not None
        queue.done(entry, Outcome.UNSCHEDULABLE)
    assert queue.sizes().unschedulable == 2
    clock.advance(299)
    assert queue.flush_unschedulable() == 0
    queue.push("b")  # a cluster change re-queues b at once
    assert queue.sizes().unschedulable == 1
    assert drain(queue) == ["b"]
    clock.advance(1)
    assert queue.flush_unschedulable() == 1
    assert drain(queue) == ["a"]


def test_event_push_resets_attempts_and_leaves_backoff(queue: SchedulingQueue) -> None:
    queue.push("a")
    entry = queue.pop_nowait()
    assert entry is not None
    queue.done(entry, Outcome.ERROR)
    entry = None
    queue.push("a")
    assert queue.sizes().backoff == 0
    fresh = queue.pop_nowait()
    assert fresh is not None and fresh.attempts == 1


def test_error_while_dirty_goes_to_active_not_backoff(queue: SchedulingQueue) -> None:
    queue.push("a")
    entry = queue.pop_nowait()
    assert entry is not None
    queue.push("a")
    queue.done(entry, Outcome.ERROR)
    sizes = queue.sizes()
    assert (sizes.active, sizes.backoff) == (1, 0)


def test_forget_drops_everything(queue: SchedulingQueue) -> None:
    queue.push("a")
    queue.push("b")
    queue.forget("a")
    assert "a" not in queue
    assert drain(queue) == ["b"]


async def test_workers_wait_for_entries_and_close_releases_them() -> None:
    queue = SchedulingQueue()
    got: list[str] = []

    async def worker() -> None:
        try:
            while True:
                entry = await queue.pop()
                got.append(entry.key)
                queue.done(entry, Outcome.DONE)
        except QueueClosed:
            pass

    tasks = [asyncio.create_task(worker()) for _ in range(3)]
    await asyncio.sleep(0)
    for key in ("x", "y", "z"):
        queue.push(key)
    for _ in range(10):
        await asyncio.sleep(0)
    queue.close()
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=2)
    assert sorted(got) == ["x", "y", "z"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdef"), st.integers(-3, 3)), min_size=1, max_size=30))
def test_every_pushed_key_comes_out_once_in_priority_order(pushes: list[tuple[str, int]]) -> None:
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    first_priority: dict[str, int] = {}
    for key, priority in pushes:
        queue.push(key, priority)
        first_priority.setdefault(key, priority)
        clock.advance(0.01)
    out = drain(queue)
    assert sorted(out) == sorted(first_priority)
    priorities = [first_priority[k] for k in out]
    assert priorities == sorted(priorities, reverse=True)


# -- typed keys -------------------------------------------------------------------------------


def test_a_queue_key_round_trips_the_cache_key() -> None:
    from fleetsched.controller.runtime.queue import QueueKey

    namespaced = QueueKey.of("ResourceBinding", "shop/web")
    assert (namespaced.kind, namespaced.namespace, namespaced.name) == ("ResourceBinding", "shop", "web")
    assert namespaced.object_key == "shop/web"
    cluster_scoped = QueueKey.of("ClusterResourceBinding", "web")
    assert (cluster_scoped.namespace, cluster_scoped.object_key) == ("", "web")
    assert str(cluster_scoped) == "ClusterResourceBinding:web"
    # the same name in another kind or scope is another key
    others = {QueueKey.of("ResourceBinding", "web"), QueueKey.of("X", "shop/web")}
    assert len({namespaced, cluster_scoped, *others}) == 4


def test_the_shard_hash_is_the_same_in_every_process() -> None:
    import subprocess
    import sys

    code = ("from fleetsched.controller.runtime.queue import QueueKey\n"
            "key = QueueKey('ResourceBinding', 'shop', 'web')\n"
            "print(key.shard_hash, hash(key))")
    outputs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": seed}).stdout.split()
        for seed in ("1", "2")
    ]
    assert outputs[0][1] != outputs[1][1], "hash() is salted per process: what a shard hash must not be"
    assert outputs[0][0] == outputs[1][0]
    assert 0 <= int(outputs[0][0]) < 2**64


def test_the_shard_hash_separates_the_fields() -> None:
    from fleetsched.controller.runtime.queue import QueueKey

    # "a/bc" vs "ab/c": joining without a separator would collide
    assert QueueKey("K", "a", "bc").shard_hash != QueueKey("K", "ab", "c").shard_hash
    hashes = {QueueKey("ResourceBinding", "ns", f"b{i}").shard_hash for i in range(1000)}
    assert len(hashes) == 1000
    # roughly uniform: each half of the 64-bit range gets a fair share of 1000 keys
    assert 400 < sum(1 for h in hashes if h < 2**63) < 600


def test_without_priority_based_scheduling_the_queue_is_karmadas_fifo(clock: FakeClock) -> None:
    # Karmada with PriorityBasedScheduling off: the legacy rate-limited work queue, in arrival order
    # whatever spec.schedulePriority says, and no QueueSort.
    queue = SchedulingQueue.legacy(clock=clock, less=lambda a, b: a.key > b.key)
    for key, priority in [("a", 0), ("b", 5), ("c", 0), ("d", 5), ("e", -1)]:
        queue.push(key, priority)
        clock.advance(0.001)
    assert drain(queue) == ["a", "b", "c", "d", "e"]


def test_without_priority_based_scheduling_unschedulable_is_retried_with_backoff(clock: FakeClock) -> None:
    # legacyHandleErr: every error, an unschedulable one too, goes back through AddRateLimited
    # (5ms * 2^(n-1) up to 1,000 s): there is no unschedulable set to wait five minutes in.
    queue = SchedulingQueue.legacy(clock=clock)
    queue.push("a")
    entry = queue.pop_nowait()
    assert entry is not None
    queue.done(entry, Outcome.UNSCHEDULABLE)
    assert queue.sizes().unschedulable == 0 and queue.sizes().backoff == 1
    assert queue.backoff_duration(entry) == pytest.approx(0.005)
    clock.advance(0.005)
    assert queue.flush_backoff() == 1
    again = queue.pop_nowait()
    assert again is not None and again.key == "a" and again.attempts == 2
    assert queue.backoff_duration(again) == pytest.approx(0.010)
    again.attempts = 40
    assert queue.backoff_duration(again) == 1000.0


def test_the_priority_queue_keeps_unschedulable_bindings_apart(clock: FakeClock) -> None:
    # The same outcome with the gate on (its default) parks the key for an event or the flush.
    queue = SchedulingQueue(clock=clock)
    queue.push("a")
    entry = queue.pop_nowait()
    assert entry is not None
    queue.done(entry, Outcome.UNSCHEDULABLE)
    assert queue.sizes().unschedulable == 1 and queue.sizes().backoff == 0
