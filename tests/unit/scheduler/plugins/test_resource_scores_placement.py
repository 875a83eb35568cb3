"""The resource scores change placements where Karmada's selection reads scores, and only when enabled.

Spread-constrained selection takes the best-scored clusters; Aggregated division orders by available
replicas and then by score; the default profile (no resource score) keeps Karmada's results. The
shipped example (``examples/gpu-fleet.yaml`` with ``examples/binpack-config.yaml``) and the section
of docs/configuration.md that shows it are checked here too, through the framework API: the profile
is built the way the configuration loader resolves the file's profile (the defaults, then the
enabled score plugin after them, with its ``pluginConfig`` args).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.plugins import cluster_resources_balanced_allocation, cluster_resources_fit
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo

from ..builders import BindingBuilder, a_binding, a_cluster
from .resource_builders import GPU

ROOT = Path(__file__).resolve().parents[4]
RESOURCE_SCORES = {cluster_resources_fit.NAME, cluster_resources_balanced_allocation.NAME}


def binpack_profile(weight: int = 2) -> Profile:
    base = defaults.default_profile()
    plugins = dict(base.plugins)
    plugins[ExtensionPoint.SCORE] = (
        *plugins[ExtensionPoint.SCORE],
        PluginEntry(cluster_resources_fit.NAME, weight),
    )
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": GPU, "weight": 1}]}}
    return dataclasses.replace(base, plugins=plugins, plugin_args={cluster_resources_fit.NAME: args})


def gpu_cluster(name: str, gpus: int, used: int) -> ClusterInfo:
    return (
        a_cluster(name)
        .allocatable(cpu="256", memory="2Ti", **{GPU: str(gpus)})
        .free(1000)
        .allocated(**{GPU: str(used)})
        .build()
    )


FLEET = [
    gpu_cluster("empty", 32, 4),  # 28 free
    gpu_cluster("half", 16, 8),  # 8 free
    gpu_cluster("nearly-full", 16, 14),  # 2 free
    gpu_cluster("full", 8, 8),  # 0 free
]


def schedule(scheduler: Scheduler, b: BindingBuilder, clusters: list[ClusterInfo]) -> ScheduleResult:
    return scheduler.schedule(b.build(), b.status(), Snapshot(clusters))


def placed(result: ScheduleResult) -> dict[str, int]:
    assert result.clusters is not None, result.condition
    return {t.name: t.replicas for t in result.clusters}


def trainer(replicas: int) -> BindingBuilder:
    return (
        a_binding("trainer")
        .replicas(replicas)
        .requests(cpu="8", **{GPU: "1"})
        .aggregated()
        .spread("cluster", 1, 1)
    )


def test_the_default_profile_enables_no_resource_score() -> None:
    for flag in ("*", "*,-ClusterLocality"):
        profile = defaults.default_profile(flag)
        for point in ExtensionPoint:
            assert not RESOURCE_SCORES & {e.name for e in profile.enabled(point)}
    assert set(defaults.in_tree_registry()) >= RESOURCE_SCORES


def test_binpack_picks_the_fuller_gpu_cluster_under_a_spread_constraint() -> None:
    default = schedule(Scheduler(), trainer(2), FLEET)
    # Karmada: every score is 0, so the most available replicas win.
    assert placed(default) == {"empty": 2}
    assert placed(schedule(Scheduler(profile=defaults.default_profile()), trainer(2), FLEET)) == {"empty": 2}
    binpack = schedule(Scheduler(profile=binpack_profile()), trainer(2), FLEET)
    assert placed(binpack) == {"nearly-full": 2}
    # Three replicas do not fit the fullest cluster: the selection swaps in the next by availability.
    assert placed(schedule(Scheduler(profile=binpack_profile()), trainer(3), FLEET)) == {"empty": 3}


def test_binpack_breaks_aggregated_ties_towards_the_fuller_cluster() -> None:
    tie = [gpu_cluster("l4-a", 4, 0), gpu_cluster("l4-b", 8, 4)]  # 4 GPUs free on each
    job = a_binding("inference").replicas(4).requests(cpu="2", **{GPU: "1"}).aggregated()
    assert placed(schedule(Scheduler(), job, tie)) == {"l4-a": 4}  # by name
    assert placed(schedule(Scheduler(profile=binpack_profile()), job, tie)) == {"l4-b": 4}


def test_the_profile_weight_multiplies_the_normalised_score() -> None:
    scheduler = Scheduler(profile=binpack_profile(weight=3))
    result = schedule(scheduler, trainer(2), FLEET)
    numbers = {n.cluster: n for n in result.attempts[0].numbers}
    # raw (14+1)*100//16 = 93 is the top: normalised 100, x3; "full" cannot take one: raw 0 -> 0.
    assert numbers["nearly-full"].score == 300
    assert numbers["full"].score == 0
    parts = {p.plugin: p for p in numbers["nearly-full"].parts}
    assert (parts[cluster_resources_fit.NAME].raw, parts[cluster_resources_fit.NAME].weight) == (93, 3)


def test_a_cpu_only_workload_is_not_moved_by_a_gpu_binpack() -> None:
    web = a_binding("web").replicas(3).requests(cpu="500m").aggregated().spread("cluster", 1, 1)
    assert placed(schedule(Scheduler(profile=binpack_profile()), web, FLEET)) == placed(
        schedule(Scheduler(), web, FLEET)
    )


# ---- the shipped example and docs/configuration.md ------------------------------------------


def readme_blocks(after: str) -> list[str]:
    """What the console blocks of the section ``after`` of docs/configuration.md show the program
    printing (each block's lines after its ``$ `` command)."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text[text.index(after) :]
    section = section.split("\n## ", 1)[0]
    return re.findall(r"^```console\n\$ [^\n]*\n(.*?)^```$", section, re.S | re.M)


def test_the_readme_shows_what_the_example_gives_with_and_without_the_config() -> None:
    without, with_config = readme_blocks("## Resource-aware scores (binpack)")[:2]
    cli = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "examples/gpu-fleet.yaml"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert without == cli
    binpack = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", "--config", "examples/binpack-config.yaml",
         "examples/gpu-fleet.yaml"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    assert with_config.rstrip("\n") == binpack.rstrip("\n")
    assert without != with_config
    rows: dict[str, Any] = {line.split()[2]: line.split()[-1] for line in binpack.splitlines()[1:]}
    assert rows == {
        "trainer-deployment": "gpu-a100-east:2",
        "inference-deployment": "gpu-l4-b:4",
        "api-deployment": "gpu-h100-central:3",
    }


# ---- declared inputs: reuse across bindings, invalidation by a resource heartbeat ------------------


class CountingFit(cluster_resources_fit.ClusterResourcesFit):
    """The in-tree plugin, recording which clusters the runtime asks it to score."""

    def __init__(self, strategy: cluster_resources_fit.ScoringStrategy) -> None:
        super().__init__(strategy)
        self.asked: list[str] = []

    def score_clusters(self, ctx: Any, clusters: Sequence[ClusterInfo]) -> Sequence[int]:
        self.asked.extend(c.name for c in clusters)
        return super().score_clusters(ctx, clusters)


def test_scores_are_reused_across_replica_counts_and_a_heartbeat_rescores_only_its_cluster() -> None:
    registry = defaults.in_tree_registry()
    registry.unregister(cluster_resources_fit.NAME)
    counting: list[CountingFit] = []

    def new(args: Any, handle: Any) -> CountingFit:
        counting.append(CountingFit(args.strategy()))
        return counting[0]

    registry.register(
        cluster_resources_fit.NAME, new, args_model=cluster_resources_fit.ClusterResourcesFitArgs
    )
    scheduler = Scheduler(profile=binpack_profile(), registry=registry)
    (plugin,) = counting
    assert placed(schedule(scheduler, trainer(2), FLEET)) == {"nearly-full": 2}
    assert sorted(plugin.asked) == sorted(c.name for c in FLEET)
    plugin.asked.clear()
    # Another replica count, the same per-replica request: every score is reused.
    assert placed(schedule(scheduler, trainer(1), FLEET)) == {"nearly-full": 1}
    assert plugin.asked == []
    # The nearly full cluster's GPUs are taken meanwhile: only it is scored again, and it now
    # cannot take one replica, so the next fullest wins.
    taken = gpu_cluster("nearly-full", 16, 16)
    fleet = [FLEET[0], FLEET[1], taken, FLEET[3]]
    assert placed(schedule(scheduler, trainer(2), fleet)) == {"half": 2}
    assert plugin.asked == ["nearly-full"]
