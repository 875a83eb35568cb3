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

``--baseline TREE`` also runs, interleaved with each run of this tree, the ``fleetsched`` of another
source tree (e.g. ``git archive main | tar -x -C /tmp/before``) with this venv's packages, so that
before and after are measured in one run, at the same load:

    .venv/bin/python bench/simulate.py --sizes p100:10000x50000 --jobs 1,2 --baseline /tmp/before
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


# Runs the fleetsched of the source tree in argv[1], not the editable install of this one.
_FROM_TREE = """
import sys
tree = sys.argv.pop(1)
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f)]
sys.path.insert(0, tree)
import fleetsched
assert fleetsched.__file__.startswith(tree), fleetsched.__file__
from fleetsched.cli import main
sys.argv[0] = "fleetsched"
sys.exit(main())
"""


def _simulate(path: Path, jobs: int, tree: Path | None = None) -> tuple[float, float, float, int]:
    """Wall s, CPU s (user+system, workers included), peak RSS MiB, exit status."""
    command = [str(ROOT / ".venv" / "bin" / "fleetsched"), "simulate", str(path), "-o", "json"]
    if tree is not None:
        command = [sys.executable, "-c", _FROM_TREE, str(tree.resolve()), *command[1:]]
    elif not Path(command[0]).exists():
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
    parser.add_argument(
        "--baseline", type=Path, help="another source tree to run before each run of this one (before/after)"
    )
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    print(f"fleetsched simulate -o json > /dev/null ({_load_avg()}, {os.cpu_count()} CPUs)", flush=True)
    per_binding: dict[tuple[str, int], float] = {}
    for size in args.sizes.split(","):
        path, count, label = _fleet(size.strip(), args.cache)
        for jobs in (int(j) for j in args.jobs.split(",")):
            figures: dict[str, tuple[float, float]] = {}
            for name, tree in (("baseline", args.baseline), ("this tree", None)):
                if name == "baseline" and tree is None:
                    continue
                before = _load_avg()
                wall, cpu, rss, code = _simulate(path, jobs, tree)
                figures[name] = (wall, cpu)
                if tree is None:
                    per_binding[(size, jobs)] = cpu / count
                print(
                    f"  {label}, --jobs {jobs}{', ' + name if args.baseline else ''}: wall {wall:.1f} s, "
                    f"CPU {cpu:.1f} s, peak RSS {rss:,.0f} MiB ({rss * 1024 / count:.1f} KiB per binding), "
                    f"{wall / count * 1e3:.3f} ms wall and {cpu / count * 1e3:.3f} ms CPU per binding, "
                    f"exit {code}  [{before}]",
                    flush=True,
                )
            if len(figures) == 2:
                (wall0, cpu0), (wall1, cpu1) = figures["baseline"], figures["this tree"]
                print(f"    this tree / baseline: wall {wall1 / wall0:.2f}, CPU {cpu1 / cpu0:.2f}")
    sizes = [s for s, j in per_binding if j == 1]
    if len(sizes) > 1:
        first = per_binding[(sizes[0], 1)]
        for size in sizes[1:]:
            print(f"  CPU per binding, {size} / {sizes[0]}: {per_binding[(size, 1)] / first:.2f}x")
    print(f"  ({_load_avg()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
