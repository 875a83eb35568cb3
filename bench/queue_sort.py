"""Benchmark: the event loop while a slow QueueSort plugin orders a large backlog (issue 30).

A ``less`` that burns ``--less-ms`` of CPU per comparison (5 ms by default, holding the GIL as pure
Python does), a backlog of ``--backlog`` bindings queued at once (an initial sync), and ``--workers``
workers taking them. A ticker on the loop asks to run every 10 ms and records how late it ran: that
lateness is what ``/healthz``, ``/readyz`` and the Lease renewal wait. Before issue 30, ``less`` ran
on the loop inside the heap operations: the pushes alone held it for (backlog x log2(backlog) x
less) seconds in one stretch (17 s measured on the live scheduler). Prints figures; asserts nothing.

    .venv/bin/python bench/queue_sort.py [--backlog 1000] [--less-ms 5] [--workers 4] [--seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time

from fleetsched.controller.runtime.queue import Outcome, SchedulingQueue
from fleetsched.scheduler.framework.interface import QueuedBindingInfo


def slow_less(seconds: float) -> tuple[list[int], object]:
    calls = [0]

    def less(a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
        calls[0] += 1
        until = time.perf_counter() + seconds
        while time.perf_counter() < until:  # CPU, holding the GIL between switch intervals
            pass
        return a.priority < b.priority

    return calls, less


async def run(backlog: int, less_seconds: float, workers: int, seconds: float) -> None:
    calls, less = slow_less(less_seconds)
    queue = SchedulingQueue(less=less)  # type: ignore[arg-type]
    lags: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        while not stop.is_set():
            asked = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append(time.perf_counter() - asked - 0.01)

    taken: list[str] = []

    async def worker() -> None:
        while len(taken) < backlog:
            entry = await queue.pop()
            taken.append(entry.key)
            queue.done(entry, Outcome.DONE)

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.1)
    started = time.perf_counter()
    for i in range(backlog):
        queue.push(f"rb-{i}", i % 7)
    pushed = time.perf_counter() - started
    tasks = [asyncio.create_task(worker()) for _ in range(workers)]
    first = None
    while len(taken) < backlog and time.perf_counter() - started < seconds:
        await asyncio.sleep(0.01)
        if first is None and taken:
            first = time.perf_counter() - started
    drained = time.perf_counter() - started
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    stop.set()
    await tick
    queue.close()
    ms = sorted(lag * 1000 for lag in lags)
    print(f"queue sort: {backlog} bindings at once, less {less_seconds * 1000:g} ms of CPU a comparison, "
          f"{workers} workers (python {sys.version.split()[0]}, load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
    first_text = "-" if first is None else f"{first:.2f}"
    print(f"  pushing them held the loop {pushed * 1000:.1f} ms; first taken after {first_text} s; "
          f"{len(taken)} taken in {drained:.1f} s; {calls[0]} comparisons")
    print(f"  loop lateness over {len(ms)} ticks: p50 {statistics.median(ms):.1f} ms, "
          f"p99 {ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]:.1f} ms, max {ms[-1]:.1f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backlog", type=int, default=1000)
    parser.add_argument("--less-ms", type=float, default=5.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0, help="stop watching after this long")
    args = parser.parse_args(argv)
    asyncio.run(run(args.backlog, args.less_ms / 1000, args.workers, args.seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
