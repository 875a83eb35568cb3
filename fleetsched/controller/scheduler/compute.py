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

Profiles apart (issue 23): each profile's computations run in a pool of ``threads`` threads of its
own (``run(..., pool=<schedulerName>)``), so a plugin that hangs holds at most its own profile's
threads, never another's: the stuck threads are bounded by the profile's pool. When every thread of a
profile's pool is held by an abandoned computation, its next bindings fail at once (``CoreSaturated``,
a ``BudgetExceeded``) instead of waiting for a thread, and a worker is free for other profiles'
bindings. An abandoned computation stuck in a plugin call (``framework.containment.current_call``) is
that plugin's overrun: the message names the plugin and the point, and the plugin's ``PluginHealth``
counts it (after repeated overruns the plugin is marked broken, its calls fail at once, until it
recovers). Health changes become metrics and log lines here (``containment.listen``).

A ``SystemExit``/``KeyboardInterrupt`` that gets out of the core (the Framework contains those of
plugins; this is the last line) is an error of that binding (``CoreRaised``), not the process's end.

Knows nothing about bindings beyond a key for the log; the operator turns ``BudgetExceeded`` into the
binding's condition and the queue's error backoff.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from fleetsched.controller.runtime import metrics
from fleetsched.scheduler import Scheduler, groups
from fleetsched.scheduler.framework import containment

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
STOP_SATURATED = "saturated"


class BudgetExceeded(Exception):
    """One binding's scheduling took longer than ``--scheduling-timeout``; ``plugin``/``point``: the
    plugin call it was stuck in when the worker stopped waiting, if any."""

    def __init__(
        self, budget: float, *, stop: str = STOP_CHECKPOINT, plugin: str = "", point: str = ""
    ) -> None:
        self.budget = budget
        self.stop = stop
        self.plugin = plugin
        self.point = point
        message = (
            f"scheduling took longer than its budget of {budget:g}s (--scheduling-timeout) and was stopped"
        )
        if plugin:
            message += f": plugin {plugin} did not return from {point}"
        super().__init__(message)


class CoreSaturated(BudgetExceeded):
    """Every core thread of the binding's profile is held by a computation stopped past its budget:
    the binding fails at once rather than wait for one (its other profiles are not affected)."""

    def __init__(
        self, budget: float, *, pool: str, threads: int, plugin: str = "", point: str = ""
    ) -> None:
        super().__init__(budget, stop=STOP_SATURATED, plugin=plugin, point=point)
        held = f" (plugin {plugin} did not return from {point})" if plugin else ""
        self.args = (
            f"every core thread of profile {pool or 'default'} ({threads}) is held by a computation stopped "
            f"past its budget of {budget:g}s{held}; the binding was not started",
        )

    def __str__(self) -> str:
        return str(self.args[0])


class CoreRaised(Exception):
    """The core let a SystemExit or KeyboardInterrupt out (not the process's shutdown): an error of
    this binding only."""


@dataclass(slots=True)
class _Computation:
    """One binding's run: its deadline once a thread has started it, whether the edge gave up, and
    the thread running it."""

    budget: float
    deadline: float | None = None
    abandoned: bool = False
    thread: int | None = None

    def check(self) -> None:
        if self.abandoned or (self.deadline is not None and time.monotonic() >= self.deadline):
            raise BudgetExceeded(self.budget, stop=STOP_ABANDONED if self.abandoned else STOP_CHECKPOINT)


class _MoveOff(Exception):
    """An inline computation used up its slice: it goes on in a core thread."""


def observe_step(step: str, seconds: float) -> None:
    """``Scheduler(observe_step=...)`` for the operator: the step's metric, then a checkpoint."""
    metrics.observe_step(step, seconds)
    groups.checkpoint()


class _Pool:
    """The threads of one profile and how many of them abandoned computations hold."""

    __slots__ = ("abandoned", "executor", "last_stuck", "lock", "name")

    def __init__(self, name: str, threads: int) -> None:
        self.name = name
        self.executor = ThreadPoolExecutor(
            max_workers=threads, thread_name_prefix=f"scheduling-core-{name}"[:40]
        )
        self.abandoned = 0
        self.last_stuck: tuple[str, str] = ("", "")  # (plugin, point) of the last computation abandoned
        self.lock = threading.Lock()


def _contained(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``; a SystemExit/KeyboardInterrupt out of it (not the process's shutdown) is a
    ``CoreRaised``, so it ends this binding's attempt and nothing else."""
    try:
        return fn(*args)
    except Exception:
        raise
    except BaseException as e:
        if containment.escapes(e):
            raise
        raise CoreRaised(f"scheduling raised {containment.describe(e)}") from None


def _on_health(event: str, profile: str, plugin: str, point: str, detail: str) -> None:
    """Plugin health changes (``containment.listen``) as metrics and log lines."""
    if event == "overrun":
        metrics.PLUGIN_OVERRUNS.labels(profile, plugin, point).inc()
    elif event == "broken":
        metrics.PLUGIN_BROKEN.labels(profile, plugin).set(1)
        log.error("plugin_broken", profile=profile, plugin=plugin, extension_point=point, detail=detail,
                  cool_down=containment.COOL_DOWN)
    elif event == "recovered":
        metrics.PLUGIN_BROKEN.labels(profile, plugin).set(0)
        log.warning("plugin_recovered", profile=profile, plugin=plugin, extension_point=point)
    elif event == "refused":
        metrics.PLUGIN_REFUSED.labels(profile, plugin).inc()
    elif event == "probe":
        log.info("plugin_probe", profile=profile, plugin=plugin, extension_point=point)


class CoreExecutor:
    """``threads`` threads for the core per profile (``pool``); ``budget`` seconds per call (None:
    unbounded)."""

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
        self._pools: dict[str, _Pool] = {}
        metrics.CORE_THREADS.set(threads)
        containment.listen(_on_health)

    def _pool(self, name: str) -> _Pool:
        pool = self._pools.get(name)
        if pool is None:
            pool = self._pools.setdefault(name, _Pool(name, self.threads))
            metrics.CORE_THREADS.set(self.threads * len(self._pools))
        return pool

    def close(self) -> None:
        """Stop taking work; running computations finish in their threads, queued ones are dropped."""
        for pool in self._pools.values():
            pool.executor.shutdown(wait=False, cancel_futures=True)

    async def run(
        self, fn: Callable[..., T], /, *args: Any, key: str = "", inline: bool = False, pool: str = ""
    ) -> T:
        """``fn(*args)`` in a core thread of ``pool`` (the binding's profile); raises ``BudgetExceeded``
        when over the budget (``CoreSaturated`` when every thread of the pool is held by an abandoned
        computation). With ``inline`` (``fn`` never waits on I/O) it starts on the loop for up to
        ``inline_slice``."""
        if inline and self.inline_slice > 0:
            limit = time.perf_counter() + self.inline_slice

            def slice_check() -> None:
                if time.perf_counter() >= limit:
                    raise _MoveOff

            try:
                with groups.checkpointing(slice_check):
                    return _contained(fn, *args)
            except _MoveOff:
                metrics.CORE_MOVED_OFF_LOOP.inc()
        threads = self._pool(pool)
        budget = self.budget
        if budget is None:
            return await asyncio.wrap_future(threads.executor.submit(_contained, fn, *args))
        if threads.abandoned >= self.threads:
            plugin, point = threads.last_stuck
            metrics.CORE_SATURATED.labels(pool).inc()
            raise CoreSaturated(budget, pool=pool, threads=self.threads, plugin=plugin, point=point)
        computation = _Computation(budget)

        def call() -> T:
            computation.thread = threading.get_ident()
            computation.deadline = time.monotonic() + budget
            with groups.checkpointing(computation.check):
                return _contained(fn, *args)

        future: Future[T] = threads.executor.submit(call)
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
                        stuck = self._abandon(computation, future, waited, key, threads)
                        raise BudgetExceeded(
                            budget,
                            stop=STOP_ABANDONED,
                            plugin=stuck.plugin if stuck is not None else "",
                            point=stuck.point if stuck is not None else "",
                        )
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
                 key: str, pool: _Pool) -> containment.Call | None:
        """Stop waiting for ``computation``; the plugin call it is stuck in (counted as that plugin's
        overrun), if any."""
        computation.abandoned = True
        waited.cancel()  # its late result is never delivered to the loop
        stuck = containment.current_call(computation.thread) if computation.thread is not None else None
        if stuck is not None:
            stuck.health.stuck(stuck)
        with pool.lock:
            pool.abandoned += 1
            if stuck is not None:
                pool.last_stuck = (stuck.plugin, stuck.point)
        metrics.BUDGET_EXCEEDED.labels(STOP_ABANDONED).inc()
        metrics.ABANDONED_COMPUTATIONS.inc()
        log.warning("scheduling_budget_exceeded", binding=key, budget=computation.budget, stop=STOP_ABANDONED,
                    profile=pool.name, plugin=stuck.plugin if stuck is not None else None,
                    extension_point=stuck.point if stuck is not None else None)

        def discarded(done: Future[Any]) -> None:  # runs in the core thread when it finally ends
            with pool.lock:
                pool.abandoned -= 1
            metrics.ABANDONED_COMPUTATIONS.dec()
            over = time.monotonic() - (computation.deadline or time.monotonic())
            error = None if done.cancelled() else done.exception()
            log.warning("late_result_discarded", binding=key, seconds_over_budget=round(over, 3),
                        error=None if error is None else str(error))

        future.add_done_callback(discarded)
        return stuck


@dataclass(frozen=True)
class Profiles:
    """The Scheduler of each profile by schedulerName; a name absent uses ``default``."""

    default: Scheduler
    by_name: Mapping[str, Scheduler]

    def scheduler_for(self, scheduler_name: str) -> Scheduler:
        return self.by_name.get(scheduler_name, self.default)
