"""bench/estimator_watch.py still runs end to end (a small member, one round, beside HEAD's code from
a detached worktree): both estimators sync every Node and Pod, every pod label change reaches the
estimator that runs at the time (the apiserver's count of Pod watch events sent, less its own
watchers' share), and the summary
gives each figure's ratio current / baseline. It asserts nothing about time."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_estimator_watch_benchmark_runs_beside_a_baseline_ref() -> None:
    done = subprocess.run(
        [sys.executable, "bench/estimator_watch.py", "--nodes", "10", "--pods", "60", "--events", "40",
         "--rounds", "1", "--baseline-ref", "HEAD"],
        cwd=ROOT, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    runs = re.findall(r"^  (current|HEAD): +ready in +\d+\.\d\d s, CPU +\d+\.\d\d s by then, "
                      r"RSS synced \d+ MiB, peak \d+ MiB \((\d+) nodes, (\d+) pods synced\); "
                      r"\d+\.\d{3} CPU ms per pod event \((\d+) reached it\); load average \d+\.\d\d$",
                      out, re.M)
    assert sorted(label for label, *_ in runs) == ["HEAD", "current"], out
    for _, nodes, pods, reached in runs:
        assert (nodes, pods, reached) == ("10", "60", "40"), out
    for figure in ("ready s", "CPU to ready s", "RSS synced MiB", "peak RSS MiB", "CPU ms per pod event"):
        assert re.search(rf"^  {figure}: current \d+\.\d{{3}}, HEAD \d+\.\d{{3}}", out, re.M), figure
