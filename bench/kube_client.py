"""The Kubernetes client's CPU per request against a real kube-apiserver (loopback TLS), beside
aiohttp's client doing the same requests, and optionally the client of another commit.

The scheduler sends about four small requests per binding (two binding writes, two Events); this
measures what the client spends on each, alone: merge PATCHes of a ConfigMap the size of a binding,
Event POSTs (answer not read), GETs of that ConfigMap and LISTs of the namespace's ConfigMaps,
``--concurrency`` in flight, on the uvloop loop the operators run on. Each implementation runs in
a process of its own (``--worker``), so the figure is that process's CPU (user + system) per request;
the implementations take turns round by round against the one apiserver, which shares the machine,
so compare figures within one run:

- ``http1``: ``KubeClient`` of this tree (``fleetsched/kube/http1.py`` under it);
- ``aiohttp``: an ``aiohttp.ClientSession`` with the same TLS context, headers and JSON handling
  (orjson), reading each answer whole: the least aiohttp needs for the same requests;
- ``baseline``: ``KubeClient`` of ``--baseline-ref REF`` (a detached worktree of that commit).

    python bench/kube_client.py --requests 2000 --baseline-ref main
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# A worker imports fleetsched from the tree it is told (a baseline's), everything else from here.
sys.path.insert(0, os.environ.get("KUBE_CLIENT_BENCH_TREE", str(REPO)))

NAMESPACE = "bench"
PHASES = ("merge PATCH of a ~3 KiB object", "Event POST (answer not read)", "GET of a ~3 KiB object",
          "LIST of 16 such objects")


class AiohttpClient:
    """What the bench asks of a client, on aiohttp (same TLS context, headers and JSON)."""

    def __init__(self, kube: Any) -> None:
        import aiohttp
        import orjson

        self._orjson = orjson
        http = kube._http
        self.server = kube.connection.server
        headers = {"User-Agent": "bench", "Accept": "application/json"}
        if getattr(kube.connection, "token", None):
            headers["Authorization"] = f"Bearer {kube.connection.token}"
        self.session = aiohttp.ClientSession(
            headers=headers,
            connector=aiohttp.TCPConnector(ssl=http.ssl_context or False, limit=100, keepalive_timeout=60),
            timeout=aiohttp.ClientTimeout(total=60, connect=10),
        )

    async def _request(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json",
        decode: bool = True, params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        data = None if body is None else self._orjson.dumps(body)
        headers = {"Content-Type": content_type} if data is not None else None
        query = {"fieldManager": "bench"} if data is not None else params
        async with self.session.request(method, self.server + path, data=data, headers=headers,
                                        params=query) as response:
            raw = await response.read()
            if not 200 <= response.status < 300:
                raise RuntimeError(f"{response.status}: {raw[:200]!r}")
            return self._orjson.loads(raw) if decode and raw else {}

    async def create(self, path: str, body: Any, *, decode: bool = True) -> dict[str, Any]:
        return await self._request("POST", path, body, decode=decode)

    async def merge_patch(self, path: str, body: Any) -> dict[str, Any]:
        return await self._request("PATCH", path, body, content_type="application/merge-patch+json")

    async def get(self, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        return await self._request("GET", path, params=params)

    async def close(self) -> None:
        await self.session.close()


async def run_phase(
    n: int, concurrency: int, request: Callable[[int], Awaitable[Any]]
) -> tuple[float, float]:
    """CPU seconds per request and requests per second."""
    iterator = iter(range(n))

    async def worker() -> None:
        for i in iterator:
            await request(i)

    started_cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started
    return cpu / n, n / wall


async def worker_main(kubeconfig: str, implementation: str, n: int, concurrency: int) -> dict[str, Any]:
    from fleetsched.kube.client import KubeClient, load_connection

    kube = KubeClient(load_connection(kubeconfig), user_agent="bench", field_manager="bench")
    client: Any = AiohttpClient(kube) if implementation == "aiohttp" else kube
    base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
    names = [f"cm-{i}" for i in range(16)]
    payload = "y" * 3000  # a binding's spec and status are a few KiB

    async def patch(i: int) -> None:
        await client.merge_patch(f"{base}/{names[i % len(names)]}", {"data": {"x": str(i), "p": payload}})

    async def event(i: int) -> None:
        body = {
            "metadata": {"name": f"e.{implementation}.{time.time_ns():x}.{i}", "namespace": NAMESPACE},
            "involvedObject": {"kind": "ConfigMap", "name": names[i % len(names)], "namespace": NAMESPACE},
            "reason": "Bench",
            "message": "Binding has been scheduled successfully. Result: {member1:2, member2:3}",
            "type": "Normal",
            "source": {"component": "bench"},
        }
        await client.create(f"/api/v1/namespaces/{NAMESPACE}/events", body, decode=False)

    async def get(i: int) -> None:
        await client.get(f"{base}/{names[i % len(names)]}")

    async def listing(i: int) -> None:
        page = await client.get(base, {"limit": "500"})
        assert len(page["items"]) == len(names)

    results: dict[str, Any] = {}
    try:
        for phase, request, count in zip(PHASES, (patch, event, get, listing), (n, n, n, max(n // 4, 1)),
                                         strict=True):
            results[phase] = await run_phase(count, concurrency, request)
    finally:
        await client.close()
        if client is not kube:
            await kube.close()
    return results


def worker_cli(args: argparse.Namespace) -> int:
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        work = worker_main(args.kubeconfig, args.implementation, args.requests, args.concurrency)
        results = runner.run(work)
    print(json.dumps(results))
    return 0


def run_worker(tree: Path, kubeconfig: str, implementation: str, args: argparse.Namespace) -> dict[str, Any]:
    env = {**os.environ, "KUBE_CLIENT_BENCH_TREE": str(tree)}
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", f"--implementation={implementation}",
            f"--kubeconfig={kubeconfig}", f"--requests={args.requests}", f"--concurrency={args.concurrency}"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"{implementation} worker failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def setup(kubeconfig: str) -> None:
    import uvloop

    from fleetsched.kube.client import KubeClient, load_connection

    async def create() -> None:
        client = KubeClient(load_connection(kubeconfig), user_agent="bench", field_manager="bench")
        try:
            await client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            for i in range(16):
                await client.create(f"/api/v1/namespaces/{NAMESPACE}/configmaps",
                                    {"metadata": {"name": f"cm-{i}"}, "data": {"x": "0", "p": "y" * 3000}})
        finally:
            await client.close()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(create())


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline-ref", help="also time KubeClient of this commit")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--implementation", default="http1", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker_cli(args)

    from bench.operator_e2e import baseline_tree
    from tests.support.controlplane import running_control_plane

    with contextlib.ExitStack() as stack:
        trees = {"http1": REPO, "aiohttp": REPO}
        if args.baseline_ref:
            commit, tree = stack.enter_context(baseline_tree(args.baseline_ref))
            trees[f"baseline {commit[:10]}"] = tree
        plane = stack.enter_context(running_control_plane(apply_crds=False))
        kubeconfig = str(plane.apiserver.kubeconfig)
        setup(kubeconfig)
        print(f"kube client: {args.requests} requests per phase ({args.requests // 4} LISTs), "
              f"{args.concurrency} in flight; load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
        figures: dict[str, dict[str, list[float]]] = {name: {p: [] for p in PHASES} for name in trees}
        for number in range(args.rounds):
            print(f" round {number + 1}")
            for name, tree in trees.items():
                results = run_worker(tree, kubeconfig, "aiohttp" if name == "aiohttp" else "http1", args)
                for phase in PHASES:
                    cpu, rate = results[phase]
                    figures[name][phase].append(cpu)
                    print(f"  {name:<20} {phase:<32} {1e6 * cpu:7.1f} us CPU per request, "
                          f"{rate:7.0f} requests/s")
        print(" median CPU per request over the rounds, and its ratio to http1's:")
        for phase in PHASES:
            ours = statistics.median(figures["http1"][phase])
            line = "  ".join(f"{name} {1e6 * statistics.median(v[phase]):6.1f} us "
                             f"({statistics.median(v[phase]) / ours:4.2f}x)" for name, v in figures.items())
            print(f"  {phase:<32} {line}")
        print(f"  load average after {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
