"""The standard series Karmada's and client-go's dashboards read: ``workqueue_*`` change as a queue
works, ``rest_client_*`` as the kube client talks to a real HTTP server on loopback, and
``karmada_build_info`` carries Karmada's labels in every process's registry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from prometheus_client import CollectorRegistry

from fleetsched.controller.runtime import command, metrics
from fleetsched.controller.runtime.queue import Outcome, QueueKey, SchedulingQueue
from fleetsched.estimator.server import EstimatorMetrics
from fleetsched.kube.client import ApiError, Connection, KubeClient
from fleetsched.webhook.server import Metrics as WebhookMetrics

KARMADA_BUILD_LABELS = {"git_version", "git_commit", "git_short_commit", "git_tree_state", "build_date",
                        "go_version", "compiler", "platform"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 500.0

    def __call__(self) -> float:
        return self.now


def sample(series: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(series, labels) or 0.0


def test_workqueue_series_follow_adds_takes_dones_and_retries() -> None:
    name = "test-queue-follow"
    clock = FakeClock()
    queue = SchedulingQueue(clock=clock)
    metrics.instrument_queue(queue, name)
    a, b = QueueKey("ResourceBinding", "ns", "a"), QueueKey("ResourceBinding", "ns", "b")

    queue.push(a)
    queue.push(b)
    queue.push(a)  # already waiting: no add, as client-go's dirty set
    assert sample("workqueue_adds_total", name=name) == 2
    assert sample("workqueue_depth", name=name) == 2

    clock.now += 3.0
    entry = queue.pop_nowait()
    assert entry is not None
    assert sample("workqueue_depth", name=name) == 1
    assert sample("workqueue_queue_duration_seconds_count", name=name) == 1
    assert sample("workqueue_queue_duration_seconds_sum", name=name) == pytest.approx(3.0)

    clock.now += 2.0
    assert sample("workqueue_unfinished_work_seconds", name=name) == pytest.approx(2.0)
    assert sample("workqueue_longest_running_processor_seconds", name=name) == pytest.approx(2.0)
    other = queue.pop_nowait()
    assert other is not None
    clock.now += 1.0
    assert sample("workqueue_unfinished_work_seconds", name=name) == pytest.approx(3.0 + 1.0)
    assert sample("workqueue_longest_running_processor_seconds", name=name) == pytest.approx(3.0)

    queue.done(entry, Outcome.ERROR)  # to backoff: a retry
    queue.done(other, Outcome.UNSCHEDULABLE)  # to the unschedulable set: a retry too
    assert sample("workqueue_retries_total", name=name) == 2
    assert sample("workqueue_work_duration_seconds_count", name=name) == 2
    assert sample("workqueue_work_duration_seconds_sum", name=name) == pytest.approx(3.0 + 1.0)
    assert sample("workqueue_unfinished_work_seconds", name=name) == 0
    assert sample("workqueue_longest_running_processor_seconds", name=name) == 0

    clock.now += 60.0
    assert queue.flush_backoff() == 1  # back to the active queue: an add, as client-go's AddAfter
    assert sample("workqueue_adds_total", name=name) == 3
    assert sample("workqueue_depth", name=name) == 1
    again = queue.pop_nowait()
    assert again is not None
    queue.done(again, Outcome.DONE)
    assert sample("workqueue_retries_total", name=name) == 2
    assert sample("workqueue_depth", name=name) == 0


def test_a_queue_without_observer_reports_nothing_and_a_gone_queue_is_not_reported() -> None:
    name = "test-queue-gone"
    queue = SchedulingQueue(clock=FakeClock())
    queue.push("k")
    assert metrics.REGISTRY.get_sample_value("workqueue_depth", {"name": name}) is None
    metrics.instrument_queue(queue, name)
    assert sample("workqueue_depth", name=name) == 1
    del queue
    assert metrics.REGISTRY.get_sample_value("workqueue_depth", {"name": name}) is None


@pytest.fixture
async def apiserver() -> AsyncIterator[str]:
    """A real HTTP server on loopback answering like an API server: 200, 404, and 409."""

    async def handle(request: web.Request) -> web.Response:
        if request.path.endswith("/missing"):
            return web.json_response({"kind": "Status", "reason": "NotFound", "message": "gone"}, status=404)
        if request.method == "PATCH":
            return web.json_response({"kind": "Status", "reason": "Conflict", "message": "old"}, status=409)
        return web.json_response({"kind": "ConfigMap", "metadata": {"name": "x"}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"127.0.0.1:{port}"
    await runner.cleanup()


async def test_rest_client_series_count_each_request_by_code_method_and_host(apiserver: str) -> None:
    args = type("Args", (), {"kube_api_qps": 0.0, "kube_api_burst": 0, "shard_mode": "none"})()
    client = command.kube_client(Connection(server=f"http://{apiserver}"), args, agent="test")  # type: ignore[arg-type]
    try:
        before_ok = sample("rest_client_requests_total", code="200", method="GET", host=apiserver)
        before_count = sample("rest_client_request_duration_seconds_count", verb="GET", host=apiserver)
        await client.get("/api/v1/namespaces/a/configmaps/x")
        await client.get("/api/v1/namespaces/a/configmaps/x")
        with pytest.raises(ApiError):
            await client.get("/api/v1/namespaces/a/configmaps/missing")
        with pytest.raises(ApiError):
            await client.merge_patch("/api/v1/namespaces/a/configmaps/x", {"data": {}})
        assert sample("rest_client_requests_total", code="200", method="GET", host=apiserver) == before_ok + 2
        assert sample("rest_client_requests_total", code="404", method="GET", host=apiserver) >= 1
        assert sample("rest_client_requests_total", code="409", method="PATCH", host=apiserver) >= 1
        assert sample("rest_client_request_duration_seconds_count", verb="GET", host=apiserver) == (
            before_count + 3
        )
        assert sample("rest_client_request_duration_seconds_count", verb="PATCH", host=apiserver) >= 1
    finally:
        await client.close()


async def test_a_request_that_gets_no_answer_is_counted_as_error() -> None:
    # a port nobody listens on: the connection is refused
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    host = f"127.0.0.1:{port}"
    seen: list[tuple[str, str, str]] = []
    client = KubeClient(Connection(server=f"http://{host}"))
    client.observe_request = lambda method, host, code, seconds: seen.append((method, host, code))
    try:
        with pytest.raises(OSError):
            await client.get("/api")
    finally:
        await client.close()
    assert seen and seen[0] == ("GET", host, "<error>")


@pytest.mark.parametrize("registry", [
    pytest.param(lambda: metrics.REGISTRY, id="scheduler and policy controller"),
    pytest.param(lambda: EstimatorMetrics().registry, id="estimator"),
    pytest.param(lambda: WebhookMetrics().registry, id="webhook"),
])
def test_build_info_has_karmadas_labels_in_every_process(registry: object) -> None:
    reg: CollectorRegistry = registry()  # type: ignore[operator]
    families = [f for f in reg.collect() if f.name == "karmada_build_info"]
    assert len(families) == 1 and len(families[0].samples) == 1
    only = families[0].samples[0]
    assert set(only.labels) == KARMADA_BUILD_LABELS
    assert only.value == 1
    assert only.labels["git_version"].startswith("v")


def test_the_policy_controller_exports_its_leadership() -> None:
    from fleetsched.controller.policy.config import PolicyControllerConfig
    from fleetsched.controller.policy.operator import PolicyController

    controller = PolicyController(client=None, connection=None, config=PolicyControllerConfig())  # type: ignore[arg-type]
    controller.on_leading(True)
    assert sample("fleetsched_policy_controller_is_leader") == 1
    controller.on_leading(False)
    assert sample("fleetsched_policy_controller_is_leader") == 0
