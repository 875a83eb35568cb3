"""Sharded mode in the runtime and the scheduler operator: ownership checked at push, at pop and
before every write; a key not owned is dropped (not re-queued); membership changes push what
became owned; readiness and the metrics of the contract. In-memory API and Leases, fake clock."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs
from test_operator_writes import MemoryApi, a_binding, a_cluster
from test_shard import Clock, MemoryLeases

from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.controller import NotOwner
from fleetsched.controller.runtime.leader import LeaderElectionConfig
from fleetsched.controller.runtime.queue import Outcome, QueuedBinding, QueueKey
from fleetsched.controller.runtime.shard import ShardConfig, ShardMembership, rendezvous_owner
from fleetsched.controller.scheduler.operator import OperatorConfig, SchedulerOperator
from fleetsched.controller.scheduler.store import RB
from fleetsched.kube.client import ApiError, Connection
from fleetsched.scheduler import Scheduler

R0, R1 = "fleetsched-scheduler-r0", "fleetsched-scheduler-r1"
SHARDING = ShardConfig.of("fleetsched-scheduler", "karmada-system", "r0")


def uid_owned_by(owner: str, members: tuple[str, ...] = (R0, R1), *, skip: int = 0) -> str:
    uids = (f"uid-{i}" for i in range(10_000))
    found = [u for u in uids if rendezvous_owner(u, members) == owner]
    return found[skip]


def binding(name: str, uid: str) -> dict[str, Any]:
    obj = a_binding()
    obj["metadata"].update(name=name, uid=uid, resourceVersion="5")
    obj["spec"]["resource"]["name"] = name
    return obj


def key(name: str) -> QueueKey:
    return QueueKey(RB, "ns", name)


def sample(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels or None) or 0.0


class Shard:
    """An operator in sharded mode as r0, with a peer r1 whose Lease is in the same store."""

    def __init__(self, api: Any = None, *, peer: bool = True) -> None:
        self.clock, self.leases = Clock(), MemoryLeases()
        if peer:
            self.leases.put_peer(R1)
        self.operator = SchedulerOperator(
            client=api,
            connection=Connection(server="https://unused"),  # type: ignore[arg-type]
            scheduler=Scheduler(),
            config=OperatorConfig(sharding=SHARDING, workers=1),
        )
        runtime = self.operator.runtime
        self.membership = ShardMembership(
            config=SHARDING, store=self.leases, clock=self.clock, on_change=runtime.membership_changed
        )
        self.operator.runtime.membership = self.membership
        self.operator.on_cluster_event(None, a_cluster("m1"))

    async def join(self) -> None:
        await self.membership.step()
        self.clock.now += SHARDING.retry_period
        await self.membership.step()
        assert self.membership.active

    def queued(self) -> set[Any]:
        return {k for k in (key(n) for n in ("a", "b", "c", "d", "web")) if k in self.operator.queue}


async def test_nothing_is_pushed_before_joining_and_the_owned_share_is_pushed_at_the_join() -> None:
    shard = Shard()
    mine, theirs = uid_owned_by(R0), uid_owned_by(R1)
    shard.operator.on_binding_event(RB, "ADDED", binding("a", mine))
    shard.operator.on_binding_event(RB, "ADDED", binding("b", theirs))
    assert shard.queued() == set()  # not a member yet: nothing is owned
    with capture_logs() as logs:
        await shard.join()
    assert shard.queued() == {key("a")}
    (line,) = [entry for entry in logs if entry["event"] == "shard_membership_changed" and entry["active"]]
    assert (line["members"], line["owned"]) == ([R0, R1], 1)
    assert sample("fleetsched_scheduler_owned_bindings") == 1
    assert sample("fleetsched_scheduler_shard_members") == 2
    assert sample("fleetsched_scheduler_shard_member_lease_held") == 1
    # once joined, an event for a binding is pushed only when it is ours
    shard.operator.on_binding_event(RB, "ADDED", binding("c", uid_owned_by(R0, skip=1)))
    shard.operator.on_binding_event(RB, "ADDED", binding("d", uid_owned_by(R1, skip=1)))
    assert shard.queued() == {key("a"), key("c")}
    assert sample("fleetsched_scheduler_owned_bindings") == 2
    shard.operator.on_binding_event(RB, "DELETED", binding("c", uid_owned_by(R0, skip=1)))
    assert sample("fleetsched_scheduler_owned_bindings") == 1


async def test_a_leaving_peer_hands_its_share_over_and_a_returning_one_takes_it_back() -> None:
    shard = Shard()
    shard.operator.on_binding_event(RB, "ADDED", binding("a", uid_owned_by(R0)))
    shard.operator.on_binding_event(RB, "ADDED", binding("b", uid_owned_by(R1)))
    await shard.join()
    handed_in, handed_out = sample("fleetsched_scheduler_shard_handoffs_total", direction="in"), sample(
        "fleetsched_scheduler_shard_handoffs_total", direction="out"
    )
    del shard.leases.leases[R1]  # r1 shut down (deleted its Lease)
    shard.clock.now += 2
    with capture_logs() as logs:
        await shard.membership.step()
    assert shard.queued() == {key("a"), key("b")}
    assert shard.operator.runtime.owned_count == 2
    (line,) = [entry for entry in logs if entry["event"] == "shard_membership_changed"]
    assert (line["members"], line["joined"], line["left"], line["owned"]) == ([R0], [], [R1], 2)
    assert sample("fleetsched_scheduler_shard_handoffs_total", direction="in") == handed_in + 1
    shard.leases.put_peer(R1)  # r1 is back: its key leaves our queue
    shard.clock.now += 2
    await shard.membership.step()
    assert shard.queued() == {key("a")}
    assert sample("fleetsched_scheduler_shard_handoffs_total", direction="out") == handed_out + 1


async def test_a_key_popped_for_a_binding_we_do_not_own_is_dropped_not_requeued() -> None:
    shard = Shard()
    await shard.join()
    shard.operator.on_binding_event(RB, "ADDED", binding("b", uid_owned_by(R1)))
    shard.operator.queue.push(key("b"))  # e.g. pushed just before ownership moved
    drops = sample("fleetsched_scheduler_not_owner_drops_total")
    worker = asyncio.create_task(shard.operator.runtime.run_worker(0))
    try:
        for _ in range(100):
            if key("b") not in shard.operator.queue:
                break
            await asyncio.sleep(0.01)
    finally:
        shard.operator.queue.close()
        await asyncio.gather(worker, return_exceptions=True)
    assert key("b") not in shard.operator.queue
    assert sample("fleetsched_scheduler_not_owner_drops_total") == drops + 1


async def run_one(shard: Shard, name: str) -> None:
    """One worker takes ``name``'s key and finishes with it."""
    worker = asyncio.create_task(shard.operator.runtime.run_worker(0))
    try:
        for _ in range(300):
            if key(name) not in shard.operator.queue:
                break
            await asyncio.sleep(0.01)
    finally:
        shard.operator.queue.close()
        await asyncio.gather(worker, return_exceptions=True)


def api_for(name: str, uid: str) -> MemoryApi:
    api = MemoryApi(binding(name, uid))
    api.binding["metadata"]["name"] = name
    return api


async def test_an_owned_binding_is_scheduled_with_two_writes() -> None:
    api = api_for("web", uid_owned_by(R0))
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    await shard.join()
    await run_one(shard, "web")
    assert api.writes == ["spec", "status"]


async def test_a_lease_lapse_during_the_computation_stops_the_write_and_drops_the_key() -> None:
    api = api_for("web", uid_owned_by(R0))
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    await shard.join()
    compute = shard.operator.scheduling._compute

    async def slow_compute(*args: Any, **kwargs: Any) -> Any:
        result = await compute(*args, **kwargs)
        shard.clock.now += 30  # SIGSTOP while computing: past the renew deadline on resume
        return result

    shard.operator.scheduling._compute = slow_compute  # type: ignore[method-assign]
    drops = sample("fleetsched_scheduler_not_owner_drops_total")
    await run_one(shard, "web")
    assert api.writes == []
    assert key("web") not in shard.operator.queue  # dropped: the owner has it
    assert sample("fleetsched_scheduler_not_owner_drops_total") == drops + 1


async def test_ownership_moving_before_the_status_write_stops_it() -> None:
    api = api_for("web", uid_owned_by(R0))
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    await shard.join()
    original = api.merge_patch

    async def patch_then_lose(path: str, patch: dict[str, Any]) -> dict[str, Any]:
        response = await original(path, patch)
        shard.clock.now += 30  # the Lease lapses between the spec and the status write
        return response

    api.merge_patch = patch_then_lose  # type: ignore[method-assign]
    await run_one(shard, "web")
    assert api.writes == ["spec"]


async def test_a_conflict_is_re_decided_when_still_owned_and_counted() -> None:
    api = api_for("web", uid_owned_by(R0))
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    await shard.join()
    api.conflicts_to_inject = 1
    conflicts = sample("fleetsched_scheduler_write_conflicts_total")
    await run_one(shard, "web")
    assert api.writes == ["spec", "status"]
    assert sample("fleetsched_scheduler_write_conflicts_total") == conflicts + 1


async def test_a_conflict_after_ownership_moved_drops_the_key_without_writing() -> None:
    uid = uid_owned_by(R0, (R0, R1))
    # a member that would own it once it joins
    newcomer = next(f"fleetsched-scheduler-n{i}" for i in range(1000)
                    if rendezvous_owner(uid, (R0, R1, f"fleetsched-scheduler-n{i}")) != R0)
    api = api_for("web", uid)
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    await shard.join()

    def newcomer_writes() -> None:  # the conflicting write is the new owner's
        api.binding["metadata"].setdefault("labels", {})["touched"] = "by the newcomer"
        api.bump()
        shard.leases.put_peer(newcomer)

    api.concurrent_change = newcomer_writes  # type: ignore[method-assign]
    api.conflicts_to_inject = 1
    get = api.get

    async def get_after_listing(path: str, params: Any = None) -> dict[str, Any]:
        shard.clock.now += 2
        await shard.membership.step()  # our LIST sees the newcomer before we re-decide
        return await get(path, params)

    api.get = get_after_listing  # type: ignore[method-assign]
    await run_one(shard, "web")
    assert api.writes == []
    assert key("web") not in shard.operator.queue


async def test_process_refuses_to_write_outside_a_worker_when_not_holding() -> None:
    api = api_for("web", uid_owned_by(R0))
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    with pytest.raises(NotOwner):
        await shard.operator.process(QueuedBinding(key("web"), 0, 0.0, 1))
    assert api.writes == []


async def test_readiness_says_whether_the_member_lease_is_held() -> None:
    shard = Shard()
    shard.operator.runtime.synced.set()
    assert shard.operator.ready() == (False, "not holding its member Lease")
    await shard.membership.step()
    assert shard.operator.ready() == (True, "ok")
    shard.clock.now += 10
    assert shard.operator.ready() == (False, "not holding its member Lease")


def test_leader_election_and_sharding_are_exclusive() -> None:
    election = LeaderElectionConfig(name="x", namespace="karmada-system", identity="i")
    operator = SchedulerOperator(
        client=None,  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=Scheduler(),
        config=OperatorConfig(sharding=SHARDING, leader_election=election),
    )
    with pytest.raises(ValueError, match="exclusive"):
        operator.runtime.start_background()


def test_the_default_mode_owns_everything() -> None:
    operator = SchedulerOperator(
        client=None,  # type: ignore[arg-type]
        connection=Connection(server="https://unused"),  # type: ignore[arg-type]
        scheduler=Scheduler(),
    )
    runtime = operator.runtime
    assert runtime.owns(None) and runtime.owns_key(key("a")) and runtime.note_owned(key("a"), None)
    operator.on_binding_event(RB, "ADDED", binding("a", "any"))
    assert key("a") in operator.queue


def test_every_owned_key_is_somebodys_exactly_once() -> None:
    uids = [f"uid-{i}" for i in range(300)]
    members = (R0, R1, "fleetsched-scheduler-r2")
    owners: Iterator[str | None] = (rendezvous_owner(u, members) for u in uids)
    counts = {m: 0 for m in members}
    for owner in owners:
        assert owner is not None
        counts[owner] += 1
    assert sum(counts.values()) == len(uids) and all(counts.values())


async def test_the_api_error_of_a_lost_binding_is_not_a_drop() -> None:
    api = api_for("web", uid_owned_by(R0))
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    await shard.join()

    async def gone(path: str, patch: dict[str, Any]) -> dict[str, Any]:
        raise ApiError(404, "NotFound", "deleted")

    api.merge_patch = gone  # type: ignore[method-assign]
    assert await shard.operator.process(QueuedBinding(key("web"), 0, 0.0, 1)) is Outcome.DONE
    assert shard.operator.bindings[RB].get("ns/web") is None


async def test_a_write_that_waited_for_the_rate_limiter_is_checked_again_as_it_leaves() -> None:
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    from fleetsched.controller.runtime import controller as runtime
    from fleetsched.kube.client import KubeClient

    seen: list[str] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append(request.method)
        return web.json_response({"metadata": {"resourceVersion": "1"}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handler)
    async with TestServer(app) as server:
        client = KubeClient(Connection(server=str(server.make_url("")).rstrip("/")))
        shard = Shard()
        shard.operator.client = client
        client.write_guard = shard.operator.runtime.guard_worker_write
        mine = uid_owned_by(R0)
        shard.operator.on_binding_event(RB, "ADDED", binding("a", mine))
        await shard.join()
        try:
            # outside a worker (Leases, Events): never stopped by the guard
            shard.clock.now += 30
            await client.merge_patch("/lease", {})

            async def as_worker() -> None:
                runtime._CURRENT.set((key("a"), mine))
                await client.get("/binding")  # reads are not guarded
                await client.merge_patch("/binding", {})

            with pytest.raises(NotOwner):
                await asyncio.create_task(as_worker())
        finally:
            await client.close()
    assert seen == ["PATCH", "GET"]


async def test_a_write_stopped_by_the_guard_leaves_no_generation_of_ours_behind() -> None:
    api = api_for("web", uid_owned_by(R0))
    shard = Shard(api)
    shard.operator.on_binding_event(RB, "ADDED", copy.deepcopy(api.binding))
    await shard.join()

    async def guarded(path: str, patch: dict[str, Any]) -> dict[str, Any]:
        raise NotOwner  # what KubeClient's write_guard raises once the Lease lapsed

    api.merge_patch = guarded  # type: ignore[method-assign]
    await run_one(shard, "web")
    assert shard.operator.store.own_generation == {}
    assert key("web") not in shard.operator.queue


async def test_a_key_dropped_during_a_lapse_is_taken_again_after_the_rejoin() -> None:
    shard = Shard()
    shard.operator.on_binding_event(RB, "ADDED", binding("a", uid_owned_by(R0)))
    await shard.join()
    assert shard.queued() == {key("a")}
    shard.clock.now += 30  # paused past the renew deadline: the next pop finds nothing owned
    entry = shard.operator.queue.pop_nowait()
    assert entry is not None and not shard.operator.runtime.owns_key(entry.key)
    shard.operator.runtime._drop_not_owned(entry)  # what the worker does with it
    assert shard.queued() == set()
    shard.leases.put_peer(R1, renew_time="2020-01-01T00:00:30.000000Z")  # renewed: members unchanged
    with capture_logs() as logs:
        await shard.membership.step()  # SIGCONT: the lapse is published first, then the renewal
        shard.clock.now += SHARDING.retry_period
        await shard.membership.step()
    changes = [(e["active"], e["owned"]) for e in logs if e["event"] == "shard_membership_changed"]
    assert changes[0] == (False, 0) and changes[-1] == (True, 1)
    assert shard.queued() == {key("a")}
