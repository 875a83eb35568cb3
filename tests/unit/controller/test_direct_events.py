"""Raw watch events reach the controllers' functions without kopf's per-event causation machinery."""

from __future__ import annotations

from typing import Any

import kopf
import structlog
from kopf._cogs.structs import references
from kopf._core.reactor import processing

from fleetsched.controller.runtime import controller as runtime


def a_registry(received: list[Any]) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    async def on_widget(event: Any) -> None:
        if event["object"].get("boom"):
            raise RuntimeError("a handler bug")
        received.append(event)

    runtime.on_raw_event(registry, "example.io", "v1", "widgets", on_widget)
    return registry


async def test_the_event_goes_straight_to_the_function_and_a_failure_is_logged() -> None:
    assert runtime.use_direct_raw_events_in_kopf()
    assert runtime.use_direct_raw_events_in_kopf(), "installing twice is a no-op"
    received: list[Any] = []
    registry = a_registry(received)
    resource = references.Resource("example.io", "v1", "widgets")
    event = {"type": "ADDED", "object": {"metadata": {"name": "w"}}}
    # only what the direct path reads; kopf's own path would need its memories, settings, queues...
    process = processing.process_resource_event
    assert await process(registry=registry, resource=resource, raw_event=event) is None
    assert received == [event]
    with structlog.testing.capture_logs() as logs:
        bad = {"type": "MODIFIED", "object": {"boom": True}}
        await processing.process_resource_event(registry=registry, resource=resource, raw_event=bad)
    assert [e["event"] for e in logs] == ["event_handler_failed"]
    assert logs[0]["resource"] == "widgets.example.io"


async def test_kopf_still_watches_the_resource_through_a_raw_event_handler() -> None:
    received: list[Any] = []
    registry = a_registry(received)
    (handler,) = registry._watching.get_all_handlers()
    assert (handler.selector.group, handler.selector.any_name) == ("example.io", "widgets")
    event = {"type": "DELETED", "object": {"metadata": {"name": "w"}}}
    await handler.fn(event=event, logger=None)  # kopf's own path, should the direct one be absent
    assert received == [event]
