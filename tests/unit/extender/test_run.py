"""Extender semantics without a network: chaining filters, weighting scores, ignorable."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pytest

from fleetsched.extender import metrics
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.extender.run import (
    MAX_CLUSTER_SCORE,
    MAX_EXTENDER_PRIORITY,
    AsyncExtender,
    ClusterRejection,
    Extender,
    ExtenderScore,
    FilterResult,
    run_extenders,
    run_extenders_async,
    weighted_score,
)
from fleetsched.scheduler.types import ClusterInfo, SchedulingBinding

BINDING = SchedulingBinding(kind="ResourceBinding", name="b", namespace="ns")
CLUSTERS = tuple(ClusterInfo(name=n) for n in ("m1", "m2", "m3", "m4"))


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

    def filter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> FilterResult:
        self.asked.append(("filter", tuple(c.name for c in clusters)))
        if self.fails is not None:
            raise self.fails
        dropped = {**self.reject, **self.unresolvable}
        kept = tuple(c.name for c in clusters if c.name not in dropped)
        return FilterResult(kept, dict(self.reject), dict(self.unresolvable))

    def prioritize(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> Mapping[str, int]:
        self.asked.append(("prioritize", tuple(c.name for c in clusters)))
        if self.fails is not None:
            raise self.fails
        return {c.name: self.scores[c.name] for c in clusters if c.name in self.scores}

    async def afilter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> FilterResult:
        return self.filter(binding, clusters)

    async def aprioritize(
        self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]
    ) -> Mapping[str, int]:
        return self.prioritize(binding, clusters)


def test_the_fake_satisfies_both_protocols() -> None:
    fake = FakeExtender("e")
    blocking: Extender = fake
    awaited: AsyncExtender = fake
    assert isinstance(blocking, Extender) and isinstance(awaited, AsyncExtender)


def test_the_score_rule_is_kubes() -> None:
    assert MAX_CLUSTER_SCORE // MAX_EXTENDER_PRIORITY == 10
    assert weighted_score(7, 3) == 7 * 3 * 10
    assert weighted_score(MAX_EXTENDER_PRIORITY, 1) == MAX_CLUSTER_SCORE


def test_filters_chain_and_scores_add_up_with_weights() -> None:
    first = FakeExtender("first", reject={"m2": "over budget"}, scores={"m1": 2, "m3": 10})
    second = FakeExtender("second", unresolvable={"m4": "no GPUs"}, scores={"m1": 5}, weight=3)
    outcome = run_extenders([first, second], BINDING, CLUSTERS)
    assert second.asked[0] == ("filter", ("m1", "m3", "m4"))  # only what the first one kept
    assert [c.name for c in outcome.feasible] == ["m1", "m3"]
    assert outcome.rejections == {"m2": ClusterRejection("first", "over budget"),
                                  "m4": ClusterRejection("second", "no GPUs", unresolvable=True)}
    assert outcome.rejections["m2"].message == "extender first: over budget"
    assert outcome.scores == {"m1": 2 * 10 + 5 * 3 * 10, "m3": 100}
    assert outcome.score_parts["m3"] == (ExtenderScore("first", 10, 1, 100), ExtenderScore("second", 0, 3, 0))
    assert outcome.skipped == ()


def test_once_nothing_is_left_no_one_else_is_asked() -> None:
    everything = FakeExtender("all", reject={c.name: "no" for c in CLUSTERS})
    later = FakeExtender("later")
    outcome = run_extenders([everything, later], BINDING, CLUSTERS)
    assert outcome.feasible == () and later.asked == [] and outcome.scores == {}


def test_an_unlisted_candidate_is_rejected_with_a_reason() -> None:
    class Terse(FakeExtender):
        def filter(self, binding: SchedulingBinding, clusters: Sequence[ClusterInfo]) -> FilterResult:
            return FilterResult(("m1",), {}, {})

    outcome = run_extenders([Terse("terse")], BINDING, CLUSTERS)
    assert outcome.rejections["m2"] == ClusterRejection("terse", "not kept by the extender")


def test_verbs_an_extender_lacks_are_not_called() -> None:
    scorer = FakeExtender("scorer", reject={"m1": "x"}, supports_filter=False, scores={"m1": 1})
    sieve = FakeExtender("sieve", supports_prioritize=False)
    outcome = run_extenders([scorer, sieve], BINDING, CLUSTERS)
    assert [verb for verb, _ in scorer.asked] == ["prioritize"]
    assert [verb for verb, _ in sieve.asked] == ["filter"]
    assert outcome.scores["m1"] == 10 and len(outcome.feasible) == 4


@pytest.mark.parametrize("fault", [
    pytest.param(ExtenderError("e", "filter", FaultKind.SLOW, "no answer within 1 s"), id="typed"),
    pytest.param(ValueError("bug in the extender object"), id="anything else"),
])
def test_ignorable_skips_and_counts_while_not_ignorable_raises(fault: Exception) -> None:
    before = metrics.IGNORED_FAILURES.labels("e", "filter", "slow" if isinstance(fault, ExtenderError)
                                             else "erroring")._value.get()
    outcome = run_extenders([FakeExtender("e", fails=fault, ignorable=True)], BINDING, CLUSTERS)
    assert len(outcome.feasible) == 4
    assert [s.verb for s in outcome.skipped] == ["filter", "prioritize"]
    assert outcome.skipped[0].message.startswith("extender e skipped (ignorable): filter failed (")
    after = metrics.IGNORED_FAILURES.labels("e", "filter", str(outcome.skipped[0].kind))._value.get()
    assert after == before + 1
    with pytest.raises(ExtenderError) as caught:
        run_extenders([FakeExtender("e", fails=fault)], BINDING, CLUSTERS)
    assert caught.value.extender == "e" and caught.value.verb == "filter"
    if not isinstance(fault, ExtenderError):
        assert str(caught.value) == ("extender e filter failed (erroring): "
                                     "unexpected ValueError: bug in the extender object")


def test_an_out_of_range_score_from_any_extender_object_is_malformed() -> None:
    wild = FakeExtender("wild", scores={"m1": 11})
    with pytest.raises(ExtenderError, match=r"^extender wild prioritize failed \(malformed\): score 11 for"):
        run_extenders([wild], BINDING, CLUSTERS)
    wild.ignorable = True
    outcome = run_extenders([wild], BINDING, CLUSTERS)
    assert outcome.scores == dict.fromkeys(["m1", "m2", "m3", "m4"], 0)
    assert [(s.verb, s.kind) for s in outcome.skipped] == [("prioritize", FaultKind.MALFORMED)]


async def test_the_async_face_gives_the_same_outcome() -> None:
    def extenders() -> list[FakeExtender]:
        return [FakeExtender("first", reject={"m2": "over budget"}, scores={"m1": 2}),
                FakeExtender("second", scores={"m3": 4}, weight=2),
                FakeExtender("broken", fails=RuntimeError("x"), ignorable=True)]

    blocking = run_extenders(extenders(), BINDING, CLUSTERS)
    awaited = await run_extenders_async(extenders(), BINDING, CLUSTERS)
    assert awaited == blocking
    assert blocking.scores == {"m1": 20, "m3": 80, "m4": 0}


def test_the_semantics_load_without_the_http_client() -> None:
    # the framework runtime (pure core) may import run.py; it must not drag aiohttp or pydantic in
    import subprocess
    import sys

    code = ("import sys, fleetsched.extender.run\n"
            "heavy = ('aiohttp', 'pydantic', 'grpc')\n"
            "print(','.join(sorted(m for m in sys.modules if m.startswith(heavy))))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == ""
