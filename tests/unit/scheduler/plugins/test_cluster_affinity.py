from __future__ import annotations

import pytest

from fleetsched.scheduler.framework import Code, FilterContext, FilterPlugin, ScorePlugin
from fleetsched.scheduler.matching import cluster_matches
from fleetsched.scheduler.plugins.cluster_affinity import REASON, ClusterAffinity
from fleetsched.scheduler.types import ClusterAffinity as Affinity
from fleetsched.scheduler.types import LabelSelector

from ..builders import (
    ClusterBuilder,
    a_binding,
    a_cluster,
    expression,
    fields,
    labels,
    names,
    term,
)

_filter: FilterPlugin = ClusterAffinity()
_score: ScorePlugin = ClusterAffinity()


@pytest.mark.parametrize(
    ("affinity", "cluster", "matches"),
    [
        pytest.param(Affinity(), a_cluster("m1"), True, id="empty affinity matches everything"),
        pytest.param(names("m1", "m2"), a_cluster("m2"), True, id="listed name"),
        pytest.param(names("m1"), a_cluster("m2"), False, id="unlisted name"),
        pytest.param(Affinity(exclude=("m1",)), a_cluster("m1"), False, id="excluded"),
        pytest.param(
            Affinity(cluster_names=("m1",), exclude=("m1",)),
            a_cluster("m1"),
            False,
            id="exclude wins over clusterNames",
        ),
        pytest.param(labels(env="prod"), a_cluster("m1").labeled(env="prod"), True, id="matchLabels"),
        pytest.param(
            labels(env="prod"), a_cluster("m1").labeled(env="dev"), False, id="matchLabels mismatch"
        ),
        pytest.param(
            Affinity(label_selector=LabelSelector()),
            a_cluster("m1"),
            True,
            id="empty label selector matches everything",
        ),
        pytest.param(
            Affinity(label_selector=LabelSelector((), (expression("env", "In"),))),
            a_cluster("m1"),
            False,
            id="In without values is invalid and never matches",
        ),
        pytest.param(
            Affinity(label_selector=LabelSelector((), (expression("env", "NotIn", "prod"),))),
            a_cluster("m1"),
            True,
            id="NotIn matches an absent label",
        ),
        pytest.param(
            Affinity(label_selector=LabelSelector((), (expression("gpu", "Exists"),))),
            a_cluster("m1").labeled(gpu="true"),
            True,
            id="Exists",
        ),
        pytest.param(
            Affinity(label_selector=LabelSelector((), (expression("n", "Gt", "1"),))),
            a_cluster("m1").labeled(n="5"),
            False,
            id="Gt is not a label-selector operator",
        ),
        pytest.param(
            labels(env="bad value"),
            a_cluster("m1").labeled(env="bad value"),
            False,
            id="an invalid label value makes the selector invalid",
        ),
        pytest.param(
            fields(expression("region", "In", "eu")), a_cluster("m1").region("eu"), True, id="field region In"
        ),
        pytest.param(
            fields(expression("region", "NotIn", "eu")),
            a_cluster("m1"),
            True,
            id="field NotIn is true when the property is absent",
        ),
        pytest.param(
            fields(expression("provider", "In", "aws")),
            a_cluster("m1"),
            False,
            id="field In needs the property",
        ),
        pytest.param(
            fields(expression("zone", "In", "z1")),
            a_cluster("m1").zones("z0", "z1"),
            True,
            id="zone In: any zone listed",
        ),
        pytest.param(
            fields(expression("zone", "NotIn", "z1")),
            a_cluster("m1").zones("z0", "z1"),
            False,
            id="zone NotIn: no zone may be listed",
        ),
        pytest.param(
            fields(expression("zone", "NotIn", "z1")),
            a_cluster("m1"),
            True,
            id="zone NotIn: true without zones",
        ),
        pytest.param(
            fields(expression("zone", "In", "z1")), a_cluster("m1"), False, id="zone In: false without zones"
        ),
        pytest.param(
            fields(expression("zone", "Gt", "1")),
            a_cluster("m1").zones("2"),
            False,
            id="zone with another operator is false",
        ),
        pytest.param(
            fields(expression("region", "In")),
            a_cluster("m1").region("eu"),
            False,
            id="field In without values is invalid",
        ),
        pytest.param(
            fields(expression("regoin", "In", "eu")),
            a_cluster("m1").region("eu"),
            False,
            id="a misspelt key reads as absent",
        ),
    ],
)
def test_cluster_matches(affinity: Affinity, cluster: ClusterBuilder, matches: bool) -> None:
    assert cluster_matches(cluster.build(), affinity) is matches


def _check(binding_builder, cluster: ClusterBuilder, observed: str = "") -> Code:  # type: ignore[no-untyped-def]
    b = binding_builder.build()
    return _filter.filter(FilterContext(b, observed, b.target_names(), b.is_workload()), cluster.build()).code


def test_placement_affinity_rejects_with_karmadas_reason() -> None:
    b = a_binding().affinity(names("m1")).build()
    r = _filter.filter(FilterContext(b, "", frozenset(), True), a_cluster("m2").build())
    assert r.reasons == (REASON,)


def test_targets_do_not_bypass_affinity() -> None:
    assert _check(a_binding().affinity(names("m1")).targets(m2=1), a_cluster("m2")) is Code.UNSCHEDULABLE


def test_observed_term_and_its_overflow_tiers_apply_to_workloads() -> None:
    binding = (
        a_binding().replicas(2).groups(term("a", names("m1"), ("cloud", names("m2"))), term("b", names("m3")))
    )
    assert _check(binding, a_cluster("m2"), observed="a") is Code.SUCCESS
    assert _check(binding, a_cluster("m3"), observed="a") is Code.UNSCHEDULABLE
    assert _check(binding, a_cluster("m3"), observed="b") is Code.SUCCESS
    # No term with the observed name: no affinity, everything passes.
    assert _check(binding, a_cluster("m9"), observed="zzz") is Code.SUCCESS


def test_non_workloads_ignore_overflow_tiers() -> None:
    binding = a_binding().configmap().groups(term("a", names("m1"), ("cloud", names("m2"))))
    assert _check(binding, a_cluster("m2"), observed="a") is Code.UNSCHEDULABLE


def test_score_is_always_zero() -> None:
    b = a_binding().targets(m1=1).build()
    assert _score.score(FilterContext(b, "", b.target_names(), True), a_cluster("m1").build()) == 0
