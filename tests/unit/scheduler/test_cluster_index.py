"""Matching an affinity through a snapshot's ``ClusterIndex`` gives ``cluster_matches`` per cluster.

A differential test (scheduler.md §5.3): random clusters (labels, provider, region, zones, repeated
names, empty fields) and random affinities (names, exclusions, label selectors with every operator,
field selectors on provider, region, zone and unknown keys, Gt/Lt with numbers and not, invalid
requirements), compared bit by bit with the per-cluster predicate; and the ClusterAffinity filter's
index path against its per-cluster path.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.plugin import FilterContext
from fleetsched.scheduler.matching import ClusterIndex, affinity_mask, cluster_index, cluster_matches
from fleetsched.scheduler.plugins.cluster_affinity import ClusterAffinity as ClusterAffinityPlugin
from fleetsched.scheduler.types import (
    ClusterAffinity,
    ClusterInfo,
    ClusterSelection,
    FieldSelector,
    LabelRequirement,
    LabelSelector,
)

from .builders import a_binding

names = st.sampled_from(["m1", "m2", "m3", "m4", "m5", "m6", "m7"])
label_keys = st.sampled_from(["env", "tier", "num", "bad key!"])
label_values = st.sampled_from(["prod", "dev", "3", "12", "-4", "x", "", "not valid!"])
operators = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"])
requirements = st.builds(
    LabelRequirement,
    key=label_keys,
    operator=operators,
    values=st.lists(label_values, max_size=3).map(tuple),
)
field_requirements = st.builds(
    LabelRequirement,
    key=st.sampled_from(["provider", "region", "zone", "other"]),
    operator=operators,
    values=st.lists(st.sampled_from(["aws", "gcp", "r1", "r2", "z1", "z2", "5", ""]), max_size=3).map(tuple),
)
affinities = st.builds(
    ClusterAffinity,
    label_selector=st.one_of(
        st.none(),
        st.builds(
            LabelSelector,
            match_labels=st.lists(st.tuples(label_keys, label_values), max_size=2).map(tuple),
            match_expressions=st.lists(requirements, max_size=2).map(tuple),
        ),
    ),
    field_selector=st.one_of(
        st.none(),
        st.builds(FieldSelector, match_expressions=st.lists(field_requirements, max_size=3).map(tuple)),
    ),
    cluster_names=st.lists(names, max_size=3).map(tuple),
    exclude=st.lists(names, max_size=2).map(tuple),
)
clusters = st.builds(
    ClusterInfo,
    name=names,
    labels=st.dictionaries(st.sampled_from(["env", "tier", "num"]), label_values, max_size=3),
    provider=st.sampled_from(["", "aws", "gcp"]),
    region=st.sampled_from(["", "r1", "r2"]),
    zones=st.lists(st.sampled_from(["z1", "z2", "z3"]), max_size=2, unique=True).map(tuple),
)


@settings(max_examples=700, deadline=None, derandomize=True)
@given(fleet=st.lists(clusters, min_size=1, max_size=12), affinity=affinities)
def test_the_index_matches_as_the_predicate_does(fleet: list[ClusterInfo], affinity: ClusterAffinity) -> None:
    index = ClusterIndex(fleet)
    mask = affinity_mask(affinity, index)
    assert [bool(mask >> i & 1) for i in range(len(fleet))] == [cluster_matches(c, affinity) for c in fleet]
    assert mask >> len(fleet) == 0  # no bit beyond the snapshot


def test_the_filter_takes_the_index_for_a_snapshot_selection() -> None:
    fleet = tuple(
        ClusterInfo(f"m{i}", labels={"env": "prod" if i % 3 else "dev"}, region=f"r{i % 4}")
        for i in range(90)
    )
    affinity = ClusterAffinity(
        label_selector=LabelSelector(match_labels=(("env", "prod"),)),
        field_selector=FieldSelector(match_expressions=(LabelRequirement("region", "NotIn", ("r1",)),)),
        exclude=("m2",),
    )
    binding = a_binding().affinity(affinity).build()
    ctx = FilterContext(
        binding=binding, observed_affinity_name="", target_names=frozenset(), is_workload=True
    )
    plugin = ClusterAffinityPlugin()
    positions = list(range(1, 90, 2))
    asked = [fleet[i] for i in positions]
    by_index = plugin.filter_clusters(ctx, ClusterSelection(asked, fleet, positions))
    one_by_one = [plugin.filter(ctx, c) for c in asked]
    assert [r.is_success for r in by_index] == [r.is_success for r in one_by_one]
    assert any(r.is_success for r in by_index) and not all(r.is_success for r in by_index)
    assert cluster_index(fleet) is cluster_index(fleet)  # built once per snapshot
