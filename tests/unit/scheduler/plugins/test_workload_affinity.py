"""WorkloadAffinity / WorkloadAntiAffinity (alpha, gate WorkloadAffinity; scheduler.md §5.7)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fleetsched.scheduler.framework import Code, FilterContext, FilterPlugin, in_tree_registry
from fleetsched.scheduler.pipeline import Scheduler, Settings
from fleetsched.scheduler.plugins.workload_affinity import REASON as AFFINITY_REASON
from fleetsched.scheduler.plugins.workload_affinity import WorkloadAffinity
from fleetsched.scheduler.plugins.workload_anti_affinity import REASON as ANTI_REASON
from fleetsched.scheduler.plugins.workload_anti_affinity import WorkloadAntiAffinity
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import PeerBinding

from ..builders import a_binding, a_cluster

_affinity: FilterPlugin = WorkloadAffinity()
_anti: FilterPlugin = WorkloadAntiAffinity()


def _ctx(peers: tuple[PeerBinding, ...], *, group: str = "", anti: str = "", **targets: int) -> FilterContext:
    b = replace(a_binding("web").targets(**targets).build(), affinity_group=group, anti_affinity_group=anti)
    return FilterContext(b, "", b.target_names(), True, peers)


PEER = PeerBinding("default", "db-deployment", "app=shop", "app=shop", frozenset({"m1"}))


@pytest.mark.parametrize(
    ("ctx", "cluster", "code"),
    [
        pytest.param(_ctx((PEER,), group="app=shop"), "m1", Code.SUCCESS, id="peer targets the cluster"),
        pytest.param(_ctx((PEER,), group="app=shop"), "m2", Code.UNSCHEDULABLE, id="peer does not target it"),
        pytest.param(_ctx((PEER,), group="app=other"), "m2", Code.SUCCESS, id="another group"),
        pytest.param(_ctx((PEER,)), "m2", Code.SUCCESS, id="no group"),
        pytest.param(
            _ctx((replace(PEER, targets=frozenset()),), group="app=shop"),
            "m2",
            Code.SUCCESS,
            id="peer not placed yet",
        ),
        pytest.param(
            _ctx((replace(PEER, namespace="other"),), group="app=shop"),
            "m2",
            Code.SUCCESS,
            id="peer in another namespace",
        ),
        pytest.param(
            _ctx((replace(PEER, name="web-deployment"),), group="app=shop"),
            "m2",
            Code.SUCCESS,
            id="itself is not a peer",
        ),
        pytest.param(_ctx((PEER,), group="app=shop", m2=1), "m2", Code.SUCCESS, id="current target"),
    ],
)
def test_workload_affinity(ctx: FilterContext, cluster: str, code: Code) -> None:
    result = _affinity.filter(ctx, a_cluster(cluster).build())
    assert result.code is code
    if code is Code.UNSCHEDULABLE:
        assert result.reasons == (AFFINITY_REASON,)


@pytest.mark.parametrize(
    ("ctx", "cluster", "code"),
    [
        pytest.param(_ctx((PEER,), anti="app=shop"), "m1", Code.UNSCHEDULABLE, id="peer already there"),
        pytest.param(_ctx((PEER,), anti="app=shop"), "m2", Code.SUCCESS, id="peer elsewhere"),
        pytest.param(_ctx((PEER,), anti="app=shop", m1=1), "m1", Code.SUCCESS, id="current target"),
        pytest.param(_ctx((PEER,)), "m1", Code.SUCCESS, id="no group"),
    ],
)
def test_workload_anti_affinity(ctx: FilterContext, cluster: str, code: Code) -> None:
    result = _anti.filter(ctx, a_cluster(cluster).build())
    assert result.code is code
    if code is Code.UNSCHEDULABLE:
        assert result.reasons == (ANTI_REASON,)


def test_gate_registers_the_plugins_and_they_filter() -> None:
    assert "WorkloadAffinity" not in in_tree_registry()
    assert {"WorkloadAffinity", "WorkloadAntiAffinity"} <= set(in_tree_registry(workload_affinity=True))
    binding = replace(a_binding("web").replicas(2).dynamic().build(), anti_affinity_group="app=shop")
    snapshot = Snapshot([a_cluster("m1").build(), a_cluster("m2").build()], peers=[PEER])
    gated = Scheduler(settings=Settings(workload_affinity=True)).schedule(
        binding, a_binding().status(), snapshot
    )
    assert {t.name for t in gated.clusters or ()} == {"m2"}
    default = Scheduler().schedule(binding, a_binding().status(), snapshot)
    assert {t.name for t in default.clusters or ()} == {"m1", "m2"}


def test_group_peers_is_the_one_peer_lookup_both_plugins_use() -> None:
    peers = (
        PEER,
        replace(PEER, name="cache-deployment", affinity_group="app=other"),
        replace(PEER, namespace="other"),
        replace(PEER, name="web-deployment"),
    )
    ctx = _ctx(peers, group="app=shop", anti="app=shop")
    assert list(ctx.group_peers(lambda p: p.affinity_group, "app=shop")) == [PEER]
    assert list(ctx.group_peers(lambda p: p.anti_affinity_group, "app=shop")) == [PEER, peers[1]]
