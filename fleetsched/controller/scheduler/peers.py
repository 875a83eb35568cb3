"""The ResourceBindings the workload (anti-)affinity plugins compare a binding with (gate
WorkloadAffinity), kept from the watched bindings and this process's decisions.

Karmada reads peers from its informer cache, preferring the copies of results it has just written.
Here the binding cache already holds our own writes' answers, and a decision that passed Reserve is
entered at once (``place``), before its write: concurrent workers see each other's placements. A
decision computed while a peer of its groups changed is made again (``changed_since``), as the
assume record does for capacity; a failed write puts the stored binding back (``observe``).
Only bindings with a group are held: the plugins never look at the others. With the gate off,
``NoPeers`` holds none and every call is a no-op, so no caller asks which it has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from fleetsched.controller.runtime.cache import object_key
from fleetsched.scheduler.convert import ConversionError, peer_from_dict
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import PeerBinding, SchedulingBinding

__all__ = ["NoPeers", "PeerIndex", "Peers"]

RB = "ResourceBinding"


def _groups(namespace: str, affinity: str, anti: str) -> list[tuple[str, str, str]]:
    out = []
    if affinity:
        out.append((namespace, "affinity", affinity))
    if anti:
        out.append((namespace, "anti", anti))
    return out


class Peers(Protocol):
    """What the scheduler does with the peers (``PeerIndex``, or ``NoPeers`` with the gate off)."""

    version: int

    def overlay(self, snapshot: Snapshot) -> Snapshot: ...

    def observe(self, kind: str, obj: Mapping[str, Any] | None, key: str | None = None) -> None: ...

    def stored(
        self, kind: str, previous: Mapping[str, Any] | None, obj: Mapping[str, Any] | None
    ) -> None: ...

    def place(self, binding: SchedulingBinding, targets: Iterable[str]) -> None: ...

    def changed_since(self, binding: SchedulingBinding, version: int) -> bool: ...


class NoPeers:
    """Gate WorkloadAffinity off: no peers are kept."""

    version = 0

    def overlay(self, snapshot: Snapshot) -> Snapshot:
        return snapshot

    def observe(self, kind: str, obj: Mapping[str, Any] | None, key: str | None = None) -> None:
        return None

    def stored(self, kind: str, previous: Mapping[str, Any] | None, obj: Mapping[str, Any] | None) -> None:
        return None

    def place(self, binding: SchedulingBinding, targets: Iterable[str]) -> None:
        return None

    def changed_since(self, binding: SchedulingBinding, version: int) -> bool:
        return False


class PeerIndex:
    def __init__(self) -> None:
        self._peers: dict[str, PeerBinding] = {}
        self._group_version: dict[tuple[str, str, str], int] = {}
        self.version = 0
        self._tuple: tuple[int, tuple[PeerBinding, ...]] | None = None
        self._overlaid: tuple[Snapshot, int, Snapshot] | None = None

    def overlay(self, snapshot: Snapshot) -> Snapshot:
        """``snapshot`` with the peers as they are now (derived once per change of either)."""
        cached = self._overlaid
        if cached is not None and cached[0] is snapshot and cached[1] == self.version:
            return cached[2]
        derived = snapshot.with_peers(self.peers())
        self._overlaid = (snapshot, self.version, derived)
        return derived

    def __len__(self) -> int:
        return len(self._peers)

    def peers(self) -> tuple[PeerBinding, ...]:
        if self._tuple is None or self._tuple[0] != self.version:
            self._tuple = (self.version, tuple(self._peers.values()))
        return self._tuple[1]

    def set(self, key: str, peer: PeerBinding | None) -> None:
        if peer is not None and not (peer.affinity_group or peer.anti_affinity_group):
            peer = None
        old = self._peers.get(key)
        if old == peer:
            return
        touched: list[tuple[str, str, str]] = []
        if old is not None:
            touched += _groups(old.namespace, old.affinity_group, old.anti_affinity_group)
            del self._peers[key]
        if peer is not None:
            touched += _groups(peer.namespace, peer.affinity_group, peer.anti_affinity_group)
            self._peers[key] = peer
        self.version += 1
        for group in touched:
            self._group_version[group] = self.version

    def observe(self, kind: str, obj: Mapping[str, Any] | None, key: str | None = None) -> None:
        """A stored version of a binding (None: it is gone)."""
        if kind != RB:
            return
        if obj is None:
            if key is not None:
                self.set(key, None)
            return
        try:
            peer: PeerBinding | None = peer_from_dict(obj)
        except ConversionError:
            peer = None
        self.set(object_key(obj), peer)

    def stored(self, kind: str, previous: Mapping[str, Any] | None, obj: Mapping[str, Any] | None) -> None:
        """``observe`` as the store hands versions over (``obj`` None: ``previous`` is gone)."""
        if obj is None:
            self.observe(kind, None, object_key(previous) if previous is not None else None)
        else:
            self.observe(kind, obj)

    def place(self, binding: SchedulingBinding, targets: Iterable[str]) -> None:
        """A decision that passed Reserve, before its write."""
        if binding.kind != RB:
            return
        peer = PeerBinding(
            binding.namespace,
            binding.name,
            binding.affinity_group,
            binding.anti_affinity_group,
            frozenset(targets),
        )
        self.set(binding.key, peer)

    def changed_since(self, binding: SchedulingBinding, version: int) -> bool:
        """Whether a peer of the binding's groups changed after ``version`` (another decision's or
        a watched write): a decision computed before then is made again."""
        if binding.kind != RB:
            return False
        return any(
            self._group_version.get(group, 0) > version
            for group in _groups(binding.namespace, binding.affinity_group, binding.anti_affinity_group)
        )
