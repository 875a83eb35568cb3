"""Benchmark of the scheduling core while clusters report status: bindings/s with heartbeats.

Like ``bench/core.py`` (one process, one Scheduler, the shared 100x5000 fleets), but every
``--every`` bindings one cluster's ``status.resourceSummary`` changes (a heartbeat), the cluster is
converted again and a new snapshot is taken, as the operator does. Plugins that do not read
resources keep their answers for every cluster; the others are asked again for that cluster only.
Prints figures and exits 0; it never asserts a time.

    .venv/bin/python bench/heartbeat.py [--every N] [FILE ...]
"""

from __future__ import annotations

import argparse
import copy
import gc
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from fleetsched.api.load import load_files
from fleetsched.scheduler import matching
from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict, status_from_dict
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot

SHARED = Path(__file__).resolve().parents[2] / "shared" / "bench"
DEFAULT_FILES = [SHARED / "fleet-100x5000.input.yaml", SHARED / "fleet-100x5000-nomodels.input.yaml"]


def _heartbeat(cluster: dict[str, Any], beat: int) -> dict[str, Any]:
    """The same Cluster with one more pod allocated (a status update, nothing else changed)."""
    out = copy.deepcopy(cluster)
    summary = out.setdefault("status", {}).setdefault("resourceSummary", {})
    allocated = summary.setdefault("allocated", {})
    allocated["pods"] = str(int(str(allocated.get("pods", "0"))) + 1 + beat % 3)
    return out


def bench_file(path: Path, *, every: int, repeat: int) -> None:
    loaded = load_files([path])
    raw_clusters = [c.model_dump(mode="python", by_alias=True, exclude_unset=True) for c in loaded.clusters]
    raw = [b.model_dump(mode="python", by_alias=True, exclude_unset=True) for b in loaded.bindings]
    bindings = [(binding_from_dict(b), status_from_dict(b)) for b in raw]
    print(f"{path.name}: {len(raw_clusters)} clusters, {len(bindings)} bindings, a heartbeat every {every}")
    for round_no in range(1, repeat + 1):
        matching.clear_caches()
        scheduler = Scheduler()
        current = list(raw_clusters)
        infos = [cluster_from_dict(c) for c in current]
        snapshot = Snapshot(infos)
        latencies: list[float] = []
        gc.collect()
        cpu_start = time.process_time()
        start = time.perf_counter()
        beats = 0
        for n, (binding, status) in enumerate(bindings):
            if n and n % every == 0:
                i = beats % len(current)
                current[i] = _heartbeat(current[i], beats)
                infos[i] = cluster_from_dict(current[i])
                snapshot = Snapshot(infos)
                beats += 1
            b0 = time.perf_counter()
            scheduler.schedule(binding, status, snapshot)
            latencies.append(time.perf_counter() - b0)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu_start
        print(
            f"  round {round_no}: {len(bindings) / elapsed:,.0f} bindings/s "
            f"({len(bindings) / cpu:,.0f}/s of CPU time)  p50 {statistics.median(latencies) * 1e3:.3f} ms  "
            f"{beats} heartbeats  load {os.getloadavg()[0]:.2f}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path, default=DEFAULT_FILES)
    parser.add_argument(
        "--every", type=int, default=50, help="bindings between heartbeats (default: %(default)s)"
    )
    parser.add_argument("--repeat", type=int, default=2, help="rounds per file (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in args.files:
        if not path.exists():
            print(f"missing input: {path}", file=sys.stderr)
            return 2
        bench_file(path, every=args.every, repeat=args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
