"""The reservation ledger against what someone else wrote into it (issue 30, item 1), without a
server: every hostile annotation or entry is skipped for capacity, never fails a commit, is said
once per member and reason and counted; a newer replica's layout is skipped, an older one read; a
decision over 1,000 Clusters fits the Lease, and one too large for it is refused with a message.
The real kube-apiserver runs the same annotations in tests/e2e/test_ledger_hostile.py."""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import time
import zlib
from collections.abc import Callable, Collection
from typing import Any

import pytest
from structlog.testing import capture_logs

from fleetsched.api.quantity import parse_quantity
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.queue import Outcome, QueuedBinding
from fleetsched.controller.scheduler.assume import ledger as ledger_module
from fleetsched.controller.scheduler.assume.ledger import (
    ANNOTATION_PREFIX,
    ANNOTATIONS_LIMIT,
    MAX_ENTRY_BYTES,
    DecisionTooLarge,
    EntryProblem,
    Ledger,
    decode_entry,
    encode_entry,
    entry_size,
    ledger_name,
    parse_annotation,
)
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import Connection
from fleetsched.scheduler import Scheduler
from fleetsched.scheduler.assume import AssumeRecord, Reservation
from fleetsched.scheduler.general_estimator import GeneralEstimator
from fleetsched.scheduler.types import (
    AssumedWorkload,
    ClusterInfo,
    Component,
    ReplicaRequirements,
    ResourceSummary,
)
from tests.unit.controller.test_ledger import CasStore
from tests.unit.controller.test_operator_writes import WEB, MemoryApi, a_binding, a_cluster

NOW = 1_800_000_000.0
ONE_CPU = ReplicaRequirements(resource_request=(("cpu", parse_quantity("1")),))


def _workload(replicas: int, name: str = "web") -> AssumedWorkload:
    return AssumedWorkload("ns", (Component(name, replicas, ONE_CPU),))


def _good(at: float = NOW, clusters: int = 1, replicas: int = 1) -> dict[str, Any]:
    return encode_entry({f"m{i}": _workload(replicas) for i in range(clusters)}, at, "7")


# ---- pure parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("garbage", "not JSON"),
        ("[1,2,3]", "the annotation is list, not an object"),
        ('"a string"', "the annotation is str, not an object"),
        ("null", "the annotation is NoneType, not an object"),
        ("[" * 100_000, "not JSON"),
    ],
)
def test_an_annotation_that_is_not_an_object_is_unparsable(text: str, says: str) -> None:
    with pytest.raises(EntryProblem) as caught:
        parse_annotation(text)
    assert caught.value.reason == "unparsable"
    assert says in str(caught.value)


def _with(**fields: Any) -> dict[str, Any]:
    return {**_good(), **fields}


BOMB = base64.b64encode(zlib.compress(b"[" + b" " * (8 * 1024 * 1024) + b"]", 9)).decode()


@pytest.mark.parametrize(
    ("raw", "reason", "says"),
    [
        ([1, 2, 3], "unparsable", "the entry is list"),
        (_with(t="abc"), "unparsable", "t 'abc' is not a number"),
        (_with(t=True), "unparsable", "t true is not a number"),
        (_with(t=None), "unparsable", "t null is not a number"),
        (_with(t=float("nan")), "unparsable", "t NaN is not a number"),
        (_with(v="2"), "unparsable", "v '2' is not a positive integer"),
        (_with(v=0), "unparsable", "v 0 is not a positive integer"),
        (_with(v=3), "unknown_version", "layout v3 is newer than this replica's v2"),
        (_with(t=NOW + 3600), "future", "3600s in the future"),
        (_with(ns=7), "unparsable", "ns 7 is not a string"),
        (_with(q=[1]), "unparsable", "q is list, not an object"),
        (_with(q={"web": {"cpu": "lots"}}), "unparsable", "q.web.cpu"),
        (_with(c={"m1": [["web", 1]]}), "unparsable", "is not a list"),
        (_with(c=[["web", {"-5": "m1"}]]), "unparsable", "replicas '-5' is not an integer"),
        (_with(c=[["web", {"1": ["m1"]}]]), "unparsable", "not a string of cluster names"),
        (_with(c=[["web"]]), "unparsable", "not [component, {replicas: clusters}]"),
        ({**{k: v for k, v in _good().items() if k != "c"}, "z": "!!"}, "unparsable", "z:"),
        ({**{k: v for k, v in _good().items() if k != "c"}, "z": BOMB}, "unparsable", "inflates past"),
        ({"v": 1, "t": NOW, "c": {"m1": [["web", -1]]}}, "unparsable", "replicas -1"),
        ({"v": 1, "t": NOW, "c": {"m1": "web"}}, "unparsable", "c.m1 is not a list"),
    ],
    ids=lambda v: None if not isinstance(v, str) or len(v) > 30 else v,
)
def test_each_hostile_entry_names_its_field_and_reason(raw: Any, reason: str, says: str) -> None:
    with pytest.raises(EntryProblem) as caught:
        decode_entry(raw, now=NOW)
    assert caught.value.reason == reason
    assert says in str(caught.value)
    assert "\n" not in str(caught.value) and len(str(caught.value)) < 200


def test_a_small_skew_is_tolerated_and_the_layout_of_the_previous_version_is_read() -> None:
    at, footprints = decode_entry(_good(at=NOW + 4.0), now=NOW)
    assert at == NOW + 4.0 and footprints == {"m0": _workload(1)}
    # layout 1 (no "v"): what replicas of the previous version write during a rolling upgrade
    old = {
        "t": NOW, "rv": "3", "ns": "ns", "q": {"web": {"cpu": "1"}},
        "c": {"m1": [["web", 2]], "m2": [["web", 1]]},
    }
    assert decode_entry(old, now=NOW) == (NOW, {"m1": _workload(2), "m2": _workload(1)})


def test_a_decision_over_1000_clusters_takes_a_few_kib_and_round_trips() -> None:
    footprints = {f"member-{i:04d}": _workload(1 + i % 3) for i in range(1000)}
    entry = encode_entry(footprints, NOW, "123")
    size = entry_size(entry)
    # layout 1 wrote each cluster's components out: 29,000 bytes for the same decision
    layout_1 = len(json.dumps({c: [["web", w.components[0].replicas]] for c, w in footprints.items()}))
    print(f"1,000 clusters: layout 2 {size} bytes, layout 1 {layout_1} bytes, limit {ANNOTATIONS_LIMIT}")
    assert "z" in entry and size < 8 * 1024 < layout_1
    assert ANNOTATIONS_LIMIT // size >= 30  # decisions of that size in flight at once, group-wide
    assert decode_entry(entry, now=NOW) == (NOW, footprints)


def test_multiple_components_per_cluster_round_trip() -> None:
    two = AssumedWorkload("ns", (Component("a", 2, ONE_CPU), Component("b", 0, None)))
    footprints = {"m1": two, "m2": AssumedWorkload("ns", (Component("a", 1, ONE_CPU),))}
    assert decode_entry(encode_entry(footprints, NOW), now=NOW)[1] == footprints


# ---- the ledger -------------------------------------------------------------------------------

CAPACITY = 10


def _cluster(name: str) -> ClusterInfo:
    summary = ResourceSummary(
        allocatable={"cpu": parse_quantity(str(CAPACITY)), "pods": parse_quantity("1000")},
        allocated={},
        allocating={},
    )
    return ClusterInfo(name=name, resource_summary=summary)


def _skipped(reason: str) -> float:
    return metrics.REGISTRY.get_sample_value(
        "fleetsched_scheduler_ledger_entries_skipped_total", {"reason": reason}
    ) or 0.0


async def _decide(
    store: CasStore,
    members: Callable[[], Collection[str] | None],
    *,
    clock: Callable[[], float] = time.time,
    rounds: int = 3,
    want: int = CAPACITY,
) -> tuple[list[Reservation | None], AssumeRecord]:
    """One replica ``g-r0`` deciding ``want`` cpu on m1, ``rounds`` times in turn (each written,
    so the next fits again only if nothing else holds m1)."""
    record = AssumeRecord(300, clock=clock)
    ledger = Ledger(store, record, namespace="ns", group="g", member="g-r0",  # type: ignore[arg-type]
                    clock=clock, batch_seconds=0.001, members=members)
    stop = asyncio.Event()
    runner = asyncio.create_task(ledger.run(stop))
    estimator = GeneralEstimator()
    results: list[Reservation | None] = []
    for n in range(rounds):
        key = f"ns/b{n}"
        footprints = {"m1": _workload(want)}

        def fits(_: str) -> bool:
            return want <= estimator.max_available_replicas([record.overlaid(_cluster("m1"))], ONE_CPU)[0]

        def take(against: int, key: str = key, footprints: dict[str, AssumedWorkload] = footprints) -> Any:
            return record.reserve(key, footprints, against=against, fits=fits)

        reservation = take(record.version)
        held = None if reservation is None else await ledger.commit(key, footprints, reservation, take)
        results.append(held)
        if held is not None:
            ledger.written(key, failed=True)  # as written and gone: the next round fits again
            record.unreserve(held)
    stop.set()
    await runner
    return results, record


def _hostile_store(annotations: dict[str, str]) -> CasStore:
    store = CasStore()
    store.lease = {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": ledger_name("g"), "namespace": "ns", "resourceVersion": "1",
                     "annotations": annotations},
        "spec": {},
    }
    store.version = 1
    return store


ALL_OF_M1 = [["web", {str(CAPACITY): "m1"}]]


@pytest.mark.parametrize(
    ("member", "text", "reason", "known"),
    [
        ("g-r1", "garbage", "unparsable", None),
        ("g-r1", "[1,2,3]", "unparsable", None),
        ("g-r1", json.dumps({"ns/x": _with(t="abc", c=ALL_OF_M1)}), "unparsable", None),
        ("g-r1", json.dumps({"ns/x": _with(v=9, c=ALL_OF_M1)}), "unknown_version", None),
        ("g-ghost", "ALL-CPU", "unknown_member", {"g-r0", "g-r1"}),
        ("g-ghost", "FUTURE-ALL-CPU", "future", {"g-r0", "g-r1"}),  # the issue's: both at once
        ("g-r1", "FUTURE-ALL-CPU", "future", {"g-r0", "g-r1"}),
        ("g-ghost", json.dumps({"ns/x": _with(t="abc", c=ALL_OF_M1)}), "unparsable", {"g-r0"}),
    ],
    ids=[
        "garbage", "list", "t-abc", "newer-layout", "unknown-member", "unknown-member-future", "future-stamp",
        "unknown-member-t-abc",
    ],
)
def test_a_hostile_annotation_never_fails_a_commit_and_is_said_once(
    member: str, text: str, reason: str, known: set[str] | None
) -> None:
    if text.endswith("ALL-CPU"):  # every cpu of m1, stamped now or an hour ahead
        ahead = 3600 if text.startswith("FUTURE") else 0
        text = json.dumps({"ns/greedy": encode_entry({"m1": _workload(CAPACITY)}, time.time() + ahead)})
    store = _hostile_store({ANNOTATION_PREFIX + member: text})
    before = _skipped(reason)
    with capture_logs() as logs:
        results, record = asyncio.run(_decide(store, lambda: known))
    assert all(r is not None for r in results), "a decision that fits was refused"
    assert not record.holds("ns/greedy") and not record.holds("ns/x")
    said = [e for e in logs if e["event"] == "ledger_entry_skipped"]
    assert len(said) == 1, said
    assert said[0]["member"] == member and said[0]["reason"] == reason
    assert _skipped(reason) == before + 1
    assert not [e for e in logs if e["event"] == "ledger_commit_failed"]
    # what the others wrote is left in place (only the stale check removes another's annotation)
    assert store.lease is not None and ANNOTATION_PREFIX + member in store.lease["metadata"]["annotations"]


def test_a_good_entry_of_a_known_member_still_holds_its_capacity() -> None:
    """The control for the test above: the same claim stamped now, by a member, is counted."""
    text = json.dumps({"ns/greedy": encode_entry({"m1": _workload(CAPACITY)}, time.time())})
    store = _hostile_store({ANNOTATION_PREFIX + "g-r1": text})
    results, record = asyncio.run(_decide(store, lambda: {"g-r0", "g-r1"}, rounds=1))
    assert results == [None] and record.holds("ns/greedy")


def test_a_member_that_joins_later_has_its_entries_taken_in_then() -> None:
    """Skipped while its member Lease is not known, counted once it is."""
    text = json.dumps({"ns/greedy": encode_entry({"m1": _workload(CAPACITY)}, time.time())})
    store = _hostile_store({ANNOTATION_PREFIX + "g-r1": text})
    known: set[str] = {"g-r0"}
    results, _ = asyncio.run(_decide(store, lambda: known, rounds=1))
    assert results[0] is not None
    known.add("g-r1")
    results, record = asyncio.run(_decide(store, lambda: known, rounds=1))
    assert results == [None] and record.holds("ns/greedy")


def test_a_decision_too_large_for_the_ledger_is_refused_with_a_message() -> None:
    async def main() -> tuple[str, AssumeRecord]:
        record = AssumeRecord(300)
        ledger = Ledger(CasStore(), record, namespace="ns", group="g", member="g-r0")  # type: ignore[arg-type]
        # cluster names that do not compress: random hex, 12,000 of them
        footprints = {
            f"c-{hashlib.blake2b(str(i).encode(), digest_size=6).hexdigest()}": _workload(1 + i % 7)
            for i in range(12_000)
        }
        reservation = record.reserve("ns/huge", footprints, against=record.version, fits=lambda c: True)
        assert reservation is not None and record.holds("ns/huge")
        with pytest.raises(DecisionTooLarge) as caught:
            await ledger.commit("ns/huge", footprints, reservation, lambda v: None)
        return str(caught.value), record

    message, record = asyncio.run(main())
    assert "too large for the shard group's reservation ledger" in message and str(MAX_ENTRY_BYTES) in message
    assert not record.holds("ns/huge")  # given back


def test_a_full_ledger_refuses_the_newest_decisions_instead_of_failing_the_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Others' annotations leave room for one more decision only: the batch's second is refused
    (decided again, with backoff), the first committed."""
    one = entry_size(encode_entry({"m1": _workload(1)}, time.time())) + len('"ns/b0"') + 2
    room = ANNOTATIONS_LIMIT - len("someone.else/filler") - len(ANNOTATION_PREFIX + "g-r0") - 2
    store = _hostile_store({"someone.else/filler": "x" * (room - one - one // 2)})
    monkeypatch.setattr(ledger_module, "BATCH_SECONDS", 0.05)

    async def main() -> list[Reservation | None]:
        record = AssumeRecord(300)
        ledger = Ledger(store, record, namespace="ns", group="g", member="g-r0",  # type: ignore[arg-type]
                        batch_seconds=0.05)
        stop = asyncio.Event()
        runner = asyncio.create_task(ledger.run(stop))
        commits = []
        for n in range(2):
            footprints = {"m1": _workload(1)}
            reservation = record.reserve(f"ns/b{n}", footprints, against=record.version, fits=lambda c: True)
            assert reservation is not None
            commits.append(ledger.commit(f"ns/b{n}", footprints, reservation, lambda v: None))
        with capture_logs() as logs:
            results = await asyncio.gather(*commits)
        stop.set()
        await runner
        assert [e["refused"] for e in logs if e["event"] == "ledger_full"] == [1]
        return list(results)

    results = asyncio.run(main())
    assert results[0] is not None and results[1] is None
    total = sum(len(k) + len(v) for k, v in store.lease["metadata"]["annotations"].items())  # type: ignore[index]
    assert total <= ANNOTATIONS_LIMIT


def test_an_unknown_members_old_annotation_is_removed_like_a_dead_members() -> None:
    """A replica of a past rollout (its identity is gone) leaves no litter: stamped more than
    twice the remote TTL ago, its annotation goes with our next write."""
    old = json.dumps({"ns/old": encode_entry({"m1": _workload(1)}, time.time() - 3600)})
    store = _hostile_store({ANNOTATION_PREFIX + "g-gone": old, ANNOTATION_PREFIX + "g-bad": "[1,2,3]"})
    asyncio.run(_decide(store, lambda: {"g-r0"}, rounds=2))
    assert store.lease is not None
    left = store.lease["metadata"]["annotations"]
    assert ANNOTATION_PREFIX + "g-gone" not in left
    assert ANNOTATION_PREFIX + "g-bad" in left  # no stamp to judge it by: left, skipped


async def test_the_operator_says_a_decision_too_large_on_its_binding_and_does_not_retry_it() -> None:
    """The binding's side of ``DecisionTooLarge``: Scheduled=False with the ledger's message, no
    placement written, and the queue done with it (only a change to the binding retries it)."""
    api = MemoryApi(a_binding())
    operator = SchedulerOperator(
        client=api,  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),
        scheduler=Scheduler(),
        config=OperatorConfig(overcommit_protection=True),
    )
    operator.on_cluster_event(None, a_cluster("m1"))
    operator.on_binding_event(RB, None, copy.deepcopy(api.binding))

    committed: list[str] = []

    class TooLarge:
        async def commit(self, key: str, footprints: Any, reservation: Reservation, take: Any, *,
                         base: str = "") -> Reservation | None:
            committed.append(key)
            operator.assumptions.record.unreserve(reservation)  # type: ignore[attr-defined]
            raise DecisionTooLarge("decision too large for the shard group's reservation ledger: 70000 bytes")

        def written(self, key: str, *, failed: bool = False) -> None:
            raise AssertionError("nothing was committed, so nothing is written")

    operator.assumptions.ledger = TooLarge()  # type: ignore[attr-defined]
    outcome = await operator.process(QueuedBinding(WEB, 0, 0.0, 1))
    assert outcome is Outcome.DONE and committed == ["ns/web"]
    assert api.writes == ["status"]
    (condition,) = api.binding["status"]["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "SchedulerError")
    assert condition["message"].startswith("decision too large for the shard group's reservation ledger")
    assert "clusters" not in api.binding["spec"]
    assert not operator.assumptions.holds("ns/web")
