"""The policy controller's kopf handlers run on the event loop.

kopf runs a plain ``def`` handler in an executor thread. The policy controller's handlers update
its caches and push onto the queue, whose heap and ``asyncio.Event`` only the loop may touch: from
a thread, a wake-up can be lost and the heap corrupted under load. So every handler it registers is
a coroutine function, and awaiting one queues the key and wakes a waiting worker. No server here;
tests/e2e/test_policy_stress.py drives the same handlers through a real apiserver.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import kopf
import pytest

from fleetsched.controller.policy.operator import (
    BINDING_PLURALS,
    DEFAULT_RESOURCES,
    KNOWN_RESOURCES,
    POLICY_PLURALS,
    PolicyController,
    PolicyControllerConfig,
)
from fleetsched.controller.runtime.queue import Outcome, QueueKey

RESOURCES = tuple(KNOWN_RESOURCES[name] for name in DEFAULT_RESOURCES)


def a_controller(*, standalone: bool) -> PolicyController:
    config = PolicyControllerConfig(resources=RESOURCES, standalone=standalone)
    return PolicyController(client=None, connection=None, config=config)  # type: ignore[arg-type]


def resource_handlers(registry: kopf.OperatorRegistry) -> list[Any]:
    """Every handler bound to a resource (watching, indexing, changing, spawning, webhooks)."""
    return [
        handler
        for part in (registry._watching, registry._indexing, registry._changing, registry._spawning,
                     registry._webhooks)
        for handler in part.get_all_handlers()
    ]


@pytest.mark.parametrize("standalone", [False, True], ids=["beside-karmada", "standalone"])
def test_every_resource_handler_is_a_coroutine_function(standalone: bool) -> None:
    registry = a_controller(standalone=standalone).kopf_registry()
    handlers = resource_handlers(registry)
    # + WorkloadRebalancers (--controllers: workloadRebalancer is on by default)
    expected = len(POLICY_PLURALS) + len(RESOURCES) + (len(BINDING_PLURALS) if standalone else 0) + 1
    assert len(handlers) == expected
    for handler in handlers:
        assert inspect.iscoroutinefunction(handler.fn), f"{handler.selector}: kopf would run it in a thread"
    # The one activity is runtime.kopf_registry's login, which returns credentials and touches no
    # controller state; kopf may run it in a thread.
    assert [h.activity.value for h in registry._activities.get_all_handlers()] == ["authentication"]


def handler_for(registry: kopf.OperatorRegistry, group: str, plural: str) -> Any:
    (handler,) = [h for h in registry._watching.get_all_handlers()
                  if h.selector.group == group and h.selector.any_name == plural]
    return handler


async def test_awaiting_a_template_handler_queues_the_key_and_wakes_a_worker() -> None:
    controller = a_controller(standalone=False)
    registry = controller.kopf_registry()
    waiting = asyncio.create_task(controller.queue.pop())
    await asyncio.sleep(0)  # the worker is parked on the queue's event
    obj = {"metadata": {"name": "web", "namespace": "shop", "resourceVersion": "1"}, "spec": {}}
    await handler_for(registry, "apps", "deployments").fn(event={"type": "ADDED", "object": obj})
    entry = await asyncio.wait_for(waiting, timeout=5)
    assert entry.key == QueueKey("deployments.apps", "shop", "web")
    assert controller.templates["deployments.apps"].get("shop/web") is not None


async def test_awaiting_a_policy_handler_queues_the_policy() -> None:
    controller = a_controller(standalone=False)
    registry = controller.kopf_registry()
    policy = {"metadata": {"name": "p", "namespace": "shop", "resourceVersion": "1", "generation": 1}}
    await handler_for(registry, "policy.karmada.io", "propagationpolicies").fn(
        event={"type": "ADDED", "object": policy})
    entry = controller.queue.pop_nowait()
    assert entry is not None and entry.key == QueueKey("PropagationPolicy", "shop", "p")


async def test_a_rebalancer_is_queued_when_created_and_when_its_spec_changes_only() -> None:
    controller = a_controller(standalone=False)
    handler = handler_for(controller.kopf_registry(), "apps.karmada.io", "workloadrebalancers").fn
    key = QueueKey("WorkloadRebalancer", "", "demo")

    def rebalancer(generation: int, resource_version: str) -> dict[str, Any]:
        return {"metadata": {"name": "demo", "uid": "u-1", "generation": generation,
                             "resourceVersion": resource_version}}

    await handler(event={"type": "ADDED", "object": rebalancer(1, "1")})
    entry = controller.queue.pop_nowait()
    assert entry is not None and entry.key == key
    controller.queue.done(entry, Outcome.DONE)
    await handler(event={"type": "MODIFIED", "object": rebalancer(1, "2")})  # its status, written by us
    assert controller.queue.pop_nowait() is None
    await handler(event={"type": "MODIFIED", "object": rebalancer(2, "3")})  # a user changed its spec
    entry = controller.queue.pop_nowait()
    assert entry is not None and entry.key == key
    controller.queue.done(entry, Outcome.DONE)
    await handler(event={"type": "DELETED", "object": rebalancer(2, "4")})
    assert controller.queue.pop_nowait() is None and controller.rebalancer_uid("demo") is None


def test_controllers_without_workload_rebalancer_watch_no_rebalancer() -> None:
    config = PolicyControllerConfig(resources=RESOURCES, workload_rebalancer=False)
    controller = PolicyController(client=None, connection=None, config=config)  # type: ignore[arg-type]
    groups = {h.selector.group for h in controller.kopf_registry()._watching.get_all_handlers()}
    assert "apps.karmada.io" not in groups and "policy.karmada.io" in groups
