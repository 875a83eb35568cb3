"""Sharded mode (``--shard-mode=lease``): replicas divide the objects through member Leases.

Each replica holds a member Lease (coordination.k8s.io/v1) named after itself, labelled with its
shard group, in the controller's namespace; the live members divide the objects by rendezvous
hashing of the object's UID over the member names (``rendezvous_owner``), so a membership change
moves only the departed or joining member's share.

The Lease itself (writing it, taking it over, noticing a second writer, the bounds on what peers
wrote) is ``fleetsched.kube.lease``'s; this module is the membership built on it. The timing rules
are client-go leader election's, applied per member:

* A replica renews its Lease every ``retry_period`` and HOLDS it while its last successful renewal
  is younger than ``renew_deadline`` by its own monotonic clock (fencing: it stops writing before
  the Lease can expire for the others, ``lease_duration`` after the record they saw last changed).
* Every ``retry_period`` it LISTs the group's Leases. A peer is live while the spec it last showed
  changed less than its ``leaseDurationSeconds`` ago by OUR clock: the peer's ``renewTime`` is never
  compared with the local clock, so skew between the clocks does not matter (their rates do).
* After (re)acquiring its Lease (start, or after a lapse such as SIGSTOP), a replica owns nothing
  until a LIST made afterwards has completed and one more retry period has passed, so the peers
  have listed it too and given up its share before it takes it.
* A peer's Lease is not believed when its ``holderIdentity`` is not its name or its
  ``leaseDurationSeconds`` is not an integer in ``1..300`` (``kube.lease.member_lease_problem``):
  it is no member, and it is logged once (``shard_member_lease_ignored``), again only if the
  reason changes. Such Leases are collected like dead ones, after ``GC_LEASE_DURATIONS`` of OUR
  lease durations unchanged.
* A duplicate identity (another process renews our member Lease: two replicas with one
  ``--shard-identity``) stops this replica's writes at once (it holds nothing), is logged once
  (``shard_member_identity_duplicate``, naming the identity and the Lease) and turns ``/readyz``
  false with that reason (``problem``). The replica stops renewing and watches the Lease instead;
  when it is deleted (the other stopped gracefully) or unchanged for its duration (the other
  died), it takes the Lease over and joins again (``shard_member_identity_free``). The other
  process keeps the Lease meanwhile, so the identity's share is scheduled by exactly one process.
* A member Lease proves itself: with each renewal a replica writes ``proof.fleetsched.io/<member>``
  = ``<its instance> <its Lease's renewTime>`` on the group's proof Lease (``proof_name``, not
  labelled, so the LIST leaves it out). A peer counts only while that proof names the instance that
  wrote its Lease, and its Lease is not renewed for a lease duration (by OUR clock) past the
  proof's last change; never proven, it counts for
  its first lease duration (a joining replica proves itself within its first round). A Lease
  renewed by a process that schedules nothing is thus dropped within a lease duration and logged
  once (``shard_member_unproven``). While this replica cannot read the proofs, nothing is held
  against the others (``_peer_proven``).
* After taking over a Lease another process wrote last (a killed previous run, or a duplicate),
  a replica owns nothing for a renew deadline, by when that process has stopped writing (its own
  fencing) whatever it is.
* On graceful shutdown it deletes its Lease (the peers rebalance at their next LIST). Leases
  unchanged for ``GC_LEASE_DURATIONS`` lease durations (observed) are deleted by any live member,
  conditional on the resourceVersion seen, so a kill -9 leaves no litter.

This module owns the Leases and the view; what "owning" means is the controller's (see
``runtime.ControllerRuntime``), which checks ``owns(uid)`` at push, pop and before every write.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import structlog

from fleetsched.kube import lease as kube_lease
from fleetsched.kube.client import ApiError
from fleetsched.kube.lease import GROUP_LABEL as GROUP_LABEL
from fleetsched.kube.lease import ApiMemberLeaseStore as ApiMemberLeaseStore
from fleetsched.kube.lease import MemberLeaseStore as MemberLeaseStore
from fleetsched.kube.lease import lease_failure_hint
from fleetsched.scheduler.config.configuration import SHARD_MODES as SHARD_MODES

log = structlog.get_logger("fleetsched.shard")
_blake2b = hashlib.blake2b

# A peer's Lease unchanged (by our clock) for this many of its lease durations is deleted.
GC_LEASE_DURATIONS = 4
PROOF_PREFIX = "proof.fleetsched.io/"  # + member: "<instance> <renewTime>" on the group's proof Lease
PROOF_ATTEMPTS = 5  # conflicts on the proof Lease in one round before leaving it to the next
MAX_MEMBER_NAME = 63  # a DNS-1123 label, so the name is also a valid label value
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


# ---- ownership ------------------------------------------------------------------------------------


def member_score(member: str, uid: str) -> int:
    """The rendezvous weight of ``member`` for ``uid``: blake2b (8 bytes) of ``member\\0uid``."""
    digest = hashlib.blake2b(f"{member}\0{uid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def rendezvous_owner(uid: str, members: Iterable[str]) -> str | None:
    """The member owning ``uid``: the highest ``member_score`` (ties: the greater name); None
    without members. The same in every process and every run."""
    # Big-endian digests of one length order as their integers do: compare the bytes.
    tail = b"\0" + uid.encode()
    best: tuple[bytes, str] | None = None
    for member in members:
        candidate = (_blake2b(member.encode() + tail, digest_size=8).digest(), member)
        if best is None or candidate > best:
            best = candidate
    return None if best is None else best[1]


def proof_name(group: str) -> str:
    """The group's proof Lease: the group's member-name form plus ``.member-proofs`` (a dot, which
    no member Lease name has; not labelled with the group, so the members' LIST leaves it out)."""
    return f"{member_name(group, '')}.member-proofs"


def member_name(group: str, identity: str) -> str:
    """``<group>-<identity>`` as a DNS-1123 label: lowercase, characters other than ``a-z0-9-``
    become ``-``, no leading/trailing ``-``; past 63 characters, truncated and suffixed with 8 hex
    characters of its hash so distinct long identities stay distinct."""
    raw = f"{group}-{identity}" if identity else group
    name = re.sub(r"[^a-z0-9-]", "-", raw.lower()).strip("-")
    if len(name) > MAX_MEMBER_NAME:
        suffix = hashlib.blake2b(raw.encode(), digest_size=4).hexdigest()
        name = name[: MAX_MEMBER_NAME - len(suffix) - 1].rstrip("-") + "-" + suffix
    if not name:
        raise ValueError(f"shard member name from group {group!r} and identity {identity!r} is empty")
    return name


# ---- configuration --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShardConfig:
    """One replica's member Lease: the group (``--leader-elect-resource-name``), the namespace,
    this replica's member name, and client-go's timings (``--leader-elect-*``); ``identity`` is
    the raw ``--shard-identity`` the member name came from (for the logs; the member name when
    not given)."""

    group: str
    namespace: str
    member: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    identity: str = ""

    def __post_init__(self) -> None:
        if not self.group or len(self.group) > 63 or not _LABEL_VALUE.match(self.group):
            raise ValueError(
                f"shard group {self.group!r} (--leader-elect-resource-name) must be a valid label value"
            )
        if not self.namespace:
            raise ValueError("member Lease namespace (--leader-elect-resource-namespace) must not be empty")
        if self.member != member_name(self.member, ""):
            raise ValueError(f"shard member name {self.member!r} is not a DNS-1123 label")
        kube_lease.check_timings(self.lease_duration, self.renew_deadline, self.retry_period)

    @classmethod
    def of(cls, group: str, namespace: str, identity: str, **timings: float) -> ShardConfig:
        """From the group and a raw identity (``--shard-identity``, the host name by default)."""
        member = member_name(group, identity)
        return cls(group=group, namespace=namespace, member=member, identity=identity, **timings)


# ---- membership ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MembershipChange:
    """What the view became: the live members (self included while holding its Lease), who
    joined and left since the previous view, and whether this replica owns its share now."""

    members: tuple[str, ...]
    joined: tuple[str, ...]
    left: tuple[str, ...]
    active: bool


@dataclass(slots=True)
class _Peer:
    spec: dict[str, Any]
    observed: float  # our monotonic time when ``spec`` last changed
    resource_version: str | None
    problem: str | None = None  # why its Lease is not believed (kube.lease.member_lease_problem)
    instance: str = ""  # the process that wrote its Lease last (kube.lease.INSTANCE_ANNOTATION)
    first_seen: float = 0.0  # our monotonic time when its Lease was first listed
    unproven_logged: bool = False  # shard_member_unproven said (again only after a proof)


@dataclass(slots=True)
class _Duplicate:
    """Another process renews our member Lease: what we saw of it last, and since when."""

    error: kube_lease.DuplicateIdentity
    seen: tuple[Any, ...] | None = None  # (spec, instance) last read
    observed: float = 0.0  # our monotonic time when ``seen`` last changed


# what a request to the API server may end with besides an answer (aiohttp's disconnects included)
_FAILURES = (ApiError, OSError, TimeoutError, asyncio.TimeoutError, aiohttp.ClientError)


@dataclass
class ShardMembership:
    """This replica's member Lease and its view of the group's live members."""

    config: ShardConfig
    store: MemberLeaseStore
    clock: Callable[[], float] = time.monotonic
    wall_clock: Callable[[], datetime.datetime] = lambda: datetime.datetime.now(datetime.UTC)
    # called (on the event loop) whenever the members or ``active`` change
    on_change: Callable[[MembershipChange], None] | None = None

    # set while ``active``: workers wait on it
    active_event: asyncio.Event = field(default_factory=asyncio.Event)
    _last_renew: float | None = None
    _acquired_at: float | None = None  # start of the current holding (after a lapse: again)
    _join_at: float | None = None  # when this replica may own its share (None: not yet listed)
    _join_not_before: float = 0.0  # after taking over another process's Lease: its fencing
    _last_list: float | None = None
    _peers: dict[str, _Peer] = field(default_factory=dict)
    _members: frozenset[str] = frozenset()
    _active: bool = False
    _released: bool = False
    _duplicate: _Duplicate | None = None
    _own: kube_lease.MemberLease = field(init=False)
    # another member -> (its proof as last read, our monotonic time when it last changed)
    _proofs: dict[str, tuple[str, float]] = field(default_factory=dict)
    _proofs_read: float | None = None  # when the proof Lease was last read (None: never)
    _proof_lease: dict[str, Any] | None = None  # the proof Lease as last read or written

    def _lease_failed(self, event: str, verb: str, exc: BaseException) -> None:
        """A member-Lease request that failed: one warning naming the namespace and what to do."""
        log.warning(
            event, member=self.name, namespace=self.config.namespace, error=str(exc) or repr(exc),
            hint=lease_failure_hint(exc, verb, self.config.namespace),
        )
    def __post_init__(self) -> None:
        self._own = kube_lease.MemberLease(
            name=self.config.member,
            namespace=self.config.namespace,
            group=self.config.group,
            # whole seconds, rounded up: peers must not see a shorter duration than ours
            lease_duration=math.ceil(self.config.lease_duration),
            store=self.store,
            wall_clock=self.wall_clock,
        )

    @property
    def name(self) -> str:
        return self.config.member

    # ---- the state the controller reads ------------------------------------------------------

    @property
    def holds(self) -> bool:
        """True while our last successful renewal is younger than the renew deadline (fencing)."""
        if self._released or self._last_renew is None:
            return False
        return self.clock() - self._last_renew < self.config.renew_deadline

    @property
    def active(self) -> bool:
        """True while this replica owns its share: it holds its Lease, has joined (listed after
        acquiring, then a retry period) and its last LIST is younger than the renew deadline."""
        if not (self._active and self.holds):
            return False
        assert self._last_list is not None
        return self.clock() - self._last_list < self.config.renew_deadline

    @property
    def problem(self) -> str | None:
        """Why this replica may not hold its member Lease although it is up (a duplicate
        identity), for ``/readyz``; None otherwise."""
        if self._duplicate is None:
            return None
        return f"duplicate shard identity {self._identity!r}: {self._duplicate.error}"

    @property
    def _identity(self) -> str:
        return self.config.identity or self.config.member

    @property
    def members(self) -> tuple[str, ...]:
        """The live members as last computed, sorted (self included while holding)."""
        return tuple(sorted(self._members))

    @property
    def known(self) -> frozenset[str] | None:
        """The members as last computed (live and proven, self while holding); None before the
        first LIST, when nothing is known about the others yet."""
        return None if self._last_list is None else self._members

    def owner(self, uid: str) -> str | None:
        return rendezvous_owner(uid, self._members)

    def owns(self, uid: str) -> bool:
        """Whether this replica may process and write the object with ``uid`` now."""
        return self.active and rendezvous_owner(uid, self._members) == self.config.member

    # ---- one round ---------------------------------------------------------------------------

    async def step(self) -> None:
        """Renew (or acquire) our Lease, LIST the group, collect dead peers, publish the view."""
        if self._released:
            return
        now = self.clock()
        if self._duplicate is not None and not await self._duplicate_gone(now):
            self._publish()
            return
        if self._active and not self.active:
            # Our renewal or our LIST got too old since the last round (a lapse, e.g. SIGSTOP):
            # say so before anything else, so the controller forgets what it owned and takes it
            # all again once this replica has joined again (keys dropped meanwhile included).
            self._acquired_at, self._join_at = now, None
            self._publish()
        lapsed = not self.holds
        renewed = await self._renew(now)
        if renewed and lapsed:
            # A new holding: nothing is owned until the LIST below and a retry period after it,
            # even while that LIST is awaited.
            self._acquired_at, self._join_at = now, None
            log.info("shard_member_lease_acquired", member=self.name, group=self.config.group)
        if self.holds:
            await self._list()
            await self._prove()
        self._publish()

    async def _renew(self, now: float) -> bool:
        """Create or renew our Lease within what is left of the renew deadline."""
        if self._last_renew is not None and now - self._last_renew < self.config.renew_deadline:
            remaining = self._last_renew + self.config.renew_deadline - now
        else:
            remaining = self.config.renew_deadline
        try:
            previous = await asyncio.wait_for(self._own.renew(), remaining)
        except kube_lease.DuplicateIdentity as exc:
            self._found_duplicate(exc, now)
            return False
        except _FAILURES as exc:
            self._lease_failed("shard_member_lease_renew_failed", "update", exc)
            return False
        if previous is not None:
            # Another process wrote the Lease last (a previous run of ours killed, or a duplicate):
            # whatever it is, it stops writing within a renew deadline of its last renewal, which
            # came before ours.
            self._join_not_before = self.clock() + self.config.renew_deadline
            log.info(
                "shard_member_lease_taken_over",
                member=self.name,
                namespace=self.config.namespace,
                previous_instance=previous[:120],
                owns_nothing_for=self.config.renew_deadline,
            )
        self._last_renew = now
        return True

    def _found_duplicate(self, exc: kube_lease.DuplicateIdentity, now: float) -> None:
        """Another process renews our Lease: stop writing now, say so once, watch the Lease."""
        self._duplicate = _Duplicate(exc, observed=now)
        self._last_renew = None  # holds nothing from now on: no write passes the checks
        self._acquired_at = self._join_at = None
        log.error(
            "shard_member_identity_duplicate",
            identity=self._identity,
            member=self.name,
            namespace=self.config.namespace,
            other_instance=exc.other[:120],
            error=f"another replica runs with --shard-identity={self._identity} and renews member Lease "
            f"{self.config.namespace}/{self.name}: this replica stops writing and turns unready until "
            "that Lease is deleted or left unrenewed for its duration",
        )

    async def _duplicate_gone(self, now: float) -> bool:
        """While a duplicate holds our Lease: read it; True (and the state cleared) once it is
        gone or unchanged for its duration by our clock, so this replica may take it over."""
        duplicate = self._duplicate
        assert duplicate is not None
        try:
            current = await self.store.get(self.name)
        except _FAILURES as exc:
            self._lease_failed("shard_member_lease_read_failed", "get", exc)
            return False
        if current is not None:
            spec = dict(current.get("spec") or {})
            seen = (spec, kube_lease.instance_of(current))
            if seen != duplicate.seen:
                if duplicate.seen is not None:  # the first read: as found (renewed) at detection
                    duplicate.observed = now
                duplicate.seen = seen
            duration = kube_lease.duration_seconds(spec) or self.config.lease_duration
            if now - duplicate.observed < duration:
                return False
        self._duplicate = None
        self._own.lease = None
        log.warning(
            "shard_member_identity_free",
            identity=self._identity,
            member=self.name,
            namespace=self.config.namespace,
            lease="deleted" if current is None else "unrenewed for its duration",
        )
        return True

    async def _list(self) -> None:
        try:
            leases = await self.store.list()
        except _FAILURES as exc:
            self._lease_failed("shard_member_list_failed", "list", exc)
            return
        now = self.clock()
        self._last_list = now
        seen: set[str] = set()
        for lease in leases:
            meta = lease.get("metadata") or {}
            name = meta.get("name") or ""
            if not name or name == self.name:
                continue
            seen.add(name)
            spec = dict(lease.get("spec") or {})
            peer = self._peers.get(name)
            if peer is None or peer.spec != spec:
                problem = kube_lease.member_lease_problem(lease)
                if problem is not None and (peer is None or peer.problem != problem):
                    log.warning(
                        "shard_member_lease_ignored",
                        lease=f"{self.config.namespace}/{name}",
                        member=self.name,
                        reason=problem,
                    )
                first_seen = now if peer is None else peer.first_seen
                self._peers[name] = _Peer(
                    spec, now, meta.get("resourceVersion"), problem, kube_lease.instance_of(lease),
                    first_seen, peer is not None and peer.unproven_logged,
                )
            else:
                peer.resource_version = meta.get("resourceVersion")
                peer.instance = kube_lease.instance_of(lease)
        for name in set(self._peers) - seen:
            del self._peers[name]
        await self._collect(now)
        if self._acquired_at is not None and self._join_at is None:
            self._join_at = max(now + self.config.retry_period, self._join_not_before)

    def _peer_duration(self, peer: _Peer) -> float:
        """Its lease duration; ours for a Lease not believed (for collecting it)."""
        return float(kube_lease.duration_seconds(peer.spec) or self.config.lease_duration)

    def _peer_live(self, peer: _Peer, now: float) -> bool:
        if peer.problem is not None or not peer.spec.get("holderIdentity"):
            return False
        return now - peer.observed < self._peer_duration(peer)

    def _peer_proven(self, name: str, peer: _Peer, now: float) -> bool:
        """Whether the process renewing the peer's Lease proves it schedules: the group's proof
        Lease carries, under the peer's name, the instance that wrote its Lease, and the Lease was
        not renewed for a lease duration (by our clock) past the proof's last change. A peer never
        proven counts for its first lease duration (a replica joining writes its proof right after
        its Lease), and nothing is held against a peer while this replica cannot read the proofs
        itself."""
        duration = self._peer_duration(peer)
        if self._proofs_read is None or now - self._proofs_read >= self.config.renew_deadline:
            return True
        proof = self._proofs.get(name)
        # Stale only while its Lease goes on being renewed: a lease duration of renewals (by our
        # clock) past the proof's last change. A slow replica whose Lease and proof both lag is
        # the liveness rule's, not this one's.
        matches = proof is not None and proof[0].split(" ", 1)[0] == peer.instance
        if proof is not None and matches and peer.observed - proof[1] < duration:
            if peer.unproven_logged:
                peer.unproven_logged = False
                log.info("shard_member_proven", lease=f"{self.config.namespace}/{name}", member=self.name)
            return True
        if proof is None and now - peer.first_seen < duration:
            return True
        if not peer.unproven_logged:
            peer.unproven_logged = True
            log.warning(
                "shard_member_unproven",
                lease=f"{self.config.namespace}/{name}",
                member=self.name,
                instance=peer.instance[:120],
                proof=(proof[0] if proof else "")[:160],
                reason=f"its Lease is renewed by a process that does not renew its proof on "
                f"{self.config.namespace}/{proof_name(self.config.group)} (not a replica of the group, "
                f"or one stopped and its Lease renewed by something else): not counted as a member",
            )
        return False

    async def _prove(self) -> None:
        """Read the group's proof Lease (the others' proofs) and write ours: our instance and our
        Lease's renewTime, under our name. A conflict reads it again (``PROOF_ATTEMPTS``); other
        failures are left to the next round (nothing is held against the others meanwhile)."""
        name = proof_name(self.config.group)
        own = self._own.lease
        if own is None:
            return
        value = f"{self._own.instance} {(own.get('spec') or {}).get('renewTime') or ''}"
        key = PROOF_PREFIX + self.name
        for _ in range(PROOF_ATTEMPTS):
            try:
                current = await self.store.get(name)
                if current is None:
                    current = await self.store.create(self._proof_body(name))
                self._take_proofs(current)
                body = json.loads(json.dumps(current))
                meta = body.setdefault("metadata", {})
                annotations = dict(meta.get("annotations") or {})
                annotations[key] = value
                for gone in self._stale_proofs(annotations):
                    annotations.pop(gone, None)
                meta["annotations"] = annotations
                meta.pop("managedFields", None)
                self._proof_lease = await self.store.replace(body)
                return
            except ApiError as exc:
                if exc.is_conflict or exc.is_already_exists:
                    continue
                self._lease_failed("shard_member_proof_failed", "update", exc)
                return
            except _FAILURES as exc:
                self._lease_failed("shard_member_proof_failed", "update", exc)
                return
        log.info("shard_member_proof_conflicts", member=self.name, attempts=PROOF_ATTEMPTS)

    def _proof_body(self, name: str) -> dict[str, Any]:
        return {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name, "namespace": self.config.namespace},
            "spec": {},
        }

    def _take_proofs(self, lease: dict[str, Any]) -> None:
        now = self.clock()
        self._proofs_read = now
        annotations = (lease.get("metadata") or {}).get("annotations") or {}
        seen = {}
        for key, value in annotations.items():
            if not key.startswith(PROOF_PREFIX):
                continue
            name = key.removeprefix(PROOF_PREFIX)
            if name == self.name:
                continue
            before = self._proofs.get(name)
            seen[name] = before if before is not None and before[0] == value else (str(value), now)
        self._proofs = seen

    def _stale_proofs(self, annotations: dict[str, str]) -> list[str]:
        """Proofs of members with no Lease listed, unchanged for GC_LEASE_DURATIONS of our lease
        durations: dropped with our next write."""
        now = self.clock()
        horizon = GC_LEASE_DURATIONS * self.config.lease_duration
        return [
            PROOF_PREFIX + name
            for name, (_, changed) in self._proofs.items()
            if name not in self._peers and now - changed >= horizon
        ]

    async def _collect(self, now: float) -> None:
        """Delete the Leases of peers unchanged for GC_LEASE_DURATIONS lease durations."""
        for name, peer in list(self._peers.items()):
            if now - peer.observed < GC_LEASE_DURATIONS * self._peer_duration(peer):
                continue
            try:
                await self.store.delete(name, peer.resource_version)
            except _FAILURES as exc:  # 409: it came back (or changed) since our LIST
                log.info("shard_member_lease_gc_skipped", lease=name, error=str(exc) or repr(exc))
                continue
            self._peers.pop(name, None)
            log.info("shard_member_lease_collected", lease=name, member=self.name)

    def _publish(self) -> None:
        """Recompute the view; tell ``on_change`` when the members or ``active`` changed."""
        now = self.clock()
        holds = self.holds
        members = {
            name for name, peer in self._peers.items()
            if self._peer_live(peer, now) and self._peer_proven(name, peer, now)
        }
        if holds:
            members.add(self.name)
        joined_up = self._join_at is not None and now >= self._join_at
        list_fresh = self._last_list is not None and now - self._last_list < self.config.renew_deadline
        active = holds and joined_up and list_fresh
        frozen = frozenset(members)
        if frozen == self._members and active == self._active:
            return
        previous = self._members
        self._members, self._active = frozen, active
        if active:
            self.active_event.set()
        else:
            self.active_event.clear()
        change = MembershipChange(
            members=tuple(sorted(frozen)),
            joined=tuple(sorted(frozen - previous)),
            left=tuple(sorted(previous - frozen)),
            active=active,
        )
        if self.on_change is not None:
            try:
                self.on_change(change)
            except Exception:  # the controller's bug must not stop the renewals (fencing still holds)
                log.exception("shard_membership_callback_failed", member=self.name)

    # ---- lifecycle ---------------------------------------------------------------------------

    async def run(self) -> None:
        """A round every retry period, until cancelled or released."""
        while not self._released:
            try:
                await self.step()
            except Exception:  # never stop renewing on a bug; a lapse is what stops the writes
                log.exception("shard_membership_round_failed", member=self.name)
            await asyncio.sleep(self._next_round())

    def _next_round(self) -> float:
        """A retry period; sooner when the join is due earlier (so ownership starts on time)."""
        delay = self.config.retry_period
        if self._join_at is not None and not self._active:
            delay = min(delay, max(self._join_at - self.clock(), 0.0))
        return delay

    async def release(self) -> None:
        """Stop owning and delete our Lease (graceful shutdown): peers rebalance at their next LIST."""
        if self._released:
            return
        self._released = True
        self._active = False
        self.active_event.clear()
        if self._own.lease is None or self._duplicate is not None:
            return  # nothing of ours to delete (a duplicate holds it: it is not ours to delete)
        with contextlib.suppress(*_FAILURES):
            await self._own.delete()
            log.info("shard_member_lease_deleted", member=self.name, group=self.config.group)
