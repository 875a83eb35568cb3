"""Benchmark of the scheduling core: bindings/s, per-binding latency p50/p99, peak RSS.

Loads a fleet file (Clusters + bindings), converts every object once, then schedules the bindings
one after another in one process against one snapshot, as ``fleetsched simulate`` does. Prints
figures and exits 0; it never asserts a time.

Rounds, all in one run so they compare as ratios on a noisy machine:

* the shared rounds: each file as written (its bindings share a few dozen per-replica requests,
  so most estimates are reused);
* ``cold``: the same fleet with every binding given its own cpu request (same clusters, same
  placements otherwise), the path real fleets take;
* ``churn``: the cold fleet while Cluster status heartbeats arrive at ``--churn`` per second of
  scheduling time (allocated/allocating change; labels, taints and APIs do not), as they do in a
  live control plane;
* ``--sweep``: generated fleets (``bench/fleet_gen.py``) of growing size, each in a process of its
  own so its peak RSS is its own. Per-binding cost may grow with clusters, never with bindings.

    .venv/bin/python bench/core.py [FILE ...]          # default: the two shared 100x5000 fleets
    .venv/bin/python bench/core.py --sweep 100x5000,300x30000,1000x100000
    .venv/bin/python bench/core.py --metrics          # with the live scheduler's metric observers
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fleetsched.api.load import load_files
from fleetsched.scheduler import matching
from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict, status_from_dict
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import BindingStatus, ClusterInfo, SchedulingBinding

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fleet_gen

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
DEFAULT_FILES = [SHARED / "fleet-100x5000.input.yaml", SHARED / "fleet-100x5000-nomodels.input.yaml"]


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _load_avg() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


# ``--metrics``: the live scheduler's observers (per step, extension point and sampled plugin
# timings into its Prometheus histograms), to show what exporting them costs the core.
SCHEDULER_OPTIONS: dict[str, Any] = {}


def live_observers() -> dict[str, Any]:
    from fleetsched.controller.runtime import metrics

    return {
        "observe_step": metrics.observe_step,
        "observe_point": metrics.observe_point,
        "observe_plugin": metrics.observe_plugin,
    }


Bindings = list[tuple[SchedulingBinding, BindingStatus]]
# Called before binding number i is scheduled; returns the snapshot to use from then on.
Churn = Callable[[int, float, Snapshot], Snapshot]


def schedule_round(
    label: str,
    clusters: Sequence[dict[str, Any]],
    bindings: Bindings,
    *,
    churn: Churn | None = None,
    make: Callable[[], Scheduler] | None = None,
) -> float:
    """One round from a cold start (fresh scheduler, snapshot and compiled-selector caches);
    prints the figures and returns bindings per CPU-second. ``make`` builds the scheduler (default:
    the default profile with ``SCHEDULER_OPTIONS``; ``bench/plugins.py`` passes its profiles)."""
    matching.clear_caches()
    scheduler = make() if make is not None else Scheduler(**SCHEDULER_OPTIONS)
    snapshot = Snapshot(cluster_from_dict(c) for c in clusters)
    outcomes: dict[str, int] = {}
    latencies: list[float] = []
    gc.collect()
    cpu_start = time.process_time()
    start = time.perf_counter()
    for i, (binding, status) in enumerate(bindings):
        b0 = time.perf_counter()
        if churn is not None:
            snapshot = churn(i, b0 - start, snapshot)
        result = scheduler.schedule(binding, status, snapshot)
        latencies.append(time.perf_counter() - b0)
        reason = result.condition.reason if result.condition is not None else "NotAttempted"
        outcomes[reason] = outcomes.get(reason, 0) + 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu_start
    per_cpu = len(bindings) / cpu
    print(
        f"  {label}: {len(bindings) / elapsed:,.0f} bindings/s ({per_cpu:,.0f} per CPU-second)  "
        f"p50 {statistics.median(latencies) * 1e3:.3f} ms  p99 {_percentile(latencies, 0.99) * 1e3:.3f} ms  "
        f"total {elapsed:.2f}s  outcomes {dict(sorted(outcomes.items()))}  ({_load_avg()})",
        flush=True,
    )
    return per_cpu


def distinct_requests(raw: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every binding its own cpu request: binding i asks i+1 millicores more per replica."""
    out = []
    for i, b in enumerate(raw):
        b = copy.deepcopy(b)
        spec = b.setdefault("spec", {})
        requirements = spec.setdefault("replicaRequirements", {})
        request = requirements.setdefault("resourceRequest", {})
        cpu = str(request.get("cpu", "0"))
        millis = int(cpu[:-1]) if cpu.endswith("m") else int(float(cpu) * 1000)
        request["cpu"] = f"{millis + i + 1}m"
        out.append(b)
    return out


class StatusChurn:
    """Heartbeats at ``rate`` per second of scheduling time, round-robin over the clusters, each
    replacing that cluster's status as its member would; the heartbeats due before a binding make
    one new snapshot with those clusters replaced in place (``Snapshot.replaced``), as the live
    scheduler's cluster cache derives it when Clusters' resourceVersions change."""

    def __init__(self, clusters: Sequence[dict[str, Any]], rate: float, seed: int = 7) -> None:
        self.clusters = list(clusters)
        self.rate = rate
        self.rng = random.Random(seed)
        self.applied = 0

    def __call__(self, index: int, elapsed: float, snapshot: Snapshot) -> Snapshot:
        due = int(elapsed * self.rate)
        if due <= self.applied:
            return snapshot
        changes: dict[int, ClusterInfo] = {}
        while self.applied < due:
            position = self.applied % len(self.clusters)
            self.clusters[position] = fleet_gen.heartbeat(self.rng, self.clusters[position])
            changes[position] = cluster_from_dict(self.clusters[position])
            self.applied += 1
        return snapshot.replaced(changes)


def _convert(raw: Sequence[dict[str, Any]]) -> Bindings:
    return [(binding_from_dict(b), status_from_dict(b)) for b in raw]


def bench_file(path: Path, *, repeat: int, cold: bool, churn_rate: float) -> None:
    t0 = time.perf_counter()
    loaded = load_files([path])
    t1 = time.perf_counter()
    clusters = [c.model_dump(mode="json", by_alias=True, exclude_unset=True) for c in loaded.clusters]
    raw = [b.model_dump(mode="python", by_alias=True, exclude_unset=True) for b in loaded.bindings]
    bindings = _convert(raw)
    t2 = time.perf_counter()
    print(
        f"{path.name}: {len(clusters)} clusters, {len(bindings)} bindings "
        f"(load {t1 - t0:.2f}s, convert {t2 - t1:.2f}s; {_load_avg()})"
    )
    shared = [
        schedule_round(f"round {n} (shared requests)", clusters, bindings) for n in range(1, repeat + 1)
    ]
    if cold or churn_rate:
        cold_bindings = _convert(distinct_requests(raw))
        cold_rates = [
            schedule_round(f"round {n} (cold: every binding its own request)", clusters, cold_bindings)
            for n in range(1, repeat + 1)
        ]
        ratio = statistics.median(cold_rates) / statistics.median(shared)
        print(f"  cold / shared (per CPU-second, medians): {ratio:.2f}")
        if churn_rate:
            churned = [
                schedule_round(
                    f"round {n} (cold + {churn_rate:g} status heartbeats/s)",
                    clusters,
                    cold_bindings,
                    churn=StatusChurn(clusters, churn_rate),
                )
                for n in range(1, repeat + 1)
            ]
            ratio = statistics.median(cold_rates) / statistics.median(churned)
            print(f"  churn slowdown (cold / churned per CPU-second, medians): {ratio:.2f}x")
    print(f"  peak RSS so far: {_peak_rss_mib():.0f} MiB ({_load_avg()})")


def bench_size(clusters_n: int, bindings_n: int, *, seed: int) -> None:
    """One generated fleet, in this process (peak RSS is this size's alone)."""
    rng = random.Random(seed)
    t0 = time.perf_counter()
    clusters = fleet_gen.generate_clusters(rng, clusters_n)
    bindings = _convert(list(fleet_gen.generate_bindings(rng, clusters, bindings_n)))
    t1 = time.perf_counter()
    print(
        f"{clusters_n} clusters x {bindings_n} bindings (generate+convert {t1 - t0:.1f}s; {_load_avg()})",
        flush=True,
    )
    per_cpu = schedule_round("cold round", clusters, bindings)
    cpu_per_binding_us = 1e6 / per_cpu
    print(
        f"  {cpu_per_binding_us:.0f} us CPU per binding, {cpu_per_binding_us / clusters_n:.2f} us per "
        f"binding-cluster; peak RSS {_peak_rss_mib():.0f} MiB ({_load_avg()})",
        flush=True,
    )


def sweep(sizes: str, *, seed: int) -> None:
    for size in sizes.split(","):
        clusters_n, _, bindings_n = size.strip().partition("x")
        subprocess.run(
            [
                sys.executable,
                __file__,
                "--one-size",
                f"{int(clusters_n)}x{int(bindings_n)}",
                "--seed",
                str(seed),
            ],
            check=False,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--repeat", type=int, default=2, help="rounds per file (default: %(default)s)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold (distinct-request) rounds")
    parser.add_argument(
        "--churn",
        type=float,
        default=50.0,
        help="status heartbeats per second in the churn round (0: no churn round; default %(default)s)",
    )
    parser.add_argument(
        "--sweep",
        default="",
        help="generated sizes CLUSTERSxBINDINGS,... (e.g. 100x5000,300x30000,1000x100000)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--metrics", action="store_true", help="schedule with the live scheduler's metric observers"
    )
    parser.add_argument("--one-size", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.metrics:
        SCHEDULER_OPTIONS.update(live_observers())
    if args.one_size:
        clusters_n, _, bindings_n = args.one_size.partition("x")
        bench_size(int(clusters_n), int(bindings_n), seed=args.seed)
        return 0
    if args.sweep:
        sweep(args.sweep, seed=args.seed)
        return 0
    for path in args.files:
        if not path.exists():
            print(f"missing input: {path}", file=sys.stderr)
            return 2
        bench_file(path, repeat=args.repeat, cold=not args.no_cold, churn_rate=args.churn)
    return 0


if __name__ == "__main__":
    sys.exit(main())
