"""The example plugin in docs/plugin-api.md runs as the page says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot

from ..builders import a_binding, a_cluster

DOC = Path(__file__).resolve().parents[4] / "docs" / "plugin-api.md"


def test_the_tenant_filter_example_filters_and_declares_its_inputs() -> None:
    block = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert block is not None
    namespace: dict[str, Any] = {}
    exec(block[1], namespace)
    registry = defaults.in_tree_registry()
    registry.register("TenantFilter", namespace["new"])
    plugins = dict(defaults.default_profile().plugins)
    plugins[ExtensionPoint.FILTER] += (PluginEntry("TenantFilter"),)
    scheduler = Scheduler(profile=Profile(plugins=plugins), registry=registry)
    binding = a_binding().replicas(1).duplicated()
    fleet = [a_cluster("m1").labeled(tenant="other").build(), a_cluster("m2").build()]
    result = scheduler.schedule(binding.build(), binding.status(), Snapshot(fleet))
    assert [t.name for t in result.clusters or ()] == ["m2"]
    rejected = {v.cluster: (v.plugin, v.reasons) for v in result.attempts[0].verdicts if not v.feasible}
    assert rejected == {"m1": ("TenantFilter", ("cluster(s) belong to another tenant",))}
    assert scheduler.framework.filters[-1].inputs is not None  # declared: reused across bindings


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_namespace_pool_example_keys_by_what_it_read_through_the_lister() -> None:
    import dataclasses

    from fleetsched.plugin import NamespaceInfo
    from fleetsched.scheduler.framework.listers import Listers, SourceLister

    namespace: dict[str, Any] = {}
    exec(_blocks()[0], namespace)  # the page's imports
    exec(_blocks()[1], namespace)
    registry = defaults.in_tree_registry()
    registry.register("NamespacePool", namespace["NamespacePool"])
    plugins = dict(defaults.default_profile().plugins)
    plugins[ExtensionPoint.FILTER] += (PluginEntry("NamespacePool"),)
    namespaces = {"ml": NamespaceInfo("ml", {"pool": "gpu"})}
    listers = Listers(namespaces=SourceLister(namespaces.get, namespaces.values))
    scheduler = Scheduler(profile=Profile(plugins=plugins), registry=registry, listers=listers)
    builder = a_binding().replicas(1).duplicated()
    binding = dataclasses.replace(builder.build(), namespace="ml")
    snapshot = Snapshot([a_cluster(n).labeled(pool=n).build() for n in ("gpu", "cpu")])

    def placed() -> list[str]:
        return [t.name for t in scheduler.schedule(binding, builder.status(), snapshot).clusters or ()]

    assert placed() == ["gpu"]
    namespaces["ml"] = NamespaceInfo("ml", {"pool": "cpu"})
    assert placed() == ["cpu"]  # the same snapshot: the key carried the label


def test_the_metrics_example_registers_its_counter_through_the_handle() -> None:
    namespace: dict[str, Any] = {}
    exec(_blocks()[0], namespace)
    exec(_blocks()[2], namespace)
    registry = defaults.in_tree_registry()
    made: list[Any] = []

    def factory(args: object, handle: Any) -> Any:
        made.append(namespace["ExampleNamespacePool"](args, handle))
        made[-1].name = "ExampleNamespacePool"
        made[-1].filter = lambda ctx, cluster: None
        return made[-1]

    registry.register("ExampleNamespacePool", factory)
    plugins = dict(defaults.default_profile().plugins)
    plugins[ExtensionPoint.FILTER] += (PluginEntry("ExampleNamespacePool"),)
    scheduler = Scheduler(profile=Profile(plugins=plugins), registry=registry)
    assert scheduler.framework.plugin_metrics.collectors() == (namespace["LOOKUPS"],)
