"""The accurate estimator's member watches on a real kube-apiserver: the cost of its initial sync and
of each pod event, for the current code and (``--baseline-ref REF`` / ``--baseline-tree DIR``)
another revision's in the same run.

    .venv/bin/python bench/estimator_watch.py [--nodes 500] [--pods 5000] [--events 5000] [--rounds 2]
        [--baseline-ref REF | --baseline-tree DIR]

One kube-apiserver holds ``--nodes`` Nodes and ``--pods`` Pods bound to them (``spec.nodeName``,
a cpu and memory request each). Each run starts ``fleetsched estimator`` on it as a process and
prints:

* sync: seconds from start to ready (its LIST of every kind handed to its caches), the process's
  CPU seconds by then (start-up included), its resident memory once synced and its peak, and the
  node and pod counts its ``caches_synced`` log line gives;
* events: ``--events`` pod label changes (one MODIFIED event each), ``--concurrency`` at a time;
  the estimator's CPU milliseconds per event, counted until it is idle again, and how many of them
  reached it: the Pod watch events the apiserver sent meanwhile (``apiserver_watch_events_total``),
  less what its own Pod watchers take per change (measured once before the first estimator starts),
  so a run whose events never arrived shows.

The variants alternate round by round (the order flips); the medians and the ratio current /
baseline are printed with the load average. Prints figures; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from operator_e2e import cpu_seconds, peak_rss_mib, run_pool, wait_idle  # noqa: E402
from policy_controller import compared_trees  # noqa: E402

from fleetsched.kube.client import KubeClient, load_connection  # noqa: E402
from tests.support.controlplane import APIServer, ControlPlane, free_port, wait_until  # noqa: E402

NAMESPACE = "bench-estimator"
PODS = f"/api/v1/namespaces/{NAMESPACE}/pods"
MERGE = "application/merge-patch+json"


def pod_watch_events(server: APIServer) -> float:
    """The apiserver's count of Pod watch events sent so far (its /metrics, as the admin)."""
    with urllib.request.urlopen(f"{server.url}/metrics", timeout=30, context=server.ssl_context()) as answer:
        text = answer.read().decode()
    total = 0.0
    for line in text.splitlines():
        if not line.startswith("apiserver_watch_events_total{"):
            continue
        if 'kind="Pod"' in line or 'resource="pods"' in line:
            total += float(line.rpartition(" ")[2])
    return total


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"zone": name[-1]}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "110"}}}


def pod(name: str, node_name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"nodeName": node_name, "containers": [
                {"name": "app", "image": "registry.example/app:1",
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


class EstimatorRun:
    """``fleetsched estimator`` on ``server``; with ``tree``, that tree's code first on the path."""

    def __init__(self, server: APIServer, log_path: Path, tree: Path | None) -> None:
        self.health = free_port()
        self.log_path = log_path
        args = ["estimator", "--cluster-name", "member", "--kubeconfig", str(server.kubeconfig),
                "--server-port", str(free_port()), "--server-bind-address", "127.0.0.1",
                "--health-probe-bind-address", f"127.0.0.1:{self.health}",
                "--metrics-bind-address", f"127.0.0.1:{self.health}", "--kube-api-qps", "0"]
        if tree is None:
            self.argv = [sys.executable, "-m", "fleetsched", *args]
        else:
            boot = (f"import runpy, sys; sys.path.insert(0, {str(tree)!r}); "
                    "runpy.run_module('fleetsched', run_name='__main__', alter_sys=True)")
            self.argv = [sys.executable, "-c", boot, *args]
        self.process: Any = None

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"the estimator exited with {self.process.returncode}; see {self.log_path}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=5) as answer:
                return int(answer.status) == 200
        except (urllib.error.URLError, OSError):
            return False

    def synced(self) -> dict[str, Any]:
        for line in self.log_path.read_text(errors="replace").splitlines():
            if '"caches_synced"' in line:
                with contextlib.suppress(ValueError):
                    return dict(json.loads(line))
        return {}

    def __enter__(self) -> EstimatorRun:
        import subprocess

        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                                            env={k: v for k, v in os.environ.items() if k != "KUBECONFIG"})
        return self

    def __exit__(self, *_: object) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except Exception:
                self.process.kill()
                self.process.wait(5)


async def change_pods(client: KubeClient, names: list[str], tag: str, count: int, concurrency: int) -> None:
    """``count`` label changes over ``names`` in turn, each to a value of its own (one event each)."""

    async def change(number: int) -> None:
        body = {"metadata": {"labels": {"tick": f"{tag}-{number}"}}}
        path = f"{PODS}/{names[number % len(names)]}"
        await client.request("PATCH", path, body=body, content_type=MERGE, decode=False)

    await run_pool([lambda n=n: change(n) for n in range(count)], concurrency)


async def internal_events_per_change(server: APIServer, client: KubeClient, names: list[str]) -> float:
    """Pod watch events the apiserver sends per change with no estimator running (its own watchers)."""
    count = min(len(names), 50)
    before = pod_watch_events(server)
    await change_pods(client, names, "calibration", count, 8)
    await asyncio.sleep(2.0)
    return (pod_watch_events(server) - before) / count


async def one_run(server: APIServer, client: KubeClient, label: str, tree: Path | None, number: int,
                  args: argparse.Namespace, workdir: Path, names: list[str],
                  internal: float) -> dict[str, float]:
    """``number`` counts the runs: each one's label values are new, so every patch is an event;
    ``internal``: the Pod watch events per change the apiserver sends to its own watchers."""
    log_path = workdir / f"estimator-{number}.log"
    with EstimatorRun(server, log_path, tree) as run:
        started = time.perf_counter()
        wait_until(run.ready, timeout=600, interval=0.05,
                   message=f"the estimator never synced; see {log_path}")
        ready = time.perf_counter() - started
        pid = run.process.pid
        cpu_ready = cpu_seconds(pid)
        rss_synced = peak_rss_mib(pid)[1]
        await wait_idle(pid)
        counts = run.synced()
        before, sent_before = cpu_seconds(pid), pod_watch_events(server)
        await change_pods(client, names, str(number), args.events, args.concurrency)
        load = os.getloadavg()[0]
        await wait_idle(pid, limit=300)
        per_event = 1000 * (cpu_seconds(pid) - before) / args.events
        reached = pod_watch_events(server) - sent_before - internal * args.events
        peak = peak_rss_mib(pid)[0]
    print(f"  {label + ':':<10} ready in {ready:5.2f} s, CPU {cpu_ready:5.2f} s by then, RSS synced "
          f"{rss_synced:.0f} MiB, peak {peak:.0f} MiB ({counts.get('nodes', '?')} nodes, "
          f"{counts.get('pods', '?')} pods synced); {per_event:.3f} CPU ms per pod event "
          f"({reached:.0f} reached it); load average {load:.2f}")
    return {"ready s": ready, "CPU to ready s": cpu_ready, "RSS synced MiB": rss_synced,
            "peak RSS MiB": peak, "CPU ms per pod event": per_event}


async def main_async(args: argparse.Namespace) -> int:
    load_before = os.getloadavg()
    with contextlib.ExitStack() as stack:
        variants = compared_trees(stack, args)
        workdir = Path(tempfile.mkdtemp(prefix="fleetsched-bench-estimator-"))
        print(f"starting etcd + kube-apiserver in {workdir} ...", file=sys.stderr)
        plane = ControlPlane.start(workdir=workdir / "cp", apply_crds=False)
        client = KubeClient(load_connection(str(plane.kubeconfig)), user_agent="fleetsched-bench")
        figures: dict[str, dict[str, list[float]]] = {label: {} for label, _ in variants}
        try:
            nodes = [f"node-{i:05d}" for i in range(args.nodes)]
            names = [f"pod-{i:06d}" for i in range(args.pods)]
            print(f"creating {args.nodes} Nodes and {args.pods} Pods ...", file=sys.stderr)
            await run_pool([lambda n=n: client.create("/api/v1/nodes", node(n)) for n in nodes],
                           args.concurrency)
            await client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            await run_pool([lambda i=i, n=n: client.create(PODS, pod(n, nodes[i % len(nodes)]))
                            for i, n in enumerate(names)], args.concurrency)
            internal = await internal_events_per_change(plane.apiserver, client, names)
            print(f"estimator member watches: {args.nodes} Nodes, {args.pods} Pods, {args.events} pod events "
                  f"({args.concurrency} in flight; the apiserver's own Pod watchers take {internal:g} "
                  f"per change); {os.cpu_count()} cores")
            runs = 0
            for number in range(1, args.rounds + 1):
                print(f"round {number}:")
                for label, tree in variants if number % 2 else variants[::-1]:
                    runs += 1
                    found = await one_run(plane.apiserver, client, label, tree, runs, args, workdir, names,
                                          internal)
                    for key, value in found.items():
                        figures[label].setdefault(key, []).append(value)
        finally:
            await client.close()
            plane.stop()
    labels = [label for label, _ in variants]
    print(f"median over {args.rounds} round(s):")
    for key in figures["current"]:
        medians = [statistics.median(figures[label][key]) for label in labels]
        ratio = ""
        if len(labels) == 2 and medians[1]:
            ratio = f"; current / {labels[1]} {medians[0] / medians[1]:.2f}"
        cells = ", ".join(f"{label} {m:.3f}" for label, m in zip(labels, medians, strict=True))
        print(f"  {key}: {cells}{ratio}")
    load_after = os.getloadavg()
    print(f"load average before {'/'.join(f'{x:.2f}' for x in load_before)}, "
          f"after {'/'.join(f'{x:.2f}' for x in load_after)}")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--pods", type=int, default=5000)
    parser.add_argument("--events", type=int, default=5000, help="pod label changes after the sync")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=16, help="client requests in flight")
    baseline = parser.add_mutually_exclusive_group()
    baseline.add_argument("--baseline-ref", metavar="REF", help="also run the estimator of this git commit")
    baseline.add_argument("--baseline-tree", metavar="DIR",
                          help="also run the estimator of this working tree as it is on disk")
    args = parser.parse_args()
    for name in ("nodes", "pods", "events", "rounds", "concurrency"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be at least 1")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
