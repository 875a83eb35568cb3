"""fleetsched processes for e2e tests: start, wait until ready, read metrics, stop or kill.

``SchedulerProcess`` runs ``fleetsched scheduler`` against a test kube-apiserver with its probes
and metrics on a free loopback port, and its JSON log in a file the test can read on failure.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.controlplane import free_port, wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class SchedulerProcess:
    kubeconfig: Path
    log_path: Path
    extra_args: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    def argv(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "fleetsched",
            "scheduler",
            f"--kubeconfig={self.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{self.port}",
            f"--metrics-bind-address=127.0.0.1:{self.port}",
            *self.extra_args,
        ]

    def start(self, *, wait_ready: bool = True, timeout: float = 60) -> SchedulerProcess:
        log = self.log_path.open("ab")
        env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        try:
            self.process = subprocess.Popen(
                self.argv(),
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO_ROOT,
                env=env,
                start_new_session=True,
            )
        finally:
            log.close()
        if wait_ready:
            self.wait_ready(timeout)
        return self

    def _get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as response:
                return int(response.status), response.read().decode()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read().decode()

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ready(self) -> bool:
        if not self.alive():
            raise RuntimeError(f"fleetsched scheduler exited ({self.returncode()}):\n{self.log_tail()}")
        try:
            return self._get("/readyz")[0] == 200
        except OSError:
            return False

    def wait_ready(self, timeout: float = 60) -> None:
        wait_until(self.ready, timeout=timeout, message=lambda: f"scheduler never ready:\n{self.log_tail()}")

    def metrics(self) -> str:
        return self._get("/metrics")[1]

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of ``name`` whose labels include ``labels``."""
        total = 0.0
        for line in self.metrics().splitlines():
            if not line.startswith(name) or line.startswith("#"):
                continue
            head, _, value = line.rpartition(" ")
            series, _, label_text = head.partition("{")
            if series != name:
                continue
            if all(f'{k}="{v}"' in label_text for k, v in labels.items()):
                total += float(value)
        return total

    def returncode(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no log>"

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM (graceful) and wait; SIGKILL if it does not exit in time."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to release the Lease or finish writes."""
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            self.process.wait(10)
