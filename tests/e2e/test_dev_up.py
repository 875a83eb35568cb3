"""``make dev-up`` as a new user meets it: ``hack/dev_up.py`` as a subprocess, its printed walk-through
run with kubectl, and Ctrl-C.

The script starts its own etcd, kube-apiserver, garbage collector, webhook (registered by URL),
policy controller and scheduler (here with ``--descheduler`` and ``--overcommit-protection``), in a
temporary directory. The test waits for its ``dev-up: ready`` line and runs every line of the
walk-through it printed, in order, as a user pastes them (``fleetsched`` is the installed command):
every policy's binding gets its Scheduled condition and the webhook's permanent-id (the
ClusterResourceBinding too); with the gate, those that wait Unschedulable name the capacity held for
the others in cores and binary units; both ``explain`` lines tell their binding's story, the burst's
bindings are all answered, deleting a Deployment deletes its binding (the garbage collector); then
SIGINT stops every process with exit 0 and removes the directory.
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
    def __init__(self, tmp: Path, binaries: Path) -> None:
        self.tmp = tmp
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        # the temporary directory dev-up makes, under the test's own
        env = {**os.environ, "KUBEBUILDER_ASSETS": str(binaries), "TMPDIR": str(tmp)}
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "hack" / "dev_up.py"), "--descheduler", "--overcommit-protection"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        # the user's PATH: kubectl, and fleetsched as installed (beside this interpreter)
        path = os.pathsep.join([str(binaries), str(Path(sys.executable).parent), env.get("PATH", "")])
        self.env = {**env, "PATH": path}

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

    @property
    def workdir(self) -> Path:
        live = next(line for line in self.output if line.startswith("fleetsched is live on "))
        return Path(live.split("; logs in ", 1)[1].split(" (", 1)[0])

    def walk_through(self) -> list[str]:
        start = self.output.index("a first walk-through, from the repository's root:")
        lines = []
        for line in self.output[start + 1:]:
            if not line.startswith("  "):
                break
            lines.append(line.strip())
        return lines

    def run(self, command: str) -> str:
        done = subprocess.run(command, shell=True, cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=180)
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
    running = DevUp(tmp_path, binaries)
    try:
        yield running
    finally:
        if running.process.poll() is None:
            # as Ctrl-C: dev-up stops the processes it started (their own sessions) before it exits
            running.process.send_signal(signal.SIGINT)
            try:
                running.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                running.process.kill()
                running.process.wait()


def _policies(name: str) -> list[dict[str, Any]]:
    return [d for d in load_documents((ROOT / "examples" / name).read_text())
            if d["kind"] in ("PropagationPolicy", "ClusterPropagationPolicy")]


def test_dev_up_walk_through_runs_as_printed(dev_up: DevUp) -> None:
    dev_up.wait_ready()
    workdir = dev_up.workdir
    assert workdir.parent == dev_up.tmp and workdir.is_dir()
    steps = [line for line in dev_up.walk_through() if not line.startswith("#")]
    assert any(line.startswith("fleetsched explain crb/") for line in steps), steps
    expected = len(_policies("policies.yaml")) + len(_policies("cluster-policies.yaml"))

    def bindings() -> list[dict[str, Any]]:
        return [*dev_up.get("rb", "-A")["items"], *dev_up.get("crb")["items"]]

    def answered(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [b for b in items if scheduled_condition(b)]

    def held(condition: dict[str, Any]) -> None:
        """An Unschedulable condition under the gate names what the others hold, in human units."""
        assert condition["reason"] == "Unschedulable", condition
        message = condition["message"]
        assert "(SchedulingOvercommitProtection) holds cpu " in message, message
        assert " cores, memory " in message and "iB, pods " in message, message

    for line in steps:
        if line.startswith("export KUBECONFIG="):
            dev_up.env["KUBECONFIG"] = line.split("=", 1)[1]
            continue
        out = dev_up.run(line)
        if "examples/policies.yaml" in line:
            wait_until(lambda: len(answered(bindings())) == expected, timeout=120, interval=1,
                       message=lambda: "bindings not scheduled:\n" + dev_up.run("kubectl get rb -A"))
            conditions = [scheduled_condition(b) or {} for b in bindings()]
            waiting = [c for c in conditions if c["status"] == "False"]
            # examples/policies.yaml asks more than the fleet has: with the gate some wait
            assert waiting and len(waiting) < len(conditions), conditions
            for c in waiting:
                held(c)
            web = dev_up.get("rb", "-n", "shop", "web-deployment")
            assert web["metadata"]["labels"][PP_LABEL], "the webhook gave the policy its permanent-id"
            crb = dev_up.get("crb", "fleet-reader-clusterrole")
            assert (scheduled_condition(crb) or {}).get("status") == "True" and crb["spec"]["clusters"]
        elif line.startswith("kubectl get rb -n shop web-deployment"):
            assert "name: web-deployment" in out and "type: Scheduled" in out
        elif line.startswith("fleetsched explain rb/shop/web-deployment"):
            assert out.startswith("ResourceBinding shop/web-deployment\n") and "  => Scheduled=" in out
        elif line.startswith("fleetsched explain crb/"):
            assert out.startswith("ClusterResourceBinding fleet-reader-clusterrole\n")
            assert "=> Scheduled=True" in out
        elif "examples/burst.yaml" in line:
            def burst() -> list[dict[str, Any]]:
                return [b for b in dev_up.get("rb", "-n", "shop")["items"]
                        if b["metadata"]["name"].startswith("burst-") and scheduled_condition(b)]
            wait_until(lambda: len(burst()) == 12, timeout=120, interval=1,
                       message=lambda: "burst not scheduled:\n" + dev_up.run("kubectl get rb -n shop"))
            conditions = [scheduled_condition(b) or {} for b in burst()]
            failed = [c for c in conditions if c["status"] == "False"]
            assert failed, conditions  # the fleet is full: the burst waits
            for c in failed:
                held(c)
        elif line.startswith("kubectl delete deployment -n shop web"):
            def binding_gone() -> bool:
                names = [b["metadata"]["name"] for b in dev_up.get("rb", "-n", "shop")["items"]]
                return "web-deployment" not in names
            wait_until(binding_gone, timeout=90, interval=1,
                       message=lambda: "binding outlived its Deployment:\n"
                       + dev_up.run("kubectl get rb -n shop"))

    # Ctrl-C stops everything cleanly and removes the temporary directory, naming it
    dev_up.process.send_signal(signal.SIGINT)
    assert dev_up.process.wait(timeout=60) == 0, "\n".join(dev_up.output[-40:])
    assert any(line == "dev-up: stopped" for line in dev_up.output)
    assert f"dev-up: removed {workdir} (--dir DIR keeps the logs)" in dev_up.output
    assert not workdir.exists()
    kept = subprocess.run(["pgrep", "-f", str(workdir)], capture_output=True, text=True)
    assert kept.stdout.strip() == "", f"processes outlived dev-up: {kept.stdout}"
