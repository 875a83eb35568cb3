"""The scheduler-side client against real servers: concurrency, the shared timeout, Karmada's
all-or-nothing failure rule, connection reuse, and the user stories through the scheduling core."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
import pytest

from fleetsched.estimator.client import (
    PULL_MODE_REFUSAL,
    AccurateEstimatorClient,
    EstimatorClientConfig,
    EstimatorUnavailable,
)
from fleetsched.estimator.pb import estimator_pb2, service_pb2_grpc
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.types import ClusterInfo
from fleetsched.simulate import simulate_objects

from .conftest import LoopThread, StartedServer, node
from .stories import CLUSTERS, placed, story_binding, story_clusters, story_nodes

pytestmark = pytest.mark.component

CPU12 = {"resourceRequest": {"cpu": "12"}}


class HangingEstimator(service_pb2_grpc.EstimatorServicer):
    async def MaxAvailableReplicas(self, request: Any, context: Any) -> Any:
        await asyncio.sleep(30)
        return estimator_pb2.MaxAvailableReplicasResponse(maxReplicas=1)


@pytest.fixture
def hanging(loop_thread: LoopThread) -> Any:
    async def start() -> tuple[grpc.aio.Server, int]:
        server = grpc.aio.server()
        service_pb2_grpc.add_EstimatorServicer_to_server(HangingEstimator(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        return server, port

    server, port = loop_thread.run(start())
    yield f"127.0.0.1:{port}"
    loop_thread.run(server.stop(None))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _client(addresses: dict[str, str], timeout: float = 3.0) -> AccurateEstimatorClient:
    return AccurateEstimatorClient(EstimatorClientConfig(addresses=addresses, timeout=timeout))


def test_all_clusters_answer_in_order(start: Callable[..., StartedServer]) -> None:
    a = start("member-a", story_nodes(1, "member-a"))
    b = start("member-b", story_nodes(1, "member-b"))
    client = _client({"member-a": a.address, "member-b": b.address})
    try:
        assert client.max_available_replicas(["member-b", "member-a"], CPU12) == [2, 0]
        assert client.max_available_replicas(["member-a", "member-b"], None) == [1100, 220]
        # one connection per cluster, reused
        first = dict(client._channels)
        client.max_available_replicas(["member-a"], CPU12)
        assert client._channels["member-a"] is first["member-a"]
    finally:
        client.close()


def test_a_hanging_estimator_costs_one_timeout_and_discards_the_answer(
        start: Callable[..., StartedServer], hanging: str) -> None:
    a = start("member-a", [node("n1")])
    client = _client({"member-a": a.address, "member-slow": hanging}, timeout=0.5)
    try:
        began = time.monotonic()
        with pytest.raises(EstimatorUnavailable) as failure:
            client.max_available_replicas(["member-a", "member-slow"], None)
        elapsed = time.monotonic() - began
    finally:
        client.close()
    assert "member-slow" in failure.value.failures
    assert "DEADLINE_EXCEEDED" in failure.value.failures["member-slow"]
    assert "member-a" not in failure.value.failures
    assert elapsed < 3.0


class RecordingObserver:
    """An ``RpcObserver`` that remembers the order of starts and ends, and the peak in flight."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[tuple[str, str]] = []
        self.in_flight = 0
        self.peak = 0

    def rpc_started(self, method: str, cluster: str) -> None:
        with self.lock:
            self.events.append(("start", cluster))
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def rpc_finished(self, method: str, cluster: str, code: str, seconds: float) -> None:
        with self.lock:
            self.events.append((code, cluster))
            self.in_flight -= 1


def _in_threads(count: int, call: Callable[[], Any]) -> list[Any]:
    """``call`` from ``count`` threads released together; each result or the exception raised."""
    barrier = threading.Barrier(count, timeout=20)

    def run() -> Any:
        barrier.wait()
        try:
            return call()
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda _: run(), range(count)))


def test_concurrent_callers_wait_on_a_hung_estimator_together(hanging: str) -> None:
    # What the operator's core threads do: N bindings at once, one hung estimator. Nothing in the
    # client may serialise them: all N RPCs are in flight before the first one runs out of time.
    count = 12
    observer = RecordingObserver()
    client = AccurateEstimatorClient(EstimatorClientConfig(addresses={"member-slow": hanging}, timeout=3.0,
                                                           observer=observer))
    try:
        client.connect(["member-slow"])
        outcomes = _in_threads(count, lambda: client.max_available_replicas(["member-slow"], None))
    finally:
        client.close()
    assert all(isinstance(o, EstimatorUnavailable) for o in outcomes)
    assert observer.peak == count
    codes = [code for code, _ in observer.events]
    assert codes[:count] == ["start"] * count
    assert codes[count:] == ["DEADLINE_EXCEEDED"] * count
    assert observer.in_flight == 0


def test_concurrent_first_contacts_share_one_dial(start: Callable[..., StartedServer]) -> None:
    a = start("member-a", [node("n1")])
    opened: list[str] = []

    class Counting(AccurateEstimatorClient):
        def _open(self, address: str) -> grpc.Channel:
            opened.append(address)
            return super()._open(address)

    client = Counting(EstimatorClientConfig(addresses={"member-a": a.address}))
    try:
        outcomes = _in_threads(8, lambda: client.max_available_replicas(["member-a"], None))
    finally:
        client.close()
    assert outcomes == [[110]] * 8
    assert opened == [a.address]


def test_an_absent_estimator_fails_fast_and_discards_the_answer(start: Callable[..., StartedServer]) -> None:
    a = start("member-a", [node("n1")])
    # A generous deadline: a dial of the absent cluster would take all of it, failing fast takes ~nothing,
    # so the bound below tells the two apart even on a loaded machine.
    client = _client({"member-a": a.address, "member-gone": f"127.0.0.1:{_free_port()}"}, timeout=2.0)
    try:
        with pytest.raises(EstimatorUnavailable) as failure:
            client.max_available_replicas(["member-a", "member-gone"], None)
        # from now on the absent cluster fails at once instead of stalling every batch
        began = time.monotonic()
        with pytest.raises(EstimatorUnavailable):
            client.max_available_replicas(["member-gone"], None)
        assert time.monotonic() - began < 1.0
    finally:
        client.close()
    assert set(failure.value.failures) == {"member-gone"}


def test_pull_mode_clusters_are_not_asked_when_disabled(start: Callable[..., StartedServer]) -> None:
    a = start("member-a", story_nodes(1, "member-a"))
    b = start("member-b", story_nodes(1, "member-b"))
    push, pull = ClusterInfo("member-a", sync_mode="Push"), ClusterInfo("member-b", sync_mode="Pull")
    addresses = {"member-a": a.address, "member-b": b.address}
    client = AccurateEstimatorClient(EstimatorClientConfig(addresses=addresses, disable_in_pull_mode=True))
    try:
        # Karmada gives a Pull cluster no connection: a batch with one is discarded, all or nothing.
        with pytest.raises(EstimatorUnavailable) as failure:
            client.max_available_replicas([push, pull], CPU12)
        assert failure.value.failures == {"member-b": PULL_MODE_REFUSAL}
        assert "member-b" not in client._channels  # never dialed
        assert client.max_available_replicas([push], CPU12) == [0]
        assert client.connect([push, pull]) == {"member-b": PULL_MODE_REFUSAL}
    finally:
        client.close()
    # Without the flag (Karmada's default) a Pull cluster's estimator is asked like any other.
    client = AccurateEstimatorClient(EstimatorClientConfig(addresses=addresses))
    try:
        assert client.max_available_replicas([push, pull], CPU12) == [0, 2]
    finally:
        client.close()


def test_an_estimator_that_comes_up_later_is_redialed_in_the_background(
        start: Callable[..., StartedServer]) -> None:
    address = f"127.0.0.1:{_free_port()}"
    client = AccurateEstimatorClient(EstimatorClientConfig(addresses={"late": address}, timeout=2.0,
                                                           redial_after=0.1))
    try:
        assert set(client.connect(["late"])) == {"late"}
        start("late", [node("n1", "2")], address=address)
        deadline = time.monotonic() + 10
        answer = None
        while answer is None and time.monotonic() < deadline:
            began = time.monotonic()
            try:
                answer = client.max_available_replicas(["late"], {"resourceRequest": {"cpu": "1"}})
            except EstimatorUnavailable:
                assert time.monotonic() - began < 1.0  # failing fast (a dial would take 2 s)
                time.sleep(0.1)
    finally:
        client.close()
    assert answer == [2]


def test_service_naming_follows_karmada() -> None:
    config = EstimatorClientConfig()
    assert config.candidates("m1") == [
        "karmada-scheduler-estimator-m1.karmada-system.svc.cluster.local:10352",
        "karmada-scheduler-estimator-m1.karmada-system.svc:10352",
    ]
    assert EstimatorClientConfig(addresses={"m1": "10.0.0.1:9000"}).candidates("m1") == ["10.0.0.1:9000"]


@pytest.mark.parametrize("story", [1, 2])
def test_user_story_moves_the_replica_through_the_scheduling_core(
        start: Callable[..., StartedServer], story: int) -> None:
    servers = {c: start(c, story_nodes(story, c)) for c in CLUSTERS}
    client = _client({c: s.address for c, s in servers.items()})
    try:
        general_only = simulate_objects(story_clusters(story), [story_binding(story)], Scheduler())
        accurate = simulate_objects(story_clusters(story), [story_binding(story)],
                                    Scheduler(estimators=[client]))
    finally:
        client.close()
    assert placed(general_only[0][0]) == {"member-a": 1}
    assert placed(accurate[0][0]) == {"member-b": 1}


def test_a_failing_estimator_leaves_the_general_estimate(start: Callable[..., StartedServer]) -> None:
    a = start("member-a", story_nodes(1, "member-a"))
    client = _client({"member-a": a.address, "member-b": f"127.0.0.1:{_free_port()}"}, timeout=1.0)
    try:
        result = simulate_objects(story_clusters(1), [story_binding(1)], Scheduler(estimators=[client]))
    finally:
        client.close()
    assert placed(result[0][0]) == {"member-a": 1}


def test_service_lookup_follows_karmadas_rules() -> None:
    from fleetsched.estimator.client import service_candidates

    external = {"spec": {"type": "ExternalName", "externalName": "est.example",
                         "ports": [{"port": 10352, "targetPort": 31000}]}}
    assert service_candidates(external, name="s", namespace="ns", port=10352) == ["est.example:31000"]
    with pytest.raises(ValueError, match="not ExternalName"):
        service_candidates({"spec": {"type": "ClusterIP"}}, name="s", namespace="ns", port=10352)
    with pytest.raises(ValueError, match="not a number"):
        named_port = {"spec": {"type": "ExternalName", "ports": [{"port": 10352, "targetPort": "grpc"}]}}
        service_candidates(named_port, name="s", namespace="ns", port=10352)
    seen = []
    config = EstimatorClientConfig(service_lookup=lambda ns, name: seen.append((ns, name)) or external)
    assert config.candidates("m1") == ["est.example:31000"]
    assert seen == [("karmada-system", "karmada-scheduler-estimator-m1")]


def test_a_service_that_cannot_be_used_fails_the_cluster(start: Callable[..., StartedServer]) -> None:
    a = start("member-a", [node("n1")])
    config = EstimatorClientConfig(addresses={"member-a": a.address}, timeout=1.0,
                                   service_lookup=lambda ns, name: {"spec": {"type": "ClusterIP"}})
    client = AccurateEstimatorClient(config)
    try:
        with pytest.raises(EstimatorUnavailable) as failure:
            client.max_available_replicas(["member-a", "member-b"], None)
    finally:
        client.close()
    assert "not ExternalName" in failure.value.failures["member-b"]


def test_component_sets_through_the_cores_protocol(start: Callable[..., StartedServer]) -> None:
    """Spec 4.2/4.5: the core asks ``max_available_component_sets(clusters, components)`` with its own
    Component values; the namespace comes from the components' requirements."""
    from fleetsched.api.quantity import parse_quantity
    from fleetsched.scheduler.types import Component, ReplicaRequirements

    def part(name: str, count: int, cpu: str | None) -> Component:
        requirements = None if cpu is None else ReplicaRequirements(
            resource_request=(("cpu", parse_quantity(cpu)),), namespace="default")
        return Component(name, count, requirements)

    a = start("member-a", story_nodes(1, "member-a"))  # 10 nodes x 8 CPUs
    b = start("member-b", story_nodes(1, "member-b"))  # 2 nodes x 16 CPUs
    client = _client({"member-a": a.address, "member-b": b.address})
    try:
        parts = [part("jm", 1, "4"), part("tm", 2, "2"), part("bare", 1, None)]
        # a: each node fits one set (4 + 2 + 2 CPUs); b: each node fits two
        assert client.max_available_component_sets(["member-a", "member-b"], parts) == [10, 4]
        assert client.max_available_component_sets(["member-b"], [{"name": "w", "replicas": 3}],
                                                   "default") == [220 // 3]
    finally:
        client.close()
