"""The Kubernetes client's CPU per request against a real kube-apiserver (loopback TLS).

The scheduler sends about four small requests per binding (two binding writes, two Events); this
measures what the client spends on each, alone: merge PATCHes of a ConfigMap the size of a
binding, and Event POSTs, ``--concurrency`` in flight, on the uvloop loop the operators run on.
Reported as the client process's CPU (user + system) per request; the apiserver shares the
machine, so compare figures within one run (``--baseline-ref`` is not offered: run it on two
checkouts and compare the ratios to the Events line, which changes least).

    python bench/kube_client.py --requests 2000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

import uvloop

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fleetsched.kube.client import KubeClient, load_connection  # noqa: E402
from tests.support.controlplane import running_control_plane  # noqa: E402

NAMESPACE = "bench"


async def run_phase(label: str, n: int, concurrency: int, request: object) -> None:
    iterator = iter(range(n))

    async def worker() -> None:
        for i in iterator:
            await request(i)  # type: ignore[operator]

    started_cpu, started = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    cpu, wall = time.process_time() - started_cpu, time.perf_counter() - started
    print(f"  {label:<34} {1e6 * cpu / n:7.1f} us CPU per request, {n / wall:7.0f} requests/s")


async def main(kubeconfig: str, n: int, concurrency: int, rounds: int) -> None:
    client = KubeClient(load_connection(kubeconfig), user_agent="bench", field_manager="bench")
    try:
        await client.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        names = [f"cm-{i}" for i in range(concurrency)]
        base = f"/api/v1/namespaces/{NAMESPACE}/configmaps"
        for name in names:
            await client.create(base, {"metadata": {"name": name}, "data": {"x": "0"}})
        payload = "y" * 3000  # a binding's spec and status are a few KiB

        async def patch(i: int) -> None:
            patch_body = {"data": {"x": str(i), "p": payload}}
            await client.merge_patch(f"{base}/{names[i % concurrency]}", patch_body)

        async def event(i: int) -> None:
            body = {
                "metadata": {"name": f"e.{time.time_ns():x}", "namespace": NAMESPACE},
                "involvedObject": {
                    "kind": "ConfigMap",
                    "name": names[i % concurrency],
                    "namespace": NAMESPACE,
                },
                "reason": "Bench",
                "message": "Binding has been scheduled successfully. Result: {member1:2, member2:3}",
                "type": "Normal",
                "source": {"component": "bench"},
            }
            await client.create(f"/api/v1/namespaces/{NAMESPACE}/events", body, decode=False)

        async def get(i: int) -> None:
            await client.get(f"{base}/{names[i % concurrency]}")

        for number in range(rounds):
            print(f" round {number + 1}")
            await run_phase("merge PATCH of a ~3 KiB object", n, concurrency, patch)
            await run_phase("Event POST (answer not parsed)", n, concurrency, event)
            await run_phase("GET of a ~3 KiB object", n, concurrency, get)
    finally:
        await client.close()


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with running_control_plane(apply_crds=False) as plane:
        print(
            f"kube client: {args.requests} requests per phase, {args.concurrency} in flight; load average"
            f" {'/'.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(main(str(plane.apiserver.kubeconfig), args.requests, args.concurrency, args.rounds))
        print(f"  load average after {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(cli())
