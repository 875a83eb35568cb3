"""One member's estimator hung (SIGSTOP): the live scheduler keeps scheduling, in parallel, and alive.

Story 1 of the estimator proposal (see test_scheduler_estimators.py): with both estimators answering,
the 12-CPU replica goes to member-b; with member-b's estimator stopped, every call to it runs into
the deadline, the accurate answer is discarded (spec §7.4) and the general estimate puts the replica
on member-a. Twenty such bindings arrive at once with ``--workers 32``: the scheduler's own metric
of concurrent estimator RPCs shows all of them waiting on the hung estimator at the same time (one
timeout for the lot, not waves of six), while ``/healthz`` keeps answering and the leader keeps
renewing its Lease. No assertion on elapsed time: the wall time is printed for the report.
"""

from __future__ import annotations

import copy
import os
import signal
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.component.estimator.stories import placed, story_binding
from tests.e2e.test_estimator_stories import EstimatorProcess
from tests.e2e.test_scheduler_estimators import start_story_members
from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import apply_with_status, as_applied, create_objects, get_json, scheduled_condition
from tests.support.processes import SchedulerProcess

N_BINDINGS = 20
# Long enough that every binding reaches the hung estimator before the first call times out,
# even on a loaded machine; the assertion is on the overlap the scheduler recorded, not on time.
ESTIMATOR_TIMEOUT = "8s"
LEASE = ("karmada-system", "fleetsched-scheduler")


@pytest.fixture
def estimator_processes() -> Iterator[list[EstimatorProcess]]:
    started: list[EstimatorProcess] = []
    yield started
    for process in started:
        if process.process is not None and process.process.poll() is None:
            os.kill(process.process.pid, signal.SIGCONT)
        process.stop()


class Prober:
    """Polls ``/healthz`` from a thread; records each answer's status (0: no answer within 5 s)."""

    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/healthz"
        self.answers: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=5) as response:
                    self.answers.append(int(response.status))
            except OSError:
                self.answers.append(0)
            self._stop.wait(0.2)

    def __enter__(self) -> Prober:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join(10)


def lease_spec(server: APIServer) -> dict[str, Any]:
    return dict(get_json(server, "lease", "-n", LEASE[0], LEASE[1])["spec"])


def result(server: APIServer, name: str) -> dict[str, int] | None:
    obj = get_json(server, "rb", "-n", "default", name)
    condition = scheduled_condition(obj)
    return placed(obj) if condition and condition["status"] == "True" else None


def test_hung_estimator_costs_one_timeout_for_all_bindings(
    isolated_apiserver: APIServer,
    add_apiserver: Callable[..., APIServer],
    start_scheduler: Callable[..., SchedulerProcess],
    estimator_processes: list[EstimatorProcess],
    tmp_path: Path,
) -> None:
    server = isolated_apiserver
    estimators = start_story_members(server, add_apiserver, estimator_processes, tmp_path, prefix="hung")

    scheduler = start_scheduler(
        server,
        "--workers=32",
        "--enable-scheduler-estimator",
        f"--scheduler-estimator-timeout={ESTIMATOR_TIMEOUT}",
        name="hung",
    )
    # Both estimators answer: the accurate path is live and both channels are connected.
    warm_up = as_applied(story_binding(1))
    apply_with_status(server, [warm_up])
    assert wait_until(
        lambda: result(server, "story1"),
        timeout=60,
        message=lambda: f"not scheduled:\n{scheduler.log_tail()}",
    ) == {"member-b": 1}
    assert scheduler.metric("fleetsched_scheduler_estimator_rpcs_in_flight_peak") >= 1

    hung = estimators["member-b"]
    assert hung.process is not None
    lease_before = lease_spec(server)
    os.kill(hung.process.pid, signal.SIGSTOP)
    names = [f"hung-{i:02d}" for i in range(N_BINDINGS)]
    bindings = []
    for name in names:
        binding = copy.deepcopy(warm_up)
        binding["metadata"]["name"] = name
        binding["spec"]["resource"]["name"] = name
        bindings.append(binding)
    started = time.monotonic()
    with Prober(scheduler.port) as prober:
        create_objects(server, bindings)

        def all_scheduled() -> bool:
            return all(result(server, name) is not None for name in names)

        wait_until(all_scheduled, timeout=120, interval=0.5,
                   message=lambda: f"not all scheduled:\n{scheduler.log_tail()}")
        elapsed = time.monotonic() - started
        lease_after = lease_spec(server)  # the estimator is still stopped
    print(f"\n{N_BINDINGS} bindings with a hung estimator: {elapsed:.1f}s "
          f"(timeout {ESTIMATOR_TIMEOUT}, load {os.getloadavg()[0]:.2f})")

    # The general estimate was used for every binding (the accurate answer discarded, §7.4).
    assert {name: result(server, name) for name in names} == {name: {"member-a": 1} for name in names}
    # Every binding's call to the hung estimator was in flight at the same time, as the scheduler
    # counted them (plus possibly calls to the healthy one): one timeout for all, not waves.
    peak = scheduler.metric("fleetsched_scheduler_estimator_rpcs_in_flight_peak")
    assert peak >= N_BINDINGS, f"at most {peak:.0f} estimator calls overlapped"
    failed = scheduler.metric("fleetsched_scheduler_estimator_rpcs_total", code="DEADLINE_EXCEEDED")
    assert failed >= N_BINDINGS
    # The process stayed alive and responsive, and the leader kept its Lease renewed meanwhile.
    assert prober.answers and set(prober.answers) == {200}, prober.answers
    assert lease_after["holderIdentity"] == lease_before["holderIdentity"]
    assert lease_after["renewTime"] > lease_before["renewTime"]
    assert scheduler.metric("fleetsched_scheduler_is_leader") == 1
