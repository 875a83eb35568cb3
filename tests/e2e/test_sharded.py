"""Sharded scheduler replicas (``--shard-mode=lease``) on a real kube-apiserver, audited by it.

The apiserver of this module writes an audit log of every binding and Lease write, binding patches
with their bodies (``tests/support/audit.py``); each replica's writes carry the field manager
``fleetsched-scheduler/<member>``, so the log says which replica wrote what and when, by the
apiserver's own account. Owners are predicted with the scheduler's own rendezvous function over
the member names, and every write is checked against its writer's OWN view at the time (its
``shard_membership_changed`` log lines): active, and the rendezvous owner among the members it saw.

- three replicas (the default Lease timings: no member changes), a generated fleet: every binding
  gets what ``fleetsched simulate`` prints, exactly two successful writes, both by its owner over
  the three; the owned-bindings gauges add up to the fleet;
- kill -9 of a replica mid-backlog (short timings from here on): the others drop it within the
  Lease duration and some seconds and schedule its share; each result is written once;
- a third replica joining two: about a third of the bindings change owner, all of them to the new
  member, and no result is written again;
- a replica SIGSTOPped past its Lease: the others take its share; after SIGCONT it sends no
  binding write until it holds its member Lease again, then schedules its share of new ones.

"Written once" is about the result (``spec.clusters``). Bindings Karmada schedules again whenever
they are handled (Duplicated, or not a workload: §3.4 "AlwaysSchedule") get a further status
patch (a new ``lastScheduledTime``) from a replica that gains them in a hand-off or after a lapse
of its own, as they would from a restarted single scheduler; a new owner finding a result written
without its status writes the status (and may refresh the explanation annotation).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import json
import math
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleetsched.controller.runtime.shard import rendezvous_owner
from fleetsched.kube.client import KubeClient, load_connection
from fleetsched.scheduler.convert import binding_from_dict
from tests.support.audit import AuditLog, AuditReader, WriteRecord
from tests.support.controlplane import APIServer, ControlPlane, wait_until
from tests.support.karmada import as_applied, collection_path, scheduled_condition
from tests.support.processes import SCHEDULER_AGENT, ShardedReplicas, ShardTimings

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import fleet_gen  # noqa: E402

# The fault cases: short member-Lease timings, so a dead or stopped member is dropped in seconds.
TIMINGS = ShardTimings(lease_duration=5.0, renew_deadline=4.0, retry_period=1.0)
# The steady case ("no member changes"): the scheduler's defaults, which a loaded 2-core machine
# does not lapse (a 4 s renew deadline it does, now and then: a lapse is legal but changes owners).
STEADY = ShardTimings(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)
# The peers drop a silent member once the Lease spec they last saw is a lease duration old by their
# clock, noticed at their next LIST (every retry period); the rest is a loaded machine's slack.
DROP_BOUND = TIMINGS.lease_duration + 2 * TIMINGS.retry_period + 8.0
REPLICA_ARGS = ("--workers=8", "--kube-api-qps=0", "--log-level=info")
CLUSTERS = 20
MAIN_BINDINGS = 3000
FAULT_BINDINGS = 600
EXTRA_BINDINGS = 120
SEED = 15
RB = "resourcebindings"
OWNED = "fleetsched_scheduler_owned_bindings"
# A request sent just before SIGKILL/SIGSTOP can still reach the apiserver a moment later.
IN_FLIGHT_GRACE = dt.timedelta(seconds=2)
WRITER = f"{SCHEDULER_AGENT}/"
BACKGROUND = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="e2e-create")


@dataclass
class Sharded:
    """What every test here runs against: the audited apiserver, its fleet and the audit log."""

    server: APIServer
    audit: AuditReader
    clusters: list[dict[str, Any]]  # as stored
    rng: random.Random
    workdir: Path

    def replicas(self, name: str, timings: ShardTimings = TIMINGS) -> ShardedReplicas:
        return ShardedReplicas(
            kubeconfig=self.server.kubeconfig, workdir=self.workdir / name, timings=timings,
            extra_args=REPLICA_ARGS,
        )


@pytest.fixture(scope="module")
def sharded(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sharded]:
    workdir = tmp_path_factory.mktemp("sharded")
    audit = AuditLog.create(workdir / "audit")
    server = control_plane.add_apiserver("iso-sharded", apply_crds=True, extra_args=audit.args)
    try:
        server.kubectl("create", "namespace", "karmada-system")
        rng = random.Random(SEED)
        clusters = [as_applied(c) for c in fleet_gen.generate_clusters(rng, CLUSTERS)]
        stored = []
        for cluster in clusters:
            body = {k: v for k, v in cluster.items() if k != "status"}
            server.request("POST", collection_path(cluster), body)
            path = f"{collection_path(cluster)}/{cluster['metadata']['name']}/status"
            stored.append(server.request(
                "PATCH", path, {"status": cluster["status"]}, content_type="application/merge-patch+json"
            ))
        yield Sharded(server=server, audit=AuditReader(audit.path), clusters=stored, rng=rng, workdir=workdir)
    finally:
        control_plane.remove_apiserver("iso-sharded")


@pytest.fixture
def namespace(sharded: Sharded, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace of the test's own; its bindings are deleted afterwards, so the next test's
    replicas start without them."""
    name = f"shard-{request.node.name.removeprefix('test_')[:40]}".replace("_", "-").rstrip("-")
    sharded.server.kubectl("create", "namespace", name)
    yield name
    collection = f"/apis/work.karmada.io/v1alpha2/namespaces/{name}/{RB}"

    def deleted() -> bool:
        # On a loaded machine the answer can time out, and the apiserver stops a collection
        # delete whose client went away: ask again until none is left.
        with contextlib.suppress(TimeoutError):
            sharded.server.request("DELETE", collection)
        return not sharded.server.request("GET", collection + "?limit=1")["items"]

    wait_until(deleted, timeout=300, message=lambda: f"the bindings of {name} were not deleted")


# ---------------------------------------------------------------------------------------------
# Helpers


def fleet_bindings(sharded: Sharded, namespace: str, count: int, prefix: str = "b") -> list[dict[str, Any]]:
    """``count`` bindings of bench/fleet_gen.py over the module's Clusters, in ``namespace``."""
    out = []
    for i, doc in enumerate(fleet_gen.generate_bindings(sharded.rng, sharded.clusters, count)):
        doc = as_applied(doc)
        labels = doc["metadata"]["labels"]
        doc["metadata"] = {"name": f"{prefix}-{i}", "namespace": namespace, "labels": labels}
        doc["spec"]["resource"]["namespace"] = namespace
        out.append(doc)
    return out


def create_all(server: APIServer, docs: list[dict[str, Any]], concurrency: int = 16) -> list[dict[str, Any]]:
    """POST every binding, ``concurrency`` at a time; returns them as the apiserver stored them
    (defaults applied, before any scheduler wrote to them)."""

    async def run() -> list[dict[str, Any]]:
        client = KubeClient(load_connection(str(server.kubeconfig)), user_agent="e2e-sharded")
        created: list[dict[str, Any]] = [{} for _ in docs]
        jobs = iter(enumerate(docs))

        async def worker() -> None:
            for index, doc in jobs:
                created[index] = await client.create(collection_path(doc), doc)

        try:
            await asyncio.gather(*(worker() for _ in range(concurrency)))
        finally:
            await client.close()
        return created

    return asyncio.run(run())


def simulate(objects: Iterable[dict[str, Any]], workdir: Path) -> dict[str, dict[str, Any]]:
    """``fleetsched simulate -o json`` of the stored objects: the result per binding name."""
    path = workdir / "stored.yaml"
    docs = []
    for obj in objects:
        obj = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}
        docs.append(obj)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    out = subprocess.run(
        [sys.executable, "-m", "fleetsched", "simulate", str(path), "-o", "json"],
        capture_output=True, text=True, check=True, timeout=300,
    )
    return {b["metadata"]["name"]: b for b in json.loads(out.stdout)["items"]}


def view(binding: dict[str, Any]) -> tuple[Any, ...]:
    condition = scheduled_condition(binding) or {}
    clusters = [(c["name"], int(c.get("replicas") or 0)) for c in binding["spec"].get("clusters") or ()]
    return clusters, condition.get("status"), condition.get("reason")


def list_bindings(server: APIServer, namespace: str) -> dict[str, dict[str, Any]]:
    items = server.request("GET", f"/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/{RB}")["items"]
    return {b["metadata"]["name"]: b for b in items}  # type: ignore[union-attr]


def scheduler_writes(
    sharded: Sharded, namespace: str, *, every_code: bool = False
) -> dict[str, list[WriteRecord]]:
    """The schedulers' binding writes in ``namespace`` so far, per binding name, in log order
    (successful ones only unless ``every_code``)."""
    sharded.audit.poll()
    out: dict[str, list[WriteRecord]] = {}
    for record in sharded.audit.records:
        if record.resource != RB or record.namespace != namespace:
            continue
        if not record.field_manager.startswith(WRITER):
            continue
        if every_code or record.succeeded:
            out.setdefault(record.name, []).append(record)
    return out


def status_written(sharded: Sharded, namespace: str, names: Iterable[str]) -> set[str]:
    """Which of ``names`` have had a successful status write by a scheduler."""
    writes = scheduler_writes(sharded, namespace)
    return {n for n in names if any(r.subresource == "status" for r in writes.get(n, ()))}


def wait_scheduled(
    sharded: Sharded, replicas: ShardedReplicas, namespace: str, names: set[str], timeout: float
) -> None:
    """Until every binding of ``names`` has had its status written. The audit log says so cheaply;
    the last few are read from the API too, since a write the apiserver answered 504 (its own
    request timeout, on an overloaded machine) may still have landed."""
    confirmed: set[str] = set()

    def missing() -> set[str]:
        left = names - confirmed - status_written(sharded, namespace, names)
        if 0 < len(left) <= 50:
            path = f"/apis/work.karmada.io/v1alpha2/namespaces/{namespace}/{RB}"
            for name in list(left):
                obj = sharded.server.request("GET", f"{path}/{name}")
                status = obj.get("status") or {}
                meta = obj["metadata"]  # type: ignore[index]
                observed = status.get("schedulerObservedGeneration")
                if scheduled_condition(obj) and observed == meta["generation"]:
                    confirmed.add(name)
                    left.discard(name)
        return left

    wait_until(
        lambda: not missing(), timeout=timeout, interval=0.5,
        message=lambda: f"{len(missing())} of {len(names)} bindings never got a status write\n"
        + replicas.log_tails(),
    )


def writer_identity(record: WriteRecord, replicas: ShardedReplicas) -> str:
    for identity in replicas.replicas:
        if record.field_manager == replicas.field_manager(identity):
            return identity
    raise AssertionError(f"write by an unknown field manager {record.field_manager!r}")


def owners(uids: dict[str, str], replicas: ShardedReplicas, identities: Iterable[str]) -> dict[str, str]:
    """binding name -> the identity that owns it over the members ``identities``."""
    by_member = {replicas.member(i): i for i in identities}
    members = sorted(by_member)
    return {name: by_member[rendezvous_owner(uid, members)] for name, uid in uids.items()}


def writes_by_non_owners(
    writes: dict[str, list[WriteRecord]], uids: dict[str, str], replicas: ShardedReplicas
) -> list[tuple[str, str, dt.datetime]]:
    """The writes whose writer, by its OWN logged view at the time the apiserver received them, did
    not own the binding (was not active, or another member was its rendezvous owner). A write sent
    just before a view change may arrive just after it: the previous view counts for a moment."""
    views = {i: p.membership_views() for i, p in replicas.replicas.items()}
    wrong = []
    for name, records in writes.items():
        for record in records:
            identity = writer_identity(record, replicas)
            member = replicas.member(identity)
            in_force = [v for v in views[identity] if v.at <= record.received]
            candidates = in_force[-1:]
            if len(in_force) >= 2 and record.received - in_force[-1].at < IN_FLIGHT_GRACE:
                candidates = in_force[-2:]
            if not any(v.active and rendezvous_owner(uids[name], v.members) == member for v in candidates):
                wrong.append((name, identity, record.received))
    return wrong


def always_scheduled(docs: Iterable[dict[str, Any]]) -> set[str]:
    """The bindings Karmada schedules again whenever they are handled (§3.4 "AlwaysSchedule": not
    a workload, or Duplicated): a replica gaining one in a hand-off, or after a lapse of its own,
    writes its status again (a new lastScheduledTime), as a restarted single scheduler would."""
    out = set()
    for doc in docs:
        typed = binding_from_dict(doc)
        if not typed.is_workload() or typed.placement is None or typed.placement.is_duplicated():
            out.add(doc["metadata"]["name"])
    return out


def assert_written_once(
    writes: dict[str, list[WriteRecord]], names: Iterable[str], *, again: Iterable[str] = (),
    strict: bool = False,
) -> None:
    """Per binding: its result (``spec.clusters``) written at most once, a main-resource patch
    (result and explanation annotations) before a status patch, and one status patch, except for
    bindings of ``again``, which may get further status patches. ``strict``: no patch of the main
    resource beyond the first either (a later one may only refresh the explanation annotation,
    e.g. when a new owner finds the result written but not its status). ``writes`` holds every
    attempt: a 504 (the apiserver's own timeout) may or may not have landed, so it counts as either."""
    again = set(again)
    for name in names:
        records = writes.get(name, [])
        sent = [r for r in records if r.succeeded or r.code == 504]
        landed = [r for r in records if r.succeeded]
        main = [r for r in sent if r.subresource == ""]
        status = [r for r in sent if r.subresource == "status"]
        assert main and status, f"{name}: {[(r.subresource, r.code) for r in records]}"
        assert main[0].received < status[0].received, f"{name}: status before the result"
        results = [r for r in landed if r.subresource == "" and r.writes_spec]
        assert len(results) <= 1, f"{name}: result written {len(results)} times: {[r.body for r in results]}"
        if strict:
            assert len([r for r in landed if r.subresource == ""]) <= 1, f"{name}: main resource again"
        if name not in again:
            assert len([r for r in landed if r.subresource == "status"]) <= 1, f"{name}: status written again"


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def statuses_by(sharded: Sharded, namespace: str, replicas: ShardedReplicas, identity: str) -> int:
    """How many successful status writes ``identity`` made in ``namespace``."""
    manager = replicas.field_manager(identity)
    return sum(
        1 for rs in scheduler_writes(sharded, namespace).values() for r in rs
        if r.subresource == "status" and r.field_manager == manager
    )


def uid_map(objs: Iterable[dict[str, Any]]) -> dict[str, str]:
    return {o["metadata"]["name"]: o["metadata"]["uid"] for o in objs}


def handoffs(replicas: ShardedReplicas, identity: str, direction: str) -> float:
    return replicas[identity].metric("fleetsched_scheduler_shard_handoffs_total", direction=direction)


# ---------------------------------------------------------------------------------------------
# Tests


def test_three_replicas_schedule_what_simulate_prints_each_binding_written_twice_by_its_owner(
    sharded: Sharded, namespace: str, tmp_path: Path
) -> None:
    replicas = sharded.replicas("main", STEADY)
    try:
        replicas.start("r0", "r1", "r2")
        replicas.wait_settled()
        docs = fleet_bindings(sharded, namespace, MAIN_BINDINGS)
        created = create_all(sharded.server, docs)
        names = {b["metadata"]["name"] for b in created}
        expected = simulate([*sharded.clusters, *created], tmp_path)
        wait_scheduled(sharded, replicas, namespace, names, timeout=180)

        live = list_bindings(sharded.server, namespace)
        assert set(live) == names
        different = {n: (view(live[n]), view(expected[n])) for n in names
                     if view(live[n]) != view(expected[n])}
        assert not different, f"{len(different)} differ from simulate, e.g. {next(iter(different.items()))}"
        reasons = Counter(view(b)[2] for b in live.values())
        assert reasons["Success"] > 0, reasons

        writes = scheduler_writes(sharded, namespace)
        assert_written_once(scheduler_writes(sharded, namespace, every_code=True), names, strict=True)
        assert not writes_by_non_owners(writes, uid_map(created), replicas)
        # No member changed (the replicas' logs say so), so each owner is the one over all three.
        assert not replicas.foreign_drops(), f"a member was dropped: {replicas.foreign_drops()}"
        owner = owners(uid_map(created), replicas, ("r0", "r1", "r2"))
        wrong = {n: [writer_identity(r, replicas) for r in writes[n]] for n in names}
        wrong = {n: w for n, w in wrong.items() if set(w) != {owner[n]}}
        assert not wrong, f"{len(wrong)} bindings written by a replica that does not own them: {wrong}"
        # No write was even attempted by a non-owner (a 409 would still be a write by the wrong replica).
        attempted = scheduler_writes(sharded, namespace, every_code=True)
        assert all(writer_identity(r, replicas) == owner[n] for n, rs in attempted.items() for r in rs)

        owned = replicas.gauges(OWNED)
        share = Counter(owner.values())
        assert owned == {i: float(share[i]) for i in ("r0", "r1", "r2")}, (owned, share)
        assert sum(owned.values()) == len(names)
        api_writes = replicas.gauges("fleetsched_scheduler_binding_writes_total")
        assert sum(api_writes.values()) == 2 * len(names)
        assert all(v == 3 for v in replicas.gauges("fleetsched_scheduler_shard_members").values())
    finally:
        replicas.stop()


def three_replicas_mid_backlog(
    sharded: Sharded, namespace: str, replicas: ShardedReplicas, writer: str, who: str
) -> tuple[list[dict[str, Any]], concurrent.futures.Future[Any]]:
    """Start r0-r2, create FAULT_BINDINGS in the background (a backlog) and return once ``writer``
    has written ten results, so the fault that follows comes while bindings are still arriving:
    the bindings, and the future of what ``create_all`` returns."""
    replicas.start("r0", "r1", "r2")
    replicas.wait_settled()
    backlog = fleet_bindings(sharded, namespace, FAULT_BINDINGS)
    creating = BACKGROUND.submit(create_all, sharded.server, backlog)
    wait_until(
        lambda: statuses_by(sharded, namespace, replicas, writer) >= 10, timeout=120,
        message=lambda: f"{who} never wrote\n{replicas.log_tails()}",
    )
    return backlog, creating


def test_kill_9_of_a_replica_mid_backlog_its_share_is_taken_over_nothing_written_twice(
    sharded: Sharded, namespace: str
) -> None:
    replicas = sharded.replicas("kill")
    victim, survivors = "r1", ("r0", "r2")
    try:
        backlog, creating = three_replicas_mid_backlog(sharded, namespace, replicas, victim, "the victim")
        replicas[victim].kill()
        killed_at = time.monotonic()
        killed_wall = now()
        time.sleep(0.5)  # its last completed writes reach the audit log
        uids = uid_map(creating.result())
        always = always_scheduled(backlog)
        owner3 = owners(uids, replicas, ("r0", "r1", "r2"))
        owner2 = owners(uids, replicas, survivors)
        share = {n for n, o in owner3.items() if o == victim}
        left = share - status_written(sharded, namespace, share)
        assert left, "the victim finished its share before it was killed: no backlog to take over"

        wait_until(
            lambda: all(v == 2 for v in replicas.gauges("fleetsched_scheduler_shard_members").values()),
            timeout=DROP_BOUND,
            message=lambda: f"the survivors did not drop the killed member\n{replicas.log_tails()}",
        )
        dropped_after = time.monotonic() - killed_at
        wait_scheduled(sharded, replicas, namespace, set(uids), timeout=180)
        done_after = time.monotonic() - killed_at

        writes = scheduler_writes(sharded, namespace)
        assert_written_once(scheduler_writes(sharded, namespace, every_code=True), uids, again=always)
        assert not writes_by_non_owners(writes, uids, replicas)
        for name, records in writes.items():
            for record in records:
                if writer_identity(record, replicas) == victim:  # nothing from the dead
                    assert record.received <= killed_wall + IN_FLIGHT_GRACE, (name, record)
        taken = {n for n in left if any(writer_identity(r, replicas) != victim for r in writes[n])}
        assert taken, "no binding of the victim's backlog was scheduled by a survivor"
        if not replicas.foreign_drops_besides(replicas.member(victim)):
            for name in taken:  # by its owner among the survivors
                assert {writer_identity(r, replicas) for r in writes[name]} - {victim} == {owner2[name]}
        replicas.wait_settled()
        owned = replicas.gauges(OWNED)
        assert owned == {i: float(Counter(owner2.values())[i]) for i in survivors}
        print(f"killed member dropped after {dropped_after:.1f} s, its {len(left)} left bindings "
              f"all scheduled {done_after:.1f} s after the kill")
    finally:
        replicas.stop()


def test_a_third_replica_joining_takes_about_a_third_and_nothing_is_rewritten(
    sharded: Sharded, namespace: str
) -> None:
    replicas = sharded.replicas("join")
    try:
        replicas.start("r0", "r1")
        replicas.wait_settled()
        docs = fleet_bindings(sharded, namespace, FAULT_BINDINGS)
        uids = uid_map(create_all(sharded.server, docs))
        always = always_scheduled(docs)
        wait_scheduled(sharded, replicas, namespace, set(uids), timeout=180)
        before = owners(uids, replicas, ("r0", "r1"))
        after = owners(uids, replicas, ("r0", "r1", "r2"))
        assert replicas.gauges(OWNED) == {
            i: float(Counter(before.values())[i]) for i in ("r0", "r1")
        }

        joined_wall = now()
        replicas.start("r2")
        replicas.wait_settled()
        expected_owned = {i: float(Counter(after.values())[i]) for i in ("r0", "r1", "r2")}
        wait_until(
            lambda: replicas.gauges(OWNED) == expected_owned, timeout=30,
            message=lambda: f"owned {replicas.gauges(OWNED)} != {expected_owned}",
        )
        moved = {n for n in uids if before[n] != after[n]}
        assert all(after[n] == "r2" for n in moved)  # only moves TO the new member
        fraction = len(moved) / len(uids)
        # The moved count is binomial(n, 1/3): six standard deviations are a one-in-10^8 miss.
        tolerance = 6 * math.sqrt((1 / 3) * (2 / 3) / len(uids))
        assert abs(fraction - 1 / 3) <= tolerance, (fraction, tolerance)
        assert handoffs(replicas, "r2", "in") >= len(moved)

        extra_docs = fleet_bindings(sharded, namespace, EXTRA_BINDINGS, prefix="new")
        extra_uids = uid_map(create_all(sharded.server, extra_docs))
        always |= always_scheduled(extra_docs)
        wait_scheduled(sharded, replicas, namespace, set(extra_uids), timeout=120)
        # A hand-off of scheduled bindings sends nothing (their decision says there is nothing to do),
        # except a status write by the new owner for those Karmada always schedules again.
        late = [
            (n, writer_identity(r, replicas), r.subresource)
            for n, rs in scheduler_writes(sharded, namespace, every_code=True).items() if n in uids
            for r in rs if r.received >= joined_wall
        ]
        assert all(n in moved and n in always and (w, part) == ("r2", "status") for n, w, part in late), [
            x for x in late if not (x[0] in moved and x[0] in always and x[1:] == ("r2", "status"))
        ][:5]
        writes = scheduler_writes(sharded, namespace)
        assert_written_once(scheduler_writes(sharded, namespace, every_code=True), extra_uids, again=always)
        assert not writes_by_non_owners(writes, {**uids, **extra_uids}, replicas)
        owner = owners(extra_uids, replicas, ("r0", "r1", "r2"))
        assert "r2" in owner.values()
        if not replicas.foreign_drops():
            assert {n: {writer_identity(r, replicas) for r in writes[n]} for n in extra_uids} == {
                n: {owner[n]} for n in extra_uids
            }
    finally:
        replicas.stop()


def test_a_replica_stopped_past_its_lease_writes_nothing_after_sigcont_until_it_holds_it_again(
    sharded: Sharded, namespace: str
) -> None:
    replicas = sharded.replicas("stop")
    paused, others = "r2", ("r0", "r1")
    try:
        backlog, creating = three_replicas_mid_backlog(
            sharded, namespace, replicas, paused, "the replica to stop"
        )
        replicas[paused].pause()  # mid-backlog: it has bindings in hand
        stopped_at = time.monotonic()
        stopped_wall = now()
        uids = uid_map(creating.result())

        during = fleet_bindings(sharded, namespace, EXTRA_BINDINGS, prefix="during")
        during_uids = uid_map(create_all(sharded.server, during))
        uids.update(during_uids)
        wait_until(
            lambda: all(v == 2 for v in replicas.gauges("fleetsched_scheduler_shard_members").values()),
            timeout=DROP_BOUND,
            message=lambda: f"the others did not drop the stopped member\n{replicas.log_tails()}",
        )
        # Its share, old and new, is theirs now; wait for some of it to be theirs in writing.
        owner2 = owners(uids, replicas, others)
        wait_scheduled(sharded, replicas, namespace, set(during_uids), timeout=120)
        time.sleep(max(0.0, stopped_at + 2 * TIMINGS.lease_duration - time.monotonic()))

        resumed_wall = now()
        replicas[paused].resume()
        replicas.wait_settled(timeout=60)
        after = fleet_bindings(sharded, namespace, EXTRA_BINDINGS, prefix="after")
        after_uids = uid_map(create_all(sharded.server, after))
        uids.update(after_uids)
        always = always_scheduled([*backlog, *during, *after])
        wait_scheduled(sharded, replicas, namespace, set(uids), timeout=180)

        sharded.audit.poll()
        member = replicas.member(paused)
        lease_writes = [
            r for r in sharded.audit.records
            if r.resource == "leases" and r.name == member and r.succeeded and r.completed > resumed_wall
        ]
        assert lease_writes, f"{member} never wrote its Lease after SIGCONT"
        held_again = min(r.completed for r in lease_writes)
        attempted = scheduler_writes(sharded, namespace, every_code=True)
        by_paused = [(n, r) for n, rs in attempted.items() for r in rs
                     if writer_identity(r, replicas) == paused]
        # Requests it sent before SIGSTOP may reach the apiserver a moment later; after SIGCONT, none
        # may be sent until its Lease is renewed (the fencing the issue asks for).
        fenced = [(n, r.received) for n, r in by_paused if resumed_wall < r.received < held_again]
        assert not fenced, f"writes after SIGCONT before holding the Lease again: {fenced[:5]}"
        frozen = [(n, r.received) for n, r in by_paused
                  if stopped_wall + IN_FLIGHT_GRACE < r.received < resumed_wall]
        assert not frozen, frozen[:5]
        assert any(r.received > held_again for _, r in by_paused), "it never wrote again after rejoining"

        writes = scheduler_writes(sharded, namespace)
        assert_written_once(scheduler_writes(sharded, namespace, every_code=True), uids, again=always)
        assert not writes_by_non_owners(writes, uids, replicas)
        for name in during_uids:  # created while it was stopped: scheduled by the others
            for record in writes[name]:
                if writer_identity(record, replicas) == paused:  # only a re-run once it owned it again
                    assert name in always and record.subresource == "status", (name, record)
                    assert record.received > held_again, (name, record)
        owner_after = owners(after_uids, replicas, ("r0", "r1", "r2"))
        assert paused in owner_after.values()

        def result_writers(name: str) -> set[str]:
            return {writer_identity(r, replicas) for r in writes[name] if r.subresource == ""}

        if not replicas.foreign_drops_besides(member):
            for name in during_uids:
                assert result_writers(name) == {owner2[name]}
            for name in after_uids:  # created after it rejoined: by the owner over all three
                assert result_writers(name) == {owner_after[name]}
        print(f"stopped for {(resumed_wall - stopped_wall).total_seconds():.1f} s; held its Lease again "
              f"{(held_again - resumed_wall).total_seconds():.2f} s after SIGCONT; "
              f"not-owner drops {replicas[paused].metric('fleetsched_scheduler_not_owner_drops_total'):.0f}")
    finally:
        replicas.stop()
