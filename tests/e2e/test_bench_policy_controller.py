"""bench/policy_controller.py still runs end to end (a few templates and policies, one round, beside
HEAD's code from a detached worktree): every phase prints its figures for both, every template and
policy got its binding, status-only template events made the controller apply nothing, and the
summary gives the ratio current / baseline. It asserts nothing about time; the figures are the
bench's to print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_policy_controller_benchmark_runs_every_phase_beside_a_baseline_ref() -> None:
    done = subprocess.run(
        [sys.executable, "bench/policy_controller.py", "--templates", "20", "--policies", "5",
         "--rounds", "1", "--baseline-ref", "HEAD"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "INCOMPLETE" not in out
    assert re.search(r"^baseline: HEAD = [0-9a-f]{12}$", out, re.M), out
    for label in ("current", "HEAD"):
        section = re.split(r"\n(?!    )", out.split(f"\n  {label}: ready in", 1)[1])[0]
        rows = dict(re.findall(r"^    ([a-z ]+):\s+(.*)$", section, re.M))
        assert set(rows) == {"templates", "status events", "template updates", "policies"}, section
        cpu = r"CPU ms per {}: controller \d+\.\d\d, kube-apiserver \d+\.\d\d, etcd \d+\.\d\d; "
        assert re.match(r"\d+\.\d/s; " + cpu.format("template event") + r"applies: created 20\b",
                        rows["templates"]), rows
        assert re.search(r"creation -> binding p50 \d+ ms, p99 \d+ ms", rows["templates"]), rows
        assert re.match(cpu.format("template event") + "applies: none; ", rows["status events"]), rows
        assert re.match(r"\d+\.\d/s; " + cpu.format("template event") + r"applies: updated 20\b",
                        rows["template updates"]), rows
        policies = r"\d+\.\d/s; " + cpu.format("policy") + r"applies: created 5\b"
        assert re.match(policies, rows["policies"]), rows
    for figure in ("templates /s", "templates controller CPU ms", "status events controller CPU ms",
                   "template updates /s", "policies /s", "policies controller CPU ms"):
        assert re.search(rf"^  {figure}: current \d+\.\d\d, HEAD \d+\.\d\d; current / HEAD \d+\.\d\d$", out,
                         re.M), figure
    assert re.search(r"^load average before [\d./]+, after [\d./]+$", out, re.M)


def test_a_baseline_tree_without_fleetsched_is_refused_before_anything_starts(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "bench/policy_controller.py", "--baseline-tree", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: --baseline-tree {tmp_path}: no fleetsched/ package in it"
