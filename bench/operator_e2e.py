"""End-to-end scheduler benchmark on a real kube-apiserver + etcd.

    .venv/bin/python bench/operator_e2e.py [--bindings 2000] [--rounds 3] [--apiserver-gogc 400]

1. Starts etcd + kube-apiserver (tests/support/controlplane.py) and creates the 100 Clusters of
   ``../shared/bench/fleet-100x5000.input.yaml`` with their status.
2. Each round, on the same control plane:
   a. Plain client, writes only: the first N bindings of that fleet are created (parked under another
      scheduler name), their results computed offline with the same core, and a plain async client
      sends exactly the writes the operator would send (spec patch, then status patch),
      ``--concurrency`` at a time.
   b. Plain client, create + writes: per binding, create it and send the same two writes: the same
      API work as the operator does from creation to Scheduled.
   c. Operator: ``fleetsched scheduler`` runs as a process; the same N bindings are created as fast
      as the client can.
   In every phase the same observing watch records when each binding first shows a Scheduled
   condition; each rate is N over the time from the first request to the last such condition, so
   the phases compare like with like. Each phase's bindings are deleted before the next phase.
   The operator phase also prints creation-to-Scheduled latency p50/p99, the scheduler's memory,
   its garbage collector's time and the apiserver's own request counts.
3. With several rounds: the median and range of each rate and of the operator's ratio to the plain
   client (same API work) and to its writes alone.

For each phase it also prints the CPU milliseconds per binding of kube-apiserver, etcd, the bench
process and the scheduler, and how many of the machine's cores they kept busy: on a small machine
the apiserver's own CPU per binding bounds every client, so that line says what limits the rate.
``--apiserver-gogc`` and ``--apiserver-arg`` tune that apiserver (both phases alike);
``--apiserver-profile`` writes its Go CPU profiles.

Prints figures; it asserts nothing about time. Exits 1 only when a binding never got a Scheduled
condition.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402
import yaml  # noqa: E402

from fleetsched.controller.writer import compute_patches, explanation  # noqa: E402
from fleetsched.kube.client import ApiError, KubeClient, load_connection  # noqa: E402
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


class Observer:
    """The measuring watch, the same in every phase: when each binding of ``namespace`` first shows
    a Scheduled condition (True, or False with a reason). Its cost to the apiserver is paid alike by
    the plain client and the operator, so the rates compare like with like."""

    def __init__(self, client: KubeClient, namespace: str, names: set[str]) -> None:
        self.client = client
        self.namespace = namespace
        self.names = names
        self.seen: dict[str, float] = {}
        self.outcome: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        listed = await self.client.get(RB_PATH.format(ns=self.namespace))
        self._task = asyncio.create_task(self._watch(listed["metadata"]["resourceVersion"]))

    async def wait(self, *, log_hint: str = "") -> float:
        """Until every binding was seen (or nothing moved for a minute); returns the last time seen."""
        assert self._task is not None
        while not self._task.done():
            before = len(self.seen)
            await asyncio.wait([self._task], timeout=60)
            if len(self.seen) == before and not self._task.done():
                self._task.cancel()
                print(
                    f"stalled: {len(self.names) - len(self.seen)} bindings never got a Scheduled "
                    f"condition{log_hint}",
                    file=sys.stderr,
                )
        return max(self.seen.values())

    async def _watch(self, resource_version: str) -> None:
        session = self.client._session  # the bench reuses the client's TLS session for a streaming watch
        while len(self.seen) < len(self.names):
            url = (
                f"{self.client.connection.server}{RB_PATH.format(ns=self.namespace)}?watch=1"
                f"&allowWatchBookmarks=true&resourceVersion={resource_version}&timeoutSeconds=600"
            )
            async with session.get(url, timeout=None) as response:
                async for line in response.content:
                    event = orjson.loads(line)
                    obj = event["object"]
                    resource_version = obj["metadata"].get("resourceVersion", resource_version)
                    if event["type"] not in ("ADDED", "MODIFIED"):
                        continue
                    name = obj["metadata"]["name"]
                    if name in self.seen:
                        continue
                    for condition in (obj.get("status") or {}).get("conditions") or ():
                        if condition.get("type") == "Scheduled":
                            self.seen[name] = time.perf_counter()
                            self.outcome[name] = condition.get("reason", "")
                    if len(self.seen) == len(self.names):
                        return


async def clear(client: KubeClient, namespace: str) -> None:
    """Delete a phase's bindings, so that every phase starts from the same stored objects."""
    await client.delete(RB_PATH.format(ns=namespace))
    while (await client.get(RB_PATH.format(ns=namespace), {"limit": "1"}))["items"]:
        await asyncio.sleep(0.2)


def percentiles(latencies: list[float]) -> tuple[float, float, float]:
    ordered = sorted(latencies)
    return statistics.median(ordered), ordered[int(0.99 * (len(ordered) - 1))], ordered[-1]


async def plain_client_rates(
    client: KubeClient,
    clusters: list[dict[str, Any]],
    bindings: list[dict[str, Any]],
    concurrency: int,
    meters: tuple[CpuMeter, CpuMeter],
    profile: str | None = None,
    suffix: str = "",
) -> dict[str, Any]:
    """Bindings/s of a plain client sending the operator's writes, results computed beforehand.

    (a) writes only, on bindings that already exist; (b) create, then the writes, per binding: the
    same API work as the operator run from creation to Scheduled. Both are timed like the operator:
    from the first request to the last Scheduled condition the observer sees.
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
    namespace = f"bench-plain{suffix}"
    await client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    docs = [in_namespace(b, namespace, scheduler_name=PARKED) for b in bindings]
    await run_pool([lambda d=d: client.create(RB_PATH.format(ns=namespace), d) for d in docs], concurrency)
    plans = [(obj, plan(obj)) for obj in (await client.list_all(RB_PATH.format(ns=namespace)))[0]]
    writes = 0

    async def write_counted(obj: dict[str, Any], patches: Any) -> None:
        nonlocal writes
        sent = await write(obj, patches)
        writes += sent

    observer = Observer(client, namespace, {d["metadata"]["name"] for d in docs})
    await observer.start()
    meters[0].start()
    first = time.perf_counter()
    await run_pool([lambda o=o, p=p: write_counted(o, p) for o, p in plans], concurrency)
    writes_only = len(observer.names) / (await observer.wait() - first)
    meters[0].stop()
    await clear(client, namespace)

    # (b) create, then the two writes, per binding
    namespace = f"bench-plain-create{suffix}"
    await client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    docs = [in_namespace(b, namespace, scheduler_name=PARKED) for b in bindings]
    precomputed = {
        d["metadata"]["name"]: scheduler.schedule(binding_from_dict(d), status_from_dict(d), snapshot)
        for d in docs
    }
    created: dict[str, float] = {}

    async def create_and_write(doc: dict[str, Any]) -> None:
        name = doc["metadata"]["name"]
        obj = await client.create(RB_PATH.format(ns=namespace), doc)
        created[name] = time.perf_counter()
        rendered = render_into_binding(obj, precomputed[name], now=dt.datetime.now(dt.UTC))
        await write(obj, compute_patches(obj, rendered, explain=explanation(precomputed[name])))

    observer = Observer(client, namespace, {d["metadata"]["name"] for d in docs})
    await observer.start()
    meters[1].start()
    first = time.perf_counter()
    profiler = None
    if profile:
        profiler = asyncio.create_task(apiserver_cpu_profile(client, Path(f"{profile}.plain"), seconds=8))
    await run_pool([lambda d=d: create_and_write(d) for d in docs], concurrency)
    with_create = len(observer.names) / (await observer.wait() - first)
    meters[1].stop()
    if profiler is not None:
        await profiler
    await clear(client, namespace)
    return {
        "writes_only": writes_only,
        "with_create": with_create,
        "writes": writes,
        "latency": percentiles([observer.seen[n] - created[n] for n in observer.seen]),
    }


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


async def apiserver_cpu_profile(client: KubeClient, path: Path, seconds: int = 10) -> None:
    """Fetch kube-apiserver's Go CPU profile over ``seconds`` (needs --profiling=true)."""
    url = f"{client.connection.server}/debug/pprof/profile?seconds={seconds}"
    async with client._session.get(url, timeout=None) as response:
        path.write_bytes(await response.read())
    print(f"kube-apiserver CPU profile written to {path}", file=sys.stderr)


@dataclass
class Setup:
    """What every operator phase runs against."""

    client: KubeClient
    plane: ControlPlane
    bindings: list[dict[str, Any]]
    args: argparse.Namespace
    workdir: Path

    async def namespace(self, name: str) -> str:
        """A new namespace for a phase's bindings, and karmada-system for the scheduler's Events/Lease."""
        await self.client.create("/api/v1/namespaces", {"metadata": {"name": name}})
        self.plane.kubectl("create", "namespace", "karmada-system", check=False)  # may exist already
        return name


async def operator_run(setup: Setup, suffix: str = "") -> dict[str, Any]:
    client, plane, args = setup.client, setup.plane, setup.args
    bindings, workdir = setup.bindings, setup.workdir
    namespace = await setup.namespace(f"bench-op{suffix}")
    proc_class = ProfiledSchedulerProcess if args.profile else SchedulerProcess
    proc = proc_class(
        kubeconfig=plane.kubeconfig,
        log_path=workdir / f"scheduler{suffix}.log",
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
        observer = Observer(client, namespace, {d["metadata"]["name"] for d in docs})
        await observer.start()
        created: dict[str, float] = {}

        async def create(doc: dict[str, Any]) -> None:
            await client.create(RB_PATH.format(ns=namespace), doc)
            created[doc["metadata"]["name"]] = time.perf_counter()

        requests_before = await apiserver_requests(client)
        gc_before = {g: proc.metric("fleetsched_python_gc_seconds_total", generation=g) for g in "012"}
        gc_runs_before = {g: proc.metric("python_gc_collections_total", generation=g) for g in "012"}
        meter.start()
        first = time.perf_counter()
        profiler = (
            asyncio.create_task(apiserver_cpu_profile(client, Path(f"{args.apiserver_profile}.operator")))
            if args.apiserver_profile
            else None
        )
        await run_pool([lambda d=d: create(d) for d in docs], args.concurrency)
        creation_done = time.perf_counter()
        last = await observer.wait(log_hint=f"; see {proc.log_path}")
        meter.stop()
        if profiler is not None:
            await profiler
        requests_after = await apiserver_requests(client)
        requests = {
            k: v - requests_before.get(k, 0)
            for k, v in requests_after.items()
            if v - requests_before.get(k, 0) >= 1
        }
        seen = observer.seen
        p50, p99, worst = percentiles([seen[n] - created[n] for n in seen])
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
            "creation_rate": len(docs) / (creation_done - first),
            "p50": p50,
            "p99": p99,
            "max": worst,
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
            "outcomes": dict(sorted(Counter(observer.outcome.values()).items())),
            "meter": meter,
            "settle": settle,
        }
    finally:
        proc.stop()
        await clear(client, namespace)


LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases/fleetsched-scheduler"
BENCH_HOLDER = "fleetsched-bench"


def micro_time() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


async def hold_lease(client: KubeClient, holder: str) -> None:
    """Set the scheduler's Lease to ``holder`` for an hour ("" releases it, as client-go does)."""
    spec = {
        "holderIdentity": holder,
        "leaseDurationSeconds": 3600,
        "acquireTime": micro_time(),
        "renewTime": micro_time(),
    }
    try:
        current = await client.get(LEASE_PATH)
    except ApiError as exc:
        if exc.status != 404:
            raise
        collection, _, name = LEASE_PATH.rpartition("/")
        metadata = {"name": name, "namespace": "karmada-system"}
        await client.create(collection, {"metadata": metadata, "spec": spec})
        return
    await client.replace(LEASE_PATH, {**current, "spec": {**current.get("spec", {}), **spec}})


async def backlog_run(setup: Setup, suffix: str = "") -> dict[str, Any]:
    """The operator making the writes on bindings that already exist: a standby scheduler (Lease held
    by the bench) caches N new bindings, then the bench releases the Lease; the rate runs from the
    moment the scheduler holds the Lease to the last Scheduled condition."""
    client, plane, args = setup.client, setup.plane, setup.args
    bindings, workdir = setup.bindings, setup.workdir
    namespace = await setup.namespace(f"bench-backlog{suffix}")
    await hold_lease(client, BENCH_HOLDER)
    proc = SchedulerProcess(
        kubeconfig=plane.kubeconfig,
        log_path=workdir / f"scheduler-backlog{suffix}.log",
        extra_args=(
            "--leader-elect=true",
            f"--workers={args.workers}",
            "--kube-api-qps=0",
            "--log-level=warning",
        ),
    )
    proc.start(wait_ready=False)
    assert proc.process is not None
    try:
        docs = [in_namespace(b, namespace) for b in bindings]
        path = RB_PATH.format(ns=namespace)
        await run_pool([lambda d=d: client.create(path, d) for d in docs], args.concurrency)
        await asyncio.sleep(1.0)
        await wait_idle(proc.process.pid)  # the standby has cached them all
        observer = Observer(client, namespace, {d["metadata"]["name"] for d in docs})
        await observer.start()
        meter = CpuMeter({**plane_pids(plane), "scheduler": proc.process.pid})
        await hold_lease(client, "")
        while (await client.get(LEASE_PATH))["spec"].get("holderIdentity") in ("", BENCH_HOLDER):
            await asyncio.sleep(0.01)
        took_over = time.perf_counter()
        meter.start()
        last = await observer.wait(log_hint=f"; see {proc.log_path}")
        meter.stop()
        return {
            "rate": len(observer.seen) / (last - took_over),
            "done": len(observer.seen),
            "meter": meter,
            "writes": proc.metric("fleetsched_scheduler_binding_writes_total"),
        }
    finally:
        proc.stop()
        await clear(client, namespace)


def row(label: str, rate: float) -> str:
    return f"  {label + ':':<70}{rate:8.1f} bindings/s"


async def main_async(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    clusters, bindings = load_fleet(args.bindings)
    workdir = Path(tempfile.mkdtemp(prefix="fleetsched-bench-"))
    print(f"starting etcd + kube-apiserver in {workdir} ...", file=sys.stderr)
    apiserver_args = tuple(args.apiserver_arg) + (("--profiling=true",) if args.apiserver_profile else ())
    apiserver_env = {"GOGC": str(args.apiserver_gogc)} if args.apiserver_gogc else None
    plane = ControlPlane.start(
        workdir=workdir / "cp", apiserver_args=apiserver_args, apiserver_env=apiserver_env
    )
    client = KubeClient(load_connection(str(plane.kubeconfig)), user_agent="fleetsched-bench")
    rounds: list[tuple[dict[str, Any], tuple[CpuMeter, CpuMeter], dict[str, Any]]] = []
    try:
        await create_clusters(client, clusters)
        setup = Setup(client, plane, bindings, args, workdir)
        for number in range(args.rounds):
            suffix = f"-{number + 1}"
            print(f"round {number + 1}: plain client ...", file=sys.stderr)
            meters = (CpuMeter(plane_pids(plane)), CpuMeter(plane_pids(plane)))
            profile = args.apiserver_profile if number == 0 else None
            plain = await plain_client_rates(
                client, clusters, bindings, args.concurrency, meters, profile=profile, suffix=suffix
            )
            print(f"round {number + 1}: operator ...", file=sys.stderr)
            op = await operator_run(setup, suffix)
            print(f"round {number + 1}: operator draining a backlog ...", file=sys.stderr)
            op["backlog"] = await backlog_run(setup, suffix)
            rounds.append((plain, meters, op))
    finally:
        await client.close()
        plane.stop()
    n = len(bindings)
    tuning = " ".join([*args.apiserver_arg, *([f"GOGC={args.apiserver_gogc}"] * bool(args.apiserver_gogc))])
    print(
        f"operator e2e: {n} bindings over {len(clusters)} Clusters, real kube-apiserver"
        f" ({tuning or 'default settings'}), {args.workers} workers, {args.rounds} round(s); load average"
        " before " + "/".join(f"{x:.2f}" for x in load_before)
        + ", after " + "/".join(f"{x:.2f}" for x in os.getloadavg())
    )
    print("  every rate: from the first request to the last Scheduled condition the observing watch saw")
    for number, (plain, meters, op) in enumerate(rounds):
        print(f" round {number + 1}")
        report_round(plain, meters, op, n)
    if len(rounds) > 1:
        print(f" over {len(rounds)} rounds (median, range)")
        series = {
            "plain client, writes on existing bindings": [p["writes_only"] for p, _, _ in rounds],
            "plain client, create + writes": [p["with_create"] for p, _, _ in rounds],
            "operator, creation -> Scheduled condition": [o["rate"] for _, _, o in rounds],
            "operator, writes on existing bindings": [o["backlog"]["rate"] for _, _, o in rounds],
        }
        for label, values in series.items():
            print(f"{row(label, statistics.median(values))}  ({min(values):.1f}-{max(values):.1f})")
        like = [o["rate"] / p["with_create"] for p, _, o in rounds]
        alone = [o["backlog"]["rate"] / p["writes_only"] for p, _, o in rounds]
        print(
            f"  operator / plain client: from creation (same API work) median"
            f" {100 * statistics.median(like):.0f}%"
            f" ({100 * min(like):.0f}-{100 * max(like):.0f}%); writes on existing bindings median"
            f" {100 * statistics.median(alone):.0f}% ({100 * min(alone):.0f}-{100 * max(alone):.0f}%)"
        )
    incomplete = [o for _, _, o in rounds if o["done"] != n or o["backlog"]["done"] != n]
    return 1 if incomplete else 0


def report_round(
    plain: dict[str, Any], meters: tuple[CpuMeter, CpuMeter], op: dict[str, Any], n: int
) -> None:
    plain_rate, plain_create_rate = plain["writes_only"], plain["with_create"]
    print(row(f"plain client, the same {plain['writes']} writes on existing bindings", plain_rate))
    print(f"    {meters[0].line(n)}")
    print(row("plain client, create + the same writes per binding", plain_create_rate))
    print(f"    {meters[1].line(n)}")
    p50, p99, worst = plain["latency"]
    print(
        f"    latency creation -> Scheduled condition:  p50 {p50 * 1000:7.0f} ms   p99 {p99 * 1000:7.0f} ms"
        f"   max {worst * 1000:7.0f} ms"
    )
    print(row("operator run: bindings created at", op["creation_rate"]))
    print(
        row("operator, creation -> Scheduled condition", op["rate"]) + "\n"
        f"    = {100 * op['rate'] / plain_create_rate:.0f}% of the plain client doing the same API work"
        f" (create + writes), {100 * op['rate'] / plain_rate:.0f}% of its writes alone"
    )
    print(f"    {op['meter'].line(n)}")
    print(
        f"    latency creation -> Scheduled condition:  p50 {op['p50'] * 1000:7.0f} ms"
        f"   p99 {op['p99'] * 1000:7.0f} ms   max {op['max'] * 1000:7.0f} ms"
    )
    print(
        f"  scheduler start-up waited out: {op['settle']:.1f} s; RSS: idle {op['idle_rss']:.0f} MiB,"
        f" peak {op['peak_rss']:.0f} MiB, end {op['rss']:.0f} MiB"
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
    backlog = op["backlog"]
    print(
        row("operator, the same writes on existing bindings (backlog, from takeover)", backlog["rate"]) + "\n"
        f"    = {100 * backlog['rate'] / plain_rate:.0f}% of the plain client's writes alone;"
        f" {backlog['writes'] / n:.2f} writes per binding\n"
        f"    {backlog['meter'].line(n)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bindings", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--concurrency", type=int, default=32, help="client requests in flight")
    parser.add_argument(
        "--rounds", type=int, default=3,
        help="repeat plain client + operator on the same control plane (a shared 2-core machine is noisy)",
    )
    parser.add_argument("--profile", help="run the scheduler under cProfile, writing stats to this file")
    parser.add_argument(
        "--apiserver-arg", action="append", default=[], metavar="FLAG",
        help="extra kube-apiserver flag (repeatable): --apiserver-arg=--enable-priority-and-fairness=false",
    )
    parser.add_argument(
        "--apiserver-gogc", type=int, metavar="PERCENT",
        help="GOGC for kube-apiserver (Go's default is 100; its collector is a third of its CPU here)",
    )
    parser.add_argument(
        "--apiserver-profile", metavar="FILE",
        help="write Go CPU profiles of kube-apiserver during the create + writes phase and the operator run"
        " to FILE.plain and FILE.operator (go tool pprof -top FILE.plain)",
    )
    args = parser.parse_args()
    ProfiledSchedulerProcess.profile_path = str(Path(args.profile).resolve()) if args.profile else ""
    try:
        return asyncio.run(main_async(args))
    except ApiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
