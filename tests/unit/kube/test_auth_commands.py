"""What the binaries do with the credentials: no usable kubeconfig is one line and exit 2 (the
scheduler, the policy controller and the estimator; KUBECONFIG is read by all of them), and refused
credentials turn the controllers' readiness false, saying why."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fleetsched.controller.runtime.controller import ControllerRuntime
from fleetsched.controller.runtime.queue import SchedulingQueue
from fleetsched.kube.auth import Connection, Credentials

REPO = Path(__file__).resolve().parents[3]
COMMANDS = {
    "scheduler": ["scheduler"],
    "controller": ["controller"],
    "estimator": ["estimator", "--cluster-name=m1"],
}


def run(command: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST",
                                                               "KUBERNETES_SERVICE_PORT")}
    return subprocess.run([sys.executable, "-m", "fleetsched", *COMMANDS[command], *args], cwd=REPO,
                          env={**base, **env}, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_kubeconfig_and_no_pod_is_one_line_and_exit_2(command: str, tmp_path: Path) -> None:
    done = run(command, {"HOME": str(tmp_path)})
    assert done.returncode == 2, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "no kubeconfig: pass --kubeconfig, set KUBECONFIG, or run in a pod" in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_kubeconfig_from_the_environment_is_read(command: str, tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {tokenFile: gone}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    done = run(command, {"HOME": str(tmp_path), "KUBECONFIG": str(config)})
    assert done.returncode == 2, done.stderr
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert f"KUBECONFIG={config}: users[u].tokenFile {tmp_path}/gone: No such file or directory" in lines[0]


def test_an_empty_explicit_kubeconfig_is_one_line_and_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("")
    done = run("scheduler", {"HOME": str(tmp_path)}, f"--kubeconfig={empty}")
    assert done.returncode == 2 and f"--kubeconfig {empty}: the file is empty" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@dataclass
class _Config:
    workers: int = 1
    leader_election: Any = None
    graceful_timeout: float = 1.0
    sharding: Any = None


def test_refused_credentials_turn_readiness_false_and_say_why() -> None:
    credentials = Credentials(Connection(server="http://h:1", token="t", identity='user "sched"'))
    client = type("Client", (), {"credentials": credentials})()
    controller = ControllerRuntime(reconciler=None, config=_Config(), client=client,  # type: ignore[arg-type]
                                   queue=SchedulingQueue())
    controller.synced.set()
    assert controller.ready() == (True, "ok")
    for _ in range(3):
        credentials.health.observe(401, "update", "leases.coordination.k8s.io", b'{"message":"Unauthorized"}')
    assert controller.ready() == (False, "credentials refused: update leases.coordination.k8s.io answered "
                                         '401 Unauthorized 3 times for user "sched": Unauthorized')
    credentials.health.observe(200, "update", "leases.coordination.k8s.io")
    assert controller.ready() == (True, "ok")


async def test_kopf_login_hands_over_current_credentials_and_renews_when_asked_again(tmp_path: Path) -> None:
    from fleetsched.controller.policy.watching import kopf_registry

    token = tmp_path / "token"
    token.write_text("one")
    registry = kopf_registry(Connection(server="https://h:1", insecure=True, token_file=str(token),
                                        proxy_url="http://proxy:3128"))
    (login,) = registry._activities.get_all_handlers()  # kopf's own registry: the one login handler
    first = await login.fn()
    assert (first.server, first.scheme, first.token, first.insecure, first.proxy_url, first.expiration) == (
        "https://h:1", "Bearer", "one", True, "http://proxy:3128", None)
    token.write_text("two")  # kopf asks again after a 401: the file is read again at once
    again = await login.fn()
    assert (again.scheme, again.token) == ("Bearer", "two")
