"""A profile's QueueSort plugin orders the active queue; without one, Karmada's order stays."""

from __future__ import annotations

from fleetsched.controller.runtime.queue import SchedulingQueue
from fleetsched.plugin import QueuedBindingInfo


def _drain(queue: SchedulingQueue) -> list[str]:
    out = []
    while (entry := queue.pop_nowait()) is not None:
        out.append(entry.key)
    return out


def _fill(queue: SchedulingQueue) -> SchedulingQueue:
    now = [0.0]
    queue.clock = lambda: now[0]
    for key, priority in (("b", 1), ("a", 5), ("c", 1), ("d", 0)):
        queue.push(key, priority)
        now[0] += 1.0
    return queue


def test_without_a_plugin_the_queue_keeps_priority_then_fifo() -> None:
    assert _drain(_fill(SchedulingQueue())) == ["a", "b", "c", "d"]


def test_a_queue_sort_plugin_decides_and_ties_stay_first_come_first_served() -> None:
    def lowest_priority_first(a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
        return a.priority < b.priority  # lowest priority first, ties left to the queue

    assert _drain(_fill(SchedulingQueue(less=lowest_priority_first))) == ["d", "b", "c", "a"]
