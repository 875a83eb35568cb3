"""Benchmark: does one heavy estimator request stall the server (issue 14 item 4)?

Serves a member of ``--nodes`` nodes on loopback with the production servicer (its event loop in a
thread of this process) and sends one MaxAvailableReplicas request whose node affinity has
``--terms`` terms of ``--expressions`` expressions each (2,000 x 50 is about 2.9 MB, the request of
the issue), while this process keeps measuring:

* how long the server's event loop was blocked: a ticker on that loop sleeps 10 ms at a time and
  records the longest gap beyond it;
* health checks and small MaxAvailableReplicas calls sent every 50 ms during the heavy call: how
  many completed while it was in flight, their worst latency, and how many missed a 3 s deadline
  (the scheduler's default estimator timeout).

It runs the heavy request twice: against the default limits (the server refuses it at once with
INVALID_ARGUMENT) and with the complexity limits raised so that it is computed. Prints figures and
the load average; never asserts a time; exit status 0.

    .venv/bin/python bench/estimator_heavy.py [--nodes 1000] [--terms 2000] [--expressions 50]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import os
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any

import grpc

from fleetsched.estimator import wire
from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.pb import service_pb2_grpc
from fleetsched.estimator.server import EstimatorMetrics, SyncState, start_server

CLUSTER = "member1"


def _nodes(count: int) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": f"node-{i:05d}",
                          "labels": {"zone": f"z{i % 3}", "tier": str(i % 5), "kubernetes.io/os": "linux"}},
             "status": {"allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}}}
            for i in range(count)]


def heavy_request(terms: int, expressions: int) -> Any:
    affinity = {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ("zone", "tier")[e % 2], "operator": "NotIn", "values": [f"x{t}-{e}"]}
                              for e in range(expressions)]}
        for t in range(terms)]}
    return wire.replicas_request_to_pb({"cluster": CLUSTER, "replicaRequirements": {
        "resourceRequest": {"cpu": "1"}, "nodeClaim": {"hardNodeAffinity": affinity}}})


SMALL = wire.replicas_request_to_pb({"cluster": CLUSTER,
                                     "replicaRequirements": {"resourceRequest": {"cpu": "1"}}})


class Ticker:
    """Runs on the server's loop: the longest time a 10 ms sleep overran, i.e. the loop was blocked."""

    def __init__(self) -> None:
        self.worst = 0.0
        self.stopped = False

    async def run(self) -> None:
        while not self.stopped:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            self.worst = max(self.worst, time.perf_counter() - before - 0.01)


def _server_kwargs(limits: Any) -> dict[str, Any]:
    """Limits only where this tree's server takes them (so the bench also runs on the code before)."""
    return {"limits": limits} if "limits" in inspect.signature(start_server).parameters and limits else {}


def run_case(label: str, nodes: int, request: Any, limits: Any) -> None:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    def on_loop(coroutine: Any) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coroutine, loop)
        return future.result(120)

    inventory = MemberInventory(CLUSTER, _nodes(nodes))
    running = on_loop(start_server(inventory.service, address="127.0.0.1:0", state=SyncState(True, True),
                                   metrics=EstimatorMetrics(), **_server_kwargs(limits)))
    ticker = Ticker()
    ticking = asyncio.run_coroutine_threadsafe(ticker.run(), loop)
    address = f"127.0.0.1:{running.port}"
    options = [("grpc.max_send_message_length", 64 << 20)]
    heavy_outcome: dict[str, Any] = {}

    def send_heavy() -> None:
        with grpc.insecure_channel(address, options=options) as channel:
            stub = service_pb2_grpc.EstimatorStub(channel)
            start = time.perf_counter()
            try:
                heavy_outcome["answer"] = stub.MaxAvailableReplicas(request, timeout=600).maxReplicas
            except grpc.RpcError as exc:
                heavy_outcome["answer"] = f"{exc.code().name}: {exc.details()[:90]}"
            heavy_outcome["seconds"] = time.perf_counter() - start

    from grpc_health.v1 import health_pb2, health_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        stub.MaxAvailableReplicas(SMALL, timeout=10)  # warm the channel
        ticker.worst = 0.0
        heavy = threading.Thread(target=send_heavy)
        heavy.start()
        latencies: list[float] = []
        missed = 0
        while heavy.is_alive():
            start = time.perf_counter()
            try:
                health.Check(health_pb2.HealthCheckRequest(service=""), timeout=3)
                stub.MaxAvailableReplicas(SMALL, timeout=3)
                if heavy.is_alive():
                    latencies.append(time.perf_counter() - start)
            except grpc.RpcError as exc:
                if exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
                    missed += 1
            time.sleep(0.05)
        heavy.join()
    ticker.stopped = True
    ticking.result(5)
    on_loop(running.stop(None))
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    worst = max(latencies) if latencies else float("nan")
    seconds = heavy_outcome.get("seconds", 0.0)
    print(f"{label}: heavy answer {heavy_outcome.get('answer')!r} after {seconds:.2f} s; "
          f"event loop blocked at most {ticker.worst:.3f} s; {len(latencies)} health check + small request "
          f"pairs completed meanwhile (worst {worst:.3f} s), {missed} missed a 3 s deadline; "
          f"load average {os.getloadavg()[0]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--terms", type=int, default=2000)
    parser.add_argument("--expressions", type=int, default=50)
    args = parser.parse_args()
    request = heavy_request(args.terms, args.expressions)
    print(f"heavy request: {request.ByteSize():,} bytes "
          f"({args.terms} terms x {args.expressions} expressions), "
          f"{args.nodes} nodes; load average at start {os.getloadavg()[0]:.2f}")
    limits = None
    with contextlib.suppress(ImportError):
        from fleetsched.estimator.limits import RequestLimits

        limits = RequestLimits()
        run_case("default limits", args.nodes, request, limits)
        limits = RequestLimits(max_affinity_terms=args.terms, max_affinity_expressions=args.expressions,
                               max_affinity_total_expressions=args.terms * args.expressions)
    run_case("limits raised to admit it" if limits else "no limits (before)", args.nodes, request, limits)
    return 0


if __name__ == "__main__":
    sys.exit(main())
