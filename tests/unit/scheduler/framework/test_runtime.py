"""The Framework runs each extension point in the documented order with the documented inputs."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest

from fleetsched.plugin import (
    ClusterFacet,
    ClusterInfo,
    FilterContext,
    Handle,
    PostFilterResult,
    QueuedBindingInfo,
    Status,
    TargetCluster,
)
from fleetsched.scheduler.framework import defaults
from fleetsched.scheduler.framework.interface import (
    FilterPlugin,
    NormalizeScorePlugin,
    PermitPlugin,
    PluginArgsError,
    PostFilterPlugin,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
)
from fleetsched.scheduler.framework.profile import ExtensionPoint, PluginEntry, Profile
from fleetsched.scheduler.framework.registry import DuplicatePluginError, Registry
from fleetsched.scheduler.framework.runtime import Framework, FrameworkError
from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot

from ..builders import BindingBuilder, a_binding, a_cluster

ALL_POINTS = tuple(p for p in ExtensionPoint if p is not ExtensionPoint.QUEUE_SORT)


class Recorder:
    """Implements every extension point and records each call with what it was given."""

    name = "Recorder"

    def __init__(
        self, reject: frozenset[str] = frozenset(), calls: list[tuple[Any, ...]] | None = None
    ) -> None:
        self.reject = reject
        self.calls: list[tuple[Any, ...]] = calls if calls is not None else []

    def pre_filter(self, ctx: FilterContext) -> Status:
        ctx.state.write(self.name, "from PreFilter")
        self.calls.append(("PreFilter", ctx.binding.name))
        return Status.success()

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        self.calls.append(("Filter", cluster.name, ctx.state.get(self.name)))
        if cluster.name in self.reject:
            return Status.unschedulable("rejected by Recorder")
        return Status.success()

    def post_filter(self, ctx: FilterContext, diagnosis: Mapping[str, Status]) -> PostFilterResult:
        self.calls.append(("PostFilter", tuple(sorted(diagnosis))))
        return PostFilterResult(explanation="nothing fits", proposal="untaint a cluster")

    def pre_score(self, ctx: FilterContext, clusters: Sequence[ClusterInfo]) -> Status:
        self.calls.append(("PreScore", tuple(c.name for c in clusters)))
        return Status.success()

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        self.calls.append(("Score", cluster.name))
        return int(cluster.labels.get("raw", "0"))

    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        self.calls.append(("NormalizeScore", tuple(c.name for c in clusters), tuple(scores)))
        top = max(scores) or 1
        return [s * 100 // top for s in scores]

    def reserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self.calls.append(("Reserve", tuple(t.name for t in targets), ctx.state.read(self.name)))
        return Status.success()

    def unreserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        self.calls.append(("Unreserve", tuple(t.name for t in targets)))

    def permit(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self.calls.append(("Permit", tuple(t.name for t in targets)))
        return Status.success()

    def pre_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self.calls.append(("PreBind", tuple(t.name for t in targets)))
        return Status.success()

    def post_bind(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        self.calls.append(("PostBind", tuple(t.name for t in targets)))


# mypy checks the recorder against every Protocol it claims.
_checked: tuple[
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    NormalizeScorePlugin,
    ReservePlugin,
    PermitPlugin,
] = (Recorder(),) * 8


def profile_with(plugins: Mapping[ExtensionPoint, Sequence[str | tuple[str, int]]], **kw: Any) -> Profile:
    def entry(item: str | tuple[str, int]) -> PluginEntry:
        return PluginEntry(item) if isinstance(item, str) else PluginEntry(item[0], item[1])

    return Profile(plugins={point: tuple(entry(i) for i in items) for point, items in plugins.items()}, **kw)


def registry_of(*plugins: Any) -> Registry:
    registry = Registry()
    for plugin in plugins:
        registry.register(plugin.name, lambda args, handle, p=plugin: p)
    return registry


def schedule(scheduler: Scheduler, binding: BindingBuilder, clusters: list[ClusterInfo]) -> ScheduleResult:
    return scheduler.schedule(binding.build(), binding.status(), Snapshot(clusters))


FLEET = [
    a_cluster("m1").labeled(raw="10").free(10).build(),
    a_cluster("m2").labeled(raw="40").free(10).build(),
    a_cluster("m3").labeled(raw="20").free(10).deleting().build(),
    a_cluster("m4").labeled(raw="30").free(10).build(),
]


def test_every_point_is_called_in_order_with_its_inputs() -> None:
    recorder = Recorder(reject=frozenset({"m4"}))
    profile = profile_with({point: ["Recorder"] for point in ALL_POINTS})
    scheduler = Scheduler(profile=profile, registry=registry_of(recorder))
    result = schedule(scheduler, a_binding("web").replicas(2).duplicated(), FLEET)
    assert result.scheduled
    assert recorder.calls == [
        ("PreFilter", "web"),
        # m3 is being deleted: never offered; CycleState written at PreFilter is read at Filter.
        ("Filter", "m1", "from PreFilter"),
        ("Filter", "m2", "from PreFilter"),
        ("Filter", "m4", "from PreFilter"),
        ("PreScore", ("m1", "m2")),
        ("Score", "m1"),
        ("Score", "m2"),
        ("NormalizeScore", ("m1", "m2"), (10, 40)),
    ]
    recorder.calls.clear()
    ctx = result.cycle_context()
    targets = result.clusters or ()
    cycle = scheduler.framework.binding_cycle(ctx, targets)
    assert cycle.reserve().is_success
    assert cycle.permit().is_success
    assert cycle.pre_bind().is_success
    cycle.post_bind()
    names = tuple(t.name for t in targets)
    assert recorder.calls == [
        ("Reserve", names, "from PreFilter"),  # the scheduling cycle's CycleState carries over
        ("Permit", names),
        ("PreBind", names),
        ("PostBind", names),
    ]


def test_post_filter_runs_only_when_nothing_fits_and_is_explained() -> None:
    recorder = Recorder(reject=frozenset({"m1", "m2", "m4"}))
    profile = profile_with({p: ["Recorder"] for p in (ExtensionPoint.FILTER, ExtensionPoint.POST_FILTER)})
    scheduler = Scheduler(profile=profile, registry=registry_of(recorder))
    result = schedule(scheduler, a_binding().replicas(1), FLEET)
    assert result.condition is not None and result.condition.reason == "NoClusterFit"
    assert recorder.calls[-1] == ("PostFilter", ("m1", "m2", "m4"))
    assert result.attempts[0].post_filter == (("Recorder", "nothing fits (proposal: untaint a cluster)"),)
    recorder.calls.clear()
    fits = Scheduler(profile=profile, registry=registry_of(Recorder(calls=recorder.calls)))
    assert schedule(fits, a_binding().replicas(1), FLEET).scheduled
    assert not [c for c in recorder.calls if c[0] == "PostFilter"]


@dataclass
class LabelScore:
    """Scores a cluster by one of its labels; optionally normalises to 0..100 of the maximum."""

    name: str
    label: str
    normalize: bool = False

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        return int(cluster.labels.get(self.label, "0"))


@dataclass
class NormalizedLabelScore(LabelScore):
    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        top = max(scores) or 1
        return [s * 100 // top for s in scores]


def test_weights_and_normalize_score_make_the_total() -> None:
    fleet = [
        a_cluster("a").labeled(x="1", y="50").free(10).build(),
        a_cluster("b").labeled(x="4", y="10").free(10).build(),
    ]
    registry = registry_of(NormalizedLabelScore("X", "x"), LabelScore("Y", "y"))
    profile = profile_with({ExtensionPoint.SCORE: [("X", 2), ("Y", 3)]})
    result = schedule(
        Scheduler(profile=profile, registry=registry), a_binding().replicas(1).duplicated(), fleet
    )
    numbers = {n.cluster: n for n in result.attempts[0].numbers}
    # a: X 1 -> 25 (x2 = 50), Y 50 (x3 = 150); b: X 4 -> 100 (x2 = 200), Y 10 (x3 = 30)
    assert numbers["a"].score == 200 and numbers["b"].score == 230
    assert [(p.plugin, p.raw, p.normalized, p.weight, p.weighted) for p in numbers["a"].parts] == [
        ("X", 1, 25, 2, 50),
        ("Y", 50, 50, 3, 150),
    ]
    assert not numbers["a"].plain
    # Scores order the candidates: b's higher total sorts it first.
    assert [n.cluster for n in result.attempts[0].numbers] == ["b", "a"]
    # Weight 0 removes a plugin's influence.
    profile = profile_with({ExtensionPoint.SCORE: [("X", 0), ("Y", 1)]})
    result = schedule(
        Scheduler(profile=profile, registry=registry), a_binding().replicas(1).duplicated(), fleet
    )
    assert [n.cluster for n in result.attempts[0].numbers] == ["a", "b"]


def test_the_default_profile_is_the_plain_karmada_sum() -> None:
    fleet = [a_cluster("a").free(10).build(), a_cluster("b").free(10).build()]
    result = schedule(Scheduler(), a_binding().replicas(1).duplicated().targets(b=1), fleet)
    numbers = {n.cluster: n for n in result.attempts[0].numbers}
    assert numbers["b"].scores == (("ClusterAffinity", 0), ("ClusterLocality", 100))
    assert numbers["b"].score == 100 and numbers["b"].plain
    assert result.profile == "default-scheduler"


def test_default_profile_matches_the_plugins_flag() -> None:
    profile = defaults.default_profile("*,-ClusterLocality")
    assert [e.name for e in profile.enabled(ExtensionPoint.FILTER)] == [
        "APIEnablement",
        "TaintToleration",
        "ClusterAffinity",
        "SpreadConstraint",
        "ClusterEviction",
    ]
    assert profile.enabled(ExtensionPoint.SCORE) == (PluginEntry("ClusterAffinity", 1),)
    assert profile.enabled(ExtensionPoint.QUEUE_SORT) == (PluginEntry("PrioritySort"),)
    gated = defaults.default_profile(workload_affinity=True)
    assert "WorkloadAntiAffinity" in [e.name for e in gated.enabled(ExtensionPoint.FILTER)]


# ---- failures ------------------------------------------------------------------------------------


class Exploding:
    name = "Exploding"

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        raise RuntimeError("boom")

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        raise RuntimeError("bang")


def _with_default_filters(*extra: str, point: ExtensionPoint = ExtensionPoint.FILTER, **kw: Any) -> Profile:
    base = defaults.default_profile()
    plugins = dict(base.plugins)
    plugins[point] = (*plugins.get(point, ()), *(PluginEntry(n) for n in extra))
    return Profile(plugins=plugins, **kw)


def _registry_plus(*plugins: Any) -> Registry:
    registry = defaults.in_tree_registry()
    registry.merge(registry_of(*plugins))
    return registry


@pytest.mark.parametrize(
    ("point", "text"),
    [
        pytest.param(
            ExtensionPoint.FILTER, "plugin Exploding failed at Filter: RuntimeError: boom", id="filter"
        ),
        pytest.param(
            ExtensionPoint.SCORE, "plugin Exploding failed at Score: RuntimeError: bang", id="score"
        ),
    ],
)
def test_a_raising_plugin_fails_the_binding_naming_it(point: ExtensionPoint, text: str) -> None:
    scheduler = Scheduler(
        profile=_with_default_filters("Exploding", point=point), registry=_registry_plus(Exploding())
    )
    result = schedule(scheduler, a_binding().replicas(1), FLEET)
    assert result.condition is not None
    assert (result.condition.status, result.condition.reason) == (False, "SchedulerError")
    assert text in result.condition.message
    assert result.clusters is None  # nothing but the condition is written


def test_an_ignorable_raising_plugin_is_skipped_and_said_so() -> None:
    profile = _with_default_filters("Exploding", ignorable_plugins=frozenset({"Exploding"}))
    scheduler = Scheduler(profile=profile, registry=_registry_plus(Exploding()))
    result = schedule(scheduler, a_binding().replicas(1).duplicated(), FLEET)
    assert result.scheduled
    assert {t.name for t in result.clusters or ()} == {"m1", "m2", "m4"}
    (skipped,) = result.attempts[0].skipped
    assert (skipped.plugin, skipped.point) == ("Exploding", "Filter")
    assert "boom" in skipped.reason


class SlowFilter:
    """Passes everything; the fake timer makes each of its calls take 2 seconds."""

    name = "SlowFilter"

    def __init__(self, clock: list[float]) -> None:
        self.clock = clock

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        self.clock[0] += 2.0
        return Status.success()


@pytest.mark.parametrize("ignorable", [False, True])
def test_a_plugin_over_its_time_budget(ignorable: bool) -> None:
    now = [0.0]
    profile = _with_default_filters(
        "SlowFilter",
        plugin_timeout_seconds=1.0,
        ignorable_plugins=frozenset({"SlowFilter"}) if ignorable else frozenset(),
    )
    scheduler = Scheduler(profile=profile, registry=_registry_plus(SlowFilter(now)), timer=lambda: now[0])
    result = schedule(scheduler, a_binding().replicas(1).duplicated(), FLEET)
    assert result.condition is not None
    if ignorable:
        assert result.scheduled
        assert "over its time budget of 1s" in result.attempts[0].skipped[0].reason
    else:
        assert not result.condition.status
        assert "plugin SlowFilter failed at Filter: took 6.000s, over its time budget of 1s" in (
            result.condition.message
        )


# ---- construction --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CostArgs:
    label: str
    scale: int = 1


class CostScore:
    name = "Cost"
    args_model = CostArgs

    def __init__(self, args: CostArgs) -> None:
        self.args = args

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        return int(cluster.labels.get(self.args.label, "0")) * self.args.scale


def _cost_registry() -> Registry:
    registry = Registry()

    def new(args: CostArgs, handle: Handle) -> CostScore:
        return CostScore(args)

    registry.register("Cost", new, args_model=CostArgs)
    return registry


def test_plugin_args_are_validated_into_the_args_model() -> None:
    profile = profile_with(
        {ExtensionPoint.SCORE: ["Cost"]}, plugin_args={"Cost": {"label": "cost", "scale": 3}}
    )
    framework = Framework(_cost_registry(), profile)
    plugin = framework.plugin("Cost")
    assert isinstance(plugin, CostScore) and plugin.args == CostArgs("cost", 3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"lable": "x"},
            "profiles[default-scheduler].pluginConfig[Cost].args.lable: unknown field",
            id="unknown field",
        ),
        pytest.param({}, "profiles[default-scheduler].pluginConfig[Cost].args.label: required", id="missing"),
    ],
)
def test_bad_plugin_args_name_profile_plugin_and_field(args: dict[str, Any], message: str) -> None:
    profile = profile_with({ExtensionPoint.SCORE: ["Cost"]}, plugin_args={"Cost": args})
    with pytest.raises(PluginArgsError) as info:
        Framework(_cost_registry(), profile)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)


def test_pydantic_args_models_report_the_field_path() -> None:
    import pydantic

    class Args(pydantic.BaseModel):
        weights: dict[str, int]

    registry = Registry()
    registry.register("Cost", lambda args, handle: CostScore(CostArgs("x")), args_model=Args)
    profile = profile_with(
        {ExtensionPoint.SCORE: ["Cost"]}, plugin_args={"Cost": {"weights": {"cpu": "many"}}}
    )
    with pytest.raises(PluginArgsError, match=r"pluginConfig\[Cost\]\.args\.weights\.cpu: "):
        Framework(registry, profile)


def test_a_plugin_without_the_points_method_is_refused() -> None:
    profile = profile_with({ExtensionPoint.FILTER: ["Cost"]}, plugin_args={"Cost": {"label": "x"}})
    with pytest.raises(FrameworkError, match=r"plugins\.filter: plugin 'Cost' does not implement Filter"):
        Framework(_cost_registry(), profile)


def test_an_unknown_plugin_is_refused() -> None:
    with pytest.raises(FrameworkError, match="unknown plugin 'Nope'"):
        Framework(defaults.in_tree_registry(), profile_with({ExtensionPoint.FILTER: ["Nope"]}))


# ---- the binding cycle ---------------------------------------------------------------------------


class Reserving:
    def __init__(self, name: str, log: list[str], fail: bool = False) -> None:
        self.name = name
        self.log = log
        self.fail = fail

    def reserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        self.log.append(f"reserve {self.name}")
        return Status.unschedulable("no room") if self.fail else Status.success()

    def unreserve(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> None:
        self.log.append(f"unreserve {self.name}")


def _context(framework: Framework) -> FilterContext:
    return framework.new_context(a_binding("b").replicas(1).build(), "")


def test_unreserve_after_a_failed_write_undoes_in_reverse_order() -> None:
    log: list[str] = []
    framework = Framework(
        registry_of(Reserving("R1", log), Reserving("R2", log)),
        profile_with({ExtensionPoint.RESERVE: ["R1", "R2"]}),
    )
    status, undo = framework.run_reserve(_context(framework), [TargetCluster("m1", 1)])
    assert status.is_success and log == ["reserve R1", "reserve R2"]
    undo()  # the edge's write failed
    undo()  # idempotent
    assert log == ["reserve R1", "reserve R2", "unreserve R2", "unreserve R1"]


def test_a_failing_reserve_unreserves_those_that_reserved() -> None:
    log: list[str] = []
    framework = Framework(
        registry_of(Reserving("R1", log), Reserving("R2", log, fail=True), Reserving("R3", log)),
        profile_with({ExtensionPoint.RESERVE: ["R1", "R2", "R3"]}),
    )
    status, _ = framework.run_reserve(_context(framework), [TargetCluster("m1", 1)])
    assert (status.code.value, status.reasons, status.plugin) == ("Unschedulable", ("no room",), "R2")
    assert log == ["reserve R1", "reserve R2", "unreserve R1"]


class Gate:
    """Permit: denies, waits, or allows, as configured."""

    def __init__(self, name: str, answer: Status) -> None:
        self.name = name
        self.answer = answer

    def permit(self, ctx: FilterContext, targets: Sequence[TargetCluster]) -> Status:
        return self.answer


def test_permit_deny_carries_the_reason_and_unreserves() -> None:
    log: list[str] = []
    framework = Framework(
        registry_of(Reserving("R", log), Gate("Quota", Status.unschedulable("tenant over quota"))),
        profile_with({ExtensionPoint.RESERVE: ["R"], ExtensionPoint.PERMIT: ["Quota"]}),
    )
    cycle = framework.binding_cycle(_context(framework), [TargetCluster("m1", 1)])
    assert cycle.reserve().is_success
    status = cycle.permit()
    assert (status.is_rejection, status.reasons, status.plugin) == (True, ("tenant over quota",), "Quota")
    assert log == ["reserve R", "unreserve R"]


def test_permit_wait_times_out_on_the_injected_clock() -> None:
    now = [100.0]
    framework = Framework(
        registry_of(Gate("Approval", Status.wait(30.0))),
        profile_with({ExtensionPoint.PERMIT: ["Approval"]}),
        clock=lambda: now[0],
    )
    ctx = _context(framework)
    key = ctx.binding.key
    assert framework.run_permit(ctx, [TargetCluster("m1", 1)]).code.value == "Wait"
    assert framework.wait_on_permit(key) is None
    now[0] += 29.9
    assert framework.wait_on_permit(key) is None
    now[0] += 0.2
    status = framework.wait_on_permit(key)
    assert status is not None and status.is_rejection and status.plugin == "Approval"
    assert "rejected due to timeout" in status.message()
    assert framework.waiting_binding(key) is None  # decided: no longer held


def test_a_waiting_binding_is_allowed_through_the_handle() -> None:
    framework = Framework(
        registry_of(Gate("Approval", Status.wait(30.0))),
        profile_with({ExtensionPoint.PERMIT: ["Approval"]}),
        clock=lambda: 0.0,
    )
    ctx = _context(framework)
    framework.run_permit(ctx, [TargetCluster("m1", 1)])
    held = framework.waiting_binding(ctx.binding.key)
    assert held is not None and held.pending_plugins() == ("Approval",)
    held.allow("Approval")
    status = framework.wait_on_permit(ctx.binding.key)
    assert status is not None and status.is_success


# ---- extenders -----------------------------------------------------------------------------------


@dataclass
class FakeExtender:
    """An Extender behind the core Protocol (the HTTPS client lives in fleetsched/extender)."""

    name: str
    reject: tuple[str, ...] = ()
    scores: Mapping[str, int] | None = None
    fail: bool = False
    ignorable: bool = False
    weight: int = 1

    @property
    def supports_filter(self) -> bool:
        return self.scores is None

    @property
    def supports_prioritize(self) -> bool:
        return self.scores is not None

    def filter(self, binding: Any, clusters: Sequence[ClusterInfo]) -> Any:
        from fleetsched.plugin import ExtenderError, ExtenderFilterResult

        if self.fail:
            raise ExtenderError("connection refused")
        kept = tuple(c.name for c in clusters if c.name not in self.reject)
        return ExtenderFilterResult(kept, failed={n: "tenant not allowed" for n in self.reject})

    def prioritize(self, binding: Any, clusters: Sequence[ClusterInfo]) -> Mapping[str, int]:
        from fleetsched.plugin import ExtenderError

        if self.fail:
            raise ExtenderError("timed out after 5s")
        return dict(self.scores or {})


def test_extender_filter_runs_after_plugins_and_prioritize_adds_weighted_scores() -> None:
    extenders = [
        FakeExtender("https://tenant", reject=("m2",)),
        FakeExtender("https://cost", scores={"m4": 7}, weight=3),
    ]
    scheduler = Scheduler(extenders=extenders)
    result = schedule(scheduler, a_binding().replicas(1).duplicated(), FLEET)
    attempt = result.attempts[0]
    rejected = {
        v.cluster: (v.plugin, v.reasons) for v in attempt.verdicts if not v.feasible and not v.deleting
    }
    assert rejected == {"m2": ("https://tenant", ("tenant not allowed",))}
    assert [(v.extender, v.kept, v.rejected) for v in attempt.extenders] == [("https://tenant", 2, 1)]
    numbers = {n.cluster: n for n in attempt.numbers}
    # kube-scheduler's rule: 0..10 from the extender, x10 (to 0..100), x its weight.
    assert numbers["m4"].score == 7 * 10 * 3 and numbers["m1"].score == 0
    part = numbers["m4"].parts[-1]
    assert (part.plugin, part.raw, part.normalized, part.weight, part.weighted) == (
        "https://cost",
        7,
        70,
        3,
        210,
    )


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_a_failing_extender_fails_the_binding_unless_ignorable(verb: str) -> None:
    def extender(ignorable: bool) -> FakeExtender:
        return FakeExtender(
            "https://ext", scores={} if verb == "prioritize" else None, fail=True, ignorable=ignorable
        )

    result = schedule(Scheduler(extenders=[extender(False)]), a_binding().replicas(1).duplicated(), FLEET)
    assert result.condition is not None and not result.condition.status
    assert f"extender https://ext failed at {verb.capitalize()}" in result.condition.message
    result = schedule(Scheduler(extenders=[extender(True)]), a_binding().replicas(1).duplicated(), FLEET)
    assert result.scheduled
    assert [s.plugin for s in result.attempts[0].skipped] == ["https://ext"]


# ---- declared inputs: what a plugin reads decides what is reused ---------------------------------


class CountingTaints:
    """TaintToleration's inputs, counting the clusters it is asked about."""

    name = "Counting"
    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.TAINTS

    def __init__(self) -> None:
        self.asked: list[str] = []

    def binding_key(self, ctx: FilterContext) -> Hashable:
        return ()

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        self.asked.append(cluster.name)
        return Status.unschedulable("tainted") if cluster.taints else Status.success()


def test_undeclared_plugins_are_asked_every_time_and_declared_ones_are_reused() -> None:
    declared = CountingTaints()
    undeclared = Recorder()
    profile = profile_with(
        {ExtensionPoint.FILTER: ["Counting", "Recorder"], ExtensionPoint.PRE_FILTER: ["Recorder"]}
    )
    scheduler = Scheduler(profile=profile, registry=registry_of(declared, undeclared))
    snapshot = Snapshot(FLEET)
    for _ in range(2):
        binding = a_binding().replicas(1)
        scheduler.schedule(binding.build(), binding.status(), snapshot)
    assert declared.asked == ["m1", "m2", "m4"]
    assert [c[1] for c in undeclared.calls if c[0] == "Filter"] == ["m1", "m2", "m4"] * 2


def test_registry_refuses_a_name_twice_by_register_and_by_merge() -> None:
    registry = defaults.in_tree_registry()
    with pytest.raises(DuplicatePluginError, match="'TaintToleration' is already registered"):
        registry.register("TaintToleration", lambda args, handle: CountingTaints())
    clash = registry_of(CountingTaints(), Exploding())
    clash.register("TaintToleration", lambda args, handle: CountingTaints())
    before = registry.names()
    with pytest.raises(DuplicatePluginError, match="already registered: TaintToleration"):
        registry.merge(clash)
    assert registry.names() == before  # nothing half-added
    registry.merge(registry_of(CountingTaints()))
    assert registry.names() == (*before, "Counting")


def test_observers_see_each_plugin_and_each_point_once_per_attempt() -> None:
    per_plugin: list[tuple[str, str, str]] = []
    per_point: list[tuple[str, str]] = []
    recorder = Recorder(reject=frozenset({"m4"}))
    profile = profile_with({point: ["Recorder"] for point in ALL_POINTS})
    scheduler = Scheduler(
        profile=profile,
        registry=registry_of(recorder),
        observe_plugin=lambda plugin, point, result, seconds: per_plugin.append((plugin, point, result)),
        observe_point=lambda point, result, seconds: per_point.append((point, result)),
    )
    schedule(scheduler, a_binding().replicas(1).duplicated(), FLEET)
    assert per_plugin == [
        ("Recorder", "PreFilter", "Success"),
        ("Recorder", "Filter", "Success"),
        ("Recorder", "PreScore", "Success"),
        ("Recorder", "Score", "Success"),
        ("Recorder", "NormalizeScore", "Success"),
    ]
    assert per_point == [
        ("PreFilter", "Success"),
        ("Filter", "Success"),
        ("PreScore", "Success"),
        ("Score", "Success"),
    ]


class Misbehaving:
    """A plugin that breaks the contract in one way or another."""

    cluster_inputs: ClassVar[ClusterFacet] = ClusterFacet.NONE

    def __init__(self, name: str, how: str) -> None:
        self.name = name
        self.how = how

    def binding_key(self, ctx: FilterContext) -> Hashable:
        if self.how == "key raises":
            raise KeyError("no such field")
        return [] if self.how == "unhashable key" else ()

    def filter(self, ctx: FilterContext, cluster: ClusterInfo) -> Status:
        return True if self.how == "not a status" else Status.success()  # type: ignore[return-value]

    def score(self, ctx: FilterContext, cluster: ClusterInfo) -> int:
        return 1

    def normalize_score(
        self, ctx: FilterContext, clusters: Sequence[ClusterInfo], scores: Sequence[int]
    ) -> Sequence[int]:
        return [150 for _ in scores]


@pytest.mark.parametrize(
    ("how", "point", "text"),
    [
        pytest.param(
            "key raises", ExtensionPoint.FILTER, "failed at Filter: binding_key: KeyError", id="key raises"
        ),
        pytest.param(
            "unhashable key",
            ExtensionPoint.FILTER,
            "failed at Filter: binding_key: TypeError",
            id="unhashable key",
        ),
        pytest.param(
            "not a status",
            ExtensionPoint.FILTER,
            "failed at Filter: returned True, not a Status",
            id="not a status",
        ),
        pytest.param(
            "normalize",
            ExtensionPoint.SCORE,
            "failed at NormalizeScore: returned an invalid score 150 for cluster m1, it should be in the "
            "range of [0, 100] after normalizing",
            id="normalised out of range",
        ),
    ],
)
def test_a_plugin_breaking_the_contract_fails_the_binding_naming_it(
    how: str, point: ExtensionPoint, text: str
) -> None:
    plugin = Misbehaving("Bad", how)
    scheduler = Scheduler(profile=_with_default_filters("Bad", point=point), registry=_registry_plus(plugin))
    result = schedule(scheduler, a_binding().replicas(1), FLEET)
    assert result.condition is not None and not result.condition.status
    assert f"plugin Bad {text}" in result.condition.message


def test_a_raising_queue_sort_falls_back_to_karmadas_order() -> None:
    class Broken:
        name = "Broken"

        def less(self, a: QueuedBindingInfo, b: QueuedBindingInfo) -> bool:
            raise RuntimeError("oops")

    framework = Framework(registry_of(Broken()), profile_with({ExtensionPoint.QUEUE_SORT: ["Broken"]}))
    high, low = QueuedBindingInfo("a", 5, 2.0), QueuedBindingInfo("b", 1, 1.0)
    assert framework.less(high, low) and not framework.less(low, high)


def test_in_tree_plugins_declare_what_they_read() -> None:
    framework = Framework(
        defaults.in_tree_registry(workload_affinity=True), defaults.default_profile(workload_affinity=True)
    )
    declared = {slot.name: (slot.inputs, slot.batch) for slot in framework.filters}
    assert declared == {
        "APIEnablement": (ClusterFacet.API_ENABLEMENTS, False),
        "TaintToleration": (ClusterFacet.TAINTS, False),
        "ClusterAffinity": (ClusterFacet.LABELS | ClusterFacet.FIELDS, True),
        "SpreadConstraint": (ClusterFacet.FIELDS, False),
        "ClusterEviction": (ClusterFacet.NONE, False),
        # Their verdicts depend on other bindings' placements: never reused.
        "WorkloadAffinity": (None, False),
        "WorkloadAntiAffinity": (None, False),
    }
    assert {slot.name: slot.inputs for slot in framework.scores} == {
        "ClusterAffinity": ClusterFacet.LABELS | ClusterFacet.FIELDS,
        "ClusterLocality": ClusterFacet.NONE,
    }


def test_an_extender_answer_of_the_result_shape_counts_and_scores_beyond_ten_are_malformed() -> None:
    @dataclass(frozen=True)
    class EdgeFilterResult:  # the HTTPS edge's own class, same fields
        kept: tuple[str, ...]
        failed: Mapping[str, str]
        unresolvable: Mapping[str, str]

    class Edge(FakeExtender):
        def filter(self, binding: Any, clusters: Sequence[ClusterInfo]) -> Any:
            return EdgeFilterResult(("m1",), {}, {"m2": "no tenant quota"})

    result = schedule(
        Scheduler(extenders=[Edge("https://edge")]), a_binding().replicas(1).duplicated(), FLEET
    )
    rejected = {
        v.cluster: v.reasons for v in result.attempts[0].verdicts if not v.feasible and not v.deleting
    }
    assert rejected == {"m2": ("no tenant quota",), "m4": ("cluster(s) rejected by extender https://edge",)}
    loud = FakeExtender("https://loud", scores={"m1": 11})
    result = schedule(Scheduler(extenders=[loud]), a_binding().replicas(1).duplicated(), FLEET)
    assert result.condition is not None and not result.condition.status
    assert "extender https://loud failed at Prioritize: malformed answer: score 11 outside 0..10" in (
        result.condition.message
    )
