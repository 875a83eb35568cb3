"""Invariants of scheduling, checked on generated fleets and bindings (hypothesis)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetsched.scheduler.assign import webster
from fleetsched.scheduler.outcome import FilterSummary, ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo

from .builders import BindingBuilder, a_binding, a_cluster, names, term

EXAMPLES = int(os.environ.get("SCHED_EXAMPLES", "80"))
settings.register_profile(
    "scheduler-dev", max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "scheduler-ci", max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
PROFILE = "scheduler-ci" if os.environ.get("CI") else "scheduler-dev"

NAMES = [f"m{i}" for i in range(8)]


@st.composite
def fleets(draw: st.DrawFn) -> list[ClusterInfo]:
    count = draw(st.integers(1, 8))
    clusters = []
    for name in NAMES[:count]:
        c = a_cluster(name).free(draw(st.integers(0, 40)))
        if draw(st.booleans()):
            c = c.region(draw(st.sampled_from(["r1", "r2", "r3"])))
        if draw(st.integers(0, 5)) == 0:
            c = c.tainted("k", "NoSchedule")
        if draw(st.integers(0, 9)) == 0:
            c = c.deleting()
        if draw(st.booleans()):
            c = c.allocatable(cpu=draw(st.sampled_from(["1", "4", "16", "2500m"])))
        clusters.append(c.build())
    return clusters


@st.composite
def bindings(draw: st.DrawFn) -> BindingBuilder:
    b = (
        a_binding()
        .replicas(draw(st.integers(0, 60)))
        .uid(
            draw(
                st.sampled_from(
                    ["", "4858ca61-3ff8-4095-8267-f3d059d8074c", "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"]
                )
            )
        )
    )
    strategy = draw(st.sampled_from(["duplicated", "aggregated", "dynamic", "static", "evenly"]))
    if strategy == "static":
        b = b.static(
            *[(n, draw(st.integers(1, 5))) for n in draw(st.lists(st.sampled_from(NAMES), max_size=4))]
        )
    elif strategy == "evenly":
        b = b.weighted_evenly()
    else:
        b = getattr(b, strategy)()
    if draw(st.booleans()):
        b = b.requests(cpu=draw(st.sampled_from(["100m", "1", "3"])))
    targets = draw(st.dictionaries(st.sampled_from(NAMES), st.integers(0, 20), max_size=3))
    if targets:
        b = b.targets(**targets)
    shape = draw(st.integers(0, 4))
    if shape == 1:
        b = b.spread("cluster", draw(st.integers(1, 2)), draw(st.integers(1, 4)))
    elif shape == 2:
        b = b.spread("region", 1, draw(st.integers(1, 2))).spread("cluster", 1, draw(st.integers(1, 4)))
    elif shape == 3:
        b = b.groups(
            term("g0", names(*draw(st.lists(st.sampled_from(NAMES), max_size=3)))), term("g1", names(*NAMES))
        )
    elif shape == 4:
        b = b.observing("g").groups(term("g", names("m0", "m1"), ("o", names(*NAMES[2:]))))
    if draw(st.integers(0, 5)) == 0:
        b = b.rescheduled(triggered="2026-01-02T00:00:00+00:00", last="2026-01-01T00:00:00+00:00")
    return b


def _run(
    binding: BindingBuilder,
    clusters: list[ClusterInfo],
    snapshot: Snapshot | None = None,
    scheduler: Scheduler | None = None,
) -> ScheduleResult:
    scheduler = scheduler or Scheduler()
    return scheduler.schedule(binding.build(), binding.status(), snapshot or Snapshot(clusters))


def _observable(result: ScheduleResult) -> tuple:
    cond = result.condition
    return (cond, result.clusters, result.affinity_name)


@settings(settings.get_profile(PROFILE))
@given(fleets(), bindings())
def test_results_are_sound(clusters: list[ClusterInfo], binding: BindingBuilder) -> None:
    result = _run(binding, clusters)
    b = binding.build()
    assert result.condition is not None
    targets = result.clusters
    if not result.condition.status:
        # Failures clear the targets (no cluster fits) or leave them alone.
        assert (targets == ()) == (result.condition.reason == "NoClusterFit")
        return
    assert targets is not None
    assert all(t.replicas >= 0 for t in targets)
    assert len({t.name for t in targets}) == len(targets)
    feasible = {v.cluster for a in result.attempts[-1:] for v in a.verdicts if v.feasible}
    assert {t.name for t in targets} <= feasible
    assert all(not c.deleting for c in clusters if c.name in {t.name for t in targets})
    strategy = result.strategy
    if b.replicas > 0 and strategy in ("Aggregated", "DynamicWeight", "StaticWeight"):
        assert sum(t.replicas for t in targets) == b.replicas
    if strategy == "Duplicated" and b.replicas > 0 and not result.attempts[-1].overflow:
        # (Overflow tiers are only valid with dynamic strategies; with Duplicated each tier gets its share.)
        assert all(t.replicas == b.replicas for t in targets)
    if b.replicas > 0:
        assert all(t.replicas > 0 for t in targets)


@settings(settings.get_profile(PROFILE))
@given(fleets(), bindings())
def test_filter_summary_counts_the_verdicts(clusters: list[ClusterInfo], binding: BindingBuilder) -> None:
    # The summary (what the explanation annotation records) is counted from the rejection vectors
    # without building verdicts; it must say what counting the verdicts one by one says.
    result = _run(binding, clusters)
    summaries = [a.summary for a in result.attempts]  # before any verdict is built
    assert summaries == [FilterSummary.of(a.verdicts) for a in result.attempts]
    for summary in summaries:
        assert summary.feasible + sum(n for _, n in summary.rejected) == len(clusters)
        assert [label for label, _ in summary.rejected] == sorted({label for label, _ in summary.rejected})


@settings(settings.get_profile(PROFILE))
@given(fleets(), bindings(), st.randoms(use_true_random=False))
def test_results_do_not_depend_on_cluster_order_or_warm_caches(
    clusters: list[ClusterInfo], binding: BindingBuilder, rnd
) -> None:  # type: ignore[no-untyped-def]
    cold = _run(binding, clusters)
    again = _run(binding, clusters)
    assert _observable(cold) == _observable(again)
    shuffled = list(clusters)
    rnd.shuffle(shuffled)
    assert {t.name: t.replicas for t in _run(binding, shuffled).clusters or ()} == {
        t.name: t.replicas for t in cold.clusters or ()
    }
    # A scheduler whose memo other bindings warmed on this snapshot gives the same answer.
    warm, scheduler = Snapshot(clusters), Scheduler()
    for other in (a_binding().replicas(7).dynamic(), a_binding().replicas(3).duplicated().tolerating("k")):
        _run(other, clusters, warm, scheduler)
    assert _observable(_run(binding, clusters, warm, scheduler)) == _observable(cold)


@settings(settings.get_profile(PROFILE))
@given(
    st.integers(0, 300),
    st.dictionaries(st.sampled_from(NAMES), st.integers(0, 1000), min_size=1),
    st.sampled_from(["", "4858ca61-3ff8-4095-8267-f3d059d8074c", "d43fdeeb-d750-4e2b-bee3-64eb94534f4c"]),
)
def test_webster_properties(seats: int, votes: dict[str, int], uid: str) -> None:
    out = webster(seats, votes, uid=uid)
    assert list(out) == sorted(votes)
    assert all(n >= 0 for n in out.values())
    if sum(votes.values()) == 0:
        assert sum(out.values()) == 0
        return
    assert sum(out.values()) == seats
    assert all(out[n] == 0 for n, v in votes.items() if v == 0)
    # House monotone: one more seat never takes a seat away from anyone.
    more = webster(seats + 1, votes, uid=uid)
    assert all(more[n] >= out[n] for n in votes)
    # Concordant: more votes never means fewer seats.
    for a, va in votes.items():
        for b, vb in votes.items():
            if va > vb:
                assert out[a] >= out[b]
