"""Extender semantics without a network, through the real path (``Scheduler(extenders=...)``, the
framework runtime): chaining filters, weighting scores, unresolvable rejections, ignorable."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from fleetsched.extender import metrics
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.interface import (
    MAX_EXTENDER_PRIORITY,
    MAX_SCORE,
    Code,
    Extender,
    ExtenderFilterResult,
    FilterContext,
    PostFilterResult,
    Status,
)
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry
from fleetsched.scheduler.framework.runtime import ConcurrentDriver, Driver
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo, SchedulingBinding

from ..builders import a_binding, a_cluster

BINDING = a_binding().replicas(1).duplicated()  # Duplicated: every feasible cluster is selected
CLUSTERS = tuple(a_cluster(n).free(10).build() for n in ("m1", "m2", "m3", "m4"))


@dataclass
class FakeExtender:
    """Rejects ``reject``, marks ``unresolvable``, scores from ``scores``; or raises ``fails``."""

    name: str
    reject: Mapping[str, str] = field(default_factory=dict)
    unresolvable: Mapping[str, str] = field(default_factory=dict)
    scores: Mapping[str, int] = field(default_factory=dict)
    weight: int = 1
    ignorable: bool = False
    supports_filter: bool = True
    supports_prioritize: bool = True
    fails: BaseException | None = None
    asked: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)

    def filter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> ExtenderFilterResult:
        self.asked.append(("filter", tuple(c.name for c in clusters)))
        if self.fails is not None:
            raise self.fails
        dropped = {**self.reject, **self.unresolvable}
        kept = tuple(c.name for c in clusters if c.name not in dropped)
        return ExtenderFilterResult(kept, dict(self.reject), dict(self.unresolvable))

    def prioritize(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> Mapping[str, int]:
        self.asked.append(("prioritize", tuple(c.name for c in clusters)))
        if self.fails is not None:
            raise self.fails
        return {c.name: self.scores[c.name] for c in clusters if c.name in self.scores}


def schedule(extenders: Sequence[FakeExtender], *, driver: Driver | None = None,
             scheduler: Scheduler | None = None) -> ScheduleResult:
    scheduler = scheduler or Scheduler(extenders=extenders, driver=driver,
                                       extender_skipped=metrics.count_ignored_failure)
    return scheduler.schedule(BINDING.build(), BINDING.status(), Snapshot(CLUSTERS))


def feasible(result: ScheduleResult) -> list[str]:
    return [v.cluster for v in result.attempts[0].verdicts if v.feasible]


def rejections(result: ScheduleResult) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {v.cluster: (v.plugin, v.reasons) for v in result.attempts[0].verdicts if not v.feasible}


def extender_scores(result: ScheduleResult) -> dict[str, int]:
    """Per feasible cluster, the extenders' weighted part of its total."""
    return {n.cluster: sum(p.weighted for p in n.parts if p.extender) for n in result.attempts[0].numbers}


def extender_parts(result: ScheduleResult, cluster: str) -> list[tuple[str, int, int, int]]:
    (numbers,) = [n for n in result.attempts[0].numbers if n.cluster == cluster]
    return [(p.plugin, p.raw, p.weight, p.weighted) for p in numbers.parts if p.extender]


def skipped(result: ScheduleResult) -> list[tuple[str, str]]:
    return [(s.plugin, s.point) for s in result.attempts[0].skipped]


def test_the_fake_satisfies_the_runtimes_protocol() -> None:
    fake: Extender = FakeExtender("e")
    assert isinstance(fake, Extender)


def test_the_score_rule_is_kubes() -> None:
    assert MAX_SCORE // MAX_EXTENDER_PRIORITY == 10
    result = schedule([FakeExtender("seven", scores={"m1": 7}, weight=3),
                       FakeExtender("top", scores={"m1": MAX_EXTENDER_PRIORITY})])
    assert extender_parts(result, "m1") == [("seven", 7, 3, 7 * 3 * 10), ("top", 10, 1, MAX_SCORE)]


def test_filters_chain_and_scores_add_up_with_weights() -> None:
    first = FakeExtender("first", reject={"m2": "over budget"}, scores={"m1": 2, "m3": 10})
    second = FakeExtender("second", unresolvable={"m4": "no GPUs"}, scores={"m1": 5}, weight=3)
    result = schedule([first, second])
    assert second.asked[0] == ("filter", ("m1", "m3", "m4"))  # only what the first one kept
    assert feasible(result) == ["m1", "m3"]
    assert rejections(result) == {"m2": ("first", ("over budget",)), "m4": ("second", ("no GPUs",))}
    assert [(v.extender, v.kept, v.rejected) for v in result.attempts[0].extenders] == [
        ("first", 3, 1), ("second", 2, 1)]
    assert extender_scores(result) == {"m1": 2 * 10 + 5 * 3 * 10, "m3": 100}
    assert extender_parts(result, "m3") == [("first", 10, 1, 100), ("second", 0, 3, 0)]
    assert skipped(result) == []


class Diagnosed:
    """A PostFilter plugin that keeps the diagnosis it is given (each rejection's Status)."""

    name = "Diagnosed"

    def __init__(self) -> None:
        self.diagnosis: dict[str, Status] = {}

    def post_filter(self, ctx: FilterContext, diagnosis: Mapping[str, Status]) -> PostFilterResult:
        self.diagnosis = dict(diagnosis)
        return PostFilterResult(explanation="nothing fits")


def test_unresolvable_is_told_apart_and_wins_over_failed() -> None:
    diagnosed = Diagnosed()
    registry = defaults.in_tree_registry()
    registry.register(diagnosed.name, lambda args, handle: diagnosed)
    profile = defaults.default_profile()
    plugins = {**profile.plugins, ExtensionPoint.POST_FILTER: (PluginEntry(diagnosed.name),)}
    profile = dataclasses.replace(profile, plugins=plugins)
    everything = FakeExtender("all", reject={"m1": "over budget", "m3": "also over budget"},
                              unresolvable={"m2": "no GPUs", "m3": "no GPUs", "m4": "no GPUs"})
    result = schedule([], scheduler=Scheduler(extenders=[everything], profile=profile, registry=registry))
    assert not result.scheduled
    assert {name: (s.code, s.reasons, s.plugin) for name, s in diagnosed.diagnosis.items()} == {
        "m1": (Code.UNSCHEDULABLE, ("over budget",), "all"),
        "m2": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("no GPUs",), "all"),
        "m3": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("no GPUs",), "all"),
        "m4": (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("no GPUs",), "all"),
    }


def test_once_nothing_is_left_no_one_else_is_asked() -> None:
    everything = FakeExtender("all", reject={c.name: "no" for c in CLUSTERS})
    later = FakeExtender("later")
    result = schedule([everything, later])
    assert feasible(result) == [] and later.asked == [] and not result.scheduled
    assert result.attempts[0].numbers == ()


def test_an_unlisted_candidate_is_rejected_with_a_reason() -> None:
    class Terse(FakeExtender):
        def filter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> ExtenderFilterResult:
            return ExtenderFilterResult(("m1",), {}, {})

    result = schedule([Terse("terse")])
    assert rejections(result)["m2"] == ("terse", ("cluster(s) rejected by extender terse",))


def test_verbs_an_extender_lacks_are_not_called() -> None:
    scorer = FakeExtender("scorer", reject={"m1": "x"}, supports_filter=False, scores={"m1": 1})
    sieve = FakeExtender("sieve", supports_prioritize=False)
    result = schedule([scorer, sieve])
    assert [verb for verb, _ in scorer.asked] == ["prioritize"]
    assert [verb for verb, _ in sieve.asked] == ["filter"]
    assert extender_scores(result)["m1"] == 10 and len(feasible(result)) == 4


@pytest.mark.parametrize(("fault", "kind", "message"), [
    pytest.param(ExtenderError("e", "filter", FaultKind.SLOW, "no answer within 1 s"), FaultKind.SLOW,
                 "slow: no answer within 1 s", id="typed"),
    pytest.param(ValueError("bug in the extender object"), FaultKind.ERRORING, "bug in the extender object",
                 id="anything else"),
])
def test_ignorable_skips_and_counts_while_not_ignorable_fails_the_binding(
        fault: Exception, kind: FaultKind, message: str) -> None:
    before = metrics.IGNORED_FAILURES.labels("e", "filter", str(kind))._value.get()
    result = schedule([FakeExtender("e", fails=fault, ignorable=True)])
    assert len(feasible(result)) == 4 and result.scheduled
    assert skipped(result) == [("e", "ExtenderFilter"), ("e", "ExtenderPrioritize")]
    assert result.attempts[0].skipped[0].reason == message
    assert result.attempts[0].extenders[0].skipped == message
    assert metrics.IGNORED_FAILURES.labels("e", "filter", str(kind))._value.get() == before + 1
    result = schedule([FakeExtender("e", fails=fault)])
    assert result.condition is not None and not result.condition.status
    assert f"extender e failed at Filter: {message}" in result.condition.message
    assert result.clusters is None  # nothing half-written: spec.clusters is left as it was


def test_an_out_of_range_score_from_any_extender_object_is_malformed() -> None:
    wild = FakeExtender("wild", scores={"m1": 11})
    result = schedule([wild])
    assert result.condition is not None and not result.condition.status
    assert "extender wild failed at Prioritize: malformed answer: score 11 outside 0..10" in (
        result.condition.message)
    wild.ignorable = True
    before = metrics.IGNORED_FAILURES.labels("wild", "prioritize", "malformed")._value.get()
    result = schedule([wild])
    assert extender_scores(result) == dict.fromkeys(["m1", "m2", "m3", "m4"], 0)
    assert extender_parts(result, "m1") == []  # it did not answer, so it has no part
    assert skipped(result) == [("wild", "ExtenderPrioritize")]
    assert metrics.IGNORED_FAILURES.labels("wild", "prioritize", "malformed")._value.get() == before + 1


def test_the_concurrent_driver_gives_the_same_outcome() -> None:
    def extenders() -> list[FakeExtender]:
        return [FakeExtender("first", reject={"m2": "over budget"}, scores={"m1": 2}),
                FakeExtender("second", scores={"m3": 4}, weight=2),
                FakeExtender("broken", fails=RuntimeError("x"), ignorable=True)]

    serial = schedule(extenders())
    with ThreadPoolExecutor(4) as pool:
        concurrent = schedule(extenders(), driver=ConcurrentDriver(pool))
    assert extender_scores(concurrent) == extender_scores(serial) == {"m1": 20, "m3": 80, "m4": 0}
    assert rejections(concurrent) == rejections(serial)
    assert skipped(concurrent) == skipped(serial) == [("broken", "ExtenderFilter"),
                                                      ("broken", "ExtenderPrioritize")]
    assert concurrent.clusters == serial.clusters


def test_the_skip_counter_loads_without_the_http_client() -> None:
    # the scheduler process wires metrics.count_ignored_failure at start-up, extenders or not; it
    # must not drag aiohttp or pydantic in
    code = ("import sys, fleetsched.extender.metrics, fleetsched.extender.errors\n"
            "heavy = ('aiohttp', 'pydantic', 'grpc')\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith(heavy))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
