"""Benchmark of the accurate estimator through real gRPC: latency p50/p99, throughput, server memory.

For each snapshot (default: the two 5,000-node / 50,000-pod files in
../shared/estimator-conformance/perf/) a server process loads the member cluster exactly as
``fleetsched estimate`` does and serves it on loopback with the production gRPC servicer; this process
is the client. It prints:

* load time and the server's resident memory (VmRSS, and VmHWM = peak) once serving;
* sequential latency of each request of the file (p50/p99/max over ``--calls`` calls, round-robin);
* throughput with ``--concurrency`` callers in flight (grpc.aio client) for ``--seconds``;
* the algorithm alone in process (no gRPC), and the cost of one pod update event.

Answers are checked against the file's expectations first. It never asserts a time; exit status 0.

    .venv/bin/python bench/estimator.py [FILE ...] [--calls 2000] [--concurrency 16] [--seconds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc
import yaml

ROOT = Path(__file__).resolve().parents[1]
PERF = ROOT.parent / "shared" / "estimator-conformance" / "perf"
DEFAULT_FILES = sorted(PERF.glob("*.input.yaml"))


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _rss(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def _release_free_memory() -> None:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(name).malloc_trim(0)


# ----------------------------------------------------------------------------------------- server side
def serve(path: str) -> None:
    """Child process: load the snapshot, serve it, print the port, wait for stdin to close."""
    import logging

    import structlog

    from fleetsched.estimator.estimate_cmd import load
    from fleetsched.estimator.server import EstimatorMetrics, SyncState, start_server

    # stdout is a pipe nobody reads after the port line: keep per-request logs off it.
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
                        logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    started = time.perf_counter()
    inventory, _ = load([path])
    loaded = time.perf_counter() - started
    gc.collect()
    gc.freeze()  # as the server does once synced: the snapshot is not rescanned by every full collection
    _release_free_memory()  # the parsed YAML documents are gone; give their pages back so RSS is what stays

    async def main() -> None:
        running = await start_server(inventory.service, address="127.0.0.1:0", state=SyncState(True, True),
                                     metrics=EstimatorMetrics())
        print(f"{running.port} {loaded:.3f}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await running.stop(None)

    asyncio.run(main())


# ----------------------------------------------------------------------------------------- client side
def _requests(path: Path) -> tuple[list[Any], list[dict[str, Any]]]:
    from fleetsched.estimator import wire

    requests = []
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with open(path) as f:
        for doc in yaml.load_all(f, Loader=loader):
            if doc and doc.get("kind") == "MaxAvailableReplicasRequest":
                requests.append(wire.replicas_request_to_pb(doc))
    expect_path = path.with_name(path.name.replace(".input.yaml", ".expect.yaml"))
    expected = yaml.safe_load(expect_path.read_text())["results"] if expect_path.exists() else []
    return requests, expected


async def _throughput(address: str, requests: list[Any], concurrency: int, seconds: float) -> float:
    from fleetsched.estimator.pb import service_pb2_grpc

    async with grpc.aio.insecure_channel(address) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        deadline = time.perf_counter() + seconds
        done = 0

        async def worker(offset: int) -> None:
            nonlocal done
            i = offset
            while time.perf_counter() < deadline:
                await stub.MaxAvailableReplicas(requests[i % len(requests)], timeout=10)
                done += 1
                i += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(concurrency)))
        return done / (time.perf_counter() - started)


def bench_file(path: Path, *, calls: int, concurrency: int, seconds: float) -> None:
    from fleetsched.estimator.pb import service_pb2_grpc

    requests, expected = _requests(path)
    child = subprocess.Popen([sys.executable, __file__, "--serve", str(path)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert child.stdout is not None and child.stdin is not None
    port, load_seconds = child.stdout.readline().split()
    address = f"127.0.0.1:{port}"
    rss, peak = _rss(child.pid)
    print(f"\n{path.name}")
    print(f"  server: loaded in {float(load_seconds):.2f}s; "
          f"memory while serving {rss:.0f} MiB (peak {peak:.0f} MiB)")
    try:
        with grpc.insecure_channel(address) as channel:
            stub = service_pb2_grpc.EstimatorStub(channel)
            for i, request in enumerate(requests):
                answer = stub.MaxAvailableReplicas(request, timeout=30).maxReplicas
                want = expected[i].get("maxReplicas") if i < len(expected) else None
                print(f"  request {i}: maxReplicas={answer} (recorded: {want})"
                      + ("" if want in (None, answer) else "  MISMATCH"))
            for _ in range(50):  # warm up
                stub.MaxAvailableReplicas(requests[0], timeout=30)
            per_request: list[list[float]] = [[] for _ in requests]
            for i in range(calls):
                k = i % len(requests)
                started = time.perf_counter()
                stub.MaxAvailableReplicas(requests[k], timeout=30)
                per_request[k].append((time.perf_counter() - started) * 1000)
        every = [x for xs in per_request for x in xs]
        for k, xs in enumerate(per_request):
            print(f"  gRPC sequential, request {k}: p50 {_percentile(xs, 0.5):.3f} ms  "
                  f"p99 {_percentile(xs, 0.99):.3f} ms  max {max(xs):.3f} ms  ({len(xs)} calls)")
        print(f"  gRPC sequential, all: p50 {_percentile(every, 0.5):.3f} ms  "
              f"p99 {_percentile(every, 0.99):.3f} ms"
              f"  mean {statistics.fmean(every):.3f} ms  -> {1000 / statistics.fmean(every):.0f} req/s")
        rate = asyncio.run(_throughput(address, requests, concurrency, seconds))
        print(f"  gRPC throughput, {concurrency} in flight: {rate:.0f} req/s")
        rss, peak = _rss(child.pid)
        print(f"  server memory after the run: {rss:.0f} MiB (peak {peak:.0f} MiB)")
    finally:
        child.stdin.close()
        child.wait(30)
    _in_process(path, requests)


def _in_process(path: Path, requests: list[Any]) -> None:
    from fleetsched.estimator import handlers
    from fleetsched.estimator.estimate_cmd import load
    from fleetsched.estimator.service import apply_pod

    inventory, _ = load([str(path)])
    service = inventory.service
    timings = []
    for i in range(1000):
        started = time.perf_counter()
        handlers.max_available_replicas(service, requests[i % len(requests)])
        timings.append((time.perf_counter() - started) * 1000)
    node = inventory.table.node_names()[0]
    events = []
    for i in range(1000):
        pod = {"metadata": {"name": f"bench-{i}", "namespace": "bench"},
               "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": "100m"}}}]},
               "status": {"phase": "Running"}}
        started = time.perf_counter()
        apply_pod(inventory.table, pod)
        events.append((time.perf_counter() - started) * 1e6)
    print(f"  in process (no gRPC): p50 {_percentile(timings, 0.5):.3f} ms  "
          f"p99 {_percentile(timings, 0.99):.3f} ms;"
          f" one pod event: p50 {_percentile(events, 0.5):.1f} us")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--serve", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    print(f"estimator benchmark: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
          f"Python {sys.version.split()[0]}, grpcio {grpc.__version__}")
    for path in args.files:
        bench_file(path, calls=args.calls, concurrency=args.concurrency, seconds=args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
