"""Every start-up failure is one line on stderr and exit 2, never a traceback (issue 22, "loud").

A port another process holds, for each command and each listener flag; no kubeconfig and not in a
pod. The commands run as processes, as a user starts them. The kubeconfig points at a closed port:
each command opens its listeners before it talks to the API server.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleetsched.webhook.testing import make_certificates

ROOT = Path(__file__).resolve().parents[2]
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleetsched", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=60, env=env)


def command_args(command: str, tmp_path: Path, *, metrics: str, health: str) -> list[str]:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    probes = [f"--metrics-bind-address={metrics}", f"--health-probe-bind-address={health}"]
    if command == "webhook":
        make_certificates(tmp_path / "certs")
        return ["webhook", "--bind-address=127.0.0.1", f"--secure-port={free_port()}",
                f"--cert-dir={tmp_path / 'certs'}", *probes]
    if command == "estimator":
        return ["estimator", "--cluster-name=m1", f"--kubeconfig={kubeconfig}",
                "--server-bind-address=127.0.0.1", f"--server-port={free_port()}", *probes]
    return [command, f"--kubeconfig={kubeconfig}", "--leader-elect=false", *probes]


def assert_one_line(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    problem = [line for line in done.stderr.splitlines() if '"level": "info"' not in line]
    assert len(problem) == 1, done.stderr
    for needle in needles:
        assert needle in problem[0], problem[0]


@pytest.mark.parametrize("command", ["scheduler", "controller", "webhook", "estimator", "descheduler"])
@pytest.mark.parametrize("flag", ["--metrics-bind-address", "--health-probe-bind-address"])
def test_a_taken_port_is_one_line_and_exit_2(
    command: str, flag: str, taken_port: int, tmp_path: Path
) -> None:
    taken, free = f"127.0.0.1:{taken_port}", f"127.0.0.1:{free_port()}"
    metrics, health = (taken, free) if flag == "--metrics-bind-address" else (free, taken)
    done = run(command_args(command, tmp_path, metrics=metrics, health=health))
    assert_one_line(done, flag, taken, "Address already in use")


def test_a_taken_webhook_port_names_its_flag(taken_port: int, tmp_path: Path) -> None:
    make_certificates(tmp_path / "certs")
    done = run(["webhook", "--bind-address=127.0.0.1", f"--secure-port={taken_port}",
                f"--cert-dir={tmp_path / 'certs'}", "--metrics-bind-address=0",
                "--health-probe-bind-address=0"])
    assert_one_line(done, "--secure-port", f"127.0.0.1:{taken_port}")


@pytest.mark.parametrize("command", ["scheduler", "controller", "estimator", "descheduler"])
def test_no_kubeconfig_and_not_in_a_pod_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    args = [command, "--cluster-name=m1"] if command == "estimator" else [command]
    done = run(args, env=env)
    assert_one_line(done, "--kubeconfig", "KUBERNETES_SERVICE_HOST")
