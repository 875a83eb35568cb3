"""The general estimator's deduction of assumed workloads (gate SchedulingOvercommitProtection).

A differential test against a literal reference written the way Karmada's
``pkg/estimator/client/general.go`` computes it (``deductAssumedWorkloadsFromSummary`` adding to a
copy of ``allocating``, ``deductAssumedWorkloads`` in the component-set path, and the model path
pre-placing each assumption with a first-fit simulation over every model node one by one), plus
worked numbers (estimator.md §5.1, §5.2).
"""

from __future__ import annotations

import dataclasses
import os
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsched.api.quantity import Format, Quantity, parse_quantity
from fleetsched.scheduler import general_estimator as general
from fleetsched.scheduler.general_estimator import GeneralEstimator, estimate_component_sets
from fleetsched.scheduler.types import (
    MAX_INT32,
    AssumedWorkload,
    ClusterInfo,
    Component,
    ReplicaRequirements,
    ResourceModel,
    ResourceSummary,
)

EXAMPLES = 300 if os.environ.get("CI") else 150


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


# ---- the literal reference ------------------------------------------------------------------------


def _value(m: dict[str, Quantity], name: str) -> int:
    q = m.get(name)
    return q.value() if q is not None else 0


def _ref_allocating(summary: ResourceSummary, assumed: tuple[AssumedWorkload, ...]) -> dict[str, Quantity]:
    allocating = dict(summary.allocating)
    for aw in assumed:
        for comp in aw.components:
            replicas = comp.replicas
            if replicas <= 0:
                continue
            allocating["pods"] = Quantity(_value(allocating, "pods") + replicas)
            if comp.replica_requirements is None:
                continue
            for name, q in comp.replica_requirements.resource_request:
                if name == "cpu":
                    total = Quantity(Fraction(q.milli_value() * replicas, 1000), q.format)
                else:
                    total = Quantity(q.value() * replicas, q.format)
                allocating[name] = allocating[name] + total if name in allocating else total
    return allocating


def _ref_nodes(cluster: ClusterInfo) -> list[dict[str, int]] | None:
    """One dict per model node, in order (built by the already-verified preparation of an unassumed
    value of the cluster, then expanded node by node)."""
    base = general._ClusterBase(dataclasses.replace(cluster, assumed=(), memo={}))
    if base.model_error:
        return None
    return [dict(cap) for count, cap in base.model_nodes for _ in range(count)]


def _demand(comp: Component) -> list[tuple[str, int]]:
    request = comp.replica_requirements.resource_request if comp.replica_requirements is not None else ()
    return general._model_demand(request)


def _schedule_component(nodes: list[dict[str, int]], demand: list[tuple[str, int]], replicas: int) -> bool:
    # SchedulingSimulator.scheduleComponent: every node from the first, MaxDivided, take what fits.
    remaining = replicas
    for node in nodes:
        fit = node["pods"]
        for name, need in demand:
            fit = min(fit, node.get(name, 0) // need)
        if fit <= 0:
            continue
        fit = min(fit, remaining)
        node["pods"] -= fit
        for name, need in demand:
            node[name] = node.get(name, 0) - fit * need
        remaining -= fit
        if remaining == 0:
            return True
    return remaining == 0


def _simulate(nodes: list[dict[str, int]], components: tuple[Component, ...], upper: int) -> int:
    sets = 0
    while sets < upper:
        if not all(_schedule_component(nodes, _demand(c), c.replicas) for c in components):
            break
        sets += 1
    return sets


def _preplace(nodes: list[dict[str, int]], assumed: tuple[AssumedWorkload, ...]) -> None:
    for aw in assumed:
        if aw.components:
            _simulate(nodes, aw.components, 1)


def ref_replicas(cluster: ClusterInfo, request: ReplicaRequirements | None) -> int:
    s = cluster.resource_summary
    if s is None:
        return 0
    allocating = _ref_allocating(s, cluster.assumed) if cluster.assumed else dict(s.allocating)
    allowed = (
        _value(dict(s.allocatable), "pods") - _value(dict(s.allocated), "pods") - _value(allocating, "pods")
    )
    if allowed <= 0:
        return 0
    if request is None:
        return _int32(allowed)
    if s.allocatable_modelings:
        nodes = _ref_nodes(cluster)
        if nodes is not None:
            _preplace(nodes, cluster.assumed)
            one = (Component("replica", 1, ReplicaRequirements(resource_request=request.resource_request)),)
            return _int32(min(allowed, _simulate(nodes, one, MAX_INT32)))
    best = 2**63 - 1
    for name, q in request.resource_request:
        if q.value() <= 0:
            continue
        a = s.allocatable.get(name)
        if a is None:
            return 0
        zero = Quantity(0)
        avail = a - s.allocated.get(name, zero) - allocating.get(name, zero)
        if avail.value() <= 0:
            return 0
        n = avail.milli_value() // q.milli_value() if name == "cpu" else avail.value() // q.value()
        best = min(best, n)
    return _int32(min(allowed, best))


def _as_int(q: Quantity) -> int:
    return q.value() if q.format is Format.BINARY_SI else q.milli_value()


def ref_sets(cluster: ClusterInfo, components: tuple[Component, ...]) -> int:
    s = cluster.resource_summary
    if s is None:
        return 0
    zero = Quantity(0)
    available = {
        name: _as_int(q - s.allocated.get(name, zero) - s.allocating.get(name, zero))
        for name, q in s.allocatable.items()
    }
    allowed = (
        _value(dict(s.allocatable), "pods")
        - _value(dict(s.allocated), "pods")
        - _value(dict(s.allocating), "pods")
    )
    if allowed <= 0:
        return 0
    if cluster.assumed:
        for aw in cluster.assumed:
            for c in aw.components:
                allowed -= c.replicas
                if c.replica_requirements is None:
                    continue
                for name, q in c.replica_requirements.resource_request:
                    available[name] = available.get(name, 0) - _as_int(q) * c.replicas
        if allowed <= 0:
            return 0
    per_set_pods = sum(c.replicas for c in components)
    if per_set_pods <= 0:
        return _int32(allowed)
    sets = _int32(allowed // per_set_pods)
    per_set: dict[str, int] = {}
    for c in components:
        if c.replica_requirements is None:
            continue
        for name, q in c.replica_requirements.resource_request:
            per_set[name] = per_set.get(name, 0) + _as_int(q) * c.replicas
    if per_set and any(v != 0 for v in per_set.values()):
        for name, need in per_set.items():
            if need <= 0:
                continue
            if available.get(name, 0) <= 0:
                return 0
            sets = min(sets, _int32(available[name] // need))
    if s.allocatable_modelings:
        nodes = _ref_nodes(cluster)
        if nodes is not None:
            _preplace(nodes, cluster.assumed)
            sets = min(sets, _simulate(nodes, components, sets))
    return sets


# ---- inputs ---------------------------------------------------------------------------------------

cpu = st.sampled_from(["0", "100m", "250m", "500m", "1", "1500m", "2", "3"])
memory = st.sampled_from(["0", "64Mi", "128Mi", "256Mi", "1Gi", "2G"])
requests = st.fixed_dictionaries(
    {}, optional={"cpu": cpu, "memory": memory, "nvidia.com/gpu": st.sampled_from(["0", "1"])}
)


def _request(d: dict[str, str]) -> tuple[tuple[str, Quantity], ...]:
    return tuple((k, parse_quantity(v)) for k, v in sorted(d.items()))


components = st.builds(
    lambda name, replicas, req, with_req: Component(
        name, replicas, ReplicaRequirements(resource_request=_request(req)) if with_req else None
    ),
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 12),
    requests,
    st.booleans(),
)
assumed_workloads = st.lists(
    st.builds(
        lambda ns, cs: AssumedWorkload(ns, tuple(cs)),
        st.sampled_from(["ns", "other"]),
        st.lists(components, min_size=0, max_size=3),
    ),
    max_size=5,
)


@st.composite
def clusters(draw: st.DrawFn, name: str = "c") -> ClusterInfo:
    allocatable = {
        "cpu": draw(st.sampled_from(["0", "4", "16", "100", "7500m"])),
        "memory": draw(st.sampled_from(["8Gi", "64Gi", "1000Mi"])),
        "pods": str(draw(st.integers(0, 200))),
    }
    if draw(st.booleans()):
        allocatable["nvidia.com/gpu"] = str(draw(st.integers(0, 8)))
    allocated = {"cpu": draw(st.sampled_from(["0", "1", "2500m"])), "pods": str(draw(st.integers(0, 20)))}
    allocating = {
        "pods": draw(st.sampled_from(["0", "1", "1500m"])),
        "cpu": draw(st.sampled_from(["0", "300m"])),
    }
    models: tuple[ResourceModel, ...] = ()
    modelings: tuple[tuple[int, int], ...] = ()
    if draw(st.booleans()):
        models = (
            ResourceModel(
                0,
                (
                    ("cpu", parse_quantity("0"), parse_quantity("2")),
                    ("memory", parse_quantity("0"), parse_quantity("4Gi")),
                ),
            ),
            ResourceModel(
                1,
                (
                    ("cpu", parse_quantity("2"), parse_quantity("8")),
                    ("memory", parse_quantity("4Gi"), parse_quantity("16Gi")),
                ),
            ),
        )
        modelings = ((0, draw(st.integers(0, 4))), (1, draw(st.integers(0, 4))))
    summary = ResourceSummary(
        allocatable={k: parse_quantity(v) for k, v in allocatable.items()},
        allocated={k: parse_quantity(v) for k, v in allocated.items()},
        allocating={k: parse_quantity(v) for k, v in allocating.items()},
        allocatable_modelings=modelings,
    )
    return ClusterInfo(
        name=name, resource_summary=summary, resource_models=models, assumed=tuple(draw(assumed_workloads))
    )


PROFILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROFILE
@given(cluster=clusters(), request=st.one_of(st.none(), requests))
def test_replicas_match_the_literal_reference(cluster: ClusterInfo, request: dict[str, str] | None) -> None:
    requirements = ReplicaRequirements(resource_request=_request(request)) if request is not None else None
    expected = ref_replicas(cluster, requirements)
    assert GeneralEstimator().max_available_replicas([cluster], requirements) == [expected]


@PROFILE
@given(
    fleet=st.lists(clusters(), min_size=general.VECTOR_MIN, max_size=general.VECTOR_MIN + 4), request=requests
)
def test_the_vectorised_path_deducts_the_same(fleet: list[ClusterInfo], request: dict[str, str]) -> None:
    fleet = [dataclasses.replace(c, name=f"c{i}", memo={}) for i, c in enumerate(fleet)]
    requirements = ReplicaRequirements(resource_request=_request(request))
    expected = [ref_replicas(c, requirements) for c in fleet]
    assert GeneralEstimator().max_available_replicas(fleet, requirements) == expected


@PROFILE
@given(cluster=clusters(), wanted=st.lists(components, min_size=1, max_size=3))
def test_component_sets_match_the_literal_reference(cluster: ClusterInfo, wanted: list[Component]) -> None:
    assert estimate_component_sets(cluster, wanted) == ref_sets(cluster, tuple(wanted))


# ---- worked numbers -------------------------------------------------------------------------------


def _cluster(cpu_free: str, pods: int, assumed: tuple[AssumedWorkload, ...] = ()) -> ClusterInfo:
    summary = ResourceSummary(
        allocatable={"cpu": parse_quantity(cpu_free), "pods": parse_quantity(str(pods))},
        allocated={},
        allocating={},
    )
    return ClusterInfo(name="m1", resource_summary=summary, assumed=assumed)


def _workload(replicas: int, cpu_request: str, name: str = "w") -> AssumedWorkload:
    req = ReplicaRequirements(resource_request=(("cpu", parse_quantity(cpu_request)),))
    return AssumedWorkload("ns", (Component(name, replicas, req),))


ONE_CPU = ReplicaRequirements(resource_request=(("cpu", parse_quantity("1")),))


def test_three_assumed_bindings_of_ten_cpu_leave_seventy_of_a_hundred() -> None:
    estimator = GeneralEstimator()
    plain = _cluster("100", 1000)
    held = _cluster("100", 1000, tuple(_workload(10, "1", f"w{i}") for i in range(3)))
    assert estimator.max_available_replicas([plain], ONE_CPU) == [100]
    assert estimator.max_available_replicas([held], ONE_CPU) == [70]
    # pods too: 1000 - 30 assumed replicas
    assert estimator.max_available_replicas([held], None) == [970]


def test_cpu_is_deducted_in_millicores_and_zero_replicas_hold_nothing() -> None:
    # 3 × 333.4m rounds each request up to 334m: 1002m held of 1 cpu, so a 1m request fits... none.
    held = _cluster("1", 100, (_workload(3, "333400u"), _workload(0, "1")))
    tiny = ReplicaRequirements(resource_request=(("cpu", parse_quantity("1m")),))
    assert GeneralEstimator().max_available_replicas([held], tiny) == [0]
    assert GeneralEstimator().max_available_replicas([held], None) == [97]


def test_assumptions_exhausting_pods_give_zero() -> None:
    held = _cluster("100", 20, (_workload(20, "100m"),))
    assert GeneralEstimator().max_available_replicas([held], ONE_CPU) == [0]


def test_model_path_pre_places_assumptions_first_fit() -> None:
    # Two model nodes of 4 cpu; an assumed 3 × 1 cpu workload fills the first node to 1 cpu left.
    model = ResourceModel(0, (("cpu", parse_quantity("4"), parse_quantity("8")),))
    summary = ResourceSummary(
        allocatable={"cpu": parse_quantity("8"), "pods": parse_quantity("100")},
        allocated={},
        allocating={},
        allocatable_modelings=((0, 2),),
    )
    two_cpu = ReplicaRequirements(resource_request=(("cpu", parse_quantity("2")),))
    cluster = ClusterInfo(name="m", resource_summary=summary, resource_models=(model,))
    assert GeneralEstimator().max_available_replicas([cluster], two_cpu) == [4]
    held = dataclasses.replace(cluster, assumed=(_workload(3, "1"),), memo={})
    # node 1: 4 - 3 = 1 cpu (no 2-cpu replica); node 2: 4 cpu (two): the summary alone would say 2.
    assert GeneralEstimator().max_available_replicas([held], two_cpu) == [2]
    assert ref_replicas(held, two_cpu) == 2


def test_component_sets_deduct_assumptions_in_their_own_units() -> None:
    held = _cluster("10", 100, (_workload(4, "1"),))
    part = Component("web", 2, ReplicaRequirements(resource_request=(("cpu", parse_quantity("1")),)))
    # 10 cpu - 4 assumed = 6 cpu; a set needs 2 cpu: 3 sets
    assert estimate_component_sets(held, [part]) == 3
    assert estimate_component_sets(dataclasses.replace(held, assumed=(), memo={}), [part]) == 5
