"""``make dev-up`` as a new user meets it: ``hack/dev_up.py`` as a subprocess, its printed walk-through
run with kubectl, and Ctrl-C.

The script starts its own etcd, kube-apiserver, garbage collector, webhook (registered by URL),
policy controller and scheduler (with ``--descheduler``, the descheduler too). The test waits
for its ``dev-up: ready`` line, runs the kubectl lines it printed (examples/fleet.yaml with its
status, examples/policies.yaml), sees every policy's binding scheduled with the webhook's
permanent-id, sees that deleting a Deployment deletes its binding (the garbage collector), and
that SIGINT stops every process with exit 0.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.controlplane import ControlPlaneUnavailable, find_binaries, wait_until
from tests.support.karmada import load_documents, scheduled_condition

ROOT = Path(__file__).resolve().parents[2]
PP_LABEL = "propagationpolicy.karmada.io/permanent-id"


class DevUp:
    def __init__(self, workdir: Path, binaries: Path) -> None:
        self.workdir = workdir
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        env = {**os.environ, "KUBEBUILDER_ASSETS": str(binaries)}
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "hack" / "dev_up.py"), "--dir", str(workdir), "--descheduler"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self.env = {**env, "PATH": f"{binaries}{os.pathsep}{env.get('PATH', '')}"}

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.output.append(line.rstrip("\n"))
            self.lines.put(line.rstrip("\n"))

    def wait_ready(self, timeout: float = 300) -> None:
        def ready() -> bool:
            return any(line.startswith("dev-up: ready") for line in self.output)
        wait_until(ready, timeout=timeout, interval=0.5,
                   message=lambda: "no ready line:\n" + "\n".join(self.output[-40:]))

    def walk_through(self) -> list[str]:
        start = self.output.index("a first walk-through, from the repository's root:")
        return [line.strip() for line in self.output[start + 1:] if line.startswith("  ")]

    def run(self, command: str) -> str:
        done = subprocess.run(command, shell=True, cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{command!r} failed: {done.stderr}\n" + "\n".join(self.output[-40:])
        return done.stdout

    def get(self, *args: str) -> Any:
        return json.loads(self.run(shlex.join(["kubectl", "get", *args, "-o", "json"])))


@pytest.fixture
def dev_up(tmp_path: Path) -> Iterator[DevUp]:
    try:
        binaries = find_binaries()
    except ControlPlaneUnavailable as exc:
        pytest.fail(f"dev-up needs the control-plane binaries: {exc}", pytrace=False)
    running = DevUp(tmp_path / "dev", binaries)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait()


def test_dev_up_schedules_the_examples_live(dev_up: DevUp) -> None:
    dev_up.wait_ready()
    steps = dev_up.walk_through()
    export = next(line for line in steps if line.startswith("export KUBECONFIG="))
    dev_up.env["KUBECONFIG"] = export.split("=", 1)[1]
    # the printed apply lines, as a user would paste them
    applies = [line for line in steps if line.startswith("kubectl apply")]
    assert len(applies) == 3, steps
    for line in applies:
        dev_up.run(line)

    policies = [d for d in load_documents((ROOT / "examples" / "policies.yaml").read_text())
                if d["kind"] == "PropagationPolicy"]

    def all_scheduled() -> bool:
        items = dev_up.get("rb", "-A")["items"]
        scheduled = [b for b in items if (scheduled_condition(b) or {}).get("status") == "True"]
        return len(scheduled) == len(policies)

    wait_until(all_scheduled, timeout=120, interval=1,
               message=lambda: "bindings not scheduled:\n" + dev_up.run("kubectl get rb -A"))
    web = dev_up.get("rb", "-n", "shop", "web-deployment")
    assert web["metadata"]["labels"][PP_LABEL], "the webhook gave the policy its permanent-id"
    assert web["spec"]["clusters"], "the scheduler placed the binding"

    # the garbage collector: deleting the workload deletes its binding
    dev_up.run("kubectl delete deployment -n shop web --wait=true")

    def binding_gone() -> bool:
        names = [b["metadata"]["name"] for b in dev_up.get("rb", "-n", "shop")["items"]]
        return "web-deployment" not in names

    wait_until(binding_gone, timeout=90, interval=1,
               message=lambda: "binding outlived its Deployment:\n" + dev_up.run("kubectl get rb -n shop"))

    # Ctrl-C stops everything cleanly
    dev_up.process.send_signal(signal.SIGINT)
    assert dev_up.process.wait(timeout=60) == 0, "\n".join(dev_up.output[-40:])
    assert any(line == "dev-up: stopped" for line in dev_up.output)
    kept = subprocess.run(["pgrep", "-f", str(dev_up.workdir)], capture_output=True, text=True)
    assert kept.stdout.strip() == "", f"processes outlived dev-up: {kept.stdout}"
