"""A QueueSort plugin runs off the event loop within a budget per comparison (queue.py): a hung or
slow ``less`` marks it broken and the queue hands entries out in Karmada's order (priority, then first
in first out); after the cool-down its order is rebuilt, and a comparison within budget ends it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from fleetsched.controller.runtime.queue import QUEUE_SORT_POINT, Outcome, SchedulingQueue
from fleetsched.plugin import QueuedBindingInfo
from fleetsched.scheduler.framework import containment
from tests.support.clock import FakeClock


class FakeSort:
    """Lowest priority first (the opposite of Karmada's); ``mode`` makes it hang or run late."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.mode = "well"
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0

    def __call__(self, a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
        self.calls += 1
        if self.mode == "hang":
            self.entered.set()
            self.release.wait(30)
        elif self.mode == "late":
            self.clock.advance(2.0)  # the comparison "took" two seconds of the queue's clock
        return a.priority < b.priority


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sort(clock: FakeClock) -> Iterator[FakeSort]:
    plugin = FakeSort(clock)
    yield plugin
    plugin.release.set()  # a hung comparison's thread ends with the test


@pytest.fixture
def queue(clock: FakeClock, sort: FakeSort) -> Iterator[SchedulingQueue]:
    q = SchedulingQueue(clock=clock, less=sort, sort_plugin="FakeSort", sort_profile="p")
    yield q
    q.close()


@pytest.fixture
def events() -> Iterator[list[tuple[str, str, str, str]]]:
    seen: list[tuple[str, str, str, str]] = []
    before = containment.listen(
        lambda event, profile, plugin, point, _: seen.append((event, profile, plugin, point))
    )
    yield seen
    containment.listen(before)


def fill(queue: SchedulingQueue, clock: FakeClock) -> None:
    for key, priority in (("b", 1), ("a", 5), ("c", 1), ("d", 0)):
        queue.push(key, priority)
        clock.advance(0.001)


def drain(queue: SchedulingQueue) -> list[str]:
    keys = []
    while (entry := queue.pop_nowait()) is not None:
        keys.append(entry.key)
        queue.done(entry, Outcome.DONE)
    return keys


def wait_for(condition: Callable[[], bool]) -> bool:
    for _ in range(1000):
        if condition():
            return True
        time.sleep(0.01)
    return False


KARMADA = ["a", "b", "c", "d"]
PLUGIN = ["d", "b", "c", "a"]


def test_a_well_behaved_plugin_orders_the_queue(
    queue: SchedulingQueue, clock: FakeClock, sort: FakeSort
) -> None:
    fill(queue, clock)
    assert drain(queue) == PLUGIN
    assert sort.calls > 0


def test_a_hung_comparison_marks_the_plugin_broken_and_the_queue_falls_back(
    queue: SchedulingQueue, clock: FakeClock, sort: FakeSort, events: list[tuple[str, str, str, str]]
) -> None:
    sort.mode = "hang"
    fill(queue, clock)
    assert sort.entered.wait(10)  # the plugin's thread is stuck in a comparison
    clock.advance(queue.sort_budget + 0.5)
    assert drain(queue) == KARMADA
    assert ("broken", "p", "FakeSort", QUEUE_SORT_POINT) in events
    # entries pushed while broken keep Karmada's order, without asking the plugin
    calls = sort.calls
    fill(queue, clock)
    assert drain(queue) == KARMADA
    assert sort.calls == calls


def test_a_comparison_that_returns_late_marks_the_plugin_broken(
    queue: SchedulingQueue, clock: FakeClock, sort: FakeSort, events: list[tuple[str, str, str, str]]
) -> None:
    sort.mode = "late"
    fill(queue, clock)
    assert drain(queue) == KARMADA
    assert [e for e in events if e[0] == "broken"] == [("broken", "p", "FakeSort", QUEUE_SORT_POINT)]


def test_after_the_cool_down_a_recovered_plugin_orders_the_queue_again(
    queue: SchedulingQueue, clock: FakeClock, sort: FakeSort, events: list[tuple[str, str, str, str]]
) -> None:
    sort.mode = "hang"
    fill(queue, clock)
    assert sort.entered.wait(10)
    clock.advance(queue.sort_budget + 0.5)
    assert drain(queue) == KARMADA
    sort.mode = "well"
    sort.release.set()  # the stuck comparison returns, and its thread ends
    assert wait_for(lambda: not [t for t in threading.enumerate() if t.name == "queue-sort"])
    clock.advance(containment.COOL_DOWN - 1)
    fill(queue, clock)
    assert drain(queue) == KARMADA  # still cooling down
    clock.advance(2)
    fill(queue, clock)
    assert drain(queue) == PLUGIN  # rebuilt; its first comparison was the probe
    assert ("recovered", "p", "FakeSort", QUEUE_SORT_POINT) in events


def test_the_loop_goes_on_while_a_comparison_hangs(clock: FakeClock, sort: FakeSort) -> None:
    async def scenario() -> list[str]:
        queue = SchedulingQueue(clock=clock, less=sort, sort_plugin="FakeSort")
        try:
            sort.mode = "hang"
            fill(queue, clock)
            first = asyncio.create_task(queue.pop())
            ticks = 0
            while not sort.entered.is_set() or ticks < 20:  # the loop keeps running other work
                await asyncio.sleep(0.005)
                ticks += 1
            assert not first.done()  # the pop waits for the plugin's order, within its budget
            clock.advance(queue.sort_budget + 0.5)
            keys = [(await first).key]
            while queue.sizes().active:
                keys.append((await queue.pop()).key)
            return keys
        finally:
            queue.close()

    assert asyncio.run(scenario()) == KARMADA


def test_a_cancelled_pop_loses_no_entry(clock: FakeClock, sort: FakeSort) -> None:
    async def scenario() -> list[str]:
        queue = SchedulingQueue(clock=clock, less=sort, sort_plugin="FakeSort")
        try:
            fill(queue, clock)
            cancelled = asyncio.create_task(queue.pop())
            await asyncio.sleep(0)
            cancelled.cancel()
            with pytest.raises(asyncio.CancelledError):
                await cancelled
            return [(await queue.pop()).key for _ in range(4)]
        finally:
            queue.close()

    assert sorted(asyncio.run(scenario())) == sorted(PLUGIN)


def test_a_forgotten_entry_is_not_handed_out(queue: SchedulingQueue, clock: FakeClock) -> None:
    fill(queue, clock)
    queue.forget("d")
    assert drain(queue) == ["b", "c", "a"]
