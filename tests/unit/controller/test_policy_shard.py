"""The policy controller in sharded mode: each replica pushes, processes and writes only the
templates, policies and terminating bindings it owns; a policy change reaches every template
through its owner; ownership lost before a write drops the key unwritten; a handed-over template
is finished by its new owner. Two replicas share one in-memory API whose writes are delivered to
both as watch events, and a membership stand-in decides who is live."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from test_policy_deletion import a_binding

from fleetsched.controller.policy.operator import KNOWN_RESOURCES, PolicyController, PolicyControllerConfig
from fleetsched.controller.runtime import metrics
from fleetsched.controller.runtime.queue import QueueKey, SchedulingQueue
from fleetsched.controller.runtime.shard import MembershipChange, ShardConfig, rendezvous_owner
from fleetsched.kube.client import ApiError

GROUP = "fleetsched-controller"
R0, R1 = f"{GROUP}-r0", f"{GROUP}-r1"
DEPLOYMENTS = KNOWN_RESOURCES["deployments.apps"]
PP_ID = "propagationpolicy.karmada.io/permanent-id"
POLICY_ID = "11111111-2222-4333-8444-555555555555"
POLICY_FINALIZER = "karmada.io/propagation-policy-controller"
POLICY_PATH = "/apis/policy.karmada.io/v1alpha1/namespaces/shop/propagationpolicies/web"
POLICY_KEY = QueueKey("PropagationPolicy", "shop", "web")
RB_COLLECTION = "/apis/work.karmada.io/v1alpha2/namespaces/shop/resourcebindings"


def sample(name: str, **labels: str) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels or None) or 0.0


def merged(base: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(base) if isinstance(base, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merged(out.get(key), value)
    return out


@dataclass
class Clock:
    now: float = 1000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Members:
    """What the runtime reads of ``shard.ShardMembership``: who is live and whether we are in."""

    me: str
    live: tuple[str, ...]
    active: bool = True
    active_event: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.active_event.set()

    @property
    def holds(self) -> bool:
        return self.active

    @property
    def name(self) -> str:
        return self.me

    def owner(self, uid: str) -> str | None:
        return rendezvous_owner(uid, self.live)

    def owns(self, uid: str) -> bool:
        return self.active and self.owner(uid) == self.me


class World:
    """One API server (objects by path, resourceVersions, merge-patch preconditions) and the
    replicas watching it: every stored object is delivered to every replica as a watch event."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str, str]] = []  # (writer, verb, path)
        self.replicas: dict[str, PolicyController] = {}
        self.clock = Clock()
        self.version = 100
        self.on_read: Callable[[str, str], None] | None = None

    # ---- the replicas ---------------------------------------------------------------------

    def replica(self, member: str, live: tuple[str, ...] = (R0, R1)) -> PolicyController:
        config = PolicyControllerConfig(
            resources=(DEPLOYMENTS,),
            workers=1,
            sharding=ShardConfig(group=GROUP, namespace="karmada-system", member=member),
        )
        controller = PolicyController(
            client=WriterClient(self, member),  # type: ignore[arg-type]
            connection=None,  # type: ignore[arg-type]
            config=config,
            queue=SchedulingQueue(clock=self.clock),
        )
        self.replicas[member] = controller
        for obj in list(self.objects.values()):  # the initial LIST
            self.deliver_to(controller, None, obj)
        controller.runtime.synced.set()
        self.join(member, live)
        return controller

    def join(self, member: str, live: tuple[str, ...], *, previous: tuple[str, ...] = ()) -> None:
        controller = self.replicas[member]
        controller.runtime.membership = Members(member, live)  # type: ignore[assignment]
        change = MembershipChange(
            members=live,
            joined=tuple(m for m in live if m not in previous),
            left=tuple(m for m in previous if m not in live),
            active=True,
        )
        controller.runtime.membership_changed(change)

    async def settle(self, *members: str, rounds: int = 8) -> None:
        """Run each replica's worker until its queue is idle; then let backoffs expire; again."""
        members = members or tuple(self.replicas)
        for _ in range(rounds):
            for member in members:
                controller = self.replicas[member]
                worker = asyncio.create_task(controller.runtime.run_worker(0))
                for _ in range(2000):
                    sizes = controller.queue.sizes()
                    if sizes.active == 0 and sizes.processing == 0:
                        break
                    await asyncio.sleep(0)
                worker.cancel()
                await asyncio.gather(worker, return_exceptions=True)
            self.clock.now += 30
            for member in members:
                self.replicas[member].queue.flush_backoff()

    # ---- the API ------------------------------------------------------------------------------

    def store(self, path: str, obj: dict[str, Any], event: str | None = "MODIFIED") -> dict[str, Any]:
        self.version += 1
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.version)
        meta.setdefault("uid", f"uid-{path.rsplit('/', 1)[-1]}-{self.version}")
        self.objects[path] = obj
        for controller in self.replicas.values():
            self.deliver_to(controller, event, obj)
        return copy.deepcopy(obj)

    def deliver_to(self, controller: PolicyController, event: str | None, obj: dict[str, Any]) -> None:
        obj = copy.deepcopy(obj)
        kind = obj["kind"]
        if kind == "Deployment":
            controller.on_template_event(DEPLOYMENTS, event, obj)
        elif kind == "PropagationPolicy":
            controller.on_policy_event(kind, event, obj)
        elif kind == "ResourceBinding" and controller.removes_binding_finalizers:
            controller.on_binding_event(kind, event, obj)

    def writers_of(self, path: str, verb: str | None = None) -> set[str]:
        return {w for w, v, p in self.writes if p == path and (verb is None or v == verb)}


@dataclass
class WriterClient:
    world: World
    member: str

    async def get(self, path: str, params: Any = None) -> dict[str, Any]:
        if self.world.on_read is not None:
            self.world.on_read(self.member, path)
        obj = self.world.objects.get(path)
        if obj is None:
            raise ApiError(404, "NotFound", f"{path} not found")
        return copy.deepcopy(obj)

    def _write(self, verb: str, path: str) -> None:
        self.world.writes.append((self.member, verb, path))

    async def create(self, collection: str, body: dict[str, Any]) -> dict[str, Any]:
        path = f"{collection}/{body['metadata']['name']}"
        if path in self.world.objects:
            raise ApiError(409, "AlreadyExists", "already exists")
        self._write("create", path)
        return self.world.store(path, body, "ADDED")

    async def replace(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        current = self.world.objects[path]
        if body["metadata"].get("resourceVersion") != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        self._write("replace", path)
        return self.world.store(path, body)

    async def merge_patch(self, path: str, patch: dict[str, Any]) -> dict[str, Any]:
        current = self.world.objects.get(path)
        if current is None:
            raise ApiError(404, "NotFound", f"{path} not found")
        wanted = (patch.get("metadata") or {}).get("resourceVersion")
        if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "the object has been modified")
        self._write("patch", path)
        return self.world.store(path, merged(current, patch))


def deployment_path(name: str) -> str:
    return f"/apis/apps/v1/namespaces/shop/deployments/{name}"


def add_deployments(world: World, count: int, *, prefix: str = "web") -> list[str]:
    names = [f"{prefix}-{i}" for i in range(count)]
    for name in names:
        world.store(
            deployment_path(name),
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}, "generation": 1},
                "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}},
            },
            "ADDED",
        )
    return names


def add_policy(world: World, clusters: list[str], **spec: Any) -> None:
    world.store(
        POLICY_PATH,
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {
                "name": "web",
                "namespace": "shop",
                "generation": 1,
                "labels": {PP_ID: POLICY_ID},
                "finalizers": [POLICY_FINALIZER],
            },
            "spec": {
                "resourceSelectors": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    }
                ],
                "placement": {"clusterAffinity": {"clusterNames": clusters}},
                **spec,
            },
        },
        "ADDED",
    )


def owner_of(world: World, path: str, live: tuple[str, ...] = (R0, R1)) -> str | None:
    return rendezvous_owner(world.objects[path]["metadata"]["uid"], live)


def binding_path(name: str) -> str:
    return f"{RB_COLLECTION}/{name}-deployment"


async def two_replicas_with_bindings(count: int = 30) -> tuple[World, list[str]]:
    world = World()
    add_policy(world, ["m1"])
    names = add_deployments(world, count)
    world.replica(R0)
    world.replica(R1)
    await world.settle()
    return world, names


# ---- the split -------------------------------------------------------------------------------------


async def test_each_template_is_claimed_and_bound_by_its_owner_only() -> None:
    world, names = await two_replicas_with_bindings()
    owners = {name: owner_of(world, deployment_path(name)) for name in names}
    assert set(owners.values()) == {R0, R1}, "both replicas have a share"
    for name, owner in owners.items():
        assert world.writers_of(binding_path(name), "create") == {owner}
        assert world.writers_of(binding_path(name)) == {owner}
        assert world.writers_of(deployment_path(name)) == {owner}, "the claim, by the owner"
        assert world.objects[deployment_path(name)]["metadata"]["labels"][PP_ID] == POLICY_ID
    created = [p for _, v, p in world.writes if v == "create"]
    assert len(created) == len(set(created)) == len(names), "exactly one binding per template"
    owned = {m: sum(1 for o in owners.values() if o == m) for m in (R0, R1)}
    for member, controller in world.replicas.items():
        templates = [k for k in controller.runtime.owned_keys() if k.kind == DEPLOYMENTS.name]
        assert len(templates) == owned[member]
    # the policy's own writes: none while it is not being deleted
    assert world.writers_of(POLICY_PATH) == set()


async def test_a_policy_change_reaches_every_template_through_its_owner() -> None:
    world, names = await two_replicas_with_bindings()
    policy = copy.deepcopy(world.objects[POLICY_PATH])
    policy["metadata"]["generation"] = 2
    policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["m1", "m2"]
    world.writes.clear()
    world.store(POLICY_PATH, policy)
    for member, controller in world.replicas.items():
        queued = {QueueKey(DEPLOYMENTS.name, "shop", n) for n in names} & set(controller._policy_notes)
        expected = {
            QueueKey(DEPLOYMENTS.name, "shop", n)
            for n in names
            if owner_of(world, deployment_path(n)) == member
        }
        assert queued == expected, "each replica notes the policy on the templates it owns, and only those"
        assert (POLICY_KEY in controller.queue) == (owner_of(world, POLICY_PATH) == member)
    await world.settle()
    for name in names:
        binding = world.objects[binding_path(name)]
        assert binding["spec"]["placement"]["clusterAffinity"] == {"clusterNames": ["m1", "m2"]}
        assert world.writers_of(binding_path(name)) == {owner_of(world, deployment_path(name))}


async def test_a_lazy_policy_change_waits_on_every_owner_for_a_user_change_as_in_single_mode() -> None:
    world = World()
    add_policy(world, ["m1"], activationPreference="Lazy")
    names = add_deployments(world, 20)
    world.replica(R0)
    world.replica(R1)
    await world.settle()
    policy = copy.deepcopy(world.objects[POLICY_PATH])
    policy["metadata"]["generation"] = 2
    policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["m2"]
    world.store(POLICY_PATH, policy)
    await world.settle()
    for name in names:  # reconciled for the policy change, and deferred
        assert world.objects[binding_path(name)]["spec"]["placement"]["clusterAffinity"] == {
            "clusterNames": ["m1"]
        }
    touched = names[:6]
    for name in touched:  # a user change applies the pending policy change
        template = copy.deepcopy(world.objects[deployment_path(name)])
        template["spec"]["replicas"] = 3
        world.store(deployment_path(name), template)
    await world.settle()
    for name in names:
        expected = ["m2"] if name in touched else ["m1"]
        binding = world.objects[binding_path(name)]
        assert binding["spec"]["placement"]["clusterAffinity"] == {"clusterNames": expected}, name
        assert world.writers_of(binding_path(name)) == {owner_of(world, deployment_path(name))}


async def test_deleting_a_policy_releases_each_claim_by_its_owner_then_its_owner_drops_the_finalizer() -> (
    None
):
    world, names = await two_replicas_with_bindings()
    policy = copy.deepcopy(world.objects[POLICY_PATH])
    policy["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    world.writes.clear()
    world.store(POLICY_PATH, policy)
    await world.settle()
    for name in names:
        owner = owner_of(world, deployment_path(name))
        assert PP_ID not in world.objects[deployment_path(name)]["metadata"].get("labels", {})
        assert PP_ID not in world.objects[binding_path(name)]["metadata"].get("labels", {})
        assert world.writers_of(deployment_path(name)) == {owner}
        assert world.writers_of(binding_path(name)) == {owner}
    assert world.objects[POLICY_PATH]["metadata"]["finalizers"] == []
    assert world.writers_of(POLICY_PATH) == {owner_of(world, POLICY_PATH)}


async def test_the_policy_owner_keeps_the_finalizer_while_a_template_still_carries_the_claim() -> None:
    world, names = await two_replicas_with_bindings()
    policy_owner = owner_of(world, POLICY_PATH)
    assert policy_owner is not None
    other = R1 if policy_owner == R0 else R0
    policy = copy.deepcopy(world.objects[POLICY_PATH])
    policy["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    world.store(POLICY_PATH, policy)
    await world.settle(policy_owner)  # the other replica has not released its share yet
    assert world.objects[POLICY_PATH]["metadata"]["finalizers"] == [POLICY_FINALIZER]
    assert POLICY_KEY in world.replicas[policy_owner].queue, "retried with backoff"
    others = [n for n in names if owner_of(world, deployment_path(n)) == other]
    assert others and all(PP_ID in world.objects[deployment_path(n)]["metadata"]["labels"] for n in others)
    await world.settle()
    assert world.objects[POLICY_PATH]["metadata"]["finalizers"] == []


# ---- ownership at pop and before the write ---------------------------------------------------------


def r0_among_two(count: int = 12) -> tuple[World, list[str], PolicyController]:
    """A policy, ``count`` templates and replica r0 of two (r1 never runs)."""
    world = World()
    add_policy(world, ["m1"])
    names = add_deployments(world, count)
    return world, names, world.replica(R0)


async def test_a_key_not_owned_at_pop_is_dropped_unprocessed() -> None:
    world, names, r0 = r0_among_two()
    theirs = next(n for n in names if owner_of(world, deployment_path(n)) == R1)
    key = QueueKey(DEPLOYMENTS.name, "shop", theirs)
    assert key not in r0.queue, "not pushed: not owned"
    dropped = sample("fleetsched_policy_controller_not_owner_drops_total")
    r0.queue.push(key)
    await world.settle(R0)
    assert key not in r0.queue
    assert sample("fleetsched_policy_controller_not_owner_drops_total") == dropped + 1
    assert binding_path(theirs) not in world.objects
    assert world.writers_of(deployment_path(theirs)) == set()


async def test_ownership_lost_before_the_write_drops_the_key_without_writing() -> None:
    world, names, r0 = r0_among_two()
    mine = next(n for n in names if owner_of(world, deployment_path(n)) == R0)

    def lease_lapses_after_the_decision(member: str, path: str) -> None:
        # r0 has read the binding (absent: create it) when its member Lease lapses
        if member == R0 and path == binding_path(mine):
            r0.runtime.membership = Members(R0, (R0, R1), active=False)  # type: ignore[assignment]

    world.on_read = lease_lapses_after_the_decision
    dropped = sample("fleetsched_policy_controller_not_owner_drops_total")
    await world.settle(R0)
    assert binding_path(mine) not in world.objects, "the create was refused before it was sent"
    assert (R0, "create", binding_path(mine)) not in world.writes
    assert QueueKey(DEPLOYMENTS.name, "shop", mine) not in r0.queue, "dropped, not retried"
    # it, and the keys still queued behind it (no longer owned either)
    assert sample("fleetsched_policy_controller_not_owner_drops_total") >= dropped + 1


# ---- membership changes ----------------------------------------------------------------------------


async def test_a_survivor_takes_over_the_share_of_a_replica_that_left() -> None:
    world = World()
    add_policy(world, ["m1"])
    world.replica(R0)
    world.replica(R1)
    names = add_deployments(world, 20)
    await world.settle(R0)  # r1 never gets to its share
    theirs = [n for n in names if owner_of(world, deployment_path(n)) == R1]
    assert theirs and all(binding_path(n) not in world.objects for n in theirs)
    handoffs = sample("fleetsched_policy_controller_shard_handoffs_total", direction="in")
    world.join(R0, (R0,), previous=(R0, R1))
    assert sample("fleetsched_policy_controller_shard_handoffs_total", direction="in") >= handoffs + len(
        theirs
    )
    await world.settle(R0)
    for name in theirs:
        assert world.writers_of(binding_path(name)) == {R0}
    assert sample("fleetsched_policy_controller_owned_objects", kind="template") == len(names)
    assert sample("fleetsched_policy_controller_shard_members") == 1


async def test_a_policy_change_seen_while_not_active_for_a_moment_is_applied_once_active_again() -> None:
    world, names = await two_replicas_with_bindings(20)
    r0 = world.replicas[R0]
    r0.runtime.membership = Members(R0, (R0, R1), active=False)  # type: ignore[assignment]
    r0.runtime.membership_changed(MembershipChange(members=(R0, R1), joined=(), left=(), active=False))
    policy = copy.deepcopy(world.objects[POLICY_PATH])
    policy["metadata"]["generation"] = 2
    policy["spec"]["placement"]["clusterAffinity"]["clusterNames"] = ["m3"]
    world.store(POLICY_PATH, policy)
    mine = [n for n in names if owner_of(world, deployment_path(n)) == R0]
    assert mine and not any(QueueKey(DEPLOYMENTS.name, "shop", n) in r0.queue for n in mine)
    world.join(R0, (R0, R1), previous=(R0, R1))
    await world.settle()
    for name in names:
        binding = world.objects[binding_path(name)]
        assert binding["spec"]["placement"]["clusterAffinity"] == {"clusterNames": ["m3"]}, name
        assert world.writers_of(binding_path(name)) == {owner_of(world, deployment_path(name))}


async def test_a_handed_over_template_claimed_by_a_deleting_policy_is_released_by_its_new_owner() -> None:
    world, names = await two_replicas_with_bindings(20)
    policy = copy.deepcopy(world.objects[POLICY_PATH])
    policy["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    world.store(POLICY_PATH, policy)
    await world.settle(R0)  # r1 stops before releasing its share
    theirs = [n for n in names if owner_of(world, deployment_path(n)) == R1]
    assert theirs and all(PP_ID in world.objects[deployment_path(n)]["metadata"]["labels"] for n in theirs)
    world.writes.clear()
    world.join(R0, (R0,), previous=(R0, R1))
    await world.settle(R0)
    for name in names:
        assert PP_ID not in world.objects[deployment_path(name)]["metadata"].get("labels", {})
    assert world.objects[POLICY_PATH]["metadata"]["finalizers"] == []
    assert {writer for writer, _, _ in world.writes} == {R0}


async def test_standalone_terminating_bindings_are_queued_by_their_owner_only() -> None:
    world = World()
    replicas = {m: world.replica(m) for m in (R0, R1)}
    for controller in replicas.values():
        controller.removes_binding_finalizers = True
    binding = a_binding()  # terminating, with Karmada's finalizer, derived from Deployment shop/web
    stored = world.store(binding_path("web"), binding)
    owner = rendezvous_owner(stored["metadata"]["uid"], (R0, R1))
    key = QueueKey("ResourceBinding", "shop", "web-deployment")
    for member, controller in replicas.items():
        assert (key in controller.queue) == (member == owner)
    await world.settle()
    assert world.objects[binding_path("web")]["metadata"]["finalizers"] == []
    assert world.writers_of(binding_path("web")) == {owner}
