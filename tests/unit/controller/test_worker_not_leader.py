"""A worker that meets a lapsed Lease pauses, so the elector gets the loop to renew or step down."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from fleetsched.controller.runtime.controller import ControllerRuntime, NotLeader
from fleetsched.controller.runtime.queue import Outcome, QueuedBinding, SchedulingQueue


class LapsedElector:
    """``leading`` still set while the renewal is overdue: the state right after a stalled loop."""

    def __init__(self) -> None:
        self.leading = asyncio.Event()
        self.leading.set()
        self.is_leader = False


@dataclass
class Config:
    workers: int = 1
    leader_election: Any = None
    graceful_timeout: float = 1.0
    sharding: Any = None


@dataclass
class Controller:
    """A reconciler whose every attempt meets the lapsed Lease until it comes back."""

    queue: SchedulingQueue = field(default_factory=SchedulingQueue)
    elector: Any = field(default_factory=LapsedElector)
    attempts: int = 0

    def __post_init__(self) -> None:
        self.runtime = ControllerRuntime(
            reconciler=self, config=Config(), client=None, queue=self.queue, elector=self.elector  # type: ignore[arg-type]
        )

    async def process(self, entry: QueuedBinding) -> Outcome:
        self.attempts += 1
        if self.attempts % 1000 == 0:
            await asyncio.sleep(0)  # so that a spinning worker fails this test instead of hanging it
        if not self.elector.is_leader:
            raise NotLeader
        return Outcome.DONE

    def after_outcome(self, entry: QueuedBinding, outcome: Outcome) -> None:
        pass

    def on_done(self) -> None:
        pass


async def test_a_lapsed_lease_does_not_starve_the_elector() -> None:
    controller = Controller()
    controller.queue.push("ns/a")
    worker = asyncio.create_task(controller.runtime.run_worker(0))
    elector_ran = asyncio.Event()

    async def elector_steps_down() -> None:
        await asyncio.sleep(0)  # the elector's next turn on the loop
        controller.runtime.elector.leading.clear()
        elector_ran.set()

    stepping_down = asyncio.create_task(elector_steps_down())
    try:
        await asyncio.wait_for(elector_ran.wait(), 10)
        attempts_while_lapsed = controller.attempts
        # Leadership comes back: the key that was put back is processed.
        controller.runtime.elector.is_leader = True
        controller.runtime.elector.leading.set()
        for _ in range(500):
            if controller.queue.sizes().active == 0 and controller.attempts > attempts_while_lapsed:
                break
            await asyncio.sleep(0.01)
    finally:
        controller.queue.close()
        worker.cancel()
        await asyncio.gather(worker, stepping_down, return_exceptions=True)
    assert attempts_while_lapsed <= 2  # not a tight loop of NotLeader
    assert controller.attempts == attempts_while_lapsed + 1
    assert controller.queue.sizes().active == 0
