"""Both controllers start the same way (ControllerRuntime.run): an API server that cannot be reached
at start is waited for with backoff, and a stop while waiting exits cleanly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import structlog

from fleetsched.controller.policy.operator import KNOWN_RESOURCES, PolicyController, PolicyControllerConfig
from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.kube.client import Connection
from fleetsched.scheduler import Scheduler


class Unreachable:
    """Every request fails as a refused connection does."""

    def __init__(self) -> None:
        self.calls = 0

    async def list_all(self, path: str, **_: Any) -> Any:
        self.calls += 1
        raise ConnectionRefusedError(111, "Connection refused")

    async def get(self, path: str, **_: Any) -> Any:
        self.calls += 1
        raise ConnectionRefusedError(111, "Connection refused")


def scheduler(client: Unreachable) -> ControllerRuntime:
    return SchedulerOperator(
        client=client,  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),
        scheduler=Scheduler(),
        config=OperatorConfig(),
    )


def policy_controller(client: Unreachable) -> ControllerRuntime:
    config = PolicyControllerConfig(resources=(KNOWN_RESOURCES["deployments.apps"],), standalone=True)
    return PolicyController(client=client, connection=None, config=config)  # type: ignore[arg-type]


@pytest.mark.parametrize("build", [scheduler, policy_controller], ids=["scheduler", "policy-controller"])
async def test_an_unreachable_api_is_waited_for_and_a_stop_exits_cleanly(build: Any) -> None:
    client = Unreachable()
    controller = build(client)
    stop = asyncio.Event()
    with structlog.testing.capture_logs() as logs:
        running = asyncio.create_task(controller.run(stop))
        for _ in range(200):  # the first attempt, then a retry after 1 s
            if client.calls >= 2:
                break
            await asyncio.sleep(0.05)
        stop.set()
        code = await asyncio.wait_for(running, timeout=5)
    assert code == 0
    retries = [e for e in logs if e["event"] == "initial_sync_failed"]
    assert [e["retry_in"] for e in retries[:2]] == [1.0, 2.0], "retried, with backoff"
    assert "Connection refused" in retries[0]["error"]
    assert not controller.runtime.synced.is_set()
