"""Requeue benchmark (issue 27 item 1, queueing hints) on a real kube-apiserver + etcd.

    .venv/bin/python bench/requeue.py [--clusters 100] [--bindings 1000] [--heartbeats 300]
        [--baseline-ref main]

Starts etcd + kube-apiserver (tests/support/controlplane.py), creates ``--clusters`` Clusters with
room for one 1-cpu replica each, then for this tree and for the scheduler of ``--baseline-ref`` (a
detached worktree, as bench/operator_e2e.py does), each on the same control plane in turn:

1. ``fleetsched scheduler`` starts; ``--bindings`` bindings of twice the fleet's room each (Divided
   over every Cluster) are created and all fail as Unschedulable;
2. ``--heartbeats`` Cluster status updates, cycling over the Clusters, that change only the Ready
   condition's message (nothing a plugin reads), then as many that move
   ``resourceSummary.allocated`` up (read, but no help to anyone): the scheduler's CPU milliseconds
   per heartbeat of each kind (its CPU over the writes and a settling second, less its idle CPU
   over as long);
3. (this tree only: the baseline waits for the 5-minute flush) one Cluster's status reports room
   for all of them: the time from that write to each binding's Scheduled=True as the apiserver
   shows it (polled every 0.2 s), p50 and p99 and the last, and the scheduler's own
   event-to-decision histogram count.

Prints the figures and the load average; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from operator_e2e import BaselineSchedulerProcess, baseline_tree, cpu_seconds  # noqa: E402

from fleetsched.kube.client import KubeClient, load_connection  # noqa: E402
from tests.support.controlplane import ControlPlane  # noqa: E402
from tests.support.overcommit import CLUSTERS, RB_NS, cpu_binding, cpu_cluster, create_all  # noqa: E402
from tests.support.processes import SchedulerProcess  # noqa: E402

ARGS = ("--leader-elect=false", "--workers=8", "--kube-api-qps=0", "--log-level=warning")


async def run_pool(jobs: list[Callable[[], Awaitable[Any]]], concurrency: int = 32) -> None:
    """Each job (a coroutine factory) once, ``concurrency`` at a time; a dropped connection is
    retried (the apiserver may close a pooled one under load)."""
    items = iter(jobs)

    async def worker() -> None:
        for job in items:
            for attempt in range(3):
                try:
                    await job()
                    break
                except OSError:
                    if attempt == 2:
                        raise
                    await asyncio.sleep(0.2)

    await asyncio.gather(*(worker() for _ in range(concurrency)))


async def states(client: KubeClient, namespace: str) -> dict[str, str]:
    """name -> "True"/"False"/"" (the Scheduled condition's status for its current generation)."""
    listed = await client.get(RB_NS.format(ns=namespace))
    out = {}
    for b in listed["items"]:
        status = b.get("status") or {}
        current = status.get("schedulerObservedGeneration") == b["metadata"].get("generation")
        condition = next((c for c in status.get("conditions") or () if c.get("type") == "Scheduled"), {})
        value = condition.get("status", "")
        out[b["metadata"]["name"]] = value if value == "False" or current else ""
    return out


async def wait_for(client: KubeClient, namespace: str, want: str, count: int, limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = await states(client, namespace)
        if sum(v == want for v in found.values()) >= count:
            return
        await asyncio.sleep(0.5)
    raise SystemExit(f"error: {count} bindings never showed Scheduled={want}")


async def heartbeats(client: KubeClient, names: list[str], count: int, *, busier: bool, round_: int) -> None:
    jobs = []
    for beat in range(count):
        name = names[beat % len(names)]
        if busier:
            status = {"resourceSummary": {"allocated": {"cpu": "0", "pods": str(round_ * count + beat + 1)}}}
        else:
            status = {
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "ClusterReady",
                        "message": f"heartbeat {round_}-{beat}",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        jobs.append(functools.partial(client.merge_patch, f"{CLUSTERS}/{name}/status", {"status": status}))
    await run_pool(jobs, 8)


async def cpu_per_heartbeat(
    client: KubeClient, pid: int, names: list[str], count: int, *, busier: bool, round_: int
) -> float:
    idle_start, idle_cpu = time.monotonic(), cpu_seconds(pid)
    await asyncio.sleep(2.0)
    idle_rate = (cpu_seconds(pid) - idle_cpu) / (time.monotonic() - idle_start)
    start, cpu = time.monotonic(), cpu_seconds(pid)
    await heartbeats(client, names, count, busier=busier, round_=round_)
    await asyncio.sleep(1.0)
    used = cpu_seconds(pid) - cpu - idle_rate * (time.monotonic() - start)
    return max(used, 0.0) * 1000 / count


async def variant(
    client: KubeClient,
    plane: ControlPlane,
    args: argparse.Namespace,
    names: list[str],
    label: str,
    tree: Path | None,
    workdir: Path,
    round_: int,
) -> dict[str, Any]:
    namespace = f"rq-{round_}"
    await client.create("/api/v1/namespaces", {"metadata": {"name": namespace}})
    log = workdir / f"scheduler-{namespace}.log"
    if tree is None:
        proc: SchedulerProcess = SchedulerProcess(kubeconfig=plane.kubeconfig, log_path=log, extra_args=ARGS)
    else:
        proc = BaselineSchedulerProcess(kubeconfig=plane.kubeconfig, log_path=log, extra_args=ARGS)
        proc.tree = tree
    proc.start()
    out: dict[str, Any] = {"label": label}
    try:
        assert proc.process is not None
        pid = proc.process.pid
        replicas = 2 * len(names)
        docs = [cpu_binding(f"w-{i}", namespace, replicas, 1, names) for i in range(args.bindings)]
        # a client of its own per burst, in a thread (tests/support/overcommit.py), 16 at a time
        await asyncio.to_thread(create_all, str(plane.kubeconfig), docs, 16)
        await wait_for(client, namespace, "False", args.bindings)
        await asyncio.sleep(1.0)
        out["quiet_ms"] = await cpu_per_heartbeat(
            client, pid, names, args.heartbeats, busier=False, round_=round_
        )
        out["busier_ms"] = await cpu_per_heartbeat(
            client, pid, names, args.heartbeats, busier=True, round_=round_
        )
        out["attempts"] = proc.metric("karmada_scheduler_schedule_attempts_total")
        if tree is None:
            room = {
                "allocatable": {"cpu": str(replicas * args.bindings), "pods": str(replicas * args.bindings)}
            }
            await client.merge_patch(f"{CLUSTERS}/{names[0]}/status", {"status": {"resourceSummary": room}})
            started = time.monotonic()
            seen: dict[str, float] = {}
            while len(seen) < args.bindings and time.monotonic() - started < 600:
                for name, value in (await states(client, namespace)).items():
                    if value == "True" and name not in seen:
                        seen[name] = time.monotonic() - started
                await asyncio.sleep(0.2)
            latencies = sorted(seen.values())
            out["decided"] = len(latencies)
            if latencies:
                out["p50"] = statistics.median(latencies)
                out["p99"] = latencies[int(0.99 * (len(latencies) - 1))]
                out["last"] = latencies[-1]
            out["histogram_count"] = proc.metric("fleetsched_scheduler_event_to_decision_seconds_count")
            # put the cluster back for the next variant
            await client.merge_patch(
                f"{CLUSTERS}/{names[0]}/status",
                {"status": {"resourceSummary": {"allocatable": {"cpu": "1", "pods": "1000"}}}},
            )
    finally:
        proc.stop()
        await client.delete(RB_NS.format(ns=namespace))
    return out


async def main_async(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="fleetsched-requeue-"))
    print(f"starting etcd + kube-apiserver in {workdir} ...", file=sys.stderr)
    plane = ControlPlane.start(workdir=workdir / "cp")
    client = KubeClient(load_connection(str(plane.kubeconfig)), user_agent="fleetsched-bench-requeue")
    names = [f"rq-{i:03d}" for i in range(args.clusters)]
    results = []
    with contextlib.ExitStack() as stack:
        try:
            jobs = []
            for name in names:
                doc = cpu_cluster(name, 1)
                body = {k: v for k, v in doc.items() if k != "status"}
                jobs.append(functools.partial(client.create, CLUSTERS, body))
            await run_pool(jobs)
            statuses = [
                functools.partial(
                    client.merge_patch, f"{CLUSTERS}/{n}/status", {"status": cpu_cluster(n, 1)["status"]}
                )
                for n in names
            ]
            await run_pool(statuses)
            variants: list[tuple[str, Path | None]] = [("this tree", None)]
            if args.baseline_ref:
                _, tree = stack.enter_context(baseline_tree(args.baseline_ref))
                variants.append((args.baseline_ref, tree))
            for number, (label, tree) in enumerate(variants):
                print(f"{label} ...", file=sys.stderr)
                results.append(await variant(client, plane, args, names, label, tree, workdir, number))
        finally:
            await client.close()
            plane.stop()
    load = os.getloadavg()
    print(
        f"requeue bench: {args.bindings} unschedulable bindings over {args.clusters} Clusters, "
        f"{args.heartbeats} heartbeats of each kind"
    )
    for r in results:
        print(
            f"  {r['label']}: scheduler CPU per heartbeat: {r['quiet_ms']:.3f} ms (conditions only), "
            f"{r['busier_ms']:.3f} ms (allocated up); attempts before the capacity event {r['attempts']:.0f}"
        )
        if "decided" in r:
            if "p50" in r:
                print(
                    f"    capacity event -> Scheduled: {r['decided']}/{args.bindings} decided, "
                    f"p50 {r['p50']:.2f} s, p99 {r['p99']:.2f} s, last {r['last']:.2f} s "
                    f"(event_to_decision histogram count {r['histogram_count']:.0f})"
                )
            else:
                print("    capacity event -> Scheduled: none decided")
        else:
            print("    capacity event: not measured (waits for the 5-minute unschedulable flush)")
    print(f"  load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cores)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--bindings", type=int, default=1000)
    parser.add_argument("--heartbeats", type=int, default=300)
    parser.add_argument("--baseline-ref", default="main")
    args = parser.parse_args()
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())
