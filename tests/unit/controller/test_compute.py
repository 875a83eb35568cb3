"""CoreExecutor: the core's own threads (as many as workers), the budget at checkpoints and at the edge.

No assertion on speed: counts, which thread ran what, what was raised, and the metrics. Budgets are
small so the tests end soon, and every wait has a generous bound so a failure fails, never hangs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import threading
import time

import pytest

from fleetsched.controller.runtime import metrics
from fleetsched.controller.scheduler import command as scheduler_cmd
from fleetsched.controller.scheduler.compute import (
    STOP_ABANDONED,
    STOP_CHECKPOINT,
    BudgetExceeded,
    CoreExecutor,
)
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.kube.client import Connection
from fleetsched.scheduler import Scheduler, groups


def sample(name: str, **labels: str) -> float:
    value = metrics.REGISTRY.get_sample_value(name, labels or None)
    return 0.0 if value is None else value


async def test_the_core_gets_one_thread_per_worker_beyond_the_default_executor() -> None:
    # More than asyncio's default executor has (min(32, CPUs + 4)): all must run at the same time.
    workers = min(32, (os.cpu_count() or 1) + 4) + 3
    operator = SchedulerOperator(
        client=None,  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),
        scheduler=Scheduler(),
        config=OperatorConfig(workers=workers),
    )
    assert operator.compute is not None
    assert operator.compute.threads == workers
    assert sample("fleetsched_scheduler_core_threads") == workers
    barrier = threading.Barrier(workers, timeout=20)
    loop_thread = threading.get_ident()

    def core(i: int) -> tuple[int, int]:
        barrier.wait()  # breaks (raises) unless all ``workers`` calls are running at once
        return i, threading.get_ident()

    try:
        results = await asyncio.gather(*(operator.compute.run(core, i, key=f"b{i}") for i in range(workers)))
    finally:
        operator.compute.close()
    assert sorted(i for i, _ in results) == list(range(workers))
    threads = {ident for _, ident in results}
    assert len(threads) == workers
    assert loop_thread not in threads


async def test_the_core_stops_itself_at_a_checkpoint_past_the_budget() -> None:
    executor = CoreExecutor(threads=2, budget=0.05, grace=60)
    checks = []
    before = sample("fleetsched_scheduler_budget_exceeded_total", stop=STOP_CHECKPOINT)

    def core() -> str:
        for i in range(200_000):
            checks.append(i)
            groups.checkpoint()  # what the core does between affinity terms and steps
            time.sleep(0.001)
        return "finished"

    try:
        with pytest.raises(BudgetExceeded) as raised:
            await executor.run(core, key="ns/slow")
    finally:
        executor.close()
    assert raised.value.stop == STOP_CHECKPOINT
    assert "budget of 0.05s (--scheduling-timeout)" in str(raised.value)
    assert 0 < len(checks) < 200_000
    assert sample("fleetsched_scheduler_budget_exceeded_total", stop=STOP_CHECKPOINT) == before + 1


async def test_a_core_without_checkpoints_is_abandoned_and_its_result_discarded() -> None:
    executor = CoreExecutor(threads=1, budget=0.05, grace=0)
    release = threading.Event()
    returned = threading.Event()
    abandoned_before = sample("fleetsched_scheduler_abandoned_computations")

    def stuck() -> str:
        release.wait(30)  # one long step that never reaches a checkpoint
        returned.set()
        return "late result"

    with pytest.raises(BudgetExceeded) as raised:
        await executor.run(stuck, key="ns/stuck")
    assert raised.value.stop == STOP_ABANDONED
    assert not returned.is_set()  # the worker stopped waiting while the thread still computes
    assert sample("fleetsched_scheduler_abandoned_computations") == abandoned_before + 1
    release.set()
    for _ in range(1000):
        if sample("fleetsched_scheduler_abandoned_computations") == abandoned_before:
            break
        await asyncio.sleep(0.01)
    assert returned.is_set()
    assert sample("fleetsched_scheduler_abandoned_computations") == abandoned_before
    executor.close()


async def test_no_budget_means_checkpoints_never_stop_the_core() -> None:
    executor = CoreExecutor(threads=1, budget=None)

    def core() -> int:
        for _ in range(3):
            groups.checkpoint()
            time.sleep(0.02)
        return 7

    try:
        assert await executor.run(core) == 7
    finally:
        executor.close()


def test_checkpoint_outside_a_budgeted_run_does_nothing() -> None:
    groups.checkpoint()
    calls: list[int] = []
    with groups.checkpointing(lambda: calls.append(1)):
        groups.checkpoint()
    groups.checkpoint()
    assert calls == [1]


@pytest.mark.parametrize("threads, budget", [(0, 1.0), (1, 0.0), (1, -1.0)])
def test_bad_sizes_are_refused(threads: int, budget: float) -> None:
    with pytest.raises(ValueError):
        CoreExecutor(threads=threads, budget=budget)


def _scheduler_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    scheduler_cmd.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_the_budget_and_the_threads_come_from_the_flags() -> None:
    config = scheduler_cmd.operator_config(_scheduler_args("--workers=7"))
    assert (config.workers, config.scheduling_timeout) == (7, 30.0)
    minute = scheduler_cmd.operator_config(_scheduler_args("--scheduling-timeout=1m"))
    assert minute.scheduling_timeout == 60.0
    unbounded = scheduler_cmd.operator_config(_scheduler_args("--scheduling-timeout=0"))
    assert unbounded.scheduling_timeout is None


def test_a_negative_budget_is_refused_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        _scheduler_args("--scheduling-timeout=-5s")
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.endswith("argument --scheduling-timeout: invalid duration '-5s' (must be 0 or more)")


async def test_an_inline_computation_runs_on_the_loop_thread_when_it_fits_its_slice() -> None:
    executor = CoreExecutor(threads=1, budget=5, inline_slice=1.0)
    moved = sample("fleetsched_scheduler_core_moved_off_loop_total")
    try:
        assert await executor.run(threading.get_ident, inline=True) == threading.get_ident()
        assert await executor.run(threading.get_ident) != threading.get_ident()  # not inline: a core thread
    finally:
        executor.close()
    assert sample("fleetsched_scheduler_core_moved_off_loop_total") == moved


async def test_an_inline_computation_past_its_slice_starts_again_in_a_core_thread() -> None:
    # The first checkpoint past the slice stops the run on the loop; the thread runs it from the start.
    executor = CoreExecutor(threads=1, budget=5, inline_slice=0.02)
    runs: list[tuple[int, int]] = []  # (thread, checkpoints passed)
    moved = sample("fleetsched_scheduler_core_moved_off_loop_total")

    def core() -> int:
        passed = 0
        runs.append((threading.get_ident(), passed))
        for _ in range(10):
            time.sleep(0.005)
            groups.checkpoint()
            passed += 1
            runs[-1] = (threading.get_ident(), passed)
        return threading.get_ident()

    loop_thread = threading.get_ident()
    started = time.perf_counter()
    ticks = 0

    async def ticker() -> None:  # the loop is free again once the computation moved off it
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    task = asyncio.create_task(ticker())
    try:
        ran_on = await executor.run(core, inline=True)
    finally:
        task.cancel()
        executor.close()
    assert ran_on != loop_thread
    assert [t for t, _ in runs] == [loop_thread, ran_on]
    assert runs[0][1] < 10, runs  # stopped at a checkpoint after the slice, not at the end
    assert runs[1][1] == 10  # the thread ran it whole
    assert ticks > 0  # the loop ran while the thread computed
    assert time.perf_counter() - started < 5
    assert sample("fleetsched_scheduler_core_moved_off_loop_total") == moved + 1


async def test_an_inline_computation_raises_as_a_threaded_one_does() -> None:
    executor = CoreExecutor(threads=1, budget=5)

    def broken() -> None:
        raise ValueError("bad input")

    try:
        with pytest.raises(ValueError, match="bad input"):
            await executor.run(broken, inline=True)
    finally:
        executor.close()
