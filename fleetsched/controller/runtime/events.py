"""Kubernetes Events with karmada-scheduler's reasons and messages, sent off the scheduling path.

Karmada records two events per outcome: one on the binding and one on the
resource template it points at. Success: ``Normal``/``ScheduleBindingSucceed`` with
``Binding has been scheduled successfully. Result: {c1:2, c2:3}`` (``Result {`` for a
ClusterResourceBinding); failure: ``Warning``/``ScheduleBindingFailed`` with the error text.

Events are informational, so they never delay or fail a scheduling attempt: they go into a bounded
queue that a few sender tasks drain; when the queue is full the event is dropped (as client-go's
broadcaster does). While the scheduler is busy (``busy()``) senders hold events back, for at most
``max_deferral`` seconds each, so a burst of bindings is not slowed by twice as many Event writes.
An identical event repeated for the same object within ``dedupe_window`` is sent once (client-go
aggregates repeats too).

**Source.** karmada-scheduler's Events name the program, ``karmada-scheduler``, as their
``source.component`` (and ``reportingComponent``, which events.k8s.io calls
``reportingController``), whatever its ``--scheduler-name``. fleetsched's do the same with the
program's agent name, the one its writes' field manager and User-Agent carry:
``fleetsched-scheduler`` for the scheduler, ``fleetsched-controller`` for the policy controller
(``component_of``), whatever the scheduler names it serves. Not the scheduler name: run instead
of karmada-scheduler it is ``default-scheduler``, which is kube-scheduler's component name, and
one program serves several names (profiles). ``source.host`` / ``reportingInstance`` is the host
(the pod) name.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

from fleetsched.api.text import EVENT_MESSAGE_LIMIT, fit_message
from fleetsched.api.times import format_time
from fleetsched.kube.client import ApiError, KubeClient

log = structlog.get_logger("fleetsched.events")

REASON_SUCCEED = "ScheduleBindingSucceed"
REASON_FAILED = "ScheduleBindingFailed"
NORMAL = "Normal"
WARNING = "Warning"
COMPONENT = "fleetsched-scheduler"
# Longest pause between two looks at ``busy()`` while Events are held back.
MAX_BUSY_PAUSE = 1.0


def success_message(kind: str, clusters: Iterable[Mapping[str, Any]]) -> str:
    entries = ", ".join(f"{c['name']}:{int(c.get('replicas') or 0)}" for c in clusters)
    separator = " " if kind == "ClusterResourceBinding" else ": "
    return f"Binding has been scheduled successfully. Result{separator}{{{entries}}}"


def group_failure_message(kind: str, key: str, index: int, error: str) -> str:
    """The warning for one failed affinity term (the 'clusterAffiliates' spelling is Karmada's)."""
    return f"failed to schedule {kind}({key}) with clusterAffiliates index({index}): {error}"


@dataclass(frozen=True, slots=True)
class InvolvedObject:
    api_version: str
    kind: str
    name: str
    namespace: str = ""
    uid: str = ""

    @classmethod
    def of_binding(cls, binding: Mapping[str, Any]) -> InvolvedObject:
        meta = binding.get("metadata") or {}
        return cls(
            binding.get("apiVersion", "work.karmada.io/v1alpha2"),
            binding.get("kind", ""),
            meta.get("name", ""),
            meta.get("namespace", ""),
            meta.get("uid", ""),
        )

    @classmethod
    def of_template(cls, binding: Mapping[str, Any]) -> InvolvedObject | None:
        resource = (binding.get("spec") or {}).get("resource") or {}
        if not resource.get("kind") or not resource.get("name"):
            return None
        return cls(
            resource.get("apiVersion", ""),
            resource["kind"],
            resource["name"],
            resource.get("namespace", ""),
            resource.get("uid", ""),
        )


@dataclass(frozen=True, slots=True)
class PendingEvent:
    target: InvolvedObject
    type: str
    reason: str
    message: str
    queued_at: float = 0.0


def component_of(client: Any) -> str:
    """The reporting component for a client's writes: the agent part of its field manager
    (``<agent>`` or ``<agent>/<shard member>``); ``COMPONENT`` when it has none."""
    manager = getattr(client, "field_manager", None)
    return str(manager).split("/", 1)[0] if manager else COMPONENT


def event_body(
    event: PendingEvent, *, now: dt.datetime, host: str, component: str = COMPONENT
) -> dict[str, Any]:
    target = event.target
    # Cluster-scoped objects get their events in "default", as client-go does.
    namespace = target.namespace or "default"
    stamp = format_time(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{target.name}.{time.time_ns():x}", "namespace": namespace},
        "involvedObject": {
            "apiVersion": target.api_version,
            "kind": target.kind,
            "name": target.name,
            "namespace": target.namespace,
            "uid": target.uid,
        },
        "reason": event.reason,
        # kube's NoteLengthLimit, cut at a reason (or target cluster) boundary with a count.
        "message": fit_message(
            event.message,
            EVENT_MESSAGE_LIMIT,
            noun="clusters" if event.reason == REASON_SUCCEED else "reasons",
        ),
        "type": event.type,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": component, "host": host},
        "reportingComponent": component,
        "reportingInstance": host,
    }


class EventRecorder:
    def __init__(
        self,
        client: KubeClient | None,
        *,
        capacity: int = 10000,
        senders: int = 2,
        dedupe_window: float = 300.0,
        busy: Callable[[], bool] | None = None,
        max_deferral: float = 300.0,
        component: str | None = None,
    ) -> None:
        self.client = client
        self.component = component or component_of(client)
        self.busy = busy
        self.max_deferral = max_deferral
        self.queue: asyncio.Queue[PendingEvent] = asyncio.Queue(maxsize=capacity)
        self.senders = senders
        self.dedupe_window = dedupe_window
        self._recent: OrderedDict[tuple[str, str, str, str], float] = OrderedDict()
        self._host = os.environ.get("HOSTNAME") or os.uname().nodename
        self._tasks: list[asyncio.Task[None]] = []
        self.dropped = 0
        self.sent = 0

    def record(self, target: InvolvedObject | None, type_: str, reason: str, message: str) -> None:
        if target is None or self.client is None:
            return
        key = (target.uid or f"{target.kind}/{target.namespace}/{target.name}", type_, reason, message)
        now = time.monotonic()
        seen = self._recent.get(key)
        if seen is not None and now - seen < self.dedupe_window:
            return
        self._recent[key] = now
        self._recent.move_to_end(key)
        while len(self._recent) > 50000:
            self._recent.popitem(last=False)
        try:
            self.queue.put_nowait(PendingEvent(target, type_, reason, message, now))
        except asyncio.QueueFull:
            self.dropped += 1

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._send_forever(), name=f"event-sender-{i}") for i in range(self.senders)
        ]

    async def _send_forever(self) -> None:
        assert self.client is not None
        while True:
            event = await self.queue.get()
            # While busy, look again after 50 ms, doubling up to a second: a long burst is not
            # polled twenty times a second per sender (that was a tenth of the scheduler's CPU).
            pause = 0.05
            while (
                self.busy is not None
                and self.busy()
                and time.monotonic() - event.queued_at < self.max_deferral
            ):
                await asyncio.sleep(pause)
                pause = min(pause * 2, MAX_BUSY_PAUSE)
            body = event_body(event, now=dt.datetime.now(dt.UTC), host=self._host, component=self.component)
            try:
                path = f"/api/v1/namespaces/{body['metadata']['namespace']}/events"
                await self.client.create(path, body, decode=False)  # the echo is not used
                self.sent += 1
            except (ApiError, OSError, TimeoutError) as exc:
                log.debug("event_not_recorded", reason=event.reason, error=str(exc))
            except Exception as exc:  # never let a sender die
                log.warning("event_sender_error", error=repr(exc))
            finally:
                self.queue.task_done()

    async def flush(self, timeout: float) -> None:
        """Give queued events up to ``timeout`` seconds to go out (graceful shutdown)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.queue.join(), timeout)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
