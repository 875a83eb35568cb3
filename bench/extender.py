"""What an HTTPS extender adds per binding: one filter + prioritize round trip over keep-alive.

Starts the test extender (``fleetsched.testing.extender``, behaviour ``ok``) as its own process on
loopback with a throwaway CA, builds 100 Clusters (labels, taints, resource summaries), and runs
``run_extenders`` for one new binding after another:

- blocking: a scheduling worker thread calls the blocking face; the exchange runs on the edge loop;
- async: ``run_extenders_async`` on the loop that owns the connections (the operator's case);
- cold clusters: as blocking, but every round gets new ClusterInfo values, so each request also
  renders all 100 clusters (what a round costs right after every cluster changed);
- names only: a cluster-cache-capable extender (kube's ``nodeCacheCapable``): requests carry
  ``clusterNames`` and not the Cluster objects;
- 1 cluster: the floor, two HTTPS exchanges with almost nothing in them.

The test extender decodes requests as plain JSON (``--no-validate``), as a lean extender would.

Prints p50/p99/max wall-clock milliseconds per binding; the CPU time per binding of the scheduler
process (the client, edge loop included) and of the extender process, which a loaded machine does
not inflate the way it does wall-clock time; the server-side connection count (keep-alive: expect 1
per client); and the load average before and after. Never asserts a time.

    .venv/bin/python bench/extender.py [--rounds N] [--clusters C]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvloop

from fleetsched.api.quantity import Quantity
from fleetsched.extender.client import HTTPExtender
from fleetsched.extender.run import run_extenders, run_extenders_async
from fleetsched.scheduler.config.types import ExtenderConfig, ExtenderTLS
from fleetsched.scheduler.types import (
    ClusterInfo,
    Placement,
    ReplicaRequirements,
    ReplicaScheduling,
    ResourceSummary,
    SchedulingBinding,
    Taint,
)
from fleetsched.testing.extender import FILTER_LABEL, SCORE_LABEL
from fleetsched.testing.pki import CertificateAuthority, write_private


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def clusters(n: int) -> list[ClusterInfo]:
    out = []
    for i in range(n):
        labels = {"region": f"r{i % 5}", "tier": "gold" if i % 3 else "silver", "team": f"t{i % 7}",
                  SCORE_LABEL: str(i % 11)}
        if i % 10 == 0:
            labels[FILTER_LABEL] = "reject"
        summary = ResourceSummary(
            allocatable={"cpu": Quantity.parse("64"), "memory": Quantity.parse("256Gi"),
                         "pods": Quantity.parse("110")},
            allocated={"cpu": Quantity.parse(f"{i % 60}500m"), "memory": Quantity.parse(f"{i}Gi")},
            allocating={},
        )
        out.append(ClusterInfo(name=f"member-{i:03d}", labels=labels, provider="aws", region=f"r{i % 5}",
                               zones=(f"r{i % 5}a", f"r{i % 5}b"),
                               taints=(Taint("dedicated", "batch", "NoSchedule"),) if i % 9 == 0 else (),
                               resource_summary=summary, sync_mode="Push"))
    return out


def a_binding(i: int) -> SchedulingBinding:
    return SchedulingBinding(
        kind="ResourceBinding", name=f"web-{i}-deployment", namespace="shop", replicas=3,
        replica_requirements=ReplicaRequirements(resource_request=(("cpu", Quantity.parse("500m")),
                                                                   ("memory", Quantity.parse("1Gi")))),
        placement=Placement(replica_scheduling=ReplicaScheduling("Divided", "Aggregated")),
    )


def start_server(directory: Path) -> tuple[subprocess.Popen[str], int, ExtenderTLS]:
    ca = CertificateAuthority.create("bench-extender-ca")
    cert, key = ca.issue("extender", dns_names=("localhost",), ip_addresses=("127.0.0.1",), server=True)
    (directory / "ca.crt").write_bytes(ca.cert_pem)
    (directory / "tls.crt").write_bytes(cert)
    write_private(directory / "tls.key", key)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fleetsched.testing.extender", "--cert", str(directory / "tls.crt"),
         "--key", str(directory / "tls.key"), "--no-validate"],
        stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening "):
        proc.kill()
        raise SystemExit(f"the test extender did not start: {line!r}")
    return proc, int(line.split()[1]), ExtenderTLS(ca_file=str(directory / "ca.crt"))


@dataclass
class Run:
    """Wall-clock time per binding, and the CPU time both processes spent per binding."""

    samples: list[float]
    client_cpu: float
    server_cpu: float


class Server:
    def __init__(self, port: int, ca: str) -> None:
        self.url = f"https://127.0.0.1:{port}/stats"
        self.ctx = ssl.create_default_context(cafile=ca)

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url, context=self.ctx, timeout=5) as resp:
            return dict(json.loads(resp.read()))

    def cpu(self) -> float:
        return float(self.stats()["cpu_seconds"])


def report(label: str, run: Run) -> None:
    ms = [s * 1000 for s in run.samples]
    print(f"  {label:<33} p50 {percentile(ms, 0.5):6.3f} ms  p99 {percentile(ms, 0.99):6.3f} ms  "
          f"max {max(ms):6.2f} ms  | CPU per binding: scheduler {run.client_cpu * 1000:.3f} ms, "
          f"extender {run.server_cpu * 1000:.3f} ms  ({len(ms)} bindings)")


def timed(server: Server, rounds: int, warmup: int, one: Callable[[int], object]) -> Run:
    for i in range(warmup):
        one(-1 - i)
    samples = []
    server_before, client_before = server.cpu(), time.process_time()
    for i in range(rounds):
        started = time.perf_counter()
        one(i)
        samples.append(time.perf_counter() - started)
    client_cpu = (time.process_time() - client_before) / rounds
    return Run(samples, client_cpu, (server.cpu() - server_before) / rounds)


async def timed_async(server: Server, rounds: int, warmup: int,
                      one: Callable[[int], Awaitable[object]]) -> Run:
    for i in range(warmup):
        await one(-1 - i)
    samples = []
    server_before, client_before = server.cpu(), time.process_time()
    for i in range(rounds):
        started = time.perf_counter()
        await one(i)
        samples.append(time.perf_counter() - started)
    client_cpu = (time.process_time() - client_before) / rounds
    return Run(samples, client_cpu, (server.cpu() - server_before) / rounds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--clusters", type=int, default=100)
    args = parser.parse_args()
    load_before = os.getloadavg()
    fleet = clusters(args.clusters)
    bindings = [a_binding(i) for i in range(args.rounds + 100)]  # built outside the timing

    def binding(i: int) -> SchedulingBinding:
        return bindings[i]  # a new binding each round; warm-up rounds use the last ones
    with tempfile.TemporaryDirectory() as tmp:
        proc, port, tls = start_server(Path(tmp))
        try:
            cfg = ExtenderConfig(url_prefix=f"https://127.0.0.1:{port}/ok", filter_verb="filter",
                                 prioritize_verb="prioritize", weight=1, http_timeout_seconds=5, tls=tls)
            print(f"extender benchmark: {os.cpu_count()} CPUs, {args.clusters} clusters, filter + prioritize "
                  f"per binding over HTTPS keep-alive (TLS {tls.ca_file and 'verified'}), test extender in "
                  "its own process")
            ext = HTTPExtender(cfg)
            kept = len(run_extenders([ext], a_binding(0), fleet).feasible)
            print(f"  the extender keeps {kept} of {len(fleet)} clusters and scores them")

            server = Server(port, str(tls.ca_file))
            blocking = timed(server, args.rounds, 50, lambda i: run_extenders([ext], binding(i), fleet))
            conns_blocking = int(server.stats()["connections"])
            cold_rounds = max(args.rounds // 4, 50)
            fresh = [clusters(args.clusters) for _ in range(cold_rounds + 10)]  # built outside the timing
            cold = timed(server, cold_rounds, 10, lambda i: run_extenders([ext], binding(i), fresh[i]))
            ext.close()
            names_ext = HTTPExtender(cfg, cluster_cache_capable=True)
            names_only = timed(server, args.rounds, 50,
                               lambda i: run_extenders([names_ext], binding(i), fleet))
            names_ext.close()
            floor_ext = HTTPExtender(cfg)
            floor = timed(server, args.rounds, 50,
                          lambda i: run_extenders([floor_ext], binding(i), fleet[:1]))
            floor_ext.close()

            async def on_loop() -> Run:
                own = HTTPExtender(cfg, loop=asyncio.get_running_loop())
                run = await timed_async(server, args.rounds, 50,
                                        lambda i: run_extenders_async([own], binding(i), fleet))
                await own.aclose()
                return run

            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:  # as the operators run
                awaited = runner.run(on_loop())
            conns_total = int(server.stats()["connections"])
        finally:
            proc.terminate()
            proc.wait(5)
    report("blocking face (worker thread)", blocking)
    report("async face (on the owning loop)", awaited)
    report("blocking face, cold clusters", cold)
    report("blocking face, names only", names_only)
    report("blocking face, 1 cluster (floor)", floor)
    print(f"  TCP connections the extender saw: {conns_blocking} for the blocking runs, "
          f"{conns_total} in all (one more per client)")
    print("  load average before " + "/".join(f"{x:.2f}" for x in load_before)
          + ", after " + "/".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
