"""What an HTTPS extender adds per binding: one filter + prioritize round trip over keep-alive.

Starts the test extender (``fleetsched.testing.extender``, behaviour ``ok``) as its own process on
loopback with a throwaway CA, builds 100 Clusters (labels, taints, resource summaries), and
schedules one new binding after another the way the scheduler does: ``Scheduler(extenders=[...])``
(the framework runtime runs the default plugins, then the extender's filter and prioritize) in this
thread, which calls the client's blocking face; the exchange runs on the edge loop. Each row with
an extender is paired with the same row without one, and the difference is what the extender adds:

- warm: one snapshot for all rounds (the plugins' answers are reused, the extender is asked every
  time);
- cold clusters: every round gets new ClusterInfo values in a new snapshot, so each request also
  renders all 100 clusters (what a round costs right after every cluster changed);
- names only: a cluster-cache-capable extender (kube's ``nodeCacheCapable``): requests carry
  ``clusterNames`` and not the Cluster objects;
- 1 cluster: the floor, two HTTPS exchanges with almost nothing in them.

The test extender decodes requests as plain JSON (``--no-validate``), as a lean extender would.

Prints p50/p99/max wall-clock milliseconds per binding; the CPU time per binding of the scheduler
process (plugins, client and edge loop) and of the extender process, which a loaded machine does
not inflate the way it does wall-clock time; what the extender adds (p50 and scheduler CPU, with
minus without); the server-side connection count (keep-alive: expect 1 per client); and the load
average before and after. Never asserts a time.

    .venv/bin/python bench/extender.py [--rounds N] [--clusters C]
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetsched.api.quantity import Quantity
from fleetsched.extender.client import HTTPExtender
from fleetsched.extender.metrics import count_ignored_failure
from fleetsched.scheduler.framework.interface import Extender
from fleetsched.scheduler.framework.profile import ExtenderConfig, ExtenderTLS
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import (
    BindingStatus,
    ClusterInfo,
    ObjectReference,
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
                               resource_summary=summary, sync_mode="Push",
                               api_enablements=frozenset({("apps/v1", "Deployment")})))
    return out


def a_binding(i: int) -> SchedulingBinding:
    return SchedulingBinding(
        kind="ResourceBinding", name=f"web-{i}-deployment", namespace="shop", replicas=3,
        resource=ObjectReference("apps/v1", "Deployment", "shop", f"web-{i}", ""),
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


def report_added(label: str, with_ext: Run, without: Run) -> None:
    p50 = (percentile(with_ext.samples, 0.5) - percentile(without.samples, 0.5)) * 1000
    cpu = (with_ext.client_cpu - without.client_cpu) * 1000
    print(f"  {label:<33} the extender adds p50 {p50:6.3f} ms, scheduler CPU {cpu:.3f} ms per binding")


def scheduling(extenders: Sequence[Extender]) -> Callable[[SchedulingBinding, Snapshot], ScheduleResult]:
    """One binding through the real path, as the scheduler process wires it."""
    scheduler = Scheduler(extenders=extenders, extender_skipped=count_ignored_failure)
    status = BindingStatus()

    def one(binding: SchedulingBinding, snapshot: Snapshot) -> ScheduleResult:
        result = scheduler.schedule(binding, status, snapshot)
        if not result.scheduled:
            raise SystemExit(f"not scheduled: {result.condition}")
        return result

    return one


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
            print(f"extender benchmark: {os.cpu_count()} CPUs, {args.clusters} clusters, default plugins, "
                  f"then filter + prioritize per binding over HTTPS keep-alive (TLS "
                  f"{tls.ca_file and 'verified'}), test extender in its own process")
            warm = Snapshot(fleet)
            one_cluster = Snapshot(fleet[1:2])  # kept by the plugins and by the extender
            ext = HTTPExtender(cfg)
            with_ext, plugins_only = scheduling([ext]), scheduling([])
            first = with_ext(a_binding(0), warm).attempts[0]
            by_extender = [v for v in first.verdicts if v.plugin == cfg.url_prefix]
            print(f"  the plugins keep {first.summary.feasible + len(by_extender)} of {len(fleet)} clusters, "
                  f"the extender {first.summary.feasible} of those, and scores them")

            server = Server(port, str(tls.ca_file))
            warm_with = timed(server, args.rounds, 50, lambda i: with_ext(binding(i), warm))
            warm_without = timed(server, args.rounds, 50, lambda i: plugins_only(binding(i), warm))
            conns_blocking = int(server.stats()["connections"])
            cold_rounds = max(args.rounds // 4, 50)
            fresh = [clusters(args.clusters) for _ in range(2 * cold_rounds + 20)]  # built outside the timing
            cold_with = timed(server, cold_rounds, 10, lambda i: with_ext(binding(i), Snapshot(fresh[i])))
            cold_without = timed(server, cold_rounds, 10,
                                 lambda i: plugins_only(binding(i), Snapshot(fresh[cold_rounds + 10 + i])))
            ext.close()
            names_ext = HTTPExtender(cfg, cluster_cache_capable=True)
            names_only = scheduling([names_ext])
            names = timed(server, args.rounds, 50, lambda i: names_only(binding(i), warm))
            names_ext.close()
            floor_ext = HTTPExtender(cfg)
            floor_with = scheduling([floor_ext])
            floor = timed(server, args.rounds, 50, lambda i: floor_with(binding(i), one_cluster))
            floor_without = timed(server, args.rounds, 50, lambda i: plugins_only(binding(i), one_cluster))
            floor_ext.close()
            conns_total = int(server.stats()["connections"])
        finally:
            proc.terminate()
            proc.wait(5)
    report("plugins only", warm_without)
    report("plugins + extender", warm_with)
    report("plugins only, cold clusters", cold_without)
    report("plugins + extender, cold clusters", cold_with)
    report("plugins + extender, names only", names)
    report("plugins only, 1 cluster", floor_without)
    report("plugins + extender, 1 cluster", floor)
    report_added("warm", warm_with, warm_without)
    report_added("cold clusters", cold_with, cold_without)
    report_added("names only", names, warm_without)
    report_added("1 cluster (floor)", floor, floor_without)
    print(f"  TCP connections the extender saw: {conns_blocking} for the first client, "
          f"{conns_total} in all (one more per client)")
    print("  load average before " + "/".join(f"{x:.2f}" for x in load_before)
          + ", after " + "/".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
