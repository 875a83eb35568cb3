"""fleetsched processes for e2e tests: start, wait until ready, read metrics, stop, kill, pause.

``SchedulerProcess`` runs ``fleetsched scheduler`` against a test kube-apiserver with its probes
and metrics on a free loopback port, and its JSON log in a file the test can read on failure.

``ShardedReplicas`` runs several of them in shard mode (``--shard-mode=lease``) on one host, each
with its own ``--shard-identity`` and short member-Lease timings, for tests and benchmarks of the
sharded scheduler: start, kill -9, SIGSTOP/SIGCONT one replica, read every replica's gauges.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleetsched.controller.runtime.shard import member_name
from tests.support.controlplane import free_port, wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class MembershipView:
    """One ``shard_membership_changed`` log line: from ``at`` on, the replica saw ``members`` and
    owned its share of them while ``active``."""

    at: dt.datetime
    members: tuple[str, ...]
    active: bool
    left: tuple[str, ...]


@dataclass
class SchedulerProcess:
    kubeconfig: Path
    log_path: Path
    extra_args: tuple[str, ...] = ()
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    paused: bool = False

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

    def log_events(self, event: str) -> list[dict[str, Any]]:
        """The JSON log lines of ``event`` so far, in order."""
        needle = f'"event": "{event}"'
        out = []
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        for line in text.splitlines():
            if needle in line:
                with contextlib.suppress(json.JSONDecodeError):
                    out.append(json.loads(line))
        return out

    def membership_views(self) -> list[MembershipView]:
        """What this replica's ``shard_membership_changed`` lines said, in order (shard mode)."""
        return [
            MembershipView(
                at=dt.datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")),
                members=tuple(e["members"]),
                active=bool(e["active"]),
                left=tuple(e["left"]),
            )
            for e in self.log_events("shard_membership_changed")
        ]

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
            if self.paused:  # a stopped process would hold SIGTERM until it runs again
                self.resume()
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
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets and state but runs no code (its clock goes on)."""
        assert self.process is not None and self.process.poll() is None
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGCONT)
        self.paused = False


SCHEDULER_GROUP = "fleetsched-scheduler"  # the default --leader-elect-resource-name: the shard group
SCHEDULER_AGENT = "fleetsched-scheduler"  # the writes' field manager is <agent>/<member> in shard mode


@dataclass(frozen=True)
class ShardTimings:
    """Member-Lease timings, short so that a test sees a lapse in seconds (client-go's rule:
    lease duration > renew deadline > retry period)."""

    lease_duration: float = 4.0
    renew_deadline: float = 3.0
    retry_period: float = 1.0

    def args(self) -> tuple[str, ...]:
        return (
            f"--leader-elect-lease-duration={self.lease_duration:g}s",
            f"--leader-elect-renew-deadline={self.renew_deadline:g}s",
            f"--leader-elect-retry-period={self.retry_period:g}s",
        )


@dataclass
class ShardedReplicas:
    """``fleetsched scheduler --shard-mode=lease`` replicas against one apiserver, by identity."""

    kubeconfig: Path
    workdir: Path
    timings: ShardTimings = field(default_factory=ShardTimings)
    extra_args: tuple[str, ...] = ()
    group: str = SCHEDULER_GROUP
    process_class: type[SchedulerProcess] = SchedulerProcess
    replicas: dict[str, SchedulerProcess] = field(default_factory=dict)

    def member(self, identity: str) -> str:
        """The member name (and Lease name) of ``identity``: ``<group>-<identity>`` as a DNS label."""
        return member_name(self.group, identity)

    def field_manager(self, identity: str) -> str:
        return f"{SCHEDULER_AGENT}/{self.member(identity)}"

    def start(
        self, *identities: str, wait_ready: bool = True, timeout: float = 120
    ) -> list[SchedulerProcess]:
        """Start one replica per identity (all at once), then wait until each is ready: caches
        synced and its member Lease held."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        started = []
        for identity in identities:
            if identity in self.replicas and self.replicas[identity].alive():
                raise ValueError(f"replica {identity} is running already")
            proc = self.process_class(
                kubeconfig=self.kubeconfig,
                log_path=self.workdir / f"scheduler-{identity}.log",
                extra_args=(
                    "--shard-mode=lease",
                    f"--shard-identity={identity}",
                    f"--leader-elect-resource-name={self.group}",
                    *self.timings.args(),
                    *self.extra_args,
                ),
            )
            self.replicas[identity] = proc
            proc.start(wait_ready=False)
            started.append(proc)
        if wait_ready:
            for proc in started:
                proc.wait_ready(timeout)
        return started

    def __getitem__(self, identity: str) -> SchedulerProcess:
        return self.replicas[identity]

    def running(self) -> dict[str, SchedulerProcess]:
        """The replicas alive and not paused."""
        return {i: p for i, p in self.replicas.items() if p.alive() and not p.paused}

    def members(self) -> list[str]:
        """Member names of the running replicas, as rendezvous hashing takes them."""
        return sorted(self.member(i) for i in self.running())

    def gauges(self, name: str) -> dict[str, float]:
        """One metric of every running replica, by identity."""
        return {i: p.metric(name) for i, p in self.running().items()}

    def settled(self) -> bool:
        """Every running replica holds its Lease and counts exactly the running replicas as members."""
        count = len(self.running())
        held = self.gauges("fleetsched_scheduler_shard_member_lease_held")
        members = self.gauges("fleetsched_scheduler_shard_members")
        return all(v == 1 for v in held.values()) and all(v == count for v in members.values())

    def wait_settled(self, timeout: float = 60) -> None:
        wait_until(
            self.settled, timeout=timeout, interval=0.25,
            message=lambda: f"replicas never agreed on {len(self.running())} members: "
            f"{self.gauges('fleetsched_scheduler_shard_members')}\n" + self.log_tails(),
        )

    def foreign_drops(self) -> list[tuple[str, MembershipView]]:
        """Membership changes in which a replica saw ANOTHER member leave (its own lapses aside):
        after them, bindings legitimately change owner."""
        return self.foreign_drops_besides()

    def foreign_drops_besides(self, *expected: str) -> list[tuple[str, MembershipView]]:
        """``foreign_drops`` other than of the members ``expected`` to leave (one a test killed)."""
        return [
            (identity, view)
            for identity, proc in self.replicas.items()
            for view in proc.membership_views()
            if set(view.left) - {self.member(identity), *expected}
        ]

    def log_tails(self, lines: int = 15) -> str:
        return "\n".join(f"--- {i}:\n{p.log_tail(lines)}" for i, p in self.replicas.items())

    def stop(self) -> None:
        for proc in self.replicas.values():
            proc.stop()
