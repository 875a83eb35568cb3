"""The live scheduler's plugin listers and metrics: the operator backs every profile's listers with
its watch caches, caches (and watches) Namespaces only when a plugin asked for their lister, and
exports the collectors plugins registered on the registry /metrics serves, each once."""

from __future__ import annotations

import dataclasses
from typing import Any

from prometheus_client import CollectorRegistry, Counter, generate_latest
from structlog.testing import capture_logs
from test_operator_writes import MemoryApi, a_binding, a_cluster

from fleetsched.controller.runtime import metrics
from fleetsched.controller.scheduler import listers as live_listers
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import CRB, RB
from fleetsched.kube.client import Connection
from fleetsched.plugin import Handle, Status
from fleetsched.scheduler import Scheduler
from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile

POOL = "pool.example.com/name"


class Seeing:
    """Asks for the listers it is told to, and registers ``collector``; filters nothing."""

    name = "Seeing"

    def __init__(self, handle: Handle, kinds: tuple[str, ...], collector: Any) -> None:
        self.handle = handle
        self.listers = {kind: getattr(handle.listers, kind)() for kind in kinds}
        if collector is not None:
            handle.metrics_registry.register(collector)

    def filter(self, ctx: Any, cluster: Any) -> Status:
        return Status.success()


def scheduler(kinds: tuple[str, ...], collector: Any = None) -> tuple[Scheduler, list[Seeing]]:
    made: list[Seeing] = []
    registry = defaults.in_tree_registry()

    def factory(args: object, handle: Handle) -> Seeing:
        made.append(Seeing(handle, kinds, collector))
        return made[-1]

    registry.register("Seeing", factory)
    base = defaults.default_profile()
    plugins = dict(base.plugins)
    plugins[ExtensionPoint.FILTER] = (*plugins[ExtensionPoint.FILTER], PluginEntry("Seeing"))
    profile: Profile = dataclasses.replace(base, plugins=plugins)
    return Scheduler(profile=profile, registry=registry), made


def operator(core: Scheduler, **profiles: Scheduler) -> SchedulerOperator:
    return SchedulerOperator(
        client=MemoryApi(a_binding()),  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=core,
        profiles=profiles,
        config=OperatorConfig(scheduler_names=frozenset(profiles or {"default-scheduler"})),
    )


def namespace(name: str, rv: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "resourceVersion": rv, "labels": labels}}


def test_namespaces_are_cached_only_when_a_plugin_asked_for_their_lister() -> None:
    plain, _ = scheduler(("clusters", "bindings"))
    without = operator(plain)
    assert without.namespaces is None
    assert live_listers.namespace_watches(without.client, without.namespaces) == []
    seeing, (plugin,) = scheduler(("namespaces",))
    op = operator(seeing)
    assert op.namespaces is not None
    # What the Namespace watch calls with each event (``listers.namespace_watches``).
    watch_of = live_listers.namespace_watches(op.client, op.namespaces)
    assert [w.path for w in watch_of] == ["/api/v1/namespaces"]
    event = watch_of[0].handler
    lister = plugin.listers["namespaces"]
    assert lister.get("ml") is None
    event(None, namespace("ml", "1", **{POOL: "gpu"}))
    found = lister.get("ml")
    assert found is not None and found.labels == {POOL: "gpu"}
    assert lister.get("ml") is found  # memoised while its resourceVersion is unchanged
    event("MODIFIED", namespace("ml", "2", **{POOL: "cpu"}))
    assert lister.get("ml").labels == {POOL: "cpu"}  # type: ignore[union-attr]
    event("DELETED", namespace("ml", "3"))
    assert lister.get("ml") is None and lister.list() == ()


def test_clusters_and_bindings_are_read_from_the_watch_caches_of_every_profile() -> None:
    first, (one,) = scheduler(("clusters", "bindings"))
    second, (two,) = scheduler(("bindings",))
    op = operator(first, **{"default-scheduler": first, "other": second})
    op.on_cluster_event(None, a_cluster("m1"))
    op.on_binding_event(RB, None, a_binding())
    crb = a_binding()
    crb["kind"] = "ClusterResourceBinding"
    crb["metadata"] = {"name": "all", "generation": 1, "labels": {"team": "a"}}
    op.on_binding_event(CRB, None, crb)
    cluster = one.listers["clusters"].get("m1")
    assert cluster is not None and cluster.name == "m1"
    for plugin in (one, two):
        rb = plugin.listers["bindings"].get("ns/web")
        assert rb is not None and rb.labels == {"propagationpolicy.karmada.io/permanent-id": "p"}
        found = plugin.listers["bindings"].get("all")
        assert found is not None and found.kind == "ClusterResourceBinding" and found.labels == {"team": "a"}
        assert sorted(b.name for b in plugin.listers["bindings"].list()) == ["all", "web"]


def test_an_unreadable_cached_object_is_left_out_with_a_warning() -> None:
    core, (plugin,) = scheduler(("bindings",))
    op = operator(core)
    broken = a_binding()
    broken["metadata"]["labels"] = {"team": 5}
    op.on_binding_event(RB, None, broken)
    with capture_logs() as logs:
        assert plugin.listers["bindings"].get("ns/web") is None
    assert [e["event"] for e in logs] == ["lister_object_unreadable"]
    assert "metadata.labels.team" in logs[0]["error"]


def test_plugin_metrics_are_exported_once_and_a_clash_is_a_warning() -> None:
    counter = Counter("fleetsched_test_plugin_things_total", "Things a test plugin counted", registry=None)
    first, _ = scheduler((), counter)
    second, _ = scheduler((), counter)
    registry = CollectorRegistry()
    live_listers.export_plugin_metrics((first, second), registry)
    counter.inc(3)
    assert b"fleetsched_test_plugin_things_total 3.0" in generate_latest(registry)
    clash = Counter("karmada_scheduler_schedule_attempts_total", "clash", registry=None)
    third, _ = scheduler((), clash)
    with capture_logs() as logs:
        live_listers.export_plugin_metrics((third,), metrics.REGISTRY)
    assert [e["event"] for e in logs] == ["plugin_metric_refused"]


def test_the_operator_exports_its_plugins_metrics_on_the_served_registry() -> None:
    counter = Counter("fleetsched_test_operator_plugin_total", "A test plugin's counter", registry=None)
    core, _ = scheduler((), counter)
    operator(core)
    counter.inc()
    assert b"fleetsched_test_operator_plugin_total 1.0" in metrics.exposition()  # what /metrics serves
