"""The general estimator's vectorised path gives the scalar path's answers (estimator.md §5.1, §5.3).

A differential test: random fleets (summaries with missing resources, zero and negative headroom,
resource models with several grades and negative modelings, quantities too large for int64) and
random requests, asked of subsets of the clusters in any order, with clusters replaced by new values
of the same name between calls, as status heartbeats replace them.
"""

from __future__ import annotations

import os
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fleetsched.api.quantity import Quantity
from fleetsched.scheduler import general_estimator as general
from fleetsched.scheduler.general_estimator import GeneralEstimator
from fleetsched.scheduler.types import (
    MAX_INT32,
    ClusterInfo,
    ClusterSelection,
    ReplicaRequirements,
    ResourceModel,
    ResourceSummary,
)

settings.register_profile(
    "vector-dev",
    max_examples=int(os.environ.get("VECTOR_EXAMPLES", "150")),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "vector-ci",
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = "vector-ci" if os.environ.get("CI") else "vector-dev"

RESOURCES = ("cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage", "storage", "example.com/foo")
HUGE = 10**30  # e.g. ``memory: 1e30``: beyond int64, so the scalar path answers


def _is_huge(value: Fraction) -> bool:
    return abs(value) * 1000 >= general._SAFE


tame = st.one_of(
    st.integers(-3, 40).map(Fraction),
    st.integers(-2000, 60000).map(lambda m: Fraction(m, 1000)),  # millis, e.g. 0.1m rounds up
    st.fractions(min_value=-5, max_value=50, max_denominator=7),
    st.sampled_from([Fraction(2**40), Fraction(10**13, 3)]),
)
# Hostile values are rare (one in ~30), so that most calls take the vectorised path.
quantities = st.integers(0, 29).flatmap(
    lambda k: st.sampled_from([Fraction(HUGE), Fraction(-HUGE)]) if k == 0 else tame
)
model_quantities = st.integers(-4, 30).map(Fraction) | quantities
small_quantities = st.integers(0, 12).map(Fraction) | st.integers(0, 9000).map(lambda m: Fraction(m, 1000))


def _resources(
    values: st.SearchStrategy[Fraction], names: tuple[str, ...] = RESOURCES
) -> st.SearchStrategy[dict[str, Fraction]]:
    return st.dictionaries(st.sampled_from(names), values, max_size=len(names))


@st.composite
def clusters(draw: st.DrawFn, name: str, names: tuple[str, ...]) -> ClusterInfo:
    """A cluster whose summary and models name only ``names`` (the fleet's), so that requests often
    ask for what no cluster of the fleet has."""
    if draw(st.integers(0, 9)) == 0:
        return ClusterInfo(name=name)
    allocatable = draw(_resources(quantities, names))
    if draw(st.integers(0, 5)) > 0:
        allocatable["pods"] = Fraction(draw(st.integers(0, 2000) | st.sampled_from([2**31 + 5, 2**40])))
    allocated = draw(_resources(small_quantities, names))
    allocating = draw(_resources(small_quantities, names))
    models: tuple[ResourceModel, ...] = ()
    modelings: tuple[tuple[int, int], ...] = ()
    if draw(st.booleans()):
        grades = draw(st.lists(st.integers(0, 4), min_size=1, max_size=5, unique=True))
        models = tuple(
            ResourceModel(
                g,
                tuple(
                    (n, Quantity(v), Quantity(v + 1))
                    for n, v in draw(_resources(model_quantities, names)).items()
                ),
            )
            for g in grades
        )
        # Mostly small counts for the grades the models have; now and then a negative one (the
        # summary answers), a grade without a model, or a count too large for int64 products.
        counts = st.integers(0, 80).map(
            lambda k: -1 if k == 0 else 2**61 if k == 1 else HUGE if k == 2 else 10**6 if k == 3 else k % 7
        )
        listed = [g for g in grades if draw(st.integers(0, 5)) > 0]
        listed += draw(st.lists(st.sampled_from([*grades, 5]), max_size=3))
        modelings = tuple((g, draw(counts)) for g in listed)
    summary = ResourceSummary(
        allocatable={k: Quantity(v) for k, v in allocatable.items()},
        allocated={k: Quantity(v) for k, v in allocated.items()},
        allocating={k: Quantity(v) for k, v in allocating.items()},
        allocatable_modelings=modelings,
    )
    return ClusterInfo(name=name, resource_summary=summary, resource_models=models)


requests = st.none() | _resources(quantities | small_quantities).map(
    lambda r: ReplicaRequirements(resource_request=tuple((n, Quantity(v)) for n, v in r.items()))
)


def _scalar(clusters: list[ClusterInfo], req: ReplicaRequirements | None, modeling: bool) -> list[int]:
    converted = general._converted(req.request_key()) if req is not None else None
    return [general._estimate(general._base(c), converted, modeling) for c in clusters]


def _needs_fallback(clusters: list[ClusterInfo], req: ReplicaRequirements | None) -> bool:
    values: list[Fraction] = []
    for c in clusters:
        s = c.resource_summary
        if s is None:
            continue
        for m in (s.allocatable, s.allocated, s.allocating):
            values.extend(q.value_exact for q in m.values())
        values.extend(Fraction(n) for _, n in s.allocatable_modelings)
        values.extend(low.value_exact for model in c.resource_models for _, low, _ in model.ranges)
        values.extend(Fraction(n) * 110 for _, n in s.allocatable_modelings)
    if req is not None:
        values.extend(q.value_exact for _, q in req.resource_request)
    return any(_is_huge(v) for v in values)


@settings(settings.get_profile(PROFILE))
@given(data=st.data(), size=st.integers(1, 12))
def test_vectorised_answers_equal_the_scalar_ones(data: st.DataObject, size: int) -> None:
    names = tuple(data.draw(st.lists(st.sampled_from(RESOURCES), min_size=1, unique=True), label="names"))
    with pytest.MonkeyPatch.context() as mp:
        # Small bounds now and then, so that lineages are restarted and derived tables compacted.
        if data.draw(st.booleans(), label="small bounds?"):
            mp.setattr(general, "_TABLE_ROWS_MIN", 1)
            mp.setattr(general, "_NODE_SLACK", 0)
        _vectorised_answers_equal_the_scalar_ones(data, names, size)


def _vectorised_answers_equal_the_scalar_ones(data: st.DataObject, names: tuple[str, ...], size: int) -> None:
    fleet = [data.draw(clusters(f"m{i}", names), label=f"m{i}") for i in range(size)]
    # Earlier values of the fleet: a worker still on an older snapshot asks about those (the
    # tables then follow several values of one cluster at once).
    history = [list(fleet)]
    for _step in range(data.draw(st.integers(1, 10), label="steps")):
        change = data.draw(st.integers(0, 5), label="change?")
        if change <= 1:
            i = data.draw(st.integers(0, len(fleet) - 1), label="replaced")
            fleet[i] = data.draw(clusters(f"m{i}", names), label="heartbeat")
        elif change == 2:
            fleet.append(data.draw(clusters(f"m{len(fleet)}", names), label="added"))
        history.append(list(fleet))
        seen = data.draw(st.sampled_from(history[-3:]), label="snapshot")
        picked = data.draw(
            st.lists(st.integers(0, len(seen) - 1), min_size=1, max_size=2 * len(seen)), label="call"
        )
        call = [seen[i] for i in picked]
        req = data.draw(requests, label="request")
        modeling = data.draw(st.booleans(), label="resource_modeling")
        expected = _scalar(call, req, modeling)
        converted = general._converted(req.request_key()) if req is not None else None
        vector = general._estimate_many(call, converted, modeling)
        if vector is None:
            assert _needs_fallback(call, req)
        else:
            assert vector == expected
        # The same call by snapshot positions (the pipeline's ClusterSelection): the same answers.
        selection = ClusterSelection(call, tuple(seen), picked)
        assert general._estimate_many(selection, converted, modeling) == vector
        event("vectorised" if vector is not None else "scalar fallback")
        event("some answer positive" if any(n > 0 for n in expected) else "all answers <= 0")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(general, "VECTOR_MIN", 1)
            assert GeneralEstimator(resource_modeling=modeling).max_available_replicas(call, req) == expected


def _plain(name: str, cpu: int, pods: int = 110) -> ClusterInfo:
    summary = ResourceSummary(
        allocatable={"cpu": Quantity(cpu), "memory": Quantity(2**34), "pods": Quantity(pods)},
        allocated={},
        allocating={},
    )
    return ClusterInfo(name=name, resource_summary=summary)


def _cpu(text: str) -> ReplicaRequirements:
    return ReplicaRequirements(resource_request=(("cpu", Quantity.parse(text)),))


def _table_of(clusters: list[ClusterInfo]) -> general._Table:
    found = general._table_rows(clusters)
    assert found is not None
    return found[0]


def test_large_calls_are_answered_from_one_table_that_a_heartbeat_updates_by_one_row() -> None:
    fleet = [_plain(f"m{i}", cpu=i) for i in range(100)]
    estimator = GeneralEstimator()
    assert estimator.max_available_replicas(fleet, _cpu("500m")) == [min(2 * i, 110) for i in range(100)]
    lineage = fleet[0].memo[general._LineageKey]
    table = lineage.tables[-1]
    codes = [c.memo[general._CodeKey] for c in fleet]
    # A subset in another order is answered from the same table.
    subset = fleet[::-3]
    assert estimator.max_available_replicas(subset, _cpu("2")) == [int(c.name[1:]) // 2 for c in subset]
    assert lineage.tables == [table]
    # A heartbeat replaces m7: the next call derives a table with m7's row replaced, nothing else.
    old7 = fleet[7]
    fleet[7] = _plain("m7", cpu=70)
    assert estimator.max_available_replicas(fleet[:50], _cpu("1"))[7] == 70
    derived = lineage.tables[-1]
    assert derived is not table and len(derived.bases) == 100
    assert [c.memo[general._CodeKey] for c in fleet if c.name != "m7"] == codes[:7] + codes[8:]
    assert derived.bases[:7] == table.bases[:7] and derived.bases[8:] == table.bases[8:]
    assert estimator.max_available_replicas(fleet, _cpu("1")) == [70 if i == 7 else i for i in range(100)]
    assert lineage.tables == [table, derived]
    # A worker still on the older snapshot is answered from the older table, unchanged.
    older = [old7 if c.name == "m7" else c for c in fleet]
    assert estimator.max_available_replicas(older, _cpu("1")) == list(range(100))
    assert lineage.tables == [table, derived]
    # A new cluster name gets a row of its own in the same lineage.
    grown = [*fleet, _plain("m100", cpu=100)]
    assert estimator.max_available_replicas(grown, _cpu("1"))[-1] == 100
    assert len(lineage.tables[-1].bases) == 101 and grown[-1].memo[general._LineageKey] is lineage


def test_two_values_of_one_cluster_in_one_call_are_answered_by_the_scalar_path() -> None:
    fleet = [_plain(f"m{i}", cpu=i) for i in range(40)]
    call = [*fleet, _plain("m3", cpu=300)]
    assert GeneralEstimator().max_available_replicas(call, _cpu("1")) == [*range(40), 110]


def test_a_snapshot_selection_is_answered_from_its_snapshot_table_by_position() -> None:
    fleet = tuple(_plain(f"m{i}", cpu=i) for i in range(100))
    estimator = GeneralEstimator()
    picked = list(range(0, 100, 3))
    selection = ClusterSelection([fleet[i] for i in picked], fleet, picked)
    assert estimator.max_available_replicas(selection, _cpu("1")) == picked
    held = general._SNAPSHOT_TABLES[id(fleet)]
    assert held[0] is fleet and held[1] is not None
    table = held[1][0]
    other = ClusterSelection(fleet[50:], fleet, range(50, 100))
    assert estimator.max_available_replicas(other, _cpu("2")) == [i // 2 for i in range(50, 100)]
    assert general._SNAPSHOT_TABLES[id(fleet)] is held  # rows looked up once per snapshot
    # A heartbeat makes a new snapshot: its table is derived from the lineage with the one new row.
    changed = (*fleet[:7], _plain("m7", cpu=70), *fleet[8:])
    answer = estimator.max_available_replicas(ClusterSelection(changed, changed, range(100)), _cpu("1"))
    assert answer == [70 if i == 7 else i for i in range(100)]
    derived = general._SNAPSHOT_TABLES[id(changed)][1]
    assert derived is not None and derived[0] is not table
    assert changed[7].memo[general._LineageKey] is fleet[0].memo[general._LineageKey]
    # The older snapshot's answers are unchanged (tables are never changed in place).
    assert estimator.max_available_replicas(selection, _cpu("1")) == picked


def test_a_quantity_beyond_int64_is_answered_by_the_scalar_path_exactly() -> None:
    fleet = [_plain(f"m{i}", cpu=4) for i in range(40)]
    fleet[3] = _plain("m3", cpu=HUGE, pods=HUGE)
    answer = GeneralEstimator().max_available_replicas(fleet, _cpu("1m"))
    assert answer[0] == 110
    assert answer[3] == MAX_INT32  # pods headroom saturates (Karmada's int32() would wrap it)
    assert answer == _scalar(fleet, _cpu("1m"), True)
    huge_request = ReplicaRequirements(resource_request=(("memory", Quantity(HUGE)),))
    assert GeneralEstimator().max_available_replicas(fleet[:32], huge_request) == [0] * 32


def test_small_calls_keep_the_scalar_loop() -> None:
    fleet = [_plain(f"m{i}", cpu=4) for i in range(general.VECTOR_MIN - 1)]
    GeneralEstimator().max_available_replicas(fleet, _cpu("1"))
    assert all(general._CodeKey not in c.memo and general._LineageKey not in c.memo for c in fleet)


def test_negative_model_capacity_and_no_pod_headroom_are_mirrored() -> None:
    def modeled(name: str, pods: int) -> ClusterInfo:
        summary = ResourceSummary(
            allocatable={"cpu": Quantity(100), "pods": Quantity(pods)},
            allocated={},
            allocating={},
            allocatable_modelings=((1, 3), (2, 1)),
        )
        models = (
            ResourceModel(1, (("cpu", Quantity(-2), Quantity(0)),)),
            ResourceModel(2, (("cpu", Quantity(4), Quantity(8)),)),
        )
        return ClusterInfo(name=name, resource_summary=summary, resource_models=models)

    fleet = [modeled(f"m{i}", pods=10 * (i % 2)) for i in range(40)]
    answer = GeneralEstimator().max_available_replicas(fleet, _cpu("1"))
    # Grade 1 fits -2 per node (3 nodes), grade 2 fits 4: -2; no pod headroom answers 0 first.
    assert answer == [0, -2] * 20
    assert answer == _scalar(fleet, _cpu("1"), True)
    assert GeneralEstimator(resource_modeling=False).max_available_replicas(fleet, _cpu("1")) == [0, 10] * 20
