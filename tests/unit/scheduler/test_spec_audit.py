"""Table tests derived statement by statement from scheduler.md and estimator.md §5.

Inputs are JSON-shaped objects, as ``fleetsched simulate`` hands them to the core (through
``convert``), so the tests also pin how absent, ``null`` and empty fields are read. Each case names
the spec section it comes from; the expected values were worked out from the spec text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.scheduler.convert import binding_from_dict, cluster_from_dict, status_from_dict
from fleetsched.scheduler.general_estimator import GeneralEstimator
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler, Settings
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import MAX_INT32, ClusterInfo, ReplicaRequirements
from fleetsched.simulate import simulate_objects

NOW = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
APIS = [
    {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
    {"groupVersion": "v1", "resources": [{"name": "configmaps", "kind": "ConfigMap"}]},
]
DYNAMIC = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
}
AGGREGATED = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
DUPLICATED = {"replicaSchedulingType": "Duplicated"}


def cluster(
    name: str,
    pods: int | None = 100,
    *,
    labels: Mapping[str, str] | None = None,
    region: str = "",
    provider: str = "",
    zones: list[str] | None = None,
    taints: list[dict[str, str]] | None = None,
    deleting: bool = False,
    apis: list[dict[str, Any]] | None = None,
    allocatable: Mapping[str, str] | None = None,
    allocated: Mapping[str, str] | None = None,
    summary: bool = True,
) -> dict[str, Any]:
    """A Cluster object; ``pods`` is the pod headroom (the estimate of a binding without requirements)."""
    md: dict[str, Any] = {"name": name, "labels": dict(labels or {})}
    if deleting:
        md["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec: dict[str, Any] = {}
    if region:
        spec["region"] = region
    if provider:
        spec["provider"] = provider
    if zones is not None:
        spec["zones"] = zones
    if taints:
        spec["taints"] = taints
    status: dict[str, Any] = {"apiEnablements": APIS if apis is None else apis}
    if summary:
        alloc = dict(allocatable or {})
        if pods is not None:
            alloc.setdefault("pods", str(pods))
        status["resourceSummary"] = {"allocatable": alloc, "allocated": dict(allocated or {})}
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": md,
        "spec": spec,
        "status": status,
    }


def binding(
    placement: Mapping[str, Any] | None,
    replicas: int | None = None,
    *,
    requests: Mapping[str, str] | None = None,
    requirements: Mapping[str, Any] | None = None,
    targets: Mapping[str, int] | None = None,
    kind: str = "Deployment",
    uid: str = "",
    observed: str = "",
    trigger: str | None = None,
    last: str | None = None,
    evicting: list[str] | None = None,
    components: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    api = "apps/v1" if kind == "Deployment" else "v1"
    spec: dict[str, Any] = {
        "resource": {"apiVersion": api, "kind": kind, "namespace": "d", "name": "w", "uid": uid}
    }
    if replicas is not None:
        spec["replicas"] = replicas
    if requests is not None:
        spec["replicaRequirements"] = {"resourceRequest": dict(requests)}
    if requirements is not None:
        spec["replicaRequirements"] = dict(requirements)
    if placement is not None:
        spec["placement"] = dict(placement)
    if targets is not None:
        spec["clusters"] = [{"name": n, "replicas": r} if r else {"name": n} for n, r in targets.items()]
    if trigger is not None:
        spec["rescheduleTriggeredAt"] = trigger
    if evicting:
        spec["gracefulEvictionTasks"] = [{"fromCluster": c} for c in evicting]
    if components is not None:
        spec["components"] = components
    status: dict[str, Any] = {}
    if observed:
        status["schedulerObservingAffinityName"] = observed
    if last is not None:
        status["lastScheduledTime"] = last
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "b", "namespace": "d", "generation": 1},
        "spec": spec,
        "status": status,
    }


def run(
    clusters: list[dict[str, Any]], b: dict[str, Any], **settings: Any
) -> tuple[dict[str, Any], ScheduleResult]:
    scheduler = Scheduler(settings=Settings(**settings))
    [(obj, result)] = simulate_objects(clusters, [b], scheduler, now=NOW)
    return obj, result


def targets_of(obj: Mapping[str, Any]) -> dict[str, int]:
    return {t["name"]: t.get("replicas", 0) for t in obj["spec"].get("clusters") or []}


def outcome(obj: Mapping[str, Any], result: ScheduleResult) -> tuple[str, dict[str, int]]:
    assert result.condition is not None
    return result.condition.reason, targets_of(obj)


def message(result: ScheduleResult) -> str:
    assert result.condition is not None
    return result.condition.message


# ---- §2.1, §7.1, §9.1: what counts as a workload, and zero-replica bindings ---------------------------


@pytest.mark.parametrize(
    ("replicas", "requirements", "strategy", "expected"),
    [
        # replicas 0 and no requirements: a non-workload, every selected cluster without a count.
        pytest.param(0, None, DYNAMIC, {"m1": 0, "m2": 0}, id="0 replicas, no requirements, divided"),
        pytest.param(None, None, DUPLICATED, {"m1": 0, "m2": 0}, id="replicas absent, duplicated"),
        # replicaRequirements {} is non-nil: a workload, assigned 0 everywhere, every target dropped.
        pytest.param(0, {}, DYNAMIC, {}, id="0 replicas, empty requirements, divided"),
        pytest.param(0, {}, DUPLICATED, {}, id="0 replicas, empty requirements, duplicated"),
        pytest.param(0, {}, AGGREGATED, {}, id="0 replicas, empty requirements, aggregated"),
    ],
)
def test_zero_replica_bindings(
    replicas: int | None,
    requirements: dict[str, Any] | None,
    strategy: dict[str, Any],
    expected: dict[str, int],
) -> None:
    b = binding({"replicaScheduling": strategy}, replicas, requirements=requirements)
    obj, result = run([cluster("m1"), cluster("m2")], b)
    assert outcome(obj, result) == ("Success", expected)


def test_two_components_are_never_divided() -> None:
    # §9.1: len(components) > 1 takes the non-workload branch even with replicas (gate off).
    components = [{"name": "jm", "replicas": 1}, {"name": "tm", "replicas": 2}]
    b = binding({"replicaScheduling": DYNAMIC}, 5, components=components)
    obj, result = run([cluster("m1"), cluster("m2")], b)
    assert outcome(obj, result) == ("Success", {"m1": 0, "m2": 0})


def test_zero_replica_workload_keeps_max_int32_as_its_estimate() -> None:
    # §7.1: the early return keeps 2147483647 (not spec.replicas) when replicas == 0.
    b = binding({"replicaScheduling": DYNAMIC}, 0, requests={"cpu": "1"})
    _, result = run([cluster("m1", 3, allocatable={"cpu": "1"})], b)
    [numbers] = result.attempts[0].numbers
    assert (numbers.allocatable, numbers.available) == (MAX_INT32, MAX_INT32)


def test_an_estimate_of_exactly_max_int32_becomes_the_replica_count() -> None:
    # §7.1: any cluster still at 2147483647 after the estimators becomes spec.replicas.
    b = binding({"replicaScheduling": DYNAMIC}, 4)
    _, result = run([cluster("big", MAX_INT32), cluster("small", 9)], b)
    assert {n.cluster: n.allocatable for n in result.attempts[0].numbers} == {"big": 4, "small": 9}


# ---- §3.4 item 3, §3.7a, §9.6: Steady versus Fresh ------------------------------------------------------

FRESH_CASE = {"replicaScheduling": DYNAMIC}


@pytest.mark.parametrize(
    ("trigger", "last", "mode"),
    [
        pytest.param("2026-03-01T00:00:01Z", "2026-03-01T00:00:00Z", "Fresh", id="one second later"),
        pytest.param("2026-03-01T00:00:00Z", "2026-03-01T00:00:00Z", "Steady", id="same second"),
        pytest.param("2026-02-28T23:59:59Z", "2026-03-01T00:00:00Z", "Steady", id="earlier"),
        pytest.param("2026-03-01T00:00:00Z", None, "Steady", id="never scheduled"),
        pytest.param(None, "2026-03-01T00:00:00Z", "Steady", id="no trigger"),
        # Both times are kept with one-second precision: a trigger within the same second is ignored.
        pytest.param(
            "2026-03-01T00:00:00.900Z", "2026-03-01T00:00:00Z", "Steady", id="later within the second"
        ),
        pytest.param("2026-03-01T00:00:01.100Z", "2026-03-01T00:00:00.900Z", "Fresh", id="next second"),
    ],
)
def test_fresh_mode_needs_a_trigger_in_a_later_second(
    trigger: str | None, last: str | None, mode: str
) -> None:
    # Example 5 shape: holding A:8, B:4; free A:0, B:0, C:12.
    b = binding(FRESH_CASE, 12, targets={"a": 8, "b": 4}, trigger=trigger, last=last)
    obj, result = run([cluster("a", 0), cluster("b", 0), cluster("c", 12)], b)
    assert result.mode == mode
    expected = {"a": 4, "b": 2, "c": 6} if mode == "Fresh" else {"a": 8, "b": 4}
    assert outcome(obj, result) == ("Success", expected)


def test_times_are_read_with_one_second_precision() -> None:
    b = binding(FRESH_CASE, 1, trigger="2026-03-01T00:00:00.75Z", last="2026-03-01T00:00:05.5+00:00")
    assert binding_from_dict(b).reschedule_triggered_at == dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    assert status_from_dict(b).last_scheduled_time == dt.datetime(2026, 3, 1, 0, 0, 5, tzinfo=dt.UTC)
    # As the YAML loader hands them over: datetime values, naive ones meaning UTC.
    b["spec"]["rescheduleTriggeredAt"] = dt.datetime(2026, 3, 1, 0, 0, 7, 999_999)
    assert binding_from_dict(b).reschedule_triggered_at == dt.datetime(2026, 3, 1, 0, 0, 7, tzinfo=dt.UTC)


def test_fresh_capacity_of_a_zero_replica_workload_overflows_int32() -> None:
    # §13: capacities are MAX_INT32 each; their int32 sum wraps to -2 -> a spurious Unschedulable.
    b = binding(
        FRESH_CASE, 0, requests={"cpu": "1"}, trigger="2026-03-02T00:00:00Z", last="2026-03-01T00:00:00Z"
    )
    obj, result = run([cluster("m1"), cluster("m2")], b)
    assert outcome(obj, result) == ("Unschedulable", {})
    assert message(result) == (
        "failed to assign replicas: failed to do fresh scale: "
        "Clusters available replicas -2 are not enough to schedule."
    )
    # One cluster: 2147483647 does not wrap, nothing to place, success.
    obj, result = run([cluster("m1")], b)
    assert outcome(obj, result) == ("Success", {})


def test_fresh_capacity_wraps_per_cluster_like_int32() -> None:
    # §9.6: capacity = AllocatableReplicas + held, an int32 sum per cluster: free 2147483646 while
    # holding 2 wraps to -2147483648. Two such clusters bring the int32 total back to 0 + 3 + 3, and
    # sorted by capacity they come last, so Aggregated fills c1 and c2 instead of h1.
    b = binding(
        {"replicaScheduling": AGGREGATED},
        5,
        targets={"h1": 2, "h2": 2},
        trigger="2026-03-02T00:00:00Z",
        last="2026-03-01T00:00:00Z",
    )
    clusters = [
        cluster("h1", MAX_INT32 - 1),
        cluster("h2", MAX_INT32 - 1),
        cluster("c1", 3),
        cluster("c2", 3),
    ]
    obj, result = run(clusters, b)
    assert outcome(obj, result) == ("Success", {"c1": 3, "c2": 2})


# ---- §3.5-§3.7: affinity groups ---------------------------------------------------------------------


def terms(*specs: tuple[str, list[str]]) -> list[dict[str, Any]]:
    return [{"affinityName": name, "clusterNames": names} for name, names in specs]


def test_empty_cluster_affinities_list_reports_success_and_writes_nothing() -> None:
    b = binding(
        {"clusterAffinities": [], "replicaScheduling": DYNAMIC}, 3, targets={"m1": 3}, observed="gone"
    )
    obj, result = run([cluster("m1"), cluster("m2")], b)
    assert outcome(obj, result) == ("Success", {"m1": 3})
    assert obj["status"]["schedulerObservingAffinityName"] == "gone"
    assert "policy.karmada.io/applied-placement" not in (obj["metadata"].get("annotations") or {})


@pytest.mark.parametrize(
    ("first", "second", "reason", "cleared"),
    [
        # First tried term: not enough capacity; the next: nothing fits. Unschedulable, targets kept.
        pytest.param(["small"], ["nowhere"], "Unschedulable", False, id="unschedulable first"),
        # First tried term: nothing fits (FitError); the next: not enough capacity. Targets cleared.
        pytest.param(["nowhere"], ["small"], "NoClusterFit", True, id="fit error first"),
        pytest.param(["tainted"], ["small"], "NoClusterFit", True, id="taint fit error first"),
    ],
)
def test_total_failure_reports_the_first_error_and_keeps_the_observed_name(
    first: list[str], second: list[str], reason: str, cleared: bool
) -> None:
    placement = {
        "clusterAffinities": terms(("old", ["big"]), ("t1", first), ("t2", second)),
        "replicaScheduling": DYNAMIC,
    }
    b = binding(placement, 10, targets={"big": 4}, observed="t1")
    clusters = [
        cluster("big", 100),
        cluster("small", 1),
        cluster("tainted", 100, taints=[{"key": "k", "effect": "NoSchedule"}]),
    ]
    obj, result = run(clusters, b)
    # "old" (before the observed term) is never retried, although it would fit.
    assert outcome(obj, result) == (reason, {} if cleared else {"big": 4})
    assert obj["status"]["schedulerObservingAffinityName"] == "t1"
    assert [a.affinity_name for a in result.attempts] == ["t1", "t2"]


def test_a_stale_observed_name_starts_at_the_first_term() -> None:
    placement = {"clusterAffinities": terms(("t0", ["m1"]), ("t1", ["m2"])), "replicaScheduling": DYNAMIC}
    obj, result = run([cluster("m1"), cluster("m2")], binding(placement, 2, observed="removed-term"))
    assert outcome(obj, result) == ("Success", {"m1": 2})
    assert obj["status"]["schedulerObservingAffinityName"] == "t0"


def test_explicit_reschedule_starts_at_the_first_term_in_fresh_mode() -> None:
    placement = {"clusterAffinities": terms(("t0", ["m1"]), ("t1", ["m2"])), "replicaScheduling": DYNAMIC}
    b = binding(
        placement,
        2,
        targets={"m2": 2},
        observed="t1",
        trigger="2026-03-02T00:00:00Z",
        last="2026-03-01T00:00:00Z",
    )
    obj, result = run([cluster("m1"), cluster("m2")], b)
    assert (outcome(obj, result), result.mode) == (("Success", {"m1": 2}), "Fresh")
    assert obj["status"]["schedulerObservingAffinityName"] == "t0"


def test_single_affinity_fit_error_clears_and_other_errors_keep_targets() -> None:
    # §3.6: a FitError writes an empty result; select/assign errors leave spec.clusters alone.
    fit = binding(
        {"clusterAffinity": {"clusterNames": ["none"]}, "replicaScheduling": DYNAMIC}, 5, targets={"m1": 5}
    )
    obj, result = run([cluster("m1")], fit)
    assert outcome(obj, result) == ("NoClusterFit", {})
    assert "policy.karmada.io/applied-placement" in obj["metadata"]["annotations"]
    short = binding({"replicaScheduling": DYNAMIC}, 500, targets={"m1": 5})
    obj, result = run([cluster("m1")], short)
    assert outcome(obj, result) == ("Unschedulable", {"m1": 5})
    assert "annotations" not in obj["metadata"]
    select = binding(
        {"spreadConstraints": [{"spreadByLabel": "x"}], "replicaScheduling": DYNAMIC}, 5, targets={"m1": 5}
    )
    obj, result = run([cluster("m1")], select)
    assert outcome(obj, result) == ("SchedulerError", {"m1": 5})
    assert message(result) == "failed to select clusters: just support cluster and region spread constraint"


# ---- §4.1, §4.2: the snapshot and the FitError text --------------------------------------------------


def test_deleting_clusters_count_in_the_total_but_not_in_the_reasons() -> None:
    b = binding({"clusterAffinity": {"clusterNames": ["gone"]}, "replicaScheduling": DYNAMIC}, 1)
    obj, result = run([cluster("gone", deleting=True), cluster("m1"), cluster("m2")], b)
    assert outcome(obj, result) == ("NoClusterFit", {})
    assert message(result) == (
        "0/3 clusters are available: 2 cluster(s) did not match the placement cluster affinity constraint."
    )
    obj, result = run([cluster("gone", deleting=True), cluster("m1", deleting=True)], b)
    assert message(result) == "0/2 clusters are available: no cluster exists."


def test_a_deleting_cluster_is_dropped_even_as_a_target() -> None:
    b = binding({"replicaScheduling": DUPLICATED}, 2, targets={"gone": 2})
    obj, result = run([cluster("gone", deleting=True), cluster("m1")], b)
    assert outcome(obj, result) == ("Success", {"m1": 2})


# ---- §5.2-§5.6, §14: which filters current targets bypass ------------------------------------------


TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(
            {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}, "feasible", id="NoExecute taint"
        ),
        pytest.param("no-api", "feasible", id="API not enabled"),
        pytest.param(
            "affinity", "cluster(s) did not match the placement cluster affinity constraint", id="affinity"
        ),
        pytest.param("no-region", "cluster(s) did not have region property", id="spread property"),
        pytest.param("evicted", "cluster(s) is in the process of eviction", id="eviction"),
    ],
)
def test_a_zero_replica_target_bypasses_only_taints_and_api_enablement(target: Any, expected: str) -> None:
    kw: dict[str, Any] = {"region": "r1"}
    if isinstance(target, dict):
        kw["taints"] = [target]
    elif target == "no-api":
        kw["apis"] = []
    elif target == "no-region":
        kw["region"] = ""
    placement: dict[str, Any] = {
        "replicaScheduling": DUPLICATED,
        "spreadConstraints": [{"spreadByField": "region", "minGroups": 1, "maxGroups": 5}],
    }
    if target == "affinity":
        placement["clusterAffinity"] = {"exclude": ["t"]}
    b = binding(placement, 1, targets={"t": 0}, evicting=["t"] if target == "evicted" else None)
    _, result = run([cluster("t", **kw), cluster("other", region="r2")], b)
    [verdict] = [v for v in result.attempts[0].verdicts if v.cluster == "t"]
    assert ("feasible" if verdict.feasible else verdict.reasons[0]) == expected
    # Without being a target, the taint and the missing API reject the cluster.
    _, result = run(
        [cluster("t", **kw), cluster("other", region="r2")], {**b, "spec": {**b["spec"], "clusters": []}}
    )
    [verdict] = [v for v in result.attempts[0].verdicts if v.cluster == "t"]
    assert not verdict.feasible


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        pytest.param({"key": "dedicated", "operator": "Equal", "value": "gpu"}, True, id="equal, any effect"),
        pytest.param(
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, True, id="empty operator is Equal"
        ),
        pytest.param({"key": "dedicated", "operator": "Equal", "value": "cpu"}, False, id="other value"),
        pytest.param(
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}, False, id="other effect"
        ),
        pytest.param({"operator": "Exists"}, True, id="empty key with Exists tolerates everything"),
        pytest.param(
            {"key": "dedicated", "operator": "Gt", "value": "1"}, False, id="comparison operators never match"
        ),
        pytest.param({"key": "dedicated", "operator": "Bogus"}, False, id="unknown operator"),
    ],
)
def test_tolerations(toleration: dict[str, Any], tolerated: bool) -> None:
    b = binding({"clusterTolerations": [toleration], "replicaScheduling": DUPLICATED}, 1)
    obj, result = run([cluster("m1", taints=[TAINT])], b)
    if tolerated:
        assert outcome(obj, result) == ("Success", {"m1": 1})
    else:
        assert message(result) == (
            "0/1 clusters are available: 1 cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}."
        )


def test_prefer_no_schedule_is_ignored_and_the_first_untolerated_taint_is_named() -> None:
    taints = [
        {"key": "soft", "effect": "PreferNoSchedule"},
        {"key": "a", "effect": "NoSchedule"},
        {"key": "b", "value": "v", "effect": "NoExecute"},
    ]
    b = binding(
        {"clusterTolerations": [{"key": "a", "operator": "Exists"}], "replicaScheduling": DUPLICATED}, 1
    )
    _, result = run([cluster("m1", taints=taints)], b)
    assert (
        message(result) == "0/1 clusters are available: 1 cluster(s) had untolerated taint {b=v:NoExecute}."
    )
    b = binding({"replicaScheduling": DUPLICATED}, 1)
    _, result = run([cluster("m1", taints=taints)], b)
    assert message(result) == "0/1 clusters are available: 1 cluster(s) had untolerated taint {a:NoSchedule}."


# ---- §5.3: ClusterMatches through the wire shape -------------------------------------------------------

SHAPES = {
    "z2": cluster("z2", labels={"env": "prod"}, provider="aws", region="r1", zones=["za", "zb"]),
    "z0": cluster("z0", labels={"env": "dev", "n": "5"}, provider="", region="r2"),
    "bare": cluster("bare"),
}


@pytest.mark.parametrize(
    ("affinity", "matching"),
    [
        pytest.param({}, {"z2", "z0", "bare"}, id="empty affinity matches all"),
        pytest.param({"labelSelector": {}}, {"z2", "z0", "bare"}, id="empty label selector matches all"),
        pytest.param({"fieldSelector": {}}, {"z2", "z0", "bare"}, id="empty field selector matches all"),
        pytest.param(
            {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "In"}]}},
            set(),
            id="In without values is invalid",
        ),
        pytest.param(
            {"labelSelector": {"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["x"]}]}},
            set(),
            id="Exists with values is invalid",
        ),
        pytest.param(
            {"labelSelector": {"matchLabels": {"env": "not valid!"}}}, set(), id="invalid label value"
        ),
        pytest.param(
            {"labelSelector": {"matchExpressions": [{"key": "n", "operator": "Gt", "values": ["1"]}]}},
            set(),
            id="Gt is not a label selector operator",
        ),
        pytest.param(
            {
                "labelSelector": {
                    "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]
                }
            },
            {"z0", "bare"},
            id="NotIn matches an absent label",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["zb", "zx"]}]
                }
            },
            {"z2"},
            id="zone In: any zone listed",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["zb"]}]}},
            {"z0", "bare"},
            id="zone NotIn: true without zones",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}},
            {"z2"},
            id="zone Exists",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}},
            {"z0", "bare"},
            id="zone DoesNotExist",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1"]}]}},
            set(),
            id="zone with another operator",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "provider", "operator": "NotIn", "values": ["aws"]}]
                }
            },
            {"z0", "bare"},
            id="provider NotIn: true when empty",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "In", "values": [""]}]}},
            set(),
            id="empty provider is absent",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "regoin", "operator": "In", "values": ["r1"]}]}},
            set(),
            id="a typo key is never present",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In"}]}},
            set(),
            id="field In without values is invalid",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "Gt", "values": ["1"]}]}},
            set(),
            id="Gt accepted, region not an integer",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "Gt", "values": ["x"]}]}},
            set(),
            id="Gt needs an integer",
        ),
        pytest.param(
            {"clusterNames": ["z2", "bare"], "exclude": ["bare"]}, {"z2"}, id="exclude wins over names"
        ),
        pytest.param({"clusterNames": [], "exclude": []}, {"z2", "z0", "bare"}, id="empty lists match all"),
    ],
)
def test_cluster_affinity(affinity: dict[str, Any], matching: set[str]) -> None:
    b = binding({"clusterAffinity": affinity, "replicaScheduling": DUPLICATED}, 1)
    obj, result = run(list(SHAPES.values()), b)
    if matching:
        assert set(targets_of(obj)) == matching
    else:
        assert outcome(obj, result) == ("NoClusterFit", {})


def test_overflow_tiers_widen_the_filter_only_for_workloads() -> None:
    # §5.3: requirements {} make a zero-replica binding a workload, so the overflow tier counts.
    placement = {
        "clusterAffinities": [
            {
                "affinityName": "t",
                "clusterNames": ["none"],
                "overflowAffinities": [{"affinityName": "o", "clusterNames": ["m1"]}],
            }
        ],
        "replicaScheduling": DYNAMIC,
    }
    obj, result = run([cluster("m1")], binding(placement, 0))
    assert outcome(obj, result) == ("NoClusterFit", {})
    obj, result = run([cluster("m1")], binding(placement, 0, requirements={}))
    assert outcome(obj, result) == ("Success", {})
    assert obj["status"]["schedulerObservingAffinityName"] == "t"


# ---- §5.8, §6.2: scores and the global order ----------------------------------------------------------


def test_duplicated_order_follows_score_then_available_then_name() -> None:
    # A 0-replica target still scores 100 and is listed first; then available desc, then name.
    b = binding({"replicaScheduling": DUPLICATED}, 1, targets={"z": 0})
    obj, _ = run([cluster("a", 5), cluster("b", 7), cluster("c", 5), cluster("z", 1)], b)
    assert list(targets_of(obj)) == ["z", "b", "a", "c"]


# ---- §7.2, §7.3, estimator.md §5: the general estimator ---------------------------------------------


def estimate(c: dict[str, Any], requests: dict[str, str] | None, *, modeling: bool = True) -> int:
    info: ClusterInfo = cluster_from_dict(c)
    req = (
        None
        if requests is None
        else binding_from_dict(binding({}, 1, requests=requests)).replica_requirements
    )
    assert req is None or isinstance(req, ReplicaRequirements)
    return GeneralEstimator(resource_modeling=modeling).max_available_replicas([info], req)[0]


@pytest.mark.parametrize(
    ("c", "requests", "expected"),
    [
        pytest.param(cluster("m", 10, summary=False), None, 0, id="no summary"),
        pytest.param(cluster("m", None, allocatable={"cpu": "8"}), None, 0, id="no pods entry"),
        pytest.param(cluster("m", 10, allocated={"pods": "11"}), None, 0, id="pods over-allocated"),
        pytest.param(
            cluster("m", 10, allocated={"pods": "0.5"}), None, 9, id="pod counts are rounded up one by one"
        ),
        pytest.param(cluster("m", 10), {}, 10, id="empty request: pod headroom"),
        # Value() rounds away from zero: an allocated count of -0.5 is -1, which adds a slot.
        pytest.param(cluster("m", 10, allocated={"pods": "-0.5"}), None, 11, id="negative counts round down"),
        pytest.param(
            cluster("m", 100, allocatable={"cpu": "250m"}), {"cpu": "100m"}, 2, id="cpu in millicores"
        ),
        pytest.param(
            cluster("m", 100, allocatable={"cpu": "1"}), {"cpu": "0.0001"}, 100, id="0.1m cpu counts as 1m"
        ),
        pytest.param(
            cluster("m", 100, allocatable={"memory": "2.5"}), {"memory": "0.5"}, 3, id="memory in whole units"
        ),
        pytest.param(
            cluster("m", 100, allocatable={"memory": "1Gi"}), {"memory": "0"}, 100, id="zero request skipped"
        ),
        pytest.param(
            cluster("m", 100, allocatable={"memory": "1Gi"}),
            {"memory": "-1"},
            100,
            id="negative request skipped",
        ),
        pytest.param(
            cluster("m", 100, allocatable={"cpu": "4"}),
            {"cpu": "1", "nvidia.com/gpu": "1"},
            0,
            id="resource not in allocatable",
        ),
        pytest.param(
            cluster("m", 100, allocatable={"cpu": "4"}, allocated={"cpu": "4500m"}),
            {"cpu": "1"},
            0,
            id="over-allocated resource",
        ),
        pytest.param(
            cluster("m", 100, allocatable={"cpu": "1"}, allocated={"cpu": "999m"}),
            {"cpu": "1m"},
            1,
            id="exact remainder",
        ),
        # Kubernetes rounds a parsed quantity up to nano units: 0.9999999999 is 1, nothing is left.
        pytest.param(
            cluster("m", 100, allocatable={"cpu": "1"}, allocated={"cpu": "0.9999999999"}),
            {"cpu": "1m"},
            0,
            id="sub-nano quantities round up",
        ),
        pytest.param(
            cluster("m", 100, allocatable={"memory": "1"}, allocated={"memory": "0.9999999999"}),
            {"memory": "1"},
            0,
            id="sub-nano memory rounds up",
        ),
        # The int32 answer saturates (Karmada's int32() conversion keeps the low 32 bits: -2147483643).
        pytest.param(cluster("m", 2**31 + 5), None, 2**31 - 1, id="pod headroom saturates at int32"),
        # ... as does a quantity beyond int64 (Karmada: Value() wraps to int64, int32() to -1734606848).
        pytest.param(cluster("m", None, allocatable={"pods": "999999999999E"}), None, 2**31 - 1,
                     id="pods beyond int64 saturate"),
        pytest.param(cluster("m", None, allocatable={"pods": "999999999999E", "memory": "999999999999E"}),
                     {"memory": "1"}, 2**31 - 1, id="summary answer beyond int64 saturates"),
    ],
)
def test_general_estimator_summary_path(
    c: dict[str, Any], requests: dict[str, str] | None, expected: int
) -> None:
    assert estimate(c, requests) == expected


@pytest.mark.parametrize("strategy", [pytest.param(DYNAMIC, id="dynamic"),
                                      pytest.param(AGGREGATED, id="aggregated")])
def test_a_cluster_with_pods_beyond_int64_is_a_cluster_with_room(strategy: dict[str, Any]) -> None:
    # Karmada wraps this cluster's headroom to -1734606848 and the binding is Unschedulable.
    huge = cluster("huge", None, allocatable={"pods": "999999999999E"})
    obj, result = run([huge, cluster("m2", 2)], binding({"replicaScheduling": strategy}, 5))
    reason, targets = outcome(obj, result)
    assert reason == "Success", message(result)
    assert sum(targets.values()) == 5 and targets.get("huge", 0) >= 3


DEFAULT_MODELS = [
    {
        "grade": 0,
        "ranges": [{"name": "cpu", "min": "0", "max": "1"}, {"name": "memory", "min": "0", "max": "4Gi"}],
    },
    {
        "grade": 1,
        "ranges": [{"name": "cpu", "min": "1", "max": "2"}, {"name": "memory", "min": "4Gi", "max": "8Gi"}],
    },
    {
        "grade": 2,
        "ranges": [{"name": "cpu", "min": "2", "max": "4"}, {"name": "memory", "min": "8Gi", "max": "16Gi"}],
    },
]


def modeled(
    modelings: list[tuple[int, int]],
    models: list[dict[str, Any]] | None = None,
    pods: int = 10_000,
    **summary: Any,
) -> dict[str, Any]:
    c = cluster("m", pods, allocatable=summary.get("allocatable", {"cpu": "1000", "memory": "1000Gi"}))
    c["spec"]["resourceModels"] = DEFAULT_MODELS if models is None else models
    c["status"]["resourceSummary"]["allocatableModelings"] = [{"grade": g, "count": n} for g, n in modelings]
    return c


@pytest.mark.parametrize(
    ("c", "requests", "modeling", "expected"),
    [
        # grade 1: 1 cpu -> 2 per node (500m), grade 2: 2 cpu -> 4 per node; grade 0 fits none.
        pytest.param(
            modeled([(0, 3), (1, 2), (2, 1)]),
            {"cpu": "500m"},
            True,
            2 * 2 + 4,
            id="min of each range, per grade",
        ),
        pytest.param(
            modeled([(2, 1), (0, 3), (1, 2)], list(reversed(DEFAULT_MODELS))),
            {"cpu": "500m"},
            True,
            8,
            id="order of models and modelings is irrelevant",
        ),
        pytest.param(modeled([(1, 1), (1, 2)]), {"cpu": "500m"}, True, 6, id="counts of one grade add up"),
        pytest.param(
            modeled([(1, 2), (7, 50)]), {"cpu": "500m"}, True, 4, id="grades without a model are ignored"
        ),
        pytest.param(modeled([(2, 1)]), {"cpu": "1m"}, True, 110, id="110 pods per model node"),
        pytest.param(modeled([(2, 1)]), {}, True, 110, id="empty request: pods per node"),
        pytest.param(modeled([(2, 3)], pods=200), {"cpu": "1m"}, True, 200, id="capped by the pod headroom"),
        pytest.param(
            modeled([(2, 3)]), {"cpu": "1", "nvidia.com/gpu": "1"}, True, 0, id="a resource the models lack"
        ),
        pytest.param(
            modeled([(2, 3)]),
            {"cpu": "1", "ephemeral-storage": "1"},
            True,
            0,
            id="ephemeral storage is not modeled",
        ),
        pytest.param(
            modeled([(2, 3)]),
            {"cpu": "1", "example.com-foo": "1"},
            True,
            6,
            id="names that are no resource are ignored",
        ),
        pytest.param(modeled([(2, 3)]), {"cpu": "1", "memory": "3Gi"}, True, 6, id="memory in units"),
        # The summary would allow 1000 (cpu) / 10000 (pods); the models decide instead.
        pytest.param(modeled([(0, 5)]), {"cpu": "1"}, True, 0, id="models win over the summary"),
        pytest.param(modeled([(0, 5)]), {"cpu": "1"}, False, 1000, id="gate off: summary"),
        pytest.param(modeled([(2, 5), (1, -1)]), {"cpu": "1"}, True, 1000, id="negative count: summary"),
        pytest.param(
            modeled([(2, 5)], models=[]), {"cpu": "1"}, True, 1000, id="modelings without models: summary"
        ),
        pytest.param(modeled([]), {"cpu": "1"}, True, 1000, id="no modelings: summary"),
        pytest.param(modeled([(2, 0)]), {"cpu": "1"}, True, 0, id="zero model nodes"),
    ],
)
def test_general_estimator_model_path(
    c: dict[str, Any], requests: dict[str, str], modeling: bool, expected: int
) -> None:
    assert estimate(c, requests, modeling=modeling) == expected


def test_model_path_is_bounded_by_max_int32() -> None:
    # The simulation stops at the upper bound 2147483647 (estimator.md §5.1 step 3), before the pod cap.
    c = modeled([(2, 20_000_000)], pods=2**40)
    assert estimate(c, {"cpu": "1m"}) == MAX_INT32


# ---- §8: selection --------------------------------------------------------------------------------------


def test_weighted_with_an_empty_weight_preference_honours_spread_constraints() -> None:
    # §8.1: a non-nil weightPreference with no static list and no dynamic weight is not ignored.
    spread = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2}]
    weighted = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    clusters = [cluster("a", 10), cluster("b", 20), cluster("c", 30)]
    obj, result = run(
        clusters,
        binding({"spreadConstraints": spread, "replicaScheduling": {**weighted, "weightPreference": {}}}, 6),
    )
    assert outcome(obj, result) == ("Success", {"b": 3, "c": 3})  # evenly over the 2 selected
    obj, result = run(clusters, binding({"spreadConstraints": spread, "replicaScheduling": weighted}, 6))
    assert outcome(obj, result) == ("Success", {"a": 2, "b": 2, "c": 2})  # nil preference: ignored


@pytest.mark.parametrize(
    ("strategy", "reason", "text"),
    [
        pytest.param(
            DUPLICATED,
            "SchedulerError",
            "failed to assign replicas: no clusters available to schedule",
            id="duplicated",
        ),
        pytest.param(
            DYNAMIC,
            "SchedulerError",
            "failed to select clusters: no enough resource when selecting 0 clusters",
            id="divided",
        ),
    ],
)
def test_max_groups_zero_makes_a_cluster_constraint_unsatisfiable(
    strategy: dict[str, Any], reason: str, text: str
) -> None:
    b = binding(
        {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1}], "replicaScheduling": strategy},
        2,
    )
    obj, result = run([cluster("a"), cluster("b")], b)
    assert outcome(obj, result) == (reason, {})
    assert message(result) == text


@pytest.mark.parametrize(
    "constraints",
    [
        pytest.param([{"spreadByLabel": "topology/x", "minGroups": 1, "maxGroups": 2}], id="label only"),
        pytest.param([{"spreadByField": "zone", "minGroups": 1, "maxGroups": 2}], id="zone only"),
        pytest.param([{"spreadByField": "provider", "minGroups": 1, "maxGroups": 2}], id="provider only"),
    ],
)
def test_only_cluster_and_region_constraints_select(constraints: list[dict[str, Any]]) -> None:
    c = [cluster("a", zones=["z"], provider="p")]
    _, result = run(c, binding({"spreadConstraints": constraints, "replicaScheduling": DYNAMIC}, 2))
    assert message(result) == "failed to select clusters: just support cluster and region spread constraint"


def test_the_last_constraint_of_a_field_wins() -> None:
    spread = [
        {"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1},
        {"spreadByField": "cluster", "minGroups": 1, "maxGroups": 3},
    ]
    obj, result = run(
        [cluster("a"), cluster("b"), cluster("c")],
        binding({"spreadConstraints": spread, "replicaScheduling": DUPLICATED}, 1),
    )
    assert outcome(obj, result) == ("Success", {"a": 1, "b": 1, "c": 1})


def test_region_group_score_uses_a_float_ceiling() -> None:
    # §8.4: target = ceil(5 / 2) = 3 -> R1 (free 2) scores 2000, R2 and R3 (free 3) 3000 each, so
    # the pair R2 + R3 wins. A floor (2) would tie all three and pick R1 + R2 by name.
    spread = [
        {"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 1, "maxGroups": 2},
    ]
    clusters = [cluster("a", 2, region="R1"), cluster("b", 3, region="R2"), cluster("c", 3, region="R3")]
    obj, result = run(clusters, binding({"spreadConstraints": spread, "replicaScheduling": DYNAMIC}, 5))
    assert result.attempts[0].selected == ("b", "c")
    assert outcome(obj, result) == ("Success", {"b": 3, "c": 2})


def test_region_selection_ignores_capacity() -> None:
    # §8.5: need is not checked by region; Aggregated then fills one cluster (§14).
    spread = [
        {"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2},
    ]
    clusters = [cluster("a", 100, region="R1"), cluster("b", 1, region="R2")]
    obj, result = run(clusters, binding({"spreadConstraints": spread, "replicaScheduling": AGGREGATED}, 50))
    assert outcome(obj, result) == ("Success", {"a": 50})


def test_too_few_regions_and_too_few_clusters_in_them() -> None:
    spread = [
        {"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 3, "maxGroups": 3},
    ]
    one_region = [cluster("a", region="R1"), cluster("b", region="R1"), cluster("x")]
    _, result = run(one_region, binding({"spreadConstraints": spread, "replicaScheduling": DYNAMIC}, 2))
    assert (
        message(result)
        == "failed to select clusters: the number of feasible region is less than spreadConstraint.MinGroups"
    )
    two_small = [cluster("a", region="R1"), cluster("b", region="R2")]
    _, result = run(two_small, binding({"spreadConstraints": spread, "replicaScheduling": DYNAMIC}, 2))
    assert message(result) == (
        "failed to select clusters: "
        "the number of clusters is less than the cluster spreadConstraint.MinGroups"
    )


# ---- §9: assignment -------------------------------------------------------------------------------------


def test_static_weight_takes_the_largest_matching_rule() -> None:
    rules = [
        {"targetCluster": {"labelSelector": {"matchLabels": {"env": "prod"}}}, "weight": 1},
        {"targetCluster": {"clusterNames": ["a"]}, "weight": 3},
        {"targetCluster": {}, "weight": 2},  # matches everyone
    ]
    strategy = {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": rules},
    }
    clusters = [cluster("a", labels={"env": "prod"}), cluster("b", labels={"env": "prod"}), cluster("c")]
    obj, result = run(clusters, binding({"replicaScheduling": strategy}, 7))
    # Weights 3:2:2 -> seats a, b, c, a, b, c, a.
    assert outcome(obj, result) == ("Success", {"a": 3, "b": 2, "c": 2})


def test_static_weight_ignores_capacity_and_the_previous_result() -> None:
    strategy = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}
    b = binding({"replicaScheduling": strategy}, 4, targets={"a": 4})
    obj, result = run([cluster("a", 0), cluster("b", 0)], b)
    assert outcome(obj, result) == ("Success", {"a": 2, "b": 2})


def test_empty_workload_propagation_appends_unused_clusters_in_selected_order() -> None:
    b = binding({"replicaScheduling": AGGREGATED}, 5)
    obj, result = run(
        [cluster("a", 3), cluster("b", 10), cluster("c", 4)], b, enable_empty_workload_propagation=True
    )
    assert outcome(obj, result) == ("Success", {"b": 5, "c": 0, "a": 0})
    assert [t["name"] for t in obj["spec"]["clusters"]] == ["b", "c", "a"]


def test_aggregated_scale_down_keeps_the_largest_holders() -> None:
    b = binding({"replicaScheduling": AGGREGATED}, 7, targets={"a": 2, "b": 6, "c": 4})
    obj, result = run([cluster("a", 0), cluster("b", 0), cluster("c", 0)], b)
    # Sorted by replicas: b6, c4, a2; prefix b (6 < 7), c (10 >= 7) -> 7 over 6:4 -> b 4, c 3.
    assert outcome(obj, result) == ("Success", {"b": 4, "c": 3})


def test_replicas_on_clusters_that_are_no_longer_candidates_are_placed_again() -> None:
    b = binding(
        {"clusterAffinity": {"exclude": ["gone"]}, "replicaScheduling": DYNAMIC},
        6,
        targets={"gone": 4, "a": 2},
    )
    obj, result = run([cluster("gone"), cluster("a", 1), cluster("b", 3)], b)
    # assigned = 2 (a) -> 4 extra over free 1:3 -> a+1, b+3.
    assert outcome(obj, result) == ("Success", {"a": 3, "b": 3})


def test_scale_up_capacity_error_reports_free_capacity_of_every_candidate() -> None:
    b = binding({"replicaScheduling": AGGREGATED}, 10, targets={"a": 2})
    obj, result = run([cluster("a", 3), cluster("b", 4)], b)
    assert outcome(obj, result) == ("Unschedulable", {"a": 2})
    assert message(result) == (
        "failed to assign replicas: failed to scale up: "
        "Clusters available replicas 7 are not enough to schedule."
    )


def test_a_divided_binding_without_preference_is_unsupported() -> None:
    b = binding({"replicaScheduling": {"replicaSchedulingType": "Divided"}}, 2, targets={"a": 2})
    obj, result = run([cluster("a")], b)
    assert outcome(obj, result) == ("SchedulerError", {"a": 2})
    assert message(result) == (
        "failed to assign replicas: unsupported replica scheduling strategy, replicaSchedulingType: Divided, "
        "replicaDivisionPreference: , please try another scheduling strategy"
    )
    # A non-workload with the same placement lands everywhere (the strategy is never consulted).
    obj, result = run([cluster("a")], binding({"replicaScheduling": {"replicaSchedulingType": "Divided"}}))
    assert outcome(obj, result) == ("Success", {"a": 0})


# ---- §10: overflow tiers ------------------------------------------------------------------------------


def test_an_explicitly_empty_overflow_list_activates_the_tier_fill() -> None:
    # §10.1: a non-nil overflowAffinities list selects the tier assignment and its error text.
    def placement(overflow: list[Any] | None) -> dict[str, Any]:
        term: dict[str, Any] = {"affinityName": "t", "clusterNames": ["a"]}
        if overflow is not None:
            term["overflowAffinities"] = overflow
        return {"clusterAffinities": [term], "replicaScheduling": DYNAMIC}

    _, result = run([cluster("a", 3)], binding(placement([]), 5))
    assert (
        message(result)
        == "failed to assign replicas: Clusters available replicas are not enough to schedule."
    )
    _, result = run([cluster("a", 3)], binding(placement(None), 5))
    assert message(result) == (
        "failed to assign replicas: failed to scale up: "
        "Clusters available replicas 3 are not enough to schedule."
    )


def test_overflow_tiers_contract_from_the_last_tier() -> None:
    placement = {
        "clusterAffinities": [
            {
                "affinityName": "t",
                "clusterNames": ["a"],
                "overflowAffinities": [
                    {"affinityName": "o1", "clusterNames": ["b"]},
                    {"affinityName": "o2", "clusterNames": ["c"]},
                ],
            }
        ],
        "replicaScheduling": AGGREGATED,
    }
    b = binding(placement, 7, targets={"a": 4, "b": 3, "c": 3}, observed="t")
    obj, result = run([cluster("a", 0), cluster("b", 0), cluster("c", 0)], b)
    # tier 0 keeps min(7, 4) = 4, tier 1 min(3, 3) = 3, tier 2 is dropped.
    assert outcome(obj, result) == ("Success", {"a": 4, "b": 3})
    assert obj["status"]["schedulerObservingAffinityName"] == "t"


# ---- quantities as Kubernetes parses them ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", Fraction(1)),
        ("0.0000000001", Fraction(1, 10**9)),
        ("-0.0000000001", Fraction(-1, 10**9)),
        ("1.0000000001", Fraction(10**9 + 1, 10**9)),
        ("1e-12", Fraction(1, 10**9)),
        ("0.5Ki", Fraction(512)),
        ("1n", Fraction(1, 10**9)),
    ],
)
def test_cluster_quantities_are_rounded_up_to_nano_units(text: str, value: Fraction) -> None:
    c = cluster_from_dict(cluster("m", allocatable={"cpu": text}))
    assert c.resource_summary is not None
    assert c.resource_summary.allocatable["cpu"].value_exact == value


def test_the_assigned_sum_is_an_int32() -> None:
    # §9.5 / §13: sum(target.replicas) wraps: 2147483647 + 1 is -2147483648 < 3, a "scale up" by
    # 3 - (-2147483648), which wraps to a negative count of seats: nothing is added or removed.
    b = binding({"replicaScheduling": DYNAMIC}, 3, targets={"a": MAX_INT32, "b": 1})
    obj, result = run([cluster("a", 10), cluster("b", 10)], b)
    assert outcome(obj, result) == ("Success", {"a": MAX_INT32, "b": 1})


# ---- §9.2: the divisor against a literal reading of the spec ---------------------------------------------


def _webster_as_written(seats: int, votes: dict[str, int], uid: str) -> dict[str, int]:
    """§9.2 transcribed: give each seat to the party that is ``better`` than every other."""
    from fleetsched.scheduler.assign import fnv1a_32

    parties = {n: [v, 0] for n, v in votes.items()}
    if sum(votes.values()) == 0:
        return dict.fromkeys(sorted(votes), 0)
    desc = uid != "" and (fnv1a_32(uid.encode()) & 1) == 1

    def better(a: str, b: str) -> bool:
        pa = float(parties[a][0]) / float(2 * parties[a][1] + 1)
        pb = float(parties[b][0]) / float(2 * parties[b][1] + 1)
        if pa != pb:
            return pa > pb
        if parties[a][1] != parties[b][1]:
            return parties[a][1] < parties[b][1]
        return a > b if desc else a < b

    for _ in range(seats):
        best = None
        for n in parties:
            if best is None or better(n, best):
                best = n
        assert best is not None
        parties[best][1] += 1
    return {n: parties[n][1] for n in sorted(parties)}


@given(
    seats=st.integers(0, 60),
    votes=st.dictionaries(
        st.sampled_from([f"c{i}" for i in range(9)]),
        st.one_of(st.integers(0, 12), st.integers(0, 2**40), st.sampled_from([3, 6, 9, 2**53 + 1])),
        min_size=1,
        max_size=9,
    ),
    uid=st.sampled_from(["", "4858ca61-3ff8-4095-8267-f3d059d8074c", "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"]),
)
@settings(max_examples=150, deadline=None)
def test_webster_matches_the_spec_procedure(seats: int, votes: dict[str, int], uid: str) -> None:
    from fleetsched.scheduler.assign import webster

    assert webster(seats, votes, uid=uid) == _webster_as_written(seats, votes, uid)


def test_region_search_prefers_a_strict_prefix_of_the_heaviest_path() -> None:
    # §8.5.1: R1 (3 clusters) and R2 (1 cluster) both score 6000 (target ceil(6/1) = 6, cluster
    # minimum 3). Paths: #1 {R1, R2} weight 12000 (found first, R2 has fewer clusters), #2 {R1}
    # weight 6000. #1 is heaviest, but #2 is a strict prefix of it, so only R1 is used.
    spread = [
        {"spreadByField": "region", "minGroups": 1, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 3, "maxGroups": 3},
    ]
    clusters = [
        cluster("a", 4, region="R1"),
        cluster("b", 4, region="R1"),
        cluster("c", 4, region="R1"),
        cluster("d", 10, region="R2"),
    ]
    obj, result = run(clusters, binding({"spreadConstraints": spread, "replicaScheduling": DYNAMIC}, 6))
    assert result.attempts[0].selected == ("a", "b", "c")
    assert outcome(obj, result) == ("Success", {"a": 2, "b": 2, "c": 2})


# ---- the whole algorithm against a literal transcription of the spec ----------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_the_core_decides_what_the_spec_pseudocode_decides(seed: int) -> None:
    # 40 fleets x 10 bindings per seed, over the recorded cases' features plus edge values (zero
    # replicas, empty lists, maxGroups 0, overflow tiers of any strategy, int32 sums, models ...).
    from . import spec_reference as ref

    gen = ref.Generator(seed)
    compared = 0
    for _ in range(40):
        raw_clusters = gen.fleet()
        names = [c["metadata"]["name"] for c in raw_clusters]
        propagate = gen.r.random() < 0.1
        modeling = gen.r.random() < 0.8
        scheduler = Scheduler(
            settings=Settings(
                enable_empty_workload_propagation=propagate, customized_cluster_resource_modeling=modeling
            )
        )
        snapshot = Snapshot(cluster_from_dict(c) for c in raw_clusters)
        reference_clusters = [cluster_from_dict(c) for c in raw_clusters]
        for i in range(10):
            raw = gen.binding(i, names)
            b, status = binding_from_dict(raw), status_from_dict(raw)
            result = scheduler.schedule(b, status, snapshot)
            got = (
                result.condition.reason if result.condition is not None else None,
                None if result.clusters is None else [(t.name, t.replicas) for t in result.clusters],
                result.affinity_name,
            )
            expected = ref.schedule(b, status, reference_clusters, propagate=propagate, modeling=modeling)
            assert got == expected, raw
            compared += 1
    assert compared == 400


def test_region_group_score_stops_at_the_first_cluster_reaching_the_target() -> None:
    # §8.4: R1 = [t (target, 10 free), x (3)] reaches 10 with t alone: 10*1000 + 100/1 = 10100.
    # R2 = [a, b, c (targets, 2 each), d (4)] needs all four: 10*1000 + 300/4 = 10075. R1 wins;
    # had the sum to be strictly above the target, R1 would count x too (10050) and lose.
    spread = [
        {"spreadByField": "region", "minGroups": 1, "maxGroups": 1},
        {"spreadByField": "cluster", "minGroups": 1, "maxGroups": 5},
    ]
    clusters = [
        cluster("t", 10, region="R1"),
        cluster("x", 3, region="R1"),
        cluster("a", 2, region="R2"),
        cluster("b", 2, region="R2"),
        cluster("c", 2, region="R2"),
        cluster("d", 4, region="R2"),
    ]
    b = binding(
        {"spreadConstraints": spread, "replicaScheduling": DYNAMIC},
        10,
        targets={"t": 0, "a": 0, "b": 0, "c": 0},
    )
    _, result = run(clusters, b)
    assert result.attempts[0].selected == ("t", "x")


def test_cluster_affinity_wins_inside_the_affinity_group_loop() -> None:
    # §3.5 picks the loop for a non-nil clusterAffinities; §5.3 then still uses clusterAffinity
    # (here {}: everything) and §10.1 keeps the overflow tiers off.
    placement = {
        "clusterAffinity": {},
        "clusterAffinities": [
            {
                "affinityName": "t0",
                "clusterNames": ["m1"],
                "overflowAffinities": [{"affinityName": "o", "clusterNames": ["m2"]}],
            }
        ],
        "replicaScheduling": DYNAMIC,
    }
    obj, result = run([cluster("m1", 3), cluster("m2", 3), cluster("m3", 3)], binding(placement, 9))
    assert outcome(obj, result) == ("Success", {"m1": 3, "m2": 3, "m3": 3})
    assert obj["status"]["schedulerObservingAffinityName"] == "t0"
    assert not result.attempts[0].overflow
