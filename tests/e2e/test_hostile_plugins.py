"""Hostile out-of-tree plugins in the LIVE scheduler on a real kube-apiserver (issue 23), each in a
profile of its own beside the default profile:

* ``Exiting`` raises ``SystemExit(3)`` in Filter: before, the scheduler exited 3 with nothing logged
  (and, restarted, took the same binding up again); now that binding's condition names the plugin
  and the point, and the scheduler keeps running;
* ``LabelClearing`` clears each cluster's labels in Filter: before, the next binding of the default
  profile selecting by label was NoClusterFit while ``kubectl get cluster`` still showed the labels;
  now the attempt raises, that binding fails naming the plugin, and nobody sees a change;
* ``DictClearing`` calls ``dict.clear`` on each cluster's labels, past the view's own methods (issue
  30): the view is a ``MappingProxyType``, so that raises too and fails only that binding;
* ``ExitingScore`` answers an int subclass whose comparisons raise ``SystemExit`` (issue 30): before,
  that binding never got a condition and was retried with tracebacks; now it is scheduled;
* ``Hanging`` hangs in Filter: before, bindings stuck there took every core thread and the default
  profile's bindings waited behind them; now the hung profile holds only threads of its own, its
  bindings fail naming the plugin and the point, and the default profile's bindings are scheduled
  meanwhile. Its throughput then is printed (bindings/s with the load average), never asserted.

The plugins are found through a real entry point of a distribution on PYTHONPATH, as in an image.
"""

from __future__ import annotations

import os
import time
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
    list_bindings,
    ready_cluster,
    scheduled_condition,
)
from tests.support.processes import SchedulerProcess
from tests.unit.scheduler.config.distributions import install

NAMESPACE = "hostile"
HOSTILE = '''
import os
import time


class Exiting:
    name = "Exiting"

    def __init__(self, args=None, handle=None):
        pass

    def filter(self, ctx, cluster):
        raise SystemExit(3)


class LabelClearing:
    name = "LabelClearing"

    def __init__(self, args=None, handle=None):
        pass

    def filter(self, ctx, cluster):
        cluster.labels.clear()
        return None


class DictClearing:
    name = "DictClearing"

    def __init__(self, args=None, handle=None):
        pass

    def filter(self, ctx, cluster):
        dict.clear(cluster.labels)  # past the view's own methods, to the dict's (issue 30)
        return None


class Exiting7(int):
    def _exit(self, *args):
        raise SystemExit(9)

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __hash__ = __index__ = __int__ = _exit


class ExitingScore:
    name = "ExitingScore"

    def __init__(self, args=None, handle=None):
        pass

    def score(self, ctx, cluster):
        return Exiting7(7)


class Hanging:
    name = "Hanging"

    def __init__(self, args=None, handle=None):
        pass

    def filter(self, ctx, cluster):
        release = os.environ["FLEETSCHED_TEST_RELEASE"]  # a test fixture, not a pattern to follow
        deadline = time.monotonic() + 120
        while not os.path.exists(release) and time.monotonic() < deadline:
            time.sleep(0.2)
        from fleetsched.plugin import Status
        return Status.success()
'''
PLUGINS = ("Exiting", "LabelClearing", "DictClearing", "ExitingScore", "Hanging")


def configuration(directory: Path) -> Path:
    def only(plugin: str) -> dict[str, Any]:
        return {"filter": {"enabled": [{"name": plugin}]}}

    doc = {
        "apiVersion": "config.fleetsched.io/v1alpha1",
        "kind": "SchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "parallelism": 2,
        "profiles": [
            {"schedulerName": "default-scheduler"},
            {"schedulerName": "exiting", "plugins": only("Exiting")},
            {"schedulerName": "mutating", "plugins": only("LabelClearing")},
            {"schedulerName": "dict-clearing", "plugins": only("DictClearing")},
            {"schedulerName": "int-subclass", "plugins": {"score": {"enabled": [{"name": "ExitingScore"}]}}},
            {"schedulerName": "hanging", "plugins": only("Hanging")},
        ],
    }
    path = directory / "scheduler-config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture
def hostile_scheduler(
    isolated_apiserver: APIServer,
    start_scheduler: Callable[..., SchedulerProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> tuple[SchedulerProcess, Path]:
    site = install(
        tmp_path / "site",
        "fleetsched-hostile-plugins",
        modules={"fleetsched_hostile_plugins": HOSTILE},
        entry_points={name: f"fleetsched_hostile_plugins:{name}" for name in PLUGINS},
    )
    release = tmp_path / "release-the-hang"
    # what `pip install` into the image would do (the worktree first: python -m runs from the repo root)
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("FLEETSCHED_TEST_RELEASE", str(release))
    server = isolated_apiserver
    if NAMESPACE not in server.kubectl("get", "namespaces", "-o", "name"):
        server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(
        server, [ready_cluster(name, 1000, {"zone": "a"}) for name in ("m1", "m2")]
    )
    scheduler = start_scheduler(
        server, "--config", str(configuration(tmp_path)), "--scheduling-timeout=2"
    )
    return scheduler, release


def binding(name: str, scheduler_name: str, replicas: int = 2) -> dict[str, Any]:
    doc = divided_binding(name, NAMESPACE, replicas, [])
    doc["spec"]["schedulerName"] = scheduler_name
    # select by label (what LabelClearing would have emptied), not by name
    doc["spec"]["placement"]["clusterAffinity"] = {"labelSelector": {"matchLabels": {"zone": "a"}}}
    return doc


def condition(server: APIServer, name: str) -> Any:
    return scheduled_condition(get_json(server, "rb", "-n", NAMESPACE, name))


def placed(server: APIServer, name: str) -> list[str] | None:
    obj = get_json(server, "rb", "-n", NAMESPACE, name)
    found = scheduled_condition(obj)
    if found is None or found.get("status") != "True":
        return None
    return sorted(t["name"] for t in obj["spec"].get("clusters") or [])


def test_system_exit_and_label_mutation_fail_their_binding_only(
    isolated_apiserver: APIServer, hostile_scheduler: tuple[SchedulerProcess, Path]
) -> None:
    server = isolated_apiserver
    scheduler, release = hostile_scheduler
    release.touch()
    create_objects(server, [binding("exiting-1", "exiting"), binding("mutating-1", "mutating"),
                            binding("dict-clearing-1", "dict-clearing"), binding("scored-1", "int-subclass")])
    failed = {
        name: wait_until(
            lambda n=name: condition(server, n),
            timeout=60,
            message=lambda: f"no condition:\n{scheduler.log_tail()}",
        )
        for name in ("exiting-1", "mutating-1", "dict-clearing-1", "scored-1")
    }
    assert failed["exiting-1"]["status"] == "False"
    assert "plugin Exiting failed at Filter: SystemExit: 3" in failed["exiting-1"]["message"]
    assert failed["mutating-1"]["status"] == "False"
    refused = "AttributeError: 'mappingproxy' object has no attribute 'clear'"
    assert f"plugin LabelClearing failed at Filter: {refused}" in failed["mutating-1"]["message"]
    assert failed["dict-clearing-1"]["status"] == "False"
    assert "plugin DictClearing failed at Filter: TypeError" in failed["dict-clearing-1"]["message"]
    # a score of an int subclass is taken as its int: scheduled (it had no condition, retried for ever)
    assert failed["scored-1"]["status"] == "True", failed["scored-1"]
    assert placed(server, "scored-1") == ["m1", "m2"]
    # The default profile, after both, on the same cluster values: the labels are all there.
    create_objects(server, [binding("web", "default-scheduler")])
    assert wait_until(
        lambda: placed(server, "web"), timeout=60, message=lambda: f"web not placed:\n{scheduler.log_tail()}"
    ) == ["m1", "m2"]
    assert scheduler.alive()
    assert get_json(server, "cluster", "m1")["metadata"]["labels"] == {"zone": "a"}


def test_a_hung_plugin_does_not_starve_the_default_profile(
    isolated_apiserver: APIServer, hostile_scheduler: tuple[SchedulerProcess, Path]
) -> None:
    server = isolated_apiserver
    scheduler, release = hostile_scheduler
    hung = [binding(f"hung-{i}", "hanging") for i in range(10)]
    create_objects(server, hung)
    try:
        # Both threads of the hanging profile are stuck before the default profile's bindings come.
        wait_until(
            lambda: scheduler.metric("fleetsched_scheduler_plugin_overruns_total", plugin="Hanging") >= 2,
            timeout=60,
            message=lambda: f"no overrun counted:\n{scheduler.log_tail()}",
        )
        create_objects(server, [binding(f"web-{i}", "default-scheduler") for i in range(5)])
        wait_until(
            lambda: all(placed(server, f"web-{i}") == ["m1", "m2"] for i in range(5)),
            timeout=60,
            message=lambda: f"the default profile starved:\n{scheduler.log_tail()}",
        )
        # The hung profile's bindings fail, each naming the plugin and the point (stuck there, or
        # refused at once while its threads are held).
        messages = wait_until(
            lambda: [c["message"] for c in (condition(server, f"hung-{i}") for i in range(10)) if c] or None,
            timeout=60,
            message=lambda: f"no hung binding reported:\n{scheduler.log_tail()}",
        )
        assert any("plugin Hanging did not return from Filter" in m for m in messages), messages
        assert all("Hanging" in m for m in messages), messages

        # Throughput of the default profile while the other profile's plugin hangs (printed).
        count = 100
        load_before = os.getloadavg()
        started = time.monotonic()
        create_objects(server, [binding(f"load-{i}", "default-scheduler", 4) for i in range(count)])
        created = time.monotonic()

        def all_placed() -> bool:
            done = [
                b
                for b in list_bindings(server, NAMESPACE)
                if b["metadata"]["name"].startswith("load-")
                and (scheduled_condition(b) or {}).get("status") == "True"
            ]
            return len(done) == count

        wait_until(
            all_placed, timeout=180, interval=0.5, message=lambda: f"load not placed:\n{scheduler.log_tail()}"
        )
        finished = time.monotonic()
        print(
            f"\ndefault profile while profile 'hanging' hangs: {count} bindings in {finished - started:.1f}s "
            f"({count / (finished - started):.1f} bindings/s; creating them took {created - started:.1f}s); "
            f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f} "
            f"on {os.cpu_count()} CPUs"
        )
        assert scheduler.alive()
        assert scheduler.metric("fleetsched_scheduler_core_saturated_total", profile="hanging") >= 1
    finally:
        release.touch()
