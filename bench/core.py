"""Benchmark of the scheduling core: bindings/s, per-binding latency p50/p99, peak RSS.

Loads a fleet file (Clusters + bindings), converts every object once, then schedules the bindings
one after another in one process against one snapshot, as ``fleetsched simulate`` does. Prints
figures and exits 0; it never asserts a time.

    .venv/bin/python bench/core.py [FILE ...]          # default: the two shared 100x5000 fleets
"""

from __future__ import annotations

import argparse
import gc
import resource
import statistics
import sys
import time
from pathlib import Path

from fleetsched.api.load import load_files
from fleetsched.scheduler import matching
from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict, status_from_dict
from fleetsched.scheduler.pipeline import Scheduler, Snapshot

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
DEFAULT_FILES = [SHARED / "fleet-100x5000.input.yaml", SHARED / "fleet-100x5000-nomodels.input.yaml"]


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def bench_file(path: Path, *, repeat: int) -> None:
    t0 = time.perf_counter()
    loaded = load_files([path])
    t1 = time.perf_counter()
    clusters = [
        cluster_from_dict(c.model_dump(mode="python", by_alias=True, exclude_unset=True))
        for c in loaded.clusters
    ]
    raw = [b.model_dump(mode="python", by_alias=True, exclude_unset=True) for b in loaded.bindings]
    bindings = [(binding_from_dict(b), status_from_dict(b)) for b in raw]
    t2 = time.perf_counter()
    print(
        f"{path.name}: {len(clusters)} clusters, {len(bindings)} bindings "
        f"(load {t1 - t0:.2f}s, convert {t2 - t1:.2f}s)"
    )
    for round_no in range(1, repeat + 1):
        # A fresh scheduler, snapshot and compiled-selector cache per round: nothing carried over.
        matching.clear_caches()
        scheduler = Scheduler()
        snapshot = Snapshot(
            cluster_from_dict(c.model_dump(mode="python", by_alias=True, exclude_unset=True))
            for c in loaded.clusters
        )
        outcomes: dict[str, int] = {}
        latencies: list[float] = []
        gc.collect()
        cpu_start = time.process_time()
        start = time.perf_counter()
        for binding, status in bindings:
            b0 = time.perf_counter()
            result = scheduler.schedule(binding, status, snapshot)
            latencies.append(time.perf_counter() - b0)
            reason = result.condition.reason if result.condition is not None else "NotAttempted"
            outcomes[reason] = outcomes.get(reason, 0) + 1
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        print(
            f"  round {round_no}: {len(bindings) / elapsed:,.0f} bindings/s "
            f"({len(bindings) / cpu:,.0f}/s of CPU time)  "
            f"p50 {statistics.median(latencies) * 1e3:.3f} ms  "
            f"p99 {_percentile(latencies, 0.99) * 1e3:.3f} ms  "
            f"total {elapsed:.2f}s  outcomes {dict(sorted(outcomes.items()))}"
        )
    print(f"  peak RSS so far: {_peak_rss_mib():.0f} MiB")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument("--repeat", type=int, default=2, help="rounds per file (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in args.files:
        if not path.exists():
            print(f"missing input: {path}", file=sys.stderr)
            return 2
        bench_file(path, repeat=args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
