"""bench/operator_e2e.py still runs end to end (a small fleet, one round): it prints every phase,
the live operator sends exactly two writes per binding in both operator phases, and every binding
gets a Scheduled condition. It asserts nothing about time; the figures are the bench's to print."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_operator_benchmark_runs_every_phase() -> None:
    done = subprocess.run(
        [sys.executable, "bench/operator_e2e.py", "--bindings", "40", "--rounds", "1", "--workers", "4"],
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
