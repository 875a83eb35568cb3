"""End-to-end scheduler benchmark on a real kube-apiserver + etcd.

    .venv/bin/python bench/operator_e2e.py [--bindings 2000] [--workers 8] [--concurrency 16]

1. Starts etcd + kube-apiserver (tests/support/controlplane.py) and creates the 100 Clusters of
   ``../shared/bench/fleet-100x5000.input.yaml`` with their status.
2. Plain-client baseline: the first N bindings of that fleet are created in namespace
   ``bench-plain``, their results computed offline with the same core, and then a plain async
   client sends exactly the writes the operator would send (spec patch, then status patch, each
   with a resourceVersion precondition), ``--concurrency`` at a time: bindings/s of raw writes.
3. Operator: ``fleetsched scheduler`` runs as a process; the same N bindings are created in
   namespace ``bench-op`` as fast as the client can; a watch records when each first shows
   ``Scheduled=True``. Prints bindings/s from the first creation to the last Scheduled=True,
   creation-to-Scheduled latency p50/p99, the scheduler's peak RSS, and the ratio to the baseline.
   The scheduler's start-up work (kopf listing the baseline's bindings) is waited out first.

For each phase it also prints the CPU milliseconds per binding of kube-apiserver, etcd, the bench
process and the scheduler, and how many of the machine's cores they kept busy: on a small machine
the apiserver's own CPU per binding bounds every client, so that line says what limits the rate.

Prints figures and exits 0; it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402
import yaml  # noqa: E402

from fleetsched.controller.kube import ApiError, KubeClient, load_connection  # noqa: E402
from fleetsched.controller.writer import compute_patches, explanation  # noqa: E402
from fleetsched.scheduler import Scheduler, Snapshot, render_into_binding  # noqa: E402
from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict, status_from_dict  # noqa: E402
from tests.support.controlplane import ControlPlane  # noqa: E402
from tests.support.karmada import as_applied  # noqa: E402
from tests.support.processes import SchedulerProcess  # noqa: E402

FLEET = REPO.parent / "shared" / "bench" / "fleet-100x5000.input.yaml"
RB_PATH = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
CLUSTERS_PATH = "/apis/cluster.karmada.io/v1alpha1/clusters"
MERGE = "application/merge-patch+json"
PARKED = "parked-for-baseline"  # the operator ignores bindings of another scheduler


def load_fleet(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    clusters: list[dict[str, Any]] = []
    bindings: list[dict[str, Any]] = []
    with FLEET.open() as handle:
        for doc in yaml.safe_load_all(handle):
            if not doc:
                continue
            if doc["kind"] == "Cluster":
                clusters.append(as_applied(doc))
            elif doc["kind"] == "ResourceBinding" and len(bindings) < count:
                doc.pop("status", None)
                bindings.append(doc)
    return clusters, bindings


def in_namespace(
    binding: dict[str, Any], namespace: str, *, scheduler_name: str | None = None
) -> dict[str, Any]:
    """A copy of ``binding`` in ``namespace``; the baseline's copies are parked under another scheduler."""
    out = as_applied(copy.deepcopy(binding), scheduler_name=scheduler_name)
    out["metadata"] = {
        "name": out["metadata"]["name"],
        "namespace": namespace,
        "labels": out["metadata"]["labels"],
    }
    return out


async def run_pool(jobs: list[Any], concurrency: int) -> None:
    iterator = iter(jobs)

    async def worker() -> None:
        for job in iterator:
            await job()

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def create_clusters(client: KubeClient, clusters: list[dict[str, Any]]) -> None:
    async def one(doc: dict[str, Any]) -> None:
        body = {k: v for k, v in doc.items() if k != "status"}
        await client.create(CLUSTERS_PATH, body)
        await client.merge_patch(
            f"{CLUSTERS_PATH}/{doc['metadata']['name']}/status", {"status": doc["status"]}
        )

    await run_pool([lambda d=d: one(d) for d in clusters], 16)


async def plain_client_rates(
    client: KubeClient,
    clusters: list[dict[str, Any]],
    bindings: list[dict[str, Any]],
    concurrency: int,
    meters: tuple[CpuMeter, CpuMeter],
) -> tuple[float, float, int]:
    """Bindings/s of a plain client sending the operator's writes, results computed beforehand.

    Returns (writes only, on bindings that already exist; create + writes per binding, the same
    API work as the operator run from creation to Scheduled; number of writes per pass).
    """
    snapshot = Snapshot([cluster_from_dict(c) for c in clusters])
    scheduler = Scheduler()

    def plan(obj: dict[str, Any]) -> Any:
        result = scheduler.schedule(binding_from_dict(obj), status_from_dict(obj), snapshot)
        rendered = render_into_binding(obj, result, now=dt.datetime.now(dt.UTC))
        return compute_patches(obj, rendered, explain=explanation(result))

    async def write(obj: dict[str, Any], patches: Any) -> int:
        path = f"{RB_PATH.format(ns=obj['metadata']['namespace'])}/{obj['metadata']['name']}"
        rv = obj["metadata"]["resourceVersion"]
        sent = 0
        if patches.spec is not None:
            response = await client.merge_patch(path, patches.spec)
            rv = response["metadata"]["resourceVersion"]
            sent += 1
        if patches.status is not None:
            await client.merge_patch(
                f"{path}/status", {"metadata": {"resourceVersion": rv}, **patches.status}
            )
            sent += 1
        return sent

    # (a) writes only
    namespace = "bench-plain"
    await client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    docs = [in_namespace(b, namespace, scheduler_name=PARKED) for b in bindings]
    await run_pool([lambda d=d: client.create(RB_PATH.format(ns=namespace), d) for d in docs], concurrency)
    plans = [(obj, plan(obj)) for obj in (await client.list_all(RB_PATH.format(ns=namespace)))[0]]
    writes = 0

    async def write_counted(obj: dict[str, Any], patches: Any) -> None:
        nonlocal writes
        sent = await write(obj, patches)
        writes += sent

    meters[0].start()
    started = time.perf_counter()
    await run_pool([lambda o=o, p=p: write_counted(o, p) for o, p in plans], concurrency)
    writes_only = len(plans) / (time.perf_counter() - started)
    meters[0].stop()

    # (b) create, then the two writes, per binding
    namespace = "bench-plain-create"
    await client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    docs = [in_namespace(b, namespace, scheduler_name=PARKED) for b in bindings]
    precomputed = {
        d["metadata"]["name"]: scheduler.schedule(binding_from_dict(d), status_from_dict(d), snapshot)
        for d in docs
    }

    async def create_and_write(doc: dict[str, Any]) -> None:
        obj = await client.create(RB_PATH.format(ns=namespace), doc)
        rendered = render_into_binding(obj, precomputed[doc["metadata"]["name"]], now=dt.datetime.now(dt.UTC))
        await write(
            obj, compute_patches(obj, rendered, explain=explanation(precomputed[doc["metadata"]["name"]]))
        )

    meters[1].start()
    started = time.perf_counter()
    await run_pool([lambda d=d: create_and_write(d) for d in docs], concurrency)
    with_create = len(docs) / (time.perf_counter() - started)
    meters[1].stop()
    return writes_only, with_create, writes


async def watch_scheduled(
    client: KubeClient,
    namespace: str,
    names: set[str],
    seen: dict[str, float],
    outcome: dict[str, str],
    resource_version: str,
) -> None:
    """Record the first time each binding shows a Scheduled condition (True, or False with a reason)."""
    session = client._session  # the bench reuses the client's TLS session for a streaming watch
    while len(seen) < len(names):
        url = (
            f"{client.connection.server}{RB_PATH.format(ns=namespace)}?watch=1&allowWatchBookmarks=true"
            f"&resourceVersion={resource_version}&timeoutSeconds=600"
        )
        async with session.get(url, timeout=None) as response:
            async for line in response.content:
                event = orjson.loads(line)
                obj = event["object"]
                resource_version = obj["metadata"].get("resourceVersion", resource_version)
                if event["type"] not in ("ADDED", "MODIFIED"):
                    continue
                name = obj["metadata"]["name"]
                if name in seen:
                    continue
                for condition in (obj.get("status") or {}).get("conditions") or ():
                    if condition.get("type") == "Scheduled":
                        seen[name] = time.perf_counter()
                        outcome[name] = condition.get("reason", "")
                if len(seen) == len(names):
                    return


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds each process of the run spends between ``start()`` and ``stop()``."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.used: dict[str, float] = {}
        self._start: dict[str, float] = {}
        self._wall = 0.0
        self.wall = 0.0

    def start(self) -> None:
        self._start = {name: cpu_seconds(pid) for name, pid in self.pids.items()}
        self._wall = time.perf_counter()

    def stop(self) -> None:
        self.wall = time.perf_counter() - self._wall
        self.used = {name: cpu_seconds(pid) - self._start[name] for name, pid in self.pids.items()}

    def line(self, count: int) -> str:
        per = ", ".join(f"{name} {1000 * used / count:.1f}" for name, used in self.used.items())
        busy = sum(self.used.values()) / self.wall if self.wall else 0.0
        return f"CPU ms per binding: {per}; these processes kept {busy:.2f} of {os.cpu_count()} cores busy"


def plane_pids(plane: ControlPlane) -> dict[str, int]:
    assert plane.apiserver.process is not None and plane.etcd.process is not None
    return {
        "kube-apiserver": plane.apiserver.process.pid,
        "etcd": plane.etcd.process.pid,
        "bench": os.getpid(),
    }


async def wait_idle(pid: int, *, quiet: float = 0.05, interval: float = 0.5, limit: float = 120.0) -> float:
    """Wait until ``pid`` uses less than ``quiet`` CPU seconds per ``interval`` (its start-up work,
    e.g. kopf listing the baseline's bindings, is over); returns the seconds waited."""
    started = time.perf_counter()
    before = cpu_seconds(pid)
    while time.perf_counter() - started < limit:
        await asyncio.sleep(interval)
        now = cpu_seconds(pid)
        if now - before < quiet:
            break
        before = now
    return time.perf_counter() - started


def peak_rss_mib(pid: int) -> tuple[float, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return int(fields["VmHWM"].split()[0]) / 1024, int(fields["VmRSS"].split()[0]) / 1024


class ProfiledSchedulerProcess(SchedulerProcess):
    """The scheduler under cProfile (``--profile FILE``), to see where its CPU goes."""

    profile_path = ""

    def argv(self) -> list[str]:
        base = super().argv()
        return [base[0], "-m", "cProfile", "-o", self.profile_path, *base[1:]]


async def apiserver_requests(client: KubeClient) -> dict[str, float]:
    """apiserver_request_total summed by verb and resource (the apiserver's own count)."""
    url = f"{client.connection.server}/metrics"
    async with client._session.get(url) as response:
        text = await response.text()
    totals: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels, _, value = line.rpartition(" ")
        fields = dict(part.split("=", 1) for part in labels[labels.index("{") + 1 : -1].split(","))
        key = f"{fields.get('verb', '').strip(chr(34))} {fields.get('resource', '').strip(chr(34))}"
        sub = fields.get("subresource", "").strip(chr(34))
        key += f"/{sub}" if sub else ""
        totals[key] = totals.get(key, 0.0) + float(value)
    return totals


async def operator_run(
    client: KubeClient,
    plane: ControlPlane,
    bindings: list[dict[str, Any]],
    args: argparse.Namespace,
    workdir: Path,
) -> dict[str, Any]:
    namespace = "bench-op"
    await client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    plane.kubectl("create", "namespace", "karmada-system")
    proc_class = ProfiledSchedulerProcess if args.profile else SchedulerProcess
    proc = proc_class(
        kubeconfig=plane.kubeconfig,
        log_path=workdir / "scheduler.log",
        extra_args=(
            "--leader-elect=false",
            f"--workers={args.workers}",
            "--kube-api-qps=0",
            "--log-level=warning",
        ),
    )
    proc.start(timeout=120)
    assert proc.process is not None
    settle = await wait_idle(proc.process.pid)
    idle_rss = peak_rss_mib(proc.process.pid)[1]
    meter = CpuMeter({**plane_pids(plane), "scheduler": proc.process.pid})
    try:
        docs = [in_namespace(b, namespace) for b in bindings]
        names = {d["metadata"]["name"] for d in docs}
        listed = await client.get(RB_PATH.format(ns=namespace))
        seen: dict[str, float] = {}
        outcome: dict[str, str] = {}
        created: dict[str, float] = {}
        watcher = asyncio.create_task(
            watch_scheduled(client, namespace, names, seen, outcome, listed["metadata"]["resourceVersion"])
        )

        async def create(doc: dict[str, Any]) -> None:
            await client.create(RB_PATH.format(ns=namespace), doc)
            created[doc["metadata"]["name"]] = time.perf_counter()

        requests_before = await apiserver_requests(client)
        gc_before = {g: proc.metric("fleetsched_python_gc_seconds_total", generation=g) for g in "012"}
        gc_runs_before = {g: proc.metric("python_gc_collections_total", generation=g) for g in "012"}
        meter.start()
        first = time.perf_counter()
        await run_pool([lambda d=d: create(d) for d in docs], args.concurrency)
        creation_done = time.perf_counter()
        while not watcher.done():  # stop waiting if nothing moves for a minute
            before = len(seen)
            await asyncio.wait([watcher], timeout=60)
            if len(seen) == before and not watcher.done():
                watcher.cancel()
                print(
                    f"stalled: {len(names) - len(seen)} bindings never got a Scheduled condition; see "
                    f"{proc.log_path}",
                    file=sys.stderr,
                )
        last = max(seen.values())
        meter.stop()
        requests_after = await apiserver_requests(client)
        requests = {
            k: v - requests_before.get(k, 0)
            for k, v in requests_after.items()
            if v - requests_before.get(k, 0) >= 1
        }
        latencies = sorted(seen[n] - created[n] for n in seen)
        peak, current = peak_rss_mib(proc.process.pid)
        writes = proc.metric("fleetsched_scheduler_binding_writes_total")
        attempts = proc.metric("karmada_scheduler_schedule_attempts_total")
        cpu = proc.metric("process_cpu_seconds_total")
        algorithm = proc.metric("karmada_scheduler_scheduling_algorithm_duration_seconds_sum")
        gc_seconds = {
            g: proc.metric("fleetsched_python_gc_seconds_total", generation=g) - gc_before[g] for g in "012"
        }
        gc_runs = {
            g: proc.metric("python_gc_collections_total", generation=g) - gc_runs_before[g] for g in "012"
        }
        return {
            "rate": len(seen) / (last - first),
            "done": len(seen),
            "creation_rate": len(names) / (creation_done - first),
            "p50": statistics.median(latencies),
            "p99": latencies[int(0.99 * (len(latencies) - 1))],
            "max": latencies[-1],
            "peak_rss": peak,
            "rss": current,
            "idle_rss": idle_rss,
            "writes": writes,
            "attempts": attempts,
            "requests": requests,
            "cpu": cpu,
            "algorithm": algorithm,
            "gc": gc_seconds,
            "gc_runs": gc_runs,
            "elapsed": last - first,
            "outcomes": dict(sorted(Counter(outcome.values()).items())),
            "meter": meter,
            "settle": settle,
        }
    finally:
        proc.stop()


async def main_async(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    clusters, bindings = load_fleet(args.bindings)
    workdir = Path(tempfile.mkdtemp(prefix="fleetsched-bench-"))
    print(f"starting etcd + kube-apiserver in {workdir} ...", file=sys.stderr)
    plane = ControlPlane.start(workdir=workdir / "cp")
    client = KubeClient(load_connection(str(plane.kubeconfig)), user_agent="fleetsched-bench")
    try:
        await create_clusters(client, clusters)
        print(f"{len(clusters)} clusters created; plain-client baseline ...", file=sys.stderr)
        meters = (CpuMeter(plane_pids(plane)), CpuMeter(plane_pids(plane)))
        plain_rate, plain_create_rate, plain_writes = await plain_client_rates(
            client, clusters, bindings, args.concurrency, meters
        )
        print("operator run ...", file=sys.stderr)
        op = await operator_run(client, plane, bindings, args, workdir)
    finally:
        await client.close()
        plane.stop()
    n = len(bindings)
    print(
        f"operator e2e: {n} bindings over {len(clusters)} Clusters, real kube-apiserver, "
        f"{args.workers} workers; load average before "
        + "/".join(f"{x:.2f}" for x in load_before)
        + ", after "
        + "/".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print(
        f"  plain client, the same {plain_writes} writes, {args.concurrency} in flight:"
        f"        {plain_rate:8.1f} bindings/s"
    )
    print(f"    {meters[0].line(n)}")
    print(f"  plain client, create + the same writes per binding:  {plain_create_rate:8.1f} bindings/s")
    print(f"    {meters[1].line(n)}")
    print(f"  bindings created at                          {op['creation_rate']:8.1f} bindings/s")
    print(
        f"  operator, creation -> Scheduled condition:        {op['rate']:8.1f} bindings/s "
        f"({100 * op['rate'] / plain_rate:.0f}% of plain writes only, "
        f"{100 * op['rate'] / plain_create_rate:.0f}% of plain create + writes)"
    )
    print(f"    {op['meter'].line(n)}")
    print(
        f"  latency creation -> Scheduled condition:  p50 {op['p50'] * 1000:7.0f} ms"
        f"   p99 {op['p99'] * 1000:7.0f} ms   max {op['max'] * 1000:7.0f} ms"
    )
    print(
        f"  scheduler start-up work (kopf listing the baseline's bindings) waited out: {op['settle']:.1f} s\n"
        f"  scheduler RSS: idle {op['idle_rss']:.0f} MiB, peak {op['peak_rss']:.0f} MiB, "
        f"end {op['rss']:.0f} MiB"
    )
    if op["done"] != n:
        print(f"  INCOMPLETE: only {op['done']} of {n} bindings got a Scheduled condition")
    print(
        f"  scheduler CPU {op['cpu']:.1f} s over {op['elapsed']:.1f} s wall, of which the scheduling core "
        f"{op['algorithm']:.1f} s; Python's garbage collector during the run "
        + ", ".join(f"gen{g} {v:.2f} s in {op['gc_runs'][g]:.0f} runs" for g, v in op["gc"].items())
    )
    busiest = sorted(op["requests"].items(), key=lambda kv: -kv[1])[:8]
    print("  apiserver requests during the operator run: " + ", ".join(f"{k} {v:.0f}" for k, v in busiest))
    print(f"  Scheduled condition reasons: {op['outcomes']}")
    print(
        f"  scheduling attempts {op['attempts']:.0f}, binding writes {op['writes']:.0f} "
        f"({op['writes'] / n:.2f} per binding)"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bindings", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=32, help="client requests in flight")
    parser.add_argument("--profile", help="run the scheduler under cProfile, writing stats to this file")
    args = parser.parse_args()
    ProfiledSchedulerProcess.profile_path = str(Path(args.profile).resolve()) if args.profile else ""
    try:
        return asyncio.run(main_async(args))
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
