"""The example out-of-tree plugin package in the LIVE scheduler on a real kube-apiserver:
``fleetsched scheduler --config FILE`` with profiles enabling ExampleTenant and ExampleCost (weight
2), a profile whose ExampleFlaky raises (the binding fails, named) and one marking it ignorable
(skipped, and the explanation annotation says so); a plugin with invalid args or one that fails to
import stops the scheduler at start-up with exit 2 and one line naming it.

The package is installed into the test venv by hack/test.sh, as it would be into the scheduler's
image; the plugins are found through its real entry points."""

from __future__ import annotations

import copy
import itertools
import json
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
from tests.unit.scheduler.config.distributions import BROKEN, install

TENANT, PRICE = "tenant.example.com/name", "cost.example.com/price-per-hour"
EXPLANATION = "scheduler.fleetsched.io/explanation"
EXAMPLE_PLUGINS = {
    "filter": {"enabled": [{"name": "ExampleTenant"}]},
    "score": {"enabled": [{"name": "ExampleCost", "weight": 2}]},
}
FLAKY_PLUGINS = {
    "filter": {"enabled": [{"name": "ExampleTenant"}, {"name": "ExampleFlaky"}]},
    "score": {"enabled": [{"name": "ExampleCost", "weight": 2}]},
}
FLAKY_ARGS = [
    {"name": "ExampleFlaky", "args": {"failAt": "Filter", "message": "tenant directory unreachable"}}
]
CONFIGURATION = {
    "apiVersion": "config.fleetsched.io/v1alpha1",
    "kind": "SchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [
        {"schedulerName": "default-scheduler", "plugins": EXAMPLE_PLUGINS},
        {"schedulerName": "flaky", "plugins": FLAKY_PLUGINS, "pluginConfig": FLAKY_ARGS},
        {
            "schedulerName": "flaky-ignorable",
            "plugins": FLAKY_PLUGINS,
            "pluginConfig": FLAKY_ARGS,
            "ignorablePlugins": ["ExampleFlaky"],
        },
    ],
}


def write(directory: Path, doc: dict[str, Any]) -> Path:
    path = directory / "scheduler-config.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def fleet() -> list[dict[str, Any]]:
    return [
        ready_cluster(name, pods, {TENANT: tenant, PRICE: price})
        for name, tenant, price, pods in (
            ("shop-large", "shop", "0.90", 400),
            ("shop-spot", "shop", "0.30", 60),
            ("shop-standard", "shop", "0.50", 120),
            ("analytics-1", "analytics", "0.10", 200),
        )
    ]


def one_cluster_binding(name: str, namespace: str, scheduler_name: str | None = None) -> dict[str, Any]:
    """Aggregated over exactly one cluster (maxGroups 1): the scores choose which."""
    binding = divided_binding(name, namespace, 3, [])
    spec = binding["spec"]
    spec["placement"] = {
        "spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
    }
    if scheduler_name is not None:
        spec["schedulerName"] = scheduler_name
    return binding


def test_the_live_scheduler_places_bindings_by_the_example_plugins(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    server = isolated_apiserver
    for namespace in ("shop", "analytics"):
        server.kubectl("create", "namespace", namespace, check=False)
    apply_with_status(server, fleet())
    config = write(tmp_path, CONFIGURATION)
    scheduler = start_scheduler(server, "--config", str(config), "--leader-elect=false")
    create_objects(
        server,
        [
            one_cluster_binding("web", "shop"),
            one_cluster_binding("report", "analytics"),
            one_cluster_binding("broken", "shop", "flaky"),
            one_cluster_binding("tolerant", "shop", "flaky-ignorable"),
        ],
    )

    def decided(namespace: str, name: str) -> dict[str, Any] | None:
        obj = get_json(server, "rb", "-n", namespace, name)
        return obj if scheduled_condition(obj) is not None else None

    def wait(namespace: str, name: str) -> dict[str, Any]:
        return wait_until(
            lambda: decided(namespace, name),
            timeout=60,
            message=lambda: f"{namespace}/{name} not decided:\n{scheduler.log_tail()}",
        )

    def clusters(obj: dict[str, Any]) -> dict[str, int]:
        return {t["name"]: t.get("replicas", 0) for t in obj["spec"].get("clusters") or []}

    web, report = wait("shop", "web"), wait("analytics", "report")
    assert clusters(web) == {"shop-spot": 3}  # the shop's cheapest cluster
    assert clusters(report) == {"analytics-1": 3}  # the only one labelled for the analytics tenant
    explanation = json.loads(web["metadata"]["annotations"][EXPLANATION])
    assert explanation["groups"][0]["rejected"] == {"ExampleTenant": 1}
    assert explanation["groups"][0]["selected"] == ["shop-spot"]

    broken = wait("shop", "broken")
    condition = scheduled_condition(broken)
    assert condition is not None and condition["status"] == "False"
    assert "plugin ExampleFlaky failed at Filter: InjectedFailure: tenant directory unreachable" in (
        condition["message"]
    )
    assert not broken["spec"].get("clusters")

    tolerant = wait("shop", "tolerant")
    assert clusters(tolerant) == {"shop-spot": 3}
    tolerant_explanation = json.loads(tolerant["metadata"]["annotations"][EXPLANATION])
    assert tolerant_explanation["profile"] == "flaky-ignorable"
    assert tolerant_explanation["groups"][0]["skipped"] == ["ExampleFlaky@Filter"]
    assert tolerant_explanation["groups"][0]["scores"] == {"shop-spot": 200}
    # Failures are always counted (successes are sampled), under Karmada's metric and labels.
    failures = scheduler.metric(
        "karmada_scheduler_plugin_execution_duration_seconds_count",
        plugin="ExampleFlaky",
        extension_point="Filter",
        result="Error",
    )
    assert failures >= 2  # the failing binding (retried with backoff) and the ignorable one
    assert scheduler.alive()  # a plugin never stops the process


def refusal(scheduler: SchedulerProcess) -> str:
    assert scheduler.process is not None
    assert scheduler.process.wait(timeout=60) == 2
    return scheduler.log_tail()


def test_invalid_plugin_args_stop_the_scheduler_at_start_up_naming_the_plugin(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    doc = copy.deepcopy(CONFIGURATION)
    doc["profiles"][0]["pluginConfig"] = [{"name": "ExampleCost", "args": {"defaultScore": 250}}]
    scheduler = start_scheduler(isolated_apiserver, "--config", str(write(tmp_path, doc)), wait_ready=False)
    log = refusal(scheduler)
    error = (
        "profiles[default-scheduler].pluginConfig[ExampleCost].args: "
        "defaultScore: must be an integer in 0..100, got 250"
    )
    assert [line for line in log.splitlines() if error in line], log


def test_a_plugin_that_fails_to_import_stops_the_scheduler_at_start_up_naming_it(
    isolated_apiserver: APIServer,
    start_scheduler: Callable[..., SchedulerProcess],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = install(
        tmp_path / "site",
        "fleetsched-broken-plugin",
        modules={"fleetsched_broken_plugin": BROKEN},
        entry_points={"ExampleBroken": "fleetsched_broken_plugin:new"},
    )
    monkeypatch.setenv("PYTHONPATH", str(site))  # what `pip install` into the image would do
    doc = copy.deepcopy(CONFIGURATION)
    doc["profiles"][0]["plugins"]["filter"]["enabled"].append({"name": "ExampleBroken"})
    scheduler = start_scheduler(isolated_apiserver, "--config", str(write(tmp_path, doc)), wait_ready=False)
    log = refusal(scheduler)
    lines = [line for line in log.splitlines() if "failed to import" in line]
    assert len(lines) == 1, log
    assert "plugin 'ExampleBroken' (entry point 'fleetsched_broken_plugin:new'" in lines[0]
    assert "ModuleNotFoundError" in lines[0]


POOL = "pool.example.com/name"


def test_the_live_scheduler_gives_plugins_the_namespaces_and_exports_their_metrics(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess], tmp_path: Path
) -> None:
    """ExampleNamespacePool: a namespace's label picks the pool, read through the Namespace lister
    the scheduler watches because the plugin asked for it; a relabelled namespace counts for the
    next binding at once (not a reused verdict); the plugin's counter is on /metrics."""
    server = isolated_apiserver
    server.kubectl("create", "namespace", "ml", check=False)
    server.kubectl("create", "namespace", "web", check=False)
    server.kubectl("label", "namespace", "ml", f"{POOL}=gpu", "--overwrite")
    apply_with_status(
        server, [ready_cluster("gpu-1", 400, {POOL: "gpu"}), ready_cluster("cpu-1", 4000, {POOL: "cpu"})]
    )
    doc = {
        "apiVersion": "config.fleetsched.io/v1alpha1",
        "kind": "SchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": {"filter": {"enabled": [{"name": "ExampleNamespacePool"}]}},
        }],
    }
    scheduler = start_scheduler(server, "--config", str(write(tmp_path, doc)), "--leader-elect=false")
    serve = one_cluster_binding("serve", "ml")
    serve["metadata"].setdefault("labels", {})[POOL] = "cpu"
    create_objects(server, [one_cluster_binding("train", "ml"), one_cluster_binding("site", "web"), serve])

    def decided(namespace: str, name: str) -> dict[str, Any] | None:
        obj = get_json(server, "rb", "-n", namespace, name)
        return obj if scheduled_condition(obj) is not None else None

    def wait(namespace: str, name: str) -> dict[str, int]:
        obj = wait_until(
            lambda: decided(namespace, name),
            timeout=60,
            message=lambda: f"{namespace}/{name} not decided:\n{scheduler.log_tail()}",
        )
        return {t["name"]: t.get("replicas", 0) for t in obj["spec"].get("clusters") or []}

    assert wait("ml", "train") == {"gpu-1": 3}  # the namespace's pool, not the roomiest cluster
    assert wait("web", "site") == {"cpu-1": 3}  # no pool: the roomiest
    assert wait("ml", "serve") == {"cpu-1": 3}  # its own label wins
    server.kubectl("label", "namespace", "ml", f"{POOL}=cpu", "--overwrite")

    probes = itertools.count()

    def relabelled() -> dict[str, int] | None:
        name = f"probe-{next(probes)}"
        create_objects(server, [one_cluster_binding(name, "ml")])
        placed = wait("ml", name)
        return placed if placed == {"cpu-1": 3} else None

    # The Namespace watch delivers the new label shortly; from then on bindings of ml go to cpu-1.
    assert wait_until(relabelled, timeout=60, message=lambda: scheduler.log_tail()) == {"cpu-1": 3}
    lookups = scheduler.metric("fleetsched_example_namespace_pool_lookups_total", source="namespace")
    assert lookups >= 2
    assert scheduler.metric("fleetsched_example_namespace_pool_lookups_total", source="binding") >= 1
    assert scheduler.alive()
