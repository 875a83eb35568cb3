"""Benchmark of spread-constraint group selection (issue 14): time and peak RSS per fleet size.

For 24, 50 and 200 regions of two Clusters each it writes a fleet with one ResourceBinding spread
by region (minGroups 10, maxGroups 12: the binding of issue 14), plus one that also spreads by
cluster (minGroups 20, maxGroups 30, so the group search has a cluster target). It prints, per
case, the time of the group selection alone, of ``Scheduler.schedule`` for the binding, and of
``fleetsched simulate`` on the file as a child process with that child's peak RSS. Prints figures
and exits 0; it never asserts a time.

    .venv/bin/python bench/spread.py [--regions 24,50,200] [--reference]

``--reference`` also times the exhaustive enumeration the selection replaced (kept in
tests/unit/scheduler/test_select_groups.py) on the 24-region issue binding, in a child process:
tens of seconds and most of a GiB.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from fleetsched.api.load import load_files
from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict, status_from_dict
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot

ROOT = Path(__file__).resolve().parents[1]
CLUSTERS_PER_REGION = 2


APIS = [{"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]}]
READY = {"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "ready"}


def cluster(region: int, index: int) -> dict[str, object]:
    pods = 40 + (region * 7 + index * 3) % 50  # uneven capacity, so region scores differ
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": f"m{region:03d}-{index}"},
        "spec": {"syncMode": "Push", "region": f"region-{region:03d}"},
        "status": {
            "apiEnablements": APIS,
            "conditions": [{**READY, "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "resourceSummary": {
                "allocatable": {"cpu": "64", "memory": "256Gi", "pods": str(pods)},
                "allocated": {"cpu": "0", "memory": "0", "pods": "0"},
            },
        },
    }


def binding(name: str, constraints: list[dict[str, object]]) -> dict[str, object]:
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "namespace": "default"},
            "replicas": 24,
            "placement": {
                "spreadConstraints": constraints,
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
                },
            },
        },
    }


CASES = {
    "region 10-12": [{"spreadByField": "region", "minGroups": 10, "maxGroups": 12}],
    "region 10-12, cluster 20-30": [
        {"spreadByField": "region", "minGroups": 10, "maxGroups": 12},
        {"spreadByField": "cluster", "minGroups": 20, "maxGroups": 30},
    ],
}


def fleet_yaml(regions: int, constraints: list[dict[str, object]]) -> str:
    objects: list[dict[str, object]] = [
        cluster(r, i) for r in range(regions) for i in range(CLUSTERS_PER_REGION)
    ]
    objects.append(binding("spread", constraints))
    return yaml.safe_dump_all(objects, sort_keys=False)


def run_child(argv: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (MiB) and exit status of one child process, plus its output."""
    with tempfile.TemporaryFile("w+") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not all children's
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        return wall, usage.ru_maxrss / 1024.0, proc.returncode, out.read()


def bench_case(path: Path) -> tuple[float, float, list[str]]:
    """Seconds of the group selection alone and of the whole schedule() call, and the regions chosen."""
    from fleetsched.scheduler import select

    loaded = load_files([path])
    clusters = [
        cluster_from_dict(c.model_dump(mode="python", by_alias=True, exclude_unset=True))
        for c in loaded.clusters
    ]
    raw = loaded.bindings[0].model_dump(mode="python", by_alias=True, exclude_unset=True)
    b, status = binding_from_dict(raw), status_from_dict(raw)
    timings: list[float] = []
    inner = select._select_groups

    def timed(*args: object, **kwargs: object) -> object:
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            timings.append(time.perf_counter() - t)

    select._select_groups = timed  # type: ignore[assignment]
    try:
        t0 = time.perf_counter()
        result = Scheduler().schedule(b, status, Snapshot(clusters))
        total = time.perf_counter() - t0
    finally:
        select._select_groups = inner
    regions = sorted({t.name.split("-")[0] for t in result.clusters or ()})
    return sum(timings), total, regions


REFERENCE = """
import resource, sys, time
sys.path.insert(0, {root!r})
from tests.unit.scheduler.test_select_groups import enumerated_select_groups, group
groups = [group(f"region-{{r:03d}}", 2, 3000 + r) for r in range(24)]
t = time.perf_counter()
chosen = enumerated_select_groups(groups, 10, 12, 0)
print(f"{{time.perf_counter() - t:.2f}} s, peak RSS {{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}} MiB")
"""  # noqa: E501


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regions", default="24,50,200", help="comma-separated region counts")
    parser.add_argument("--reference", action="store_true", help="also time the old enumeration (slow)")
    args = parser.parse_args()
    fleetsched = [sys.executable, "-m", "fleetsched", "simulate"]
    print(
        f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for regions in (int(x) for x in args.regions.split(",")):
            for label, constraints in CASES.items():
                path = Path(tmp) / f"spread-{regions}.yaml"
                path.write_text(fleet_yaml(regions, constraints))
                select_s, schedule_s, _ = bench_case(path)
                wall, rss, code, out = run_child([*fleetsched, str(path)])
                row = out.strip().splitlines()[-1] if out.strip() else ""
                print(
                    f"{regions:4d} regions, {regions * CLUSTERS_PER_REGION:4d} clusters, {label:<28}"
                    f" select {select_s * 1000:8.1f} ms  schedule {schedule_s * 1000:8.1f} ms"
                    f"  simulate {wall:6.2f} s (exit {code}), peak RSS {rss:6.1f} MiB"
                    f"  load {os.getloadavg()[0]:.2f}"
                )
                if code:
                    print(f"    simulate said: {row}")
        if args.reference:
            wall, rss, code, out = run_child([sys.executable, "-c", REFERENCE.format(root=str(ROOT))])
            print(
                f"  24 regions, enumeration (pre-issue-14 reference): {out.strip()} (child wall {wall:.2f} s,"
                f" exit {code})  load {os.getloadavg()[0]:.2f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
