"""Plugins that can see: the binding's labels and annotations in the read-only view, read-only
listers and a metrics registry through the Handle, and result reuse that stays correct when what a
plugin read through a lister changes while the cluster snapshot does not."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from fleetsched.cli import main
from fleetsched.plugin import ClusterFacet, ClusterInfo, FilterContext, Handle, NamespaceInfo, Status
from fleetsched.scheduler.convert import ConversionError, binding_from_dict, namespace_from_dict
from fleetsched.scheduler.framework import in_tree_registry
from fleetsched.scheduler.framework.listers import Listers, MappingLister, SourceLister
from fleetsched.scheduler.framework.plugin_metrics import PluginMetrics
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot

from ..builders import a_binding, a_cluster

POOL = "pool.example.com/name"
ROOT = Path(__file__).resolve().parents[4]


def rb(labels: Any = None, annotations: Any = None) -> dict[str, Any]:
    return {
        "kind": "ResourceBinding",
        "metadata": {"name": "web", "namespace": "ml", "labels": labels, "annotations": annotations},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}},
    }


def test_the_binding_view_carries_its_labels_and_annotations_read_only() -> None:
    binding = binding_from_dict(rb({"team": "a"}, {"note": "x"}))
    assert binding.labels == {"team": "a"} and binding.annotations == {"note": "x"}
    with pytest.raises(TypeError):
        binding.labels["team"] = "b"  # type: ignore[index]
    with pytest.raises(AttributeError):
        binding.annotations.clear()  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        dict.clear(binding.annotations)  # type: ignore[arg-type]
    assert hash(binding) == hash(dataclasses.replace(binding, labels={"team": "b"}))  # still hashable
    assert binding != dataclasses.replace(binding, labels={"team": "b"})
    assert binding_from_dict(rb()).labels == {}


@pytest.mark.parametrize(
    ("labels", "annotations", "field"),
    [({"team": 5}, None, "metadata.labels.team"), (None, {"note": ["x"]}, "metadata.annotations.note"),
     ("team=a", None, "metadata.labels")],
)
def test_a_malformed_label_or_annotation_names_its_field(labels: Any, annotations: Any, field: str) -> None:
    with pytest.raises(ConversionError, match=f"^{field}"):
        binding_from_dict(rb(labels, annotations))


def test_a_namespace_converts_to_its_read_only_view() -> None:
    ns = namespace_from_dict({"metadata": {"name": "ml", "labels": {POOL: "gpu"}, "annotations": {"a": "b"}}})
    assert (ns.name, ns.labels, ns.annotations) == ("ml", {POOL: "gpu"}, {"a": "b"})
    with pytest.raises(TypeError):
        ns.labels[POOL] = "cpu"  # type: ignore[index]


def test_a_lister_reads_the_source_attached_after_it_was_asked_for() -> None:
    listers = Listers()
    namespaces = listers.namespaces()
    assert listers.asked == frozenset({"namespaces"})
    assert namespaces.get("ml") is None and namespaces.list() == ()
    listers.attach(namespaces=MappingLister({"ml": NamespaceInfo("ml"), "a": NamespaceInfo("a")}))
    assert namespaces.get("ml") is not None and [n.name for n in namespaces.list()] == ["a", "ml"]
    clusters = {"m1": ClusterInfo("m1")}
    listers.attach(clusters=SourceLister(clusters.get, clusters.values))
    assert listers.clusters().get("m1") is clusters["m1"] and listers.asked == {"namespaces", "clusters"}
    assert listers.namespaces().get("ml") is not None  # attaching one kind keeps the others


def test_plugin_metrics_keep_each_collector_once_and_refuse_a_non_collector() -> None:
    class Counter:
        def collect(self) -> list[object]:
            return []

    metrics, counter = PluginMetrics(), Counter()
    metrics.register(counter)
    metrics.register(counter)
    assert metrics.collectors() == (counter,)
    with pytest.raises(TypeError, match="collect"):
        metrics.register(object())  # type: ignore[arg-type]


class PoolFilter:
    """Keyed by the namespace's pool, read through the lister once per attempt (the documented way)."""

    name = "PoolFilter"
    cluster_inputs = ClusterFacet.LABELS

    def __init__(self, handle: Handle, *, key_by_pool: bool = True) -> None:
        self.handle = handle
        self.namespaces = handle.listers.namespaces()
        self.key_by_pool = key_by_pool
        self.calls = 0

    def pool(self, ctx: FilterContext) -> str:
        if "pool" not in ctx.state:
            ns = self.namespaces.get(ctx.binding.namespace)
            ctx.state.write("pool", ns.labels.get(POOL, "") if ns is not None else "")
        return str(ctx.state.read("pool"))

    def binding_key(self, ctx: FilterContext) -> object:
        return self.pool(ctx) if self.key_by_pool else ctx.binding.namespace

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        self.calls += 1
        pool = self.pool(ctx)
        return Status.success() if cluster.labels.get(POOL) == pool else Status.unschedulable(f"not {pool}")


def pool_scheduler(namespaces: dict[str, NamespaceInfo], **options: bool) -> tuple[Scheduler, PoolFilter]:
    registry = in_tree_registry()
    made: list[PoolFilter] = []

    def factory(args: object, handle: Handle) -> PoolFilter:
        made.append(PoolFilter(handle, **options))
        return made[-1]

    registry.register("PoolFilter", factory)
    base = Profile()
    plugins = dict(base.plugins)
    plugins[ExtensionPoint.FILTER] = (*plugins.get(ExtensionPoint.FILTER, ()), PluginEntry("PoolFilter"))
    listers = Listers(namespaces=SourceLister(namespaces.get, namespaces.values))
    profile = dataclasses.replace(base, plugins=plugins)
    scheduler = Scheduler(profile=profile, registry=registry, listers=listers)
    return scheduler, made[0]


def schedule(scheduler: Scheduler, snapshot: Snapshot) -> list[str]:
    builder = a_binding("web").replicas(2).aggregated()
    binding = dataclasses.replace(builder.build(), namespace="ml")
    return [t.name for t in scheduler.schedule(binding, builder.status(), snapshot).clusters or ()]


def fleet() -> Snapshot:
    return Snapshot([a_cluster(n).labeled(**{POOL: n}).free(10).build() for n in ("gpu", "cpu")])


def test_a_plugin_keyed_by_what_it_read_sees_a_namespace_change_with_the_same_snapshot() -> None:
    namespaces = {"ml": NamespaceInfo("ml", {POOL: "gpu"})}
    scheduler, plugin = pool_scheduler(namespaces)
    assert scheduler.framework.listers.asked == {"namespaces"}
    snapshot = fleet()
    assert schedule(scheduler, snapshot) == ["gpu"]
    calls = plugin.calls
    assert schedule(scheduler, snapshot) == ["gpu"]  # nothing changed: reused, not asked again
    assert plugin.calls == calls
    namespaces["ml"] = NamespaceInfo("ml", {POOL: "cpu"})
    assert schedule(scheduler, snapshot) == ["cpu"]


def test_a_plugin_keyed_without_what_it_read_would_be_answered_from_the_memo() -> None:
    """Why the contract asks for the read values in the key: keyed by the namespace's name only,
    the same snapshot and key reuse the old verdicts after the namespace changed."""
    namespaces = {"ml": NamespaceInfo("ml", {POOL: "gpu"})}
    scheduler, _ = pool_scheduler(namespaces, key_by_pool=False)
    snapshot = fleet()
    assert schedule(scheduler, snapshot) == ["gpu"]
    namespaces["ml"] = NamespaceInfo("ml", {POOL: "cpu"})
    assert schedule(scheduler, snapshot) == ["gpu"]


def test_the_handle_gives_the_frameworks_listers_and_metrics_registry() -> None:
    scheduler, plugin = pool_scheduler({})
    assert plugin.handle.listers is scheduler.framework.listers
    assert plugin.handle.metrics_registry is scheduler.framework.plugin_metrics
    assert isinstance(plugin.handle, Handle)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_simulate_gives_the_plugin_the_input_namespaces(
    jobs: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """ExampleNamespacePool (the example package) in ``simulate``: the Namespace documents of the
    input are its lister (in forked workers too), and a binding's own label wins."""
    plugins = ROOT / "examples" / "plugins"
    config, fleet_file = str(plugins / "pool-config.yaml"), str(plugins / "pool-fleet.yaml")
    argv = ["simulate", "--jobs", jobs, "--config", config, fleet_file]
    assert main(argv) == 0
    out = capsys.readouterr().out
    placed = {line.split()[2]: line.split()[-1] for line in out.splitlines()[1:] if line.strip()}
    assert placed == {
        "train-deployment": "gpu-1:2",  # the namespace's pool
        "serve-deployment": "cpu-1:2",  # its own label
        "web-deployment": "cpu-1:2",  # no pool: the most available cluster
    }
