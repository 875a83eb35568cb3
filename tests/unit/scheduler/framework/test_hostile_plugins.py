"""A hostile or careless plugin reaches no further than its own binding (issue 23): whatever it
raises, whatever of the views it tries to change, whatever it answers as a score, however long it
takes. Each case fails on the code before the fix: a SystemExit went through the Framework, a
cleared label dict stayed cleared, a score of 10**100 or "7" was taken through int()."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from fleetsched.plugin import ClusterInfo, FilterContext, PostFilterResult, QueuedBindingInfo, Status
from fleetsched.scheduler.framework import containment
from fleetsched.scheduler.framework.containment import PluginError, PluginHealth
from fleetsched.scheduler.framework.profile import ExtensionPoint
from fleetsched.scheduler.framework.runtime import Framework
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.types import ClusterAffinity, ClusterSelection, LabelSelector

from ..builders import a_binding, a_cluster
from .test_runtime import FLEET, _registry_plus, _with_default_filters, profile_with, registry_of, schedule

RAISED: list[tuple[str, BaseException]] = [
    ("SystemExit", SystemExit(3)),
    ("KeyboardInterrupt", KeyboardInterrupt()),
    ("GeneratorExit", GeneratorExit()),
]


class Raising:
    """Raises ``error`` at every extension point."""

    name = "Hostile"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def less(self, a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
        raise self.error

    def pre_filter(self, ctx: FilterContext) -> Status:
        raise self.error

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        raise self.error

    def post_filter(self, ctx: FilterContext, diagnosis: Mapping[str, Status]) -> PostFilterResult:
        raise self.error

    def pre_score(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> Status:
        raise self.error

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        raise self.error

    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        raise self.error

    def reserve(self, ctx: FilterContext, targets: Sequence[Any]) -> Status:
        raise self.error

    def unreserve(self, ctx: FilterContext, targets: Sequence[Any]) -> None:
        raise self.error

    def permit(self, ctx: FilterContext, targets: Sequence[Any]) -> Status:
        raise self.error

    def pre_bind(self, ctx: FilterContext, targets: Sequence[Any]) -> Status:
        raise self.error

    def post_bind(self, ctx: FilterContext, targets: Sequence[Any]) -> None:
        raise self.error


class ScoreOnly:
    """A healthy score plugin whose NormalizeScore raises (the raise must come from NormalizeScore)."""

    name = "Hostile"

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        return 1

    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        raise self.error


def _failed_message(scheduler: Scheduler) -> str:
    result = schedule(scheduler, a_binding().replicas(1), FLEET)
    assert result.condition is not None and not result.condition.status
    return result.condition.message


@pytest.mark.parametrize(("kind", "error"), RAISED, ids=[k for k, _ in RAISED])
@pytest.mark.parametrize(
    ("point", "label"),
    [
        (ExtensionPoint.PRE_FILTER, "PreFilter"),
        (ExtensionPoint.FILTER, "Filter"),
        (ExtensionPoint.PRE_SCORE, "PreScore"),
        (ExtensionPoint.SCORE, "Score"),
    ],
)
def test_a_base_exception_at_a_scheduling_point_fails_only_that_binding(
    kind: str, error: BaseException, point: ExtensionPoint, label: str
) -> None:
    scheduler = Scheduler(
        profile=_with_default_filters("Hostile", point=point), registry=_registry_plus(Raising(error))
    )
    assert f"plugin Hostile failed at {label}: {kind}" in _failed_message(scheduler)


@pytest.mark.parametrize(("kind", "error"), RAISED, ids=[k for k, _ in RAISED])
def test_a_base_exception_at_normalize_score_and_post_filter(kind: str, error: BaseException) -> None:
    scheduler = Scheduler(
        profile=_with_default_filters("Hostile", point=ExtensionPoint.SCORE),
        registry=_registry_plus(ScoreOnly(error)),
    )
    assert f"plugin Hostile failed at NormalizeScore: {kind}" in _failed_message(scheduler)

    post = Scheduler(
        profile=_with_default_filters("Hostile", point=ExtensionPoint.POST_FILTER),
        registry=_registry_plus(Raising(error)),
    )
    nothing_fits = [a_cluster("m1").tainted("dedicated", "NoSchedule").free(10).build()]
    result = schedule(post, a_binding().replicas(1), nothing_fits)
    assert result.condition is not None and "plugin Hostile failed at PostFilter" in result.condition.message


@pytest.mark.parametrize(("kind", "error"), RAISED, ids=[k for k, _ in RAISED])
def test_a_base_exception_in_the_binding_cycle_fails_the_cycle_naming_the_point(
    kind: str, error: BaseException
) -> None:
    healthy = Scheduler()
    result = schedule(healthy, a_binding().replicas(1), FLEET)
    targets = result.clusters or ()
    for point, step in (
        (ExtensionPoint.RESERVE, "reserve"),
        (ExtensionPoint.PERMIT, "permit"),
        (ExtensionPoint.PRE_BIND, "pre_bind"),
    ):
        framework = Framework(registry_of(Raising(error)), profile_with({point: ["Hostile"]}))
        cycle = framework.binding_cycle(result.cycle_context(), targets)
        status = getattr(cycle, step)()
        label = {"reserve": "Reserve", "permit": "Permit", "pre_bind": "PreBind"}[step]
        assert status.code.value == "Error"
        assert f"plugin Hostile failed at {label}: {kind}" in status.message()
    # Unreserve and PostBind are informational: their raise is contained and changes nothing.
    framework = Framework(
        registry_of(Raising(error)), profile_with({ExtensionPoint.POST_BIND: ["Hostile"]})
    )
    framework.binding_cycle(result.cycle_context(), targets).post_bind()


def test_a_base_exception_in_queue_sort_keeps_karmadas_order() -> None:
    framework = Framework(
        registry_of(Raising(SystemExit(1))), profile_with({ExtensionPoint.QUEUE_SORT: ["Hostile"]})
    )
    high, low = QueuedBindingInfo("a", 5, 2.0), QueuedBindingInfo("b", 1, 1.0)
    assert framework.less(high, low) and not framework.less(low, high)


def test_a_factory_raising_system_exit_is_a_start_up_error() -> None:
    from fleetsched.scheduler.framework.interface import PluginArgsError
    from fleetsched.scheduler.framework.registry import Registry

    def factory(args: Any, handle: Any) -> Any:
        raise SystemExit(3)

    registry = Registry()
    registry.register("Hostile", factory)
    with pytest.raises(PluginArgsError, match=r"Hostile.*failed to start: SystemExit: 3"):
        Framework(registry, profile_with({ExtensionPoint.FILTER: ["Hostile"]}))


def test_the_processs_own_ctrl_c_still_stops_it() -> None:
    """A real SIGINT during a plugin call (simulate's main thread) is the process's, not the plugin's."""

    class Slow:
        name = "Hostile"

        def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the signal's handler raises here
            return Status.success()

    scheduler = Scheduler(profile=_with_default_filters("Hostile"), registry=_registry_plus(Slow()))
    with pytest.raises(KeyboardInterrupt), containment.interrupts_shut_down():
        schedule(scheduler, a_binding().replicas(1), FLEET)
    assert not containment.shutting_down()  # cleared for the next in-process caller
    # Outside that block a plugin's own KeyboardInterrupt is still the plugin's.
    contained = Scheduler(
        profile=_with_default_filters("Hostile"), registry=_registry_plus(Raising(KeyboardInterrupt()))
    )
    assert "plugin Hostile failed at Filter: KeyboardInterrupt" in _failed_message(contained)


# ---- deeply read-only views ------------------------------------------------------------------------


ZONE_A = ClusterAffinity(LabelSelector((("zone", "a"),)))


class Mutating:
    """Tries to change what it is given, in the way ``how`` says; passes every cluster otherwise."""

    name = "Hostile"

    def __init__(self, how: str) -> None:
        self.how = how

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        if self.how == "labels.clear":
            cluster.labels.clear()  # type: ignore[attr-defined]
        elif self.how == "labels[k]=v":
            cluster.labels["raw"] = "0"  # type: ignore[index]
        elif self.how == "del labels[k]":
            del cluster.labels["raw"]  # type: ignore[attr-defined]
        elif self.how == "dict.clear(labels)":
            dict.clear(cluster.labels)  # type: ignore[arg-type]
        elif self.how == "dict.__setitem__(labels)":
            dict.__setitem__(cluster.labels, "zone", "b")  # type: ignore[index]
        elif self.how == "dict.pop(allocatable)":
            assert cluster.resource_summary is not None
            dict.pop(cluster.resource_summary.allocatable, "pods")  # type: ignore[call-overload]
        elif self.how == "memo.clear":
            cluster.memo.clear()
        elif self.how == "list(memo)":
            list(cluster.memo)
        elif self.how == "allocatable.pop":
            assert cluster.resource_summary is not None
            cluster.resource_summary.allocatable.pop("pods")  # type: ignore[attr-defined]
        elif self.how == "cluster.labels=":
            cluster.labels = {}  # type: ignore[misc]
        elif self.how == "ctx.binding=":
            ctx.binding = None  # type: ignore[misc]
        return Status.success()

    def pre_score(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> Status:
        clusters.clear()  # type: ignore[attr-defined]
        return Status.success()

    def post_filter(self, ctx: FilterContext, diagnosis: Mapping[str, Status]) -> PostFilterResult:
        diagnosis.clear()  # type: ignore[attr-defined]
        return PostFilterResult()


@pytest.mark.parametrize(
    "how",
    [
        "labels.clear",
        "labels[k]=v",
        "del labels[k]",
        "dict.clear(labels)",
        "dict.__setitem__(labels)",
        "dict.pop(allocatable)",
        "memo.clear",
        "list(memo)",
        "allocatable.pop",
        "cluster.labels=",
        "ctx.binding=",
    ],
)
def test_a_mutation_attempt_fails_that_binding_and_no_later_decision_sees_it(how: str) -> None:
    clusters = [a_cluster(n).labeled(raw=str(10 * i), zone="a").free(10).build() for i, n in enumerate("xyz")]
    before = [(dict(c.labels), c.resource_summary) for c in clusters]
    hostile = Scheduler(profile=_with_default_filters("Hostile"), registry=_registry_plus(Mutating(how)))
    result = schedule(hostile, a_binding("first").replicas(1), clusters)
    assert result.condition is not None and not result.condition.status
    assert "plugin Hostile failed at Filter:" in result.condition.message
    assert [(dict(c.labels), c.resource_summary) for c in clusters] == before
    # The next decision, by another profile, on the very same cluster values, sees the labels.
    selective = Scheduler()
    chosen = schedule(
        selective,
        a_binding("second").replicas(1).affinity(ZONE_A).duplicated(),
        clusters,
    )
    assert chosen.scheduled and sorted(t.name for t in chosen.clusters or ()) == ["x", "y", "z"]
    assert (clusters[0].resource_summary.allocatable or {}).get("pods") is not None  # type: ignore[union-attr]


def test_pre_score_and_post_filter_get_what_they_cannot_change() -> None:
    pre_score = Scheduler(
        profile=_with_default_filters("Hostile", point=ExtensionPoint.PRE_SCORE),
        registry=_registry_plus(Mutating("none")),
    )
    assert "plugin Hostile failed at PreScore: AttributeError" in _failed_message(pre_score)
    post = Scheduler(
        profile=_with_default_filters("Hostile", point=ExtensionPoint.POST_FILTER),
        registry=_registry_plus(Mutating("none")),
    )
    nothing_fits = [a_cluster("m1").tainted("dedicated", "NoSchedule").free(10).build()]
    result = schedule(post, a_binding().replicas(1), nothing_fits)
    assert result.condition is not None
    message = result.condition.message
    refused = "AttributeError: 'mappingproxy' object has no attribute 'clear'"
    assert f"plugin Hostile failed at PostFilter: {refused}" in message


def test_a_batch_filter_cannot_change_the_positions_the_runtime_reads() -> None:
    class Batch:
        name = "Hostile"

        def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
            return Status.success()

        def filter_clusters(self, ctx: FilterContext, clusters: ClusterSelection) -> list[Status]:
            clusters.positions.clear()  # type: ignore[attr-defined]
            return [Status.success()] * len(clusters)

    scheduler = Scheduler(profile=_with_default_filters("Hostile"), registry=_registry_plus(Batch()))
    assert "plugin Hostile failed at Filter: AttributeError" in _failed_message(scheduler)


def test_plugins_get_a_handle_not_the_framework() -> None:
    seen: list[Any] = []

    def factory(args: Any, handle: Any) -> Any:
        seen.append(handle)
        return Mutating("none")

    from fleetsched.scheduler.framework.registry import Registry

    registry = Registry()
    registry.register("Hostile", factory)
    framework = Framework(registry, profile_with({ExtensionPoint.FILTER: ["Hostile"]}))
    (handle,) = seen
    assert handle is not framework and handle.profile_name == framework.profile_name
    assert not hasattr(handle, "filters") and not hasattr(handle, "health")
    with pytest.raises(AttributeError):
        handle.budget = None


# ---- scores ----------------------------------------------------------------------------------------


class Scoring:
    name = "Hostile"

    def __init__(self, value: Any, *, normalize: Any = None) -> None:
        self.value = value
        self.normalized = normalize

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> Any:
        return self.value


class Normalizing(Scoring):
    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[Any]:
        return [self.normalized for _ in scores]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (10**100, "returned an invalid score 1000000000"),
        (-(10**12), "returned an invalid score -1000000000000 for cluster m1, it should be in the range of"),
        (101, "returned an invalid score 101 for cluster m1, it should be in the range of [0, 100]"),
        (True, "returned a score of type bool (True) for cluster m1, it must be an int"),
        ("7", "returned a score of type str ('7') for cluster m1, it must be an int"),
        (7.5, "returned a score of type float (7.5) for cluster m1, it must be an int"),
    ],
    ids=["googol", "minus-1e12", "101", "True", "str", "float"],
)
def test_a_score_plugin_must_answer_an_int_within_bounds(value: Any, text: str) -> None:
    scheduler = Scheduler(
        profile=_with_default_filters("Hostile", point=ExtensionPoint.SCORE),
        registry=_registry_plus(Scoring(value)),
    )
    message = _failed_message(scheduler)
    assert f"plugin Hostile failed at Score: {text}" in message
    assert len(message) < 400  # a googol is quoted, not printed whole


class Exiting(int):
    """An int whose every comparison, hash and conversion raises ``SystemExit``."""

    def _exit(self, *args: Any) -> Any:
        raise SystemExit(9)

    __lt__ = __le__ = __gt__ = __ge__ = __eq__ = __ne__ = __hash__ = __index__ = __int__ = _exit
    __add__ = __radd__ = __mul__ = __rmul__ = __bool__ = _exit


@pytest.mark.parametrize("at", ["score", "normalize"])
def test_an_int_subclass_score_is_taken_as_its_plain_int_without_running_its_methods(at: str) -> None:
    plugin = Scoring(Exiting(7)) if at == "score" else Normalizing(5, normalize=Exiting(7))
    scheduler = Scheduler(
        profile=_with_default_filters("Hostile", point=ExtensionPoint.SCORE),
        registry=_registry_plus(plugin),
    )
    result = schedule(scheduler, a_binding().replicas(1), FLEET)  # SystemExit escaped here before
    assert result.scheduled


def test_check_scores_answers_plain_ints() -> None:
    got = containment.check_scores("P", "Score", [Exiting(3), 4], str, bounded=True)
    assert got == [3, 4] and [type(v) for v in got] == [int, int]
    with pytest.raises(PluginError, match=r"returned an invalid score 300 for cluster 0"):
        containment.check_scores("P", "Score", [Exiting(300)], str, bounded=True)


@pytest.mark.parametrize(
    ("raw", "normalized", "text"),
    [
        (10**100, 50, "failed at Score: returned an invalid score 1000000000"),
        (-(10**12), 50, None),  # a raw score may be anything an int64 holds when NormalizeScore maps it
        (5, 101, "failed at NormalizeScore: returned an invalid score 101 for cluster m1"),
        (5, -1, "failed at NormalizeScore: returned an invalid score -1 for cluster m1"),
        (5, True, "failed at NormalizeScore: returned a score of type bool (True) for cluster m1"),
        (5, 7.5, "failed at NormalizeScore: returned a score of type float (7.5) for cluster m1"),
    ],
)
def test_normalized_scores_must_be_within_0_and_100(raw: Any, normalized: Any, text: str | None) -> None:
    scheduler = Scheduler(
        profile=_with_default_filters("Hostile", point=ExtensionPoint.SCORE),
        registry=_registry_plus(Normalizing(raw, normalize=normalized)),
    )
    result = schedule(scheduler, a_binding().replicas(1), FLEET)
    assert result.condition is not None
    if text is None:
        assert result.scheduled
    else:
        assert not result.condition.status and f"plugin Hostile {text}" in result.condition.message


# ---- overruns and broken plugins -----------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_repeated_overruns_mark_a_plugin_broken_until_a_probe_passes() -> None:
    events: list[tuple[str, str, str]] = []
    before = containment.listen(
        lambda event, profile, plugin, point, detail: events.append((event, plugin, point))
    )
    try:
        clock = FakeClock()
        health = PluginHealth("p", overruns_to_break=3, cool_down=30.0, clock=clock)
        for _ in range(2):
            health.returned(health.admit("Slow", "Filter"), overran=True)
        health.returned(health.admit("Slow", "Filter"), overran=False)  # within budget: the count restarts
        for _ in range(3):
            health.returned(health.admit("Slow", "Filter"), overran=True)
        assert health.broken() == {"Slow"}
        with pytest.raises(PluginError, match="plugin Slow is marked broken after 3 overruns"):
            health.admit("Slow", "Filter")
        health.admit("Other", "Filter")  # only that plugin
        clock.now = 31.0
        probe = health.admit("Slow", "Filter")  # the cool-down passed: one probe
        with pytest.raises(PluginError, match="marked broken"):
            health.admit("Slow", "Filter")  # ... and only one at a time
        health.returned(probe, overran=True)  # a failed probe: broken for another cool-down
        with pytest.raises(PluginError):
            health.admit("Slow", "Filter")
        clock.now = 62.0
        health.returned(health.admit("Slow", "Filter"), overran=False)
        assert health.broken() == frozenset()
        health.admit("Slow", "Filter")
    finally:
        containment.listen(before)
    kinds = [e for e, _, _ in events]
    assert kinds.count("broken") == 1 and kinds.count("recovered") == 1 and "refused" in kinds


def test_a_stuck_call_holds_the_probe_back_until_it_returns() -> None:
    clock = FakeClock()
    health = PluginHealth("p", overruns_to_break=1, cool_down=10.0, clock=clock)
    stuck = health.admit("Hung", "Filter")
    health.stuck(stuck)  # the edge gave up on the binding while this call ran
    assert health.broken() == {"Hung"}
    clock.now = 100.0
    with pytest.raises(PluginError):
        health.admit("Hung", "Filter")  # still stuck: no probe, no further thread taken
    health.returned(stuck, overran=True)
    probe = health.admit("Hung", "Filter")
    assert probe.probe
    health.returned(probe, overran=False)
    assert health.broken() == frozenset()


def test_a_framework_fails_a_broken_plugins_bindings_at_once() -> None:
    class Slow:
        name = "Hostile"

        def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
            return Status.success()

    ticks = iter(range(0, 10_000, 5))  # every timer read is 5 s later: each call overruns 1 s
    scheduler = Scheduler(
        profile=profile_with({ExtensionPoint.FILTER: ["Hostile"]}, plugin_timeout_seconds=1.0),
        registry=registry_of(Slow()),
        timer=lambda: float(next(ticks)),
    )
    messages = [_failed_message(scheduler) for _ in range(4)]
    assert all("plugin Hostile failed at Filter: took" in m for m in messages[:3])
    assert "plugin Hostile is marked broken after 3 overruns of its time budget" in messages[3]


def test_the_read_only_values_still_pickle_serialise_and_compare() -> None:
    import pickle
    from types import MappingProxyType

    import orjson

    from fleetsched.scheduler.types import ClusterMemo, FrozenDict, FrozenList, NodeClaim, thaw

    cluster = a_cluster("m1").labeled(zone="a").free(10).build()
    cluster.memo[object()] = 1
    copy = pickle.loads(pickle.dumps(cluster))  # simulate --jobs with spawned workers
    assert copy.labels == {"zone": "a"} and type(copy.labels) is FrozenDict is MappingProxyType
    assert type(copy.memo) is ClusterMemo and len(copy.memo) == 0  # a cache: not carried over
    claim = NodeClaim(hard_node_affinity={"nodeSelectorTerms": [{"matchExpressions": [{"key": "k"}]}]})
    terms = claim.hard_node_affinity["nodeSelectorTerms"]  # type: ignore[index]
    assert type(terms) is FrozenList and isinstance(terms, list)
    with pytest.raises(TypeError):
        terms.append({})
    with pytest.raises(TypeError):
        terms[0]["matchExpressions"] = []
    with pytest.raises(TypeError):
        dict.clear(claim.hard_node_affinity)  # type: ignore[arg-type]
    assert orjson.loads(orjson.dumps(thaw(claim.hard_node_affinity))) == {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "k"}]}]
    }
    assert pickle.loads(pickle.dumps(claim)).hard_node_affinity == claim.hard_node_affinity
    assert dict(cluster.labels) == {"zone": "a"} and cluster.labels.copy() == {"zone": "a"}
