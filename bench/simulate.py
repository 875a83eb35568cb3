"""Benchmark of ``fleetsched simulate`` end to end on generated fleets: wall, CPU, peak RSS, per binding.

For each size, a fleet from ``bench/fleet_gen.py`` (cached in ``--cache``, made once) goes through
``fleetsched simulate FILE -o json > /dev/null`` in a process of its own, as a user would run it,
so the figures include loading, policy matching and binding derivation, scheduling, rendering and
writing. Peak RSS is the largest of the process and its ``--jobs`` workers (each one's own, not a
sum). Prints figures with the load average and exits 0; it never asserts a time.

    .venv/bin/python bench/simulate.py                                  # 100x5000,300x30000
    .venv/bin/python bench/simulate.py --sizes 100x5000,300x30000,1000x100000
    .venv/bin/python bench/simulate.py --sizes p100:10000x50000 --jobs 1,2   # policies x workloads

A size is ``CLUSTERSxBINDINGS`` (ResourceBindings written out) or ``pCLUSTERS:POLICIESxWORKLOADS``
(PropagationPolicies and the Deployments they select, derived into bindings by simulate).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent


def _load_avg() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def _fleet(size: str, cache: Path) -> tuple[Path, int, str]:
    """The generated file for ``size``, its number of bindings (or workloads) and a label."""
    if size.startswith("p"):
        clusters, _, rest = size[1:].partition(":")
        policies, _, workloads = rest.partition("x")
        argv = ["--clusters", clusters, "--policies", policies, "--workloads", workloads]
        label, count = f"{clusters} clusters x {policies} policies x {workloads} workloads", int(workloads)
    else:
        clusters, _, bindings = size.partition("x")
        argv = ["--clusters", clusters, "--bindings", bindings]
        label, count = f"{clusters} clusters x {bindings} bindings", int(bindings)
    path = cache / f"simulate-{size.replace(':', '-')}.yaml"
    if not path.exists():
        started = time.perf_counter()
        partial = path.with_suffix(".partial")
        subprocess.run([sys.executable, str(BENCH / "fleet_gen.py"), *argv, "-o", str(partial)], check=True)
        partial.rename(path)
        print(f"  generated {path} in {time.perf_counter() - started:.0f} s", flush=True)
    return path, count, label


def _simulate(path: Path, jobs: int) -> tuple[float, float, float, int]:
    """Wall s, CPU s (user+system, workers included), peak RSS MiB, exit status."""
    command = [str(ROOT / ".venv" / "bin" / "fleetsched"), "simulate", str(path), "-o", "json"]
    if not Path(command[0]).exists():
        command = [sys.executable, "-m", "fleetsched", *command[1:]]
    command += ["--jobs", str(jobs)]
    started = time.perf_counter()
    with open(os.devnull, "wb") as devnull:
        proc = subprocess.Popen(command, stdout=devnull)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    # A process's own rusage at exit includes the children it reaped: the --jobs workers.
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="100x5000,300x30000", help="comma-separated (default: %(default)s)"
    )
    parser.add_argument("--jobs", default="1", help="comma-separated --jobs values (default: %(default)s)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/fleetsched-bench"), help="generated fleets")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"fleetsched simulate -o json > /dev/null ({_load_avg()}, {os.cpu_count()} CPUs)", flush=True)
    per_binding: dict[tuple[str, int], float] = {}
    for size in args.sizes.split(","):
        path, count, label = _fleet(size.strip(), args.cache)
        for jobs in (int(j) for j in args.jobs.split(",")):
            before = _load_avg()
            wall, cpu, rss, code = _simulate(path, jobs)
            per_binding[(size, jobs)] = cpu / count
            print(
                f"  {label}, --jobs {jobs}: wall {wall:.1f} s, CPU {cpu:.1f} s, peak RSS {rss:,.0f} MiB "
                f"({rss * 1024 / count:.1f} KiB per binding), {wall / count * 1e3:.3f} ms wall and "
                f"{cpu / count * 1e3:.3f} ms CPU per binding, exit {code}  [{before}]",
                flush=True,
            )
    sizes = [s for s, j in per_binding if j == 1]
    if len(sizes) > 1:
        first = per_binding[(sizes[0], 1)]
        for size in sizes[1:]:
            print(f"  CPU per binding, {size} / {sizes[0]}: {per_binding[(size, 1)] / first:.2f}x")
    print(f"  ({_load_avg()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
