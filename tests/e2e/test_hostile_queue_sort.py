"""A QueueSort plugin that hangs, in the LIVE scheduler on a real kube-apiserver (issue 30).

Before: ``less`` ran inside the queue's heap operations on the event loop, so a hung comparison held
``/healthz`` and ``/readyz`` (a liveness probe restarted the scheduler over and over), the Lease went
unrenewed until leadership was lost, and every profile's bindings stalled (one queue serves them
all), with nothing logged. Now the queue is ordered in a thread of its own with a budget per
comparison: the probes answer within the kubelet's default probe timeout (1 s) all along, the Lease
keeps being renewed, the plugin is marked broken at QueueSort (metric and log line), and both
profiles' bindings are scheduled in Karmada's order meanwhile.

The plugin hangs for 60 s (or until the test releases it); the test watches for 20 s of it.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    create_objects,
    divided_binding,
    get_json,
    ready_cluster,
    scheduled_condition,
)
from tests.support.processes import SchedulerProcess
from tests.unit.scheduler.config.distributions import install

NAMESPACE = "hostile-sort"
HANG = 60.0
WATCH = 20.0
PROBE_TIMEOUT = 1.0  # the kubelet's default timeoutSeconds
NAMES = [f"{profile}-{i}" for profile in ("default", "other") for i in range(10)]
HANGING_SORT = f'''
import os
import time


class HangingSort:
    name = "HangingSort"

    def __init__(self, args=None, handle=None):
        pass

    def less(self, a, b):
        release = os.environ["FLEETSCHED_TEST_RELEASE"]  # a test fixture, not a pattern to follow
        if not os.path.exists(release):
            open(os.environ["FLEETSCHED_TEST_ENTERED"], "a").close()
            deadline = time.monotonic() + {HANG}
            while not os.path.exists(release) and time.monotonic() < deadline:
                time.sleep(0.2)
        return a.priority > b.priority
'''


def configuration(directory: Path) -> Path:
    sort = {"queueSort": {"disabled": [{"name": "*"}], "enabled": [{"name": "HangingSort"}]}}
    doc = {
        "apiVersion": "config.fleetsched.io/v1alpha1",
        "kind": "SchedulerConfiguration",
        "leaderElection": {"leaderElect": True},
        "profiles": [
            {"schedulerName": "default-scheduler", "plugins": sort},
            {"schedulerName": "other", "plugins": sort},
        ],
    }
    path = directory / "scheduler-config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def hanging_sort(
    isolated_apiserver: APIServer,
    start_scheduler: Callable[..., SchedulerProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[SchedulerProcess, Path, Path]:
    site = install(
        tmp_path / "site",
        "fleetsched-hanging-sort",
        modules={"fleetsched_hanging_sort": HANGING_SORT},
        entry_points={"HangingSort": "fleetsched_hanging_sort:HangingSort"},
    )
    release, entered = tmp_path / "release-the-hang", tmp_path / "hang-entered"
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("FLEETSCHED_TEST_RELEASE", str(release))
    monkeypatch.setenv("FLEETSCHED_TEST_ENTERED", str(entered))
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(name, 1000) for name in ("m1", "m2")])
    # Waiting before the scheduler starts: its first sync queues them all at once, so less is
    # called at once (bindings created later may each be taken before the next one arrives).
    create_objects(
        server,
        [
            binding(name, "default-scheduler" if name.startswith("default") else "other", i % 3)
            for i, name in enumerate(NAMES)
        ],
    )
    return start_scheduler(server, "--config", str(configuration(tmp_path))), release, entered


def binding(name: str, scheduler_name: str, priority: int) -> dict[str, Any]:
    doc = divided_binding(name, NAMESPACE, 2, ["m1", "m2"])
    doc["spec"]["schedulerName"] = scheduler_name
    doc["spec"]["schedulePriority"] = {"priority": priority}
    return doc


def probe(scheduler: SchedulerProcess, path: str) -> int:
    url = f"http://127.0.0.1:{scheduler.port}{path}"
    with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT) as response:
        return int(response.status)


def lease(server: APIServer) -> dict[str, Any]:
    text = server.kubectl("get", "lease", "-n", "karmada-system", "fleetsched-scheduler", "-o", "json")
    obj = json.loads(text)
    return dict(obj["spec"])


def scheduled(server: APIServer, name: str) -> bool:
    found = scheduled_condition(get_json(server, "rb", "-n", NAMESPACE, name))
    return found is not None and found.get("status") == "True"


def test_a_hung_queue_sort_holds_neither_the_probes_nor_the_lease_nor_the_profiles(
    isolated_apiserver: APIServer, hanging_sort: tuple[SchedulerProcess, Path, Path]
) -> None:
    server = isolated_apiserver
    scheduler, release, entered = hanging_sort
    try:
        wait_until(entered.exists, timeout=30, message=lambda: f"less never hung:\n{scheduler.log_tail()}")
        holder = lease(server)["holderIdentity"]
        renewals: set[str] = set()
        probes = 0
        until = time.monotonic() + WATCH
        while time.monotonic() < until:
            # raises (a timeout) if either probe takes longer than the kubelet would wait
            assert probe(scheduler, "/healthz") == 200
            assert probe(scheduler, "/readyz") == 200
            probes += 2
            spec = lease(server)
            assert spec["holderIdentity"] == holder
            renewals.add(spec["renewTime"])
            time.sleep(0.25)
        assert not release.exists()  # the plugin was hanging the whole time
        # renewed every retry period (2 s): several renewals within the 20 s, none missed for long
        assert len(renewals) >= 5, renewals
        # both profiles' bindings were scheduled meanwhile (in Karmada's order: the unit tests show it)
        assert [n for n in NAMES if not scheduled(server, n)] == []
        assert scheduler.metric("fleetsched_scheduler_plugin_broken", plugin="HangingSort") == 1
        assert scheduler.metric(
            "fleetsched_scheduler_plugin_overruns_total", plugin="HangingSort", extension_point="QueueSort"
        ) >= 1
        broken = scheduler.log_events("plugin_broken")
        assert [(e["plugin"], e["extension_point"]) for e in broken] == [("HangingSort", "QueueSort")]
        assert scheduler.alive()
        print(f"\n{probes} probes answered within {PROBE_TIMEOUT:g}s each while less hung; "
              f"{len(renewals)} Lease renewals in {WATCH:g}s")
    finally:
        release.touch()
