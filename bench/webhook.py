"""Admission round-trip latency of ``fleetsched webhook`` over real HTTPS on loopback.

Starts the server as a process (throwaway CA, TLS 1.3), then sends AdmissionReviews:
- keep-alive: one persistent connection, requests one after another;
- fresh: a new TCP + TLS connection per request (what an API server pays without connection reuse);
- concurrent: several keep-alive clients at once, for throughput.
For a small allowed policy, a large policy denied with many errors, and the mutating path.
Prints p50/p99/max in milliseconds and requests per second. Never asserts a time.

Memory (issue 14): N concurrent maximum-size bodies (just under 7 MiB, N=8 by default) sent at
once to a fresh server process, while one client keeps sending small valid reviews. Prints the
server's peak RSS (VmHWM), its RSS before and after the burst, what the large requests were
answered, and the small reviews' latency meanwhile, with the load average. The manifest's memory
request and limit (manifests/webhook/base/deployment.yaml) are sized from this figure.

Connections (issue 30): N slow TLS clients (2,000 by default, spread over --sources client
addresses, none of them the reviewer's) hold connections open for --seconds: ones that never send a
ClientHello, ones that trickle their headers, ones that trickle their body. Meanwhile one client
sends valid reviews, each on a fresh connection, from 127.0.0.1 (the API server's address). Prints
the server's RSS (before, sampled maximum, VmHWM, after), how many reviews were allowed, and how
many connections were refused or evicted. The manifest's memory limit is checked against it.

    .venv/bin/python bench/webhook.py [--requests N] [--clients C] [--only latency|memory|connections]
                                      [--concurrent N] [--slow-clients N] [--sources S] [--seconds T]
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleetsched.webhook.testing import (
    SlowClients,
    WebhookProcess,
    a_policy,
    a_review,
    free_port,
    make_certificates,
)

SMALL = a_policy({"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                         "namespace": "default"}],
                  "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                                "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                      "replicaDivisionPreference": "Weighted"}}})
LARGE = a_policy({
    "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "other"} for _ in range(20)],
    "preemption": "Always",
    "placement": {
        "clusterAffinity": {"clusterNames": [f"member{i}" for i in range(50)]},
        "clusterAffinities": [{"affinityName": f"g{i % 5}", "clusterNames": [f"m{j}" for j in range(10)],
                               "fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
                               "overflowAffinities": [{"affinityName": "o", "exclude": ["m1"]}] * 3}
                              for i in range(20)],
        "spreadConstraints": [{"spreadByField": "region", "maxGroups": 1, "minGroups": 2}] * 5,
        "clusterTolerations": [{"key": "k", "operator": "Lt"}] * 10,
    }})


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def one(conn: http.client.HTTPSConnection, path: str, payload: bytes) -> dict[str, Any]:
    conn.request("POST", path, body=payload, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return json.loads(resp.read())


def connect(webhook: WebhookProcess) -> http.client.HTTPSConnection:
    context = webhook.client_context()
    return http.client.HTTPSConnection("127.0.0.1", webhook.port, context=context, timeout=30)


def run_sequential(webhook: WebhookProcess, path: str, payload: bytes, n: int, *, fresh: bool) -> list[float]:
    samples = []
    conn = connect(webhook)
    for _ in range(n):
        if fresh:
            conn.close()
            conn = connect(webhook)
        start = time.perf_counter()
        review = one(conn, path, payload)
        samples.append(time.perf_counter() - start)
        assert "response" in review
    conn.close()
    return samples


def run_concurrent(webhook: WebhookProcess, path: str, payload: bytes, n: int,
                   clients: int) -> tuple[float, list[float]]:
    samples: list[float] = []
    lock = threading.Lock()

    def worker(count: int) -> None:
        local = run_sequential(webhook, path, payload, count, fresh=False)
        with lock:
            samples.extend(local)

    threads = [threading.Thread(target=worker, args=(n // clients,)) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, samples


def line(name: str, samples: list[float], wall: float | None = None) -> str:
    ms = [s * 1000 for s in samples]
    rps = len(samples) / (wall if wall is not None else sum(samples))
    return (f"{name:<44} n={len(ms):>5}  p50={percentile(ms, 0.5):7.2f} ms  "
            f"p99={percentile(ms, 0.99):7.2f} ms  max={max(ms):7.2f} ms  "
            f"mean={statistics.fmean(ms):6.2f} ms  {rps:8.1f} req/s")


MAX_BODY = 7 * 1024 * 1024


def _selectors(n: int) -> bytes:
    return json.dumps(a_review(a_policy({"resourceSelectors": [
        {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "default", "name": f"cm-{i}"}
        for i in range(n)]}), uid="big")).encode()


def _long_string(n: int) -> bytes:
    obj = a_policy({})
    obj["metadata"]["annotations"] = {"note": "a" * n}
    return json.dumps(a_review(obj, uid="big")).encode()


def max_body(make: Callable[[int], bytes]) -> bytes:
    """The largest body of this shape under the 7 MiB limit (within 1%)."""
    one, hundred = len(make(1)), len(make(100))
    n = int((MAX_BODY - one) / ((hundred - one) / 99))
    while len(payload := make(n)) >= MAX_BODY:
        n = int(n * 0.995)
    return payload


def proc_kib(pid: int, field: str) -> int:
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith(field + ":"):
            return int(text.split()[1])
    raise KeyError(field)


def memory_run(cert_dir: Path, name: str, payload: bytes, concurrent: int) -> None:
    with WebhookProcess(cert_dir) as webhook:
        assert webhook.process is not None
        pid = webhook.process.pid
        small = json.dumps(a_review(SMALL)).encode()
        run_sequential(webhook, "/validate-propagationpolicy", small, 50, fresh=False)  # warm-up
        before = proc_kib(pid, "VmRSS")
        done = threading.Event()
        small_samples: list[float] = []
        answers: Counter[str] = Counter()
        lock = threading.Lock()

        def small_client() -> None:
            conn = connect(webhook)
            while not done.is_set():
                start = time.perf_counter()
                review = one(conn, "/validate-propagationpolicy", small)
                small_samples.append(time.perf_counter() - start)
                assert review["response"]["allowed"] is True
                time.sleep(0.01)
            conn.close()

        def big_client() -> None:
            conn = connect(webhook)
            conn.timeout = 120
            try:
                status = one(conn, "/validate-propagationpolicy", payload)["response"]["status"]
                key = f"{status['code']}"
            except OSError as exc:
                key = type(exc).__name__
            finally:
                conn.close()
            with lock:
                answers[key] += 1

        prober = threading.Thread(target=small_client)
        prober.start()
        time.sleep(0.2)
        bigs = [threading.Thread(target=big_client) for _ in range(concurrent)]
        start = time.perf_counter()
        for t in bigs:
            t.start()
        for t in bigs:
            t.join()
        wall = time.perf_counter() - start
        time.sleep(0.3)
        done.set()
        prober.join()
        peak = proc_kib(pid, "VmHWM")
        after = proc_kib(pid, "VmRSS")
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(answers.items()))
        print(f"{name}: {concurrent} x {len(payload) / 2**20:.2f} MiB at once, answered in {wall:.2f} s "
              f"(codes {codes})")
        print(f"  server RSS: before {before / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB, "
              f"after {after / 1024:.0f} MiB   (load average {load})")
        print("  " + line("small reviews meanwhile", small_samples).strip())


def memory(concurrent: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cert_dir = Path(tmp)
        make_certificates(cert_dir)
        print(f"memory: python {sys.version.split()[0]}, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        memory_run(cert_dir, "policy with 7 MiB of resourceSelectors", max_body(_selectors), concurrent)
        memory_run(cert_dir, "policy with a 7 MiB annotation", max_body(_long_string), concurrent)


def aborted(webhook: WebhookProcess) -> dict[str, float]:
    """fleetsched_webhook_requests_aborted_total by reason."""
    url = f"http://127.0.0.1:{webhook.metrics_port}/metrics"
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    out: dict[str, float] = {}
    for row in text.splitlines():
        if row.startswith("fleetsched_webhook_requests_aborted_total{"):
            labels, _, value = row.rpartition(" ")
            out[labels.split('reason="', 1)[1].split('"', 1)[0]] = float(value)
    return out


def connections_run(cert_dir: Path, slow: str, count: int, sources: int, seconds: float) -> None:
    with WebhookProcess(cert_dir, metrics_port=free_port()) as webhook:
        assert webhook.process is not None
        pid = webhook.process.pid
        small = json.dumps(a_review(SMALL)).encode()
        run_sequential(webhook, "/validate-propagationpolicy", small, 50, fresh=False)  # warm-up
        before = proc_kib(pid, "VmRSS")
        crowds = [SlowClients(webhook.port, webhook.client_context(), count // sources, slow=slow,
                              source=f"127.0.1.{i + 1}", retry=0.5, interval=0.5) for i in range(sources)]
        answers: Counter[str] = Counter()
        took: list[float] = []
        rss_max = 0
        with contextlib.ExitStack() as stack:
            for crowd in crowds:
                stack.enter_context(crowd)
            started = time.monotonic()
            while time.monotonic() - started < seconds:
                try:
                    sent = time.perf_counter()
                    conn = connect(webhook)
                    got = one(conn, "/validate-propagationpolicy", small)["response"]
                    conn.close()
                    took.append(time.perf_counter() - sent)
                    answers["allowed" if got["allowed"] is True else str(got["status"]["code"])] += 1
                except OSError as exc:
                    answers[type(exc).__name__] += 1
                rss_max = max(rss_max, proc_kib(pid, "VmRSS"))
                time.sleep(0.1)
            held = sum(c.held for c in crowds)
            opened = sum(c.opened for c in crowds)
            rss_max = max(rss_max, proc_kib(pid, "VmRSS"))
        peak = proc_kib(pid, "VmHWM")
        time.sleep(1.0)
        after = proc_kib(pid, "VmRSS")
        counts = aborted(webhook)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        total = sum(answers.values())
        print(f"{count} slow clients ({slow}) from {sources} addresses for {seconds:g} s: "
              f"{held} connected at the end, {opened} connections opened in all")
        print(f"  server RSS: before {before / 1024:.0f} MiB, max sampled {rss_max / 1024:.0f} MiB, "
              f"peak (VmHWM) {peak / 1024:.0f} MiB, after {after / 1024:.0f} MiB   (load average {load})")
        print(f"  valid reviews from 127.0.0.1, fresh connection each: {answers['allowed']} of {total} "
              "allowed "
              f"({', '.join(f'{k}: {v}' for k, v in sorted(answers.items()))})")
        if took:
            print("  " + line("their latency (connect, TLS, review)", took).strip())
        print(f"  refused/evicted: {', '.join(f'{k}: {v:.0f}' for k, v in sorted(counts.items())) or 'none'}")


def connections(count: int, sources: int, seconds: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cert_dir = Path(tmp)
        make_certificates(cert_dir)
        print(f"connections: python {sys.version.split()[0]}, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
        for slow in ("handshake", "headers", "body"):
            connections_run(cert_dir, slow, count, sources, seconds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per keep-alive scenario")
    parser.add_argument("--fresh-requests", type=int, default=300,
                        help="requests per fresh-connection scenario")
    parser.add_argument("--clients", type=int, default=4, help="concurrent keep-alive clients")
    parser.add_argument("--only", choices=("latency", "memory", "connections"), help="run one part only")
    parser.add_argument("--concurrent", type=int, default=8,
                        help="maximum-size bodies sent at once in the memory part (default 8)")
    parser.add_argument("--slow-clients", type=int, default=2000,
                        help="slow TLS clients in the connections part (default 2000)")
    parser.add_argument("--sources", type=int, default=8,
                        help="client addresses they come from (default 8)")
    parser.add_argument("--seconds", type=float, default=15.0,
                        help="how long each kind of slow client is held (default 15)")
    args = parser.parse_args(argv)
    if args.only in (None, "connections"):
        connections(args.slow_clients, args.sources, args.seconds)
    if args.only == "connections":
        return 0
    if args.only != "latency":
        memory(args.concurrent)
    if args.only == "memory":
        return 0

    small = json.dumps(a_review(SMALL)).encode()
    large = json.dumps(a_review(LARGE)).encode()
    with tempfile.TemporaryDirectory() as tmp:
        cert_dir = Path(tmp)
        make_certificates(cert_dir)
        with WebhookProcess(cert_dir) as webhook:
            denied = one(connect(webhook), "/validate-propagationpolicy", large)["response"]
            denial = denied["status"]["message"]
            run_sequential(webhook, "/validate-propagationpolicy", small, 200, fresh=False)  # warm-up
            print(f"fleetsched webhook on {webhook.base_url} (TLS 1.3, python {sys.version.split()[0]})")
            print(f"bodies: small {len(small)} B; large {len(large)} B, denied with {len(denial)} B message")
            print(line("validate small, keep-alive",
                       run_sequential(webhook, "/validate-propagationpolicy", small, args.requests,
                                      fresh=False)))
            print(line("mutate small, keep-alive",
                       run_sequential(webhook, "/mutate-propagationpolicy", small, args.requests,
                                      fresh=False)))
            print(line("validate large (denied), keep-alive",
                       run_sequential(webhook, "/validate-propagationpolicy", large, args.requests // 4,
                                      fresh=False)))
            print(line("validate small, fresh TLS connection each",
                       run_sequential(webhook, "/validate-propagationpolicy", small, args.fresh_requests,
                                      fresh=True)))
            print(line("mutate small, fresh TLS connection each",
                       run_sequential(webhook, "/mutate-propagationpolicy", small, args.fresh_requests,
                                      fresh=True)))
            wall, samples = run_concurrent(webhook, "/validate-propagationpolicy", small, args.requests,
                                           args.clients)
            print(line(f"validate small, {args.clients} keep-alive clients", samples, wall))
    return 0


if __name__ == "__main__":
    sys.exit(main())
