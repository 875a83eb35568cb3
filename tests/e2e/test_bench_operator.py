"""bench/operator_e2e.py still runs end to end (a small fleet, one round): it prints every phase,
the live operator sends exactly two writes per binding in both operator phases and in the phase
with two sharded replicas, and every binding gets a Scheduled condition; its burst phase (issue 20,
``--burst``, tested on its own at a small size) prints the overcommit with the gate off and its
absence with the gate on. It asserts nothing about time; the figures are the bench's to print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_operator_benchmark_runs_every_phase() -> None:
    done = subprocess.run(
        [
            sys.executable, "bench/operator_e2e.py", "--bindings", "40", "--rounds", "1", "--workers", "4",
            "--replicas", "1,2", "--no-burst",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for phase in (
        "plain client, the same 80 writes on existing bindings:",
        "plain client, create + the same writes per binding:",
        "operator, creation -> Scheduled condition:",
        "operator, the same writes on existing bindings (backlog, from takeover):",
    ):
        assert re.search(re.escape(phase) + r"\s+\d+\.\d bindings/s", out), phase
    assert "INCOMPLETE" not in out
    assert re.search(r"binding writes 80 \(2\.00 per binding\)", out)  # from creation
    assert re.search(r"2\.00 writes per binding\n", out)  # the backlog phase
    # Two sharded replicas: every binding written twice in all, by one of them; both did a share.
    two = r"2 replicas:\s+\d+\.\d bindings/s = \d+\.\d\dx of 1; 2\.00 writes per binding,"
    assert re.search(two, out), out
    each = re.findall(r"(r[01]) \d+\.\d\d \(owns (\d+): \d+\.\d\d per own binding, (\d+) writes", out)
    assert sorted(i for i, _, _ in each) == ["r0", "r1"], out
    assert sum(int(owned) for _, owned, _ in each) == 40
    assert all(int(writes) == 2 * int(owned) for _, owned, writes in each)
    assert re.search(r"all replicas \d+\.\d\d ms per binding .*outside the core \d+\.\d\d", out)


def test_the_large_phase_runs_with_cluster_churn() -> None:
    """The large phase at a tiny size (a reference fleet, then the whole one; status churn on):
    every binding gets a Scheduled condition, and the scheduling attempts and the queue pushes by
    event are reported for each run."""
    done = subprocess.run(
        [
            sys.executable, "bench/operator_e2e.py", "--large", "--large-clusters", "50",
            "--large-bindings", "40", "--reference-clusters", "20", "--churn", "20",
            "--churn-tail", "1", "--workers", "4",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "INCOMPLETE" not in out
    for clusters in ("20", "50"):
        assert re.search(rf"^ {clusters} Clusters x 40 bindings, Cluster status churn 20/s", out, re.M), out
    sent = [int(n) for n in re.findall(r"\((\d+) status patches while scheduling, (?:\d+) in all", out)]
    assert len(sent) == 2
    attempts = re.findall(r"scheduling attempts (\d+) for 40 bindings .*ClusterChanged (\d+)", out)
    assert len(attempts) == 2, out
    for scheduled, _cluster_changed in attempts:
        assert int(scheduled) >= 40  # every binding had its attempt
    change_line = r"one Cluster label change after that: (\d+) queue pushes .* (\d+) scheduling attempts"
    changes = re.findall(change_line, out)
    assert len(changes) == 2, out
    # The seeded fleet has bindings whose affinity matches the first Cluster: a real change queues them.
    assert all(int(queued) > 0 for queued, _ in changes), changes
    reasons = re.findall(r"Scheduled condition reasons: \{(.*)\}", out)
    assert len(reasons) == 2
    for found in reasons:
        assert sum(int(n) for n in re.findall(r": (\d+)", found)) == 40
    assert re.search(r"scheduler CPU per binding at 50 Clusters / at 20: \d+\.\d+x", out)


def test_the_baseline_ref_runs_beside_the_current_scheduler() -> None:
    """--baseline-ref: the operator phase also runs with another commit's scheduler (here HEAD's own
    tree, from a detached worktree) in the same round, and both figures and their ratio are printed."""
    done = subprocess.run(
        [sys.executable, "bench/operator_e2e.py", "--bindings", "30", "--rounds", "1", "--workers", "4",
         "--baseline-ref", "HEAD", "--no-burst"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "INCOMPLETE" not in out
    for label in ("current:", "HEAD:"):
        figures = r"\s+\d+\.\d bindings/s; .* outside the core \d+\.\d\d ms per binding"
        assert re.search(re.escape(label) + figures, out), out
    assert re.search(r"outside the core, current / HEAD: median \d+\.\d\d", out)


def test_the_burst_phase_prints_the_gate_off_and_on() -> None:
    """--burst alone, small: 4 Clusters x 20 cpu and 12 bindings of 10 x 1 cpu (120 asked of 80),
    one replica and two sharded ones, each with SchedulingOvercommitProtection off and on. Gate off:
    all 12 land, 40 cpu beyond capacity; gate on, one replica: exactly 8 fit and 4 fail naming the
    assumptions; every run has a rate, and each configuration the on/off ratio of its rates."""
    done = subprocess.run(
        [sys.executable, "bench/operator_e2e.py", "--burst", "--burst-clusters", "4", "--burst-cpu", "20",
         "--burst-bindings", "12", "--burst-replicas", "10", "--burst-shards", "2", "--workers", "4"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    assert "INCOMPLETE" not in out and "REFUSED" not in out, out
    assert re.search(r"^burst \(issue 20\): .* load average before [\d./]+, after [\d./]+$", out, re.M), out
    rows = dict(re.findall(
        r"round 1, (1 replica x 4 workers, gate o(?:n|ff)|2 sharded replicas, gate o(?:n|ff)):\s+"
        r"(cpu assigned \d+ / free 80 \(overcommit \d+\), scheduled \d+ / failed \d+)"
        r" \(\d+ naming the assumptions\), \d+\.\d bindings/s; load average [\d./]+",
        out,
    ))
    assert len(rows) == 4, out
    overcommitted = "cpu assigned 120 / free 80 (overcommit 40), scheduled 12 / failed 0"
    for label in ("1 replica x 4 workers", "2 sharded replicas"):
        assert rows[f"{label}, gate off"] == overcommitted
    assert rows["1 replica x 4 workers, gate on"] == (
        "cpu assigned 80 / free 80 (overcommit 0), scheduled 8 / failed 4"
    )
    sharded_on = re.search(r"scheduled (\d+) / failed (\d+)", rows["2 sharded replicas, gate on"])
    assert sharded_on and int(sharded_on[1]) + int(sharded_on[2]) == 12
    assert re.search(r"1 replica x 4 workers, gate on:.*\(4 naming the assumptions\)", out), out
    ratio = r"^  (1 replica x 4 workers|2 sharded replicas): rate with the gate on / off \d+\.\d\d$"
    ratios = re.findall(ratio, out, re.M)
    assert sorted(ratios) == ["1 replica x 4 workers", "2 sharded replicas"], out
