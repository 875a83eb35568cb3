"""AffectedBindings against the walk it replaces: same bindings, same order, for random fleets.

The reference is the walk ``SchedulerOperator._reconcile_cluster`` did before the index: every
cached binding through ``decision.passes_filter`` and ``decision.cluster_matches_binding`` with the
affinity converted from JSON per cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.controller.runtime.cache import ObjectCache, object_key
from fleetsched.controller.scheduler import decision
from fleetsched.controller.scheduler.affected import AffectedBindings, affected_index
from fleetsched.scheduler.convert import ConversionError, cluster_from_dict, placement_from_dict
from fleetsched.scheduler.matching import cluster_matches

NAMES = ["m1", "m2", "m3", "m4"]
LABEL_KEYS = ["env", "tier", "team"]
VALUES = ["a", "b", ""]
PROVIDERS = ["aws", "gcp", ""]
REGIONS = ["eu", "us", ""]
ZONES = ["z1", "z2", "z3"]
OPS = ["In", "NotIn", "Exists", "DoesNotExist"]
SERVED = frozenset({decision.DEFAULT_SCHEDULER_NAME, "second"})


def walk(cache: ObjectCache, cluster: Mapping[str, Any]) -> list[str]:
    info = cluster_from_dict(cluster)

    def matches(_: Any, affinity: Mapping[str, Any]) -> bool:
        placement = placement_from_dict({"clusterAffinity": dict(affinity)})
        return (
            placement is None
            or placement.cluster_affinity is None
            or cluster_matches(info, placement.cluster_affinity)
        )

    found = []
    for binding in cache:
        if not decision.passes_filter(binding, SERVED):
            continue
        try:
            hit = decision.cluster_matches_binding(cluster, binding, matches)
        except ConversionError:
            hit = True
        if hit:
            found.append(object_key(binding))
    return found


FIELD_VALUES = {"provider": ["aws", "gcp"], "region": ["eu", "us"], "zone": ZONES}


@st.composite
def requirement(draw: st.DrawFn, keys: list[str], *, field: bool) -> dict[str, Any]:
    key = draw(st.sampled_from(keys))
    op = draw(st.sampled_from(["In", "In", "Exists", "NotIn", "DoesNotExist", "Gt"] if field else OPS))
    pool = [*FIELD_VALUES[key], "1"] if field else VALUES
    values = [] if op in ("Exists", "DoesNotExist") and draw(st.booleans()) else None
    if values is None:
        values = draw(st.lists(st.sampled_from(pool), max_size=2, unique=True))
    return {"key": key, "operator": op, "values": values}


mixed_affinities = st.fixed_dictionaries(
    {},
    optional={
        "clusterNames": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
        "exclude": st.lists(st.sampled_from(NAMES), max_size=1),
        "labelSelector": st.fixed_dictionaries(
            {},
            optional={
                "matchLabels": st.dictionaries(
                    st.sampled_from(LABEL_KEYS), st.sampled_from(VALUES), max_size=2
                ),
                "matchExpressions": st.lists(requirement(LABEL_KEYS, field=False), max_size=2),
            },
        ),
        "fieldSelector": st.fixed_dictionaries(
            {
                "matchExpressions": st.lists(
                    requirement(["provider", "region", "zone"], field=True), max_size=2
                )
            }
        ),
    },
)

# One-selector affinities too, so that each guard (field, zone, label) is often the deciding one.
field_only = st.fixed_dictionaries(
    {
        "fieldSelector": st.fixed_dictionaries(
            {
                "matchExpressions": st.lists(
                    requirement(["provider", "region", "zone"], field=True), min_size=1, max_size=2
                )
            }
        )
    }
)
label_only = st.fixed_dictionaries(
    {
        "labelSelector": st.fixed_dictionaries(
            {"matchExpressions": st.lists(requirement(LABEL_KEYS, field=False), min_size=1, max_size=2)}
        )
    }
)
affinities = st.one_of(mixed_affinities, field_only, label_only)


@st.composite
def bindings(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(["b1", "b2", "b3", "b4", "b5", "b6"]))
    labels = {"propagationpolicy.karmada.io/permanent-id": "x"} if draw(st.integers(0, 9)) else {}
    spec: dict[str, Any] = {}
    scheduler = draw(st.sampled_from([None, None, decision.DEFAULT_SCHEDULER_NAME, "second", "other"]))
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    if draw(st.integers(0, 5)) == 0:
        spec["suspension"] = {"scheduling": True}
    generation = draw(st.integers(1, 2))
    observed = draw(st.sampled_from([1, 2, generation, generation, generation]))
    status: dict[str, Any] = {"schedulerObservedGeneration": observed}
    shape = draw(
        st.sampled_from(["none", "affinity", "affinity", "affinity", "terms", "terms", "empty-terms", "bad"])
    )
    if shape == "affinity":
        spec["placement"] = {"clusterAffinity": draw(affinities)}
    elif shape == "terms":
        terms = [
            {"affinityName": term_name, **draw(affinities)}
            for term_name in draw(
                st.lists(st.sampled_from(["t1", "t2"]), min_size=1, max_size=2, unique=True)
            )
        ]
        spec["placement"] = {"clusterAffinities": terms}
        status["schedulerObservingAffinityName"] = draw(st.sampled_from(["", "t1", "t2"]))
    elif shape == "empty-terms":
        spec["placement"] = {"clusterAffinities": []}
    elif shape == "bad":
        spec["placement"] = {"clusterAffinity": {"clusterNames": "m1"}}  # not a list: ConversionError
    else:
        spec["placement"] = {}
    return {
        "metadata": {"name": name, "namespace": "ns", "generation": generation, "labels": labels},
        "spec": spec,
        "status": status,
    }


@st.composite
def clusters(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for field_name, values in (("provider", PROVIDERS), ("region", REGIONS)):
        value = draw(st.sampled_from(values))
        if value:
            spec[field_name] = value
    zones = draw(st.lists(st.sampled_from(ZONES), max_size=2, unique=True))
    if zones:
        spec["zones"] = zones
    labels = draw(st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(VALUES), max_size=3))
    return {"metadata": {"name": draw(st.sampled_from(NAMES)), "labels": labels}, "spec": spec}


events = st.lists(
    st.one_of(
        st.tuples(st.just("upsert"), bindings()),
        st.tuples(st.just("delete"), st.sampled_from(["ns/b1", "ns/b2", "ns/b3"])),
        st.tuples(st.just("cluster"), clusters()),
    ),
    min_size=1,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(events)
def test_index_answers_what_the_walk_answers(script: list[tuple[str, Any]]) -> None:
    cache = ObjectCache(AffectedBindings())
    checked = 0
    for action, value in script:
        if action == "upsert":
            cache.upsert(value)
        elif action == "delete":
            cache.delete(value)
        else:
            expected = walk(cache, value)
            assert affected_index(cache).affected(cluster_from_dict(value), SERVED) == expected
            checked += 1
    # Attached later to a filled cache, an index answers the same.
    late = ObjectCache()
    for obj in cache:
        late.upsert(obj)
    for action, value in script:
        if action == "cluster":
            assert affected_index(late).affected(cluster_from_dict(value), SERVED) == walk(late, value)


def test_a_named_affinity_is_not_a_candidate_for_other_clusters() -> None:
    index = AffectedBindings()
    binding = {
        "metadata": {"name": "b", "namespace": "ns", "labels": {"binding.karmada.io/managed-by": "x"}},
        "spec": {"placement": {"clusterAffinity": {"clusterNames": ["m1"]}}},
    }
    index.upsert("ns/b", binding)
    other = cluster_from_dict({"metadata": {"name": "m2"}})
    assert index.affected(other, SERVED) == []
    assert index.affected(cluster_from_dict({"metadata": {"name": "m1"}}), SERVED) == ["ns/b"]
    index.delete("ns/b")
    assert index.affected(cluster_from_dict({"metadata": {"name": "m1"}}), SERVED) == []
    assert len(index) == 0


@settings(max_examples=1500, deadline=None)
@given(bindings(), clusters())
def test_one_binding_one_cluster(binding: dict[str, Any], cluster: dict[str, Any]) -> None:
    cache = ObjectCache(AffectedBindings())
    cache.upsert(binding)
    assert affected_index(cache).affected(cluster_from_dict(cluster), SERVED) == walk(cache, cluster)


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, "values": list(values)}


GUARDED = [
    ({"clusterNames": ["m3"]}, {"metadata": {"name": "m3"}}),
    (
        {"labelSelector": {"matchLabels": {"team": "b"}}},
        {"metadata": {"name": "m1", "labels": {"team": "b"}}},
    ),
    (
        {"labelSelector": {"matchExpressions": [_expr("tier", "In", "a", "b")]}},
        {"metadata": {"name": "m1", "labels": {"tier": "b"}}},
    ),
    (
        {"labelSelector": {"matchExpressions": [_expr("team", "Exists")]}},
        {"metadata": {"name": "m1", "labels": {"team": ""}}},
    ),
    (
        {"fieldSelector": {"matchExpressions": [_expr("region", "In", "us", "eu")]}},
        {"metadata": {"name": "m1"}, "spec": {"region": "eu"}},
    ),
    (
        {"fieldSelector": {"matchExpressions": [_expr("provider", "Exists")]}},
        {"metadata": {"name": "m1"}, "spec": {"provider": "gcp"}},
    ),
    (
        {"fieldSelector": {"matchExpressions": [_expr("zone", "In", "z1", "z3")]}},
        {"metadata": {"name": "m1"}, "spec": {"zones": ["z2", "z3"]}},
    ),
    (
        {"fieldSelector": {"matchExpressions": [_expr("zone", "Exists")]}},
        {"metadata": {"name": "m1"}, "spec": {"zones": ["z2"]}},
    ),
    ({"fieldSelector": {"matchExpressions": [_expr("zone", "NotIn", "z1")]}}, {"metadata": {"name": "m1"}}),
]


def test_each_guard_finds_its_matching_cluster_and_only_it() -> None:
    for affinity, cluster in GUARDED:
        binding = {
            "metadata": {"name": "b", "namespace": "ns", "labels": {"binding.karmada.io/managed-by": "x"}},
            "spec": {"placement": {"clusterAffinity": affinity}},
        }
        index = AffectedBindings()
        index.upsert("ns/b", binding)
        assert index.affected(cluster_from_dict(cluster), SERVED) == ["ns/b"], affinity
        if affinity.get("fieldSelector", {}).get("matchExpressions", [{}])[0].get("operator") != "NotIn":
            bare = cluster_from_dict({"metadata": {"name": "m9"}})
            assert index.affected(bare, SERVED) == [], affinity
