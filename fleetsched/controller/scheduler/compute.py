"""The scheduling core off the event loop, one binding at a time per thread, within a budget.

The core is CPU-bound Python and, with ``--enable-scheduler-estimator``, blocks on gRPC for up to
``--scheduler-estimator-timeout``; on the event loop either would stall the watches, ``/healthz``,
``/readyz`` and the Lease renewal. ``CoreExecutor`` runs each binding's computation in a thread pool
of its own with one thread per worker (``--workers``), never in the loop's default executor (which
has min(32, CPUs + 4) threads whatever ``--workers`` says). A thread holding the GIL gives it up every
switch interval, so the loop keeps serving while a binding computes.

The budget (``--scheduling-timeout``, default 30 s, 0 = none) runs from the moment a thread starts
the binding. Python cannot stop a thread, so it is enforced in two places:

* cooperatively, inside the core: ``scheduler.groups.checkpoint()`` runs before each affinity term,
  and ``observe_step`` (the core's per-step timing callback) after each step (Filter, Score, Select,
  AssignReplicas); past the deadline the check raises ``BudgetExceeded`` in the thread and the attempt
  ends there;
* at the edge: a worker waits at most the budget plus ``HARD_STOP_GRACE`` for its thread, then stops
  waiting and reports ``BudgetExceeded`` (its slot is free for the next key). The computation is
  marked abandoned, so its next checkpoint raises; whatever it returns later is dropped and never
  written (log line ``late_result_discarded``). Until it ends it holds its thread, which
  ``fleetsched_scheduler_abandoned_computations`` shows.

A computation that cannot wait on I/O (``run(..., inline=True)``: the operator passes it when the
profile's plugins are all fleetsched's own, no extender is asked and no estimator but the general
one: ``Scheduler.computes_only``) starts on the event loop instead, for at most ``INLINE_SLICE``:
handing a binding to a thread and its result back cost more CPU than a typical binding's core
(0.35-0.45 ms per binding in ``bench/operator_e2e.py``, the GIL changing hands). The first checkpoint
past the slice stops it, and it starts again from the beginning in a core thread, under the budget
as above (``fleetsched_scheduler_core_moved_off_loop_total`` counts these). The core is pure, so the
second run gives what the first would have; what a stopped run observed (step timings, memo
entries) stays. The loop is held at most the slice plus the longest stretch between two checkpoints.

Knows nothing about bindings beyond a key for the log; the operator turns ``BudgetExceeded`` into the
binding's condition and the queue's error backoff.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from fleetsched.controller.runtime import metrics
from fleetsched.scheduler import groups

log = structlog.get_logger("fleetsched.scheduler")

T = TypeVar("T")

DEFAULT_BUDGET = 30.0
# How long past its budget a computation may take to reach a checkpoint before the worker stops
# waiting for it (a step that does not return, e.g. one huge enumeration, never reaches one).
HARD_STOP_GRACE = 1.0

# The longest a computation runs on the event loop before it moves to a core thread (``inline``).
INLINE_SLICE = 0.005

STOP_CHECKPOINT = "checkpoint"
STOP_ABANDONED = "abandoned"


class BudgetExceeded(Exception):
    """One binding's scheduling took longer than ``--scheduling-timeout``."""

    def __init__(self, budget: float, *, stop: str = STOP_CHECKPOINT) -> None:
        self.budget = budget
        self.stop = stop
        super().__init__(
            f"scheduling took longer than its budget of {budget:g}s (--scheduling-timeout) and was stopped"
        )


@dataclass(slots=True)
class _Computation:
    """One binding's run: its deadline once a thread has started it, and whether the edge gave up."""

    budget: float
    deadline: float | None = None
    abandoned: bool = False

    def check(self) -> None:
        if self.abandoned or (self.deadline is not None and time.monotonic() >= self.deadline):
            raise BudgetExceeded(self.budget, stop=STOP_ABANDONED if self.abandoned else STOP_CHECKPOINT)


class _MoveOff(Exception):
    """An inline computation used up its slice: it goes on in a core thread."""


def observe_step(step: str, seconds: float) -> None:
    """``Scheduler(observe_step=...)`` for the operator: the step's metric, then a checkpoint."""
    metrics.observe_step(step, seconds)
    groups.checkpoint()


class CoreExecutor:
    """``threads`` threads for the core; ``budget`` seconds per call (None: unbounded)."""

    def __init__(self, *, threads: int, budget: float | None = DEFAULT_BUDGET,
                 grace: float = HARD_STOP_GRACE, inline_slice: float = INLINE_SLICE) -> None:
        if threads < 1:
            raise ValueError(f"threads: must be at least 1, got {threads}")
        if budget is not None and budget <= 0:
            raise ValueError(f"budget: must be positive or None, got {budget}")
        self.threads = threads
        self.budget = budget
        self.grace = grace
        self.inline_slice = inline_slice
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="scheduling-core")
        metrics.CORE_THREADS.set(threads)

    def close(self) -> None:
        """Stop taking work; running computations finish in their threads, queued ones are dropped."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def run(self, fn: Callable[..., T], /, *args: Any, key: str = "", inline: bool = False) -> T:
        """``fn(*args)`` in a core thread; raises ``BudgetExceeded`` when over the budget. With
        ``inline`` (``fn`` never waits on I/O) it starts on the loop for up to ``inline_slice``."""
        if inline and self.inline_slice > 0:
            limit = time.perf_counter() + self.inline_slice

            def slice_check() -> None:
                if time.perf_counter() >= limit:
                    raise _MoveOff

            try:
                with groups.checkpointing(slice_check):
                    return fn(*args)
            except _MoveOff:
                metrics.CORE_MOVED_OFF_LOOP.inc()
        budget = self.budget
        if budget is None:
            return await asyncio.wrap_future(self._pool.submit(fn, *args))
        computation = _Computation(budget)

        def call() -> T:
            computation.deadline = time.monotonic() + budget
            with groups.checkpointing(computation.check):
                return fn(*args)

        future: Future[T] = self._pool.submit(call)
        waited = asyncio.wrap_future(future)
        try:
            # The budget counts from the thread's start: while the call waits for a free thread
            # (``deadline`` unset) the worker keeps waiting; then until the deadline plus the grace.
            timeout = budget + self.grace
            while not (await asyncio.wait({waited}, timeout=timeout))[0]:
                deadline = computation.deadline
                if deadline is not None:
                    timeout = deadline + self.grace - time.monotonic()
                    if timeout <= 0:
                        self._abandon(computation, future, waited, key)
                        raise BudgetExceeded(budget, stop=STOP_ABANDONED)
            try:
                return waited.result()
            except BudgetExceeded as exc:
                metrics.BUDGET_EXCEEDED.labels(exc.stop).inc()
                log.warning("scheduling_budget_exceeded", binding=key, budget=budget, stop=exc.stop)
                raise
        except asyncio.CancelledError:
            computation.abandoned = True  # shutting down: let the thread stop at its next checkpoint
            future.cancel()
            raise

    @staticmethod
    def _abandon(computation: _Computation, future: Future[Any], waited: asyncio.Future[Any],
                 key: str) -> None:
        computation.abandoned = True
        waited.cancel()  # its late result is never delivered to the loop
        metrics.BUDGET_EXCEEDED.labels(STOP_ABANDONED).inc()
        metrics.ABANDONED_COMPUTATIONS.inc()
        log.warning("scheduling_budget_exceeded", binding=key, budget=computation.budget, stop=STOP_ABANDONED)

        def discarded(done: Future[Any]) -> None:  # runs in the core thread when it finally ends
            metrics.ABANDONED_COMPUTATIONS.dec()
            over = time.monotonic() - (computation.deadline or time.monotonic())
            error = None if done.cancelled() else done.exception()
            log.warning("late_result_discarded", binding=key, seconds_over_budget=round(over, 3),
                        error=None if error is None else str(error))

        future.add_done_callback(discarded)
