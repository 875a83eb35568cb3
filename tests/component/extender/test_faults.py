"""Each way an extender can fail, over real HTTPS on loopback, through the client and through the
scheduler (``Scheduler(extenders=...)``, the framework runtime) with ``ignorable`` on and off."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from fleetsched.extender import metrics
from fleetsched.extender.client import HTTPExtender
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.scheduler.framework.interface import Code
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import BindingStatus
from fleetsched.testing.extender import Behaviour, ExtenderServer, closed_port

from .conftest import BINDING, CLUSTERS, Extenders, Pki, config, extender_scores, schedule, scheduler

pytestmark = pytest.mark.component

REGISTRY = CollectorRegistry()
metrics.register(REGISTRY)

FAULTS = [
    pytest.param("down", FaultKind.UNREACHABLE, "cannot connect to 127.0.0.1", id="down"),
    pytest.param("no such host", FaultKind.UNREACHABLE, "cannot resolve no-such-extender.invalid",
                 id="DNS"),
    pytest.param(Behaviour.SLOW, FaultKind.SLOW, "no answer within 0.3 s", id="slow"),
    pytest.param(Behaviour.HTTP_500, FaultKind.ERRORING, "HTTP 500", id="HTTP 500"),
    pytest.param(Behaviour.REDIRECT, FaultKind.ERRORING, "HTTP 307", id="redirect not followed"),
    pytest.param(Behaviour.ERROR_FIELD, FaultKind.ERRORING, "extender error: cost database unavailable",
                 id="error field"),
    pytest.param(Behaviour.GARBAGE, FaultKind.MALFORMED, "response is not JSON", id="not JSON"),
    pytest.param(Behaviour.WRONG_SHAPE, FaultKind.MALFORMED, "Input should be a valid", id="wrong shape"),
    pytest.param(Behaviour.STRANGER, FaultKind.MALFORMED, "'not-a-candidate', which was not a candidate",
                 id="names a non-candidate"),
]


def _url(server: ExtenderServer, behaviour: str) -> str:
    if behaviour == "down":
        return f"https://127.0.0.1:{closed_port()}/ok"
    if behaviour == "no such host":
        return "https://no-such-extender.invalid:8443/ok"
    return server.url(behaviour)


def _count(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_ok_extender_filters_and_scores_by_cluster_labels(
        server: ExtenderServer, pki: Pki, make: Extenders) -> None:
    ext = make(config(server.url(Behaviour.OK), pki))
    before = _count("fleetsched_scheduler_extender_duration_seconds_count",
                    extender=ext.name, verb="filter", result="success")
    result = ext.filter(BINDING, CLUSTERS)
    kept, failed, unresolvable = result.kept, result.failed, result.unresolvable
    assert kept == ("m1", "m4")
    assert failed == {"m2": "label extender.test/filter=reject"}
    assert unresolvable == {"m3": "label extender.test/filter=unresolvable"}
    args = server.stats.last_args
    assert args is not None and args.cluster_names == ["m1", "m2", "m3", "m4"]
    assert args.binding["metadata"] == {"name": "web-deployment", "namespace": "shop"}
    assert args.clusters[1]["metadata"]["labels"]["extender.test/filter"] == "reject"
    assert ext.prioritize(BINDING, CLUSTERS[:1] + CLUSTERS[3:]) == {"m1": 7, "m4": 2}
    assert _count("fleetsched_scheduler_extender_duration_seconds_count",
                  extender=ext.name, verb="filter", result="success") == before + 1


@pytest.mark.parametrize(("behaviour", "kind", "detail"), FAULTS)
@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_client_raises_a_typed_error_naming_the_extender(
        server: ExtenderServer, pki: Pki, make: Extenders, behaviour: str, kind: FaultKind, detail: str,
        verb: str) -> None:
    ext = make(config(_url(server, behaviour), pki))
    before = _count("fleetsched_scheduler_extender_duration_seconds_count",
                    extender=ext.name, verb=verb, result=str(kind))
    with pytest.raises(ExtenderError) as caught:
        getattr(ext, verb)(BINDING, CLUSTERS)
    error = caught.value
    assert (error.extender, error.verb, error.kind) == (ext.name, verb, kind)
    assert detail in error.detail
    assert str(error).startswith(f"extender {ext.name} {verb} failed ({kind}): ")
    assert "\n" not in str(error)
    assert _count("fleetsched_scheduler_extender_duration_seconds_count",
                  extender=ext.name, verb=verb, result=str(kind)) == before + 1


@pytest.mark.parametrize(("behaviour", "kind", "detail"), FAULTS)
def test_a_failing_ignorable_extender_is_skipped_and_counted(
        server: ExtenderServer, pki: Pki, make: Extenders, behaviour: str, kind: FaultKind,
        detail: str) -> None:
    broken = make(config(_url(server, behaviour), pki, ignorable=True))
    healthy = make(config(server.url(Behaviour.OK), pki, weight=2))
    before = _count("fleetsched_scheduler_extender_ignored_failures_total",
                    extender=broken.name, verb="filter", kind=str(kind))
    # the framework runtime itself, to read each rejection's code (unresolvable or not)
    framework = scheduler([broken, healthy]).framework
    fit = framework.run_filter_and_score(framework.new_context(BINDING, "", ()), Snapshot(CLUSTERS))
    # the healthy extender still decides, and scores with its weight: raw * weight * 100/10
    assert [c.name for c in fit.feasible] == ["m1", "m4"]
    codes = {CLUSTERS[i].name: (name, status.code, status.reasons)
             for name, failed in fit.failures for i, status in failed.items()}
    assert codes["m3"] == (healthy.name, Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                           ("label extender.test/filter=unresolvable",))
    assert codes["m2"] == (healthy.name, Code.UNSCHEDULABLE, ("label extender.test/filter=reject",))
    assert fit.totals == [140, 40]  # the default plugins score a fresh binding 0
    parts = [(p.plugin, p.raw, p.weight, p.weighted) for p in fit.plugin_scores(0) if p.extender]
    assert parts == [(healthy.name, 7, 2, 140)]
    assert [(s.plugin, s.point) for s in fit.skipped] == [
        (broken.name, "ExtenderFilter"), (broken.name, "ExtenderPrioritize")]
    assert fit.skipped[0].reason.startswith(f"{kind}: ")
    assert detail in fit.skipped[0].reason
    assert [(v.extender, v.skipped != "") for v in fit.extender_verdicts] == [
        (broken.name, True), (healthy.name, False)]
    assert _count("fleetsched_scheduler_extender_ignored_failures_total",
                  extender=broken.name, verb="filter", kind=str(kind)) == before + 1


@pytest.mark.parametrize(("behaviour", "kind", "detail"), FAULTS)
def test_a_failing_extender_that_is_not_ignorable_fails_the_binding(
        server: ExtenderServer, pki: Pki, make: Extenders, behaviour: str, kind: FaultKind,
        detail: str) -> None:
    healthy = make(config(server.url(Behaviour.OK), pki))
    broken = make(config(_url(server, behaviour), pki))
    result = schedule([healthy, broken])
    assert result.condition is not None and not result.condition.status
    assert f"extender {broken.name} failed at Filter: {kind}: " in result.condition.message
    assert detail in result.condition.message
    assert result.condition.message.count(broken.name) == 1
    assert result.clusters is None


def test_a_broken_prioritize_verb_alone_fails_the_binding_unless_ignorable(
        server: ExtenderServer, pki: Pki, make: Extenders) -> None:
    filter_ok = make(config(server.url(Behaviour.OK), pki))
    from fleetsched.scheduler.framework.profile import ExtenderConfig

    def scorer(ignorable: bool) -> HTTPExtender:
        base = config(server.url(Behaviour.HTTP_500), pki, ignorable=ignorable)
        only_prioritize = ExtenderConfig(url_prefix=base.url_prefix, prioritize_verb="prioritize",
                                         ignorable=ignorable, http_timeout_seconds=1, tls=base.tls)
        return make(only_prioritize)

    result = schedule([filter_ok, scorer(False)])
    assert result.condition is not None and not result.condition.status
    assert "failed at Prioritize: erroring: HTTP 500" in result.condition.message
    broken = scorer(True)
    result = schedule([filter_ok, broken])
    assert extender_scores(result) == {"m1": 70, "m4": 20}
    assert [(s.plugin, s.point) for s in result.attempts[0].skipped] == [(broken.name, "ExtenderPrioritize")]
    assert result.attempts[0].skipped[0].reason.startswith(f"{FaultKind.ERRORING}: HTTP 500")


def test_an_answer_over_the_size_limit_is_malformed(
        server: ExtenderServer, pki: Pki, make: Extenders) -> None:
    ext = make(config(server.url(Behaviour.OK), pki), max_response_bytes=64)
    with pytest.raises(ExtenderError, match=r"\(malformed\): the answer of \d+ bytes exceeds the limit"):
        ext.filter(BINDING, CLUSTERS)


def test_a_streamed_answer_is_cut_off_at_the_limit(server: ExtenderServer, pki: Pki, make: Extenders) -> None:
    ext = make(config(server.url(Behaviour.HUGE), pki, timeout=5), max_response_bytes=100_000)
    with pytest.raises(ExtenderError, match=r"\(malformed\): the answer exceeds the limit of 100000 bytes$"):
        ext.filter(BINDING, CLUSTERS)
    # under the default limit (8 MiB) the same answer is read whole, and its extra field is tolerated
    roomy = make(config(server.url(Behaviour.HUGE), pki, timeout=5))
    assert roomy.filter(BINDING, CLUSTERS).kept == ()


async def test_async_face_from_another_loop_and_on_its_own(server: ExtenderServer, pki: Pki,
                                                           make: Extenders) -> None:
    # connections on the edge loop, awaited from the test's loop
    remote = make(config(server.url(Behaviour.OK), pki))
    # connections on the test's own loop, used by the scheduler from a worker thread
    local = HTTPExtender(config(server.url(Behaviour.OK), pki, weight=3), loop=asyncio.get_running_loop())
    try:
        assert (await remote.afilter(BINDING, CLUSTERS)).kept == ("m1", "m4")
        assert await local.aprioritize(BINDING, CLUSTERS[:1] + CLUSTERS[3:]) == {"m1": 7, "m4": 2}
        result = await asyncio.to_thread(
            scheduler([local]).schedule, BINDING, BindingStatus(), Snapshot(CLUSTERS))
        assert extender_scores(result) == {"m1": 210, "m4": 60}
        with pytest.raises(RuntimeError, match="blocking face was called on an event loop thread"):
            local.filter(BINDING, CLUSTERS)
        slow = HTTPExtender(config(server.url(Behaviour.SLOW), pki), loop=asyncio.get_running_loop())
        with pytest.raises(ExtenderError) as caught:
            await slow.afilter(BINDING, CLUSTERS)
        assert caught.value.kind is FaultKind.SLOW
        await slow.aclose()
    finally:
        await local.aclose()
