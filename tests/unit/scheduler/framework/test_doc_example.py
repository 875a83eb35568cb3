"""The example plugin in docs/plugin-api.md runs as the page says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.pipeline import Scheduler, Snapshot

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
