"""Two scheduler replicas in sharded mode (``--shard-mode=lease``) on a real kube-apiserver.

Each holds a member Lease; the bindings are divided by rendezvous hashing of their UID over the two
member names. Every binding is scheduled once, by its owner (managedFields name the writing
replica), the owned gauges add up, and when one replica stops gracefully (deleting its Lease) the
other owns everything and schedules what comes next.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from fleetsched.controller.runtime.shard import GROUP_LABEL, member_name, rendezvous_owner
from tests.support.controlplane import APIServer, wait_until
from tests.support.karmada import (
    apply_with_status,
    binding_state,
    create_objects,
    divided_binding,
    list_bindings,
    ready_cluster,
)
from tests.support.processes import SchedulerProcess

NAMESPACE = "sharded"
GROUP = "fleetsched-scheduler"
CLUSTERS = ["m1", "m2", "m3"]
BINDINGS = 200
TIMINGS = (
    "--leader-elect-lease-duration=4s",
    "--leader-elect-renew-deadline=3s",
    "--leader-elect-retry-period=1s",
)
MEMBERS = {identity: member_name(GROUP, identity) for identity in ("r0", "r1")}


def membership(proc: SchedulerProcess) -> dict[str, Any] | None:
    """The replica's last ``shard_membership_changed`` log line."""
    last = None
    for line in proc.log_path.read_text(errors="replace").splitlines():
        if '"shard_membership_changed"' in line:
            last = json.loads(line)
    return last


def sees_both(proc: SchedulerProcess) -> bool:
    line = membership(proc)
    return line is not None and line["active"] and line["members"] == sorted(MEMBERS.values())


def scheduled(server: APIServer, names: set[str]) -> dict[str, dict[str, Any]] | None:
    found = {
        b["metadata"]["name"]: b for b in list_bindings(server, NAMESPACE) if b["metadata"]["name"] in names
    }
    if len(found) != len(names) or not all(binding_state(b)["scheduled"] for b in found.values()):
        return None
    return found


def clusters_manager(binding: dict[str, Any]) -> str:
    """The field manager owning ``spec.clusters``: the replica that wrote the placement."""
    managers = [
        entry["manager"]
        for entry in binding["metadata"].get("managedFields") or ()
        if "f:clusters" in ((entry.get("fieldsV1") or {}).get("f:spec") or {})
    ]
    assert len(managers) == 1, binding["metadata"].get("managedFields")
    return str(managers[0])


def test_two_sharded_replicas_divide_the_bindings_and_one_takes_over_when_the_other_stops(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    server.kubectl("create", "namespace", NAMESPACE)
    apply_with_status(server, [ready_cluster(name, 100_000) for name in CLUSTERS])
    replicas = {
        identity: start_scheduler(
            server, "--shard-mode=lease", f"--shard-identity={identity}", "--workers=4", *TIMINGS,
            name=identity,
        )
        for identity in MEMBERS
    }
    for proc in replicas.values():
        wait_until(lambda p=proc: sees_both(p), timeout=30, message=lambda p=proc: p.log_tail())
    leases = json.loads(
        server.kubectl("get", "lease", "-n", "karmada-system", "-l", f"{GROUP_LABEL}={GROUP}", "-o", "json")
    )["items"]
    assert sorted(lease["spec"]["holderIdentity"] for lease in leases) == sorted(MEMBERS.values())
    assert all(lease["spec"]["leaseDurationSeconds"] == 4 for lease in leases)
    # the leader Lease is not used in sharded mode
    lease_names = server.kubectl("get", "lease", "-n", "karmada-system", "-o", "name").split()
    assert "lease.coordination.k8s.io/fleetsched-scheduler" not in lease_names

    names = {f"b-{i:03d}" for i in range(BINDINGS)}
    create_objects(server, [divided_binding(n, NAMESPACE, 6, CLUSTERS) for n in sorted(names)])
    found = wait_until(
        lambda: scheduled(server, names), timeout=120,
        message=lambda: "\n".join(p.log_tail(10) for p in replicas.values()),
    )
    members = list(MEMBERS.values())
    shares = {member: 0 for member in members}
    for binding in found.values():
        owner = rendezvous_owner(binding["metadata"]["uid"], members)
        assert owner is not None
        shares[owner] += 1
        assert clusters_manager(binding) == f"fleetsched-scheduler/{owner}"
    assert all(shares.values())  # both replicas had a share
    owned = {identity: p.metric("fleetsched_scheduler_owned_bindings") for identity, p in replicas.items()}
    assert owned == {identity: shares[MEMBERS[identity]] for identity in MEMBERS}
    # no member changed while scheduling: exactly one spec and one status write per binding
    writes = sum(
        p.metric("fleetsched_scheduler_binding_writes_total", result="success") for p in replicas.values()
    )
    assert writes == 2 * BINDINGS
    assert sum(p.metric("fleetsched_scheduler_shard_member_lease_held") for p in replicas.values()) == 2
    versions = {name: b["metadata"]["resourceVersion"] for name, b in found.items()}

    # r1 stops gracefully: it deletes its member Lease, so r0 takes its share at its next LIST.
    assert replicas["r1"].stop() == 0
    lease_names = server.kubectl("get", "lease", "-n", "karmada-system", "-o", "name").split()
    assert f"lease.coordination.k8s.io/{MEMBERS['r1']}" not in lease_names
    r0 = replicas["r0"]
    wait_until(
        lambda: r0.metric("fleetsched_scheduler_owned_bindings") == BINDINGS, timeout=10,
        message=r0.log_tail,
    )
    assert membership(r0)["members"] == [MEMBERS["r0"]]  # type: ignore[index]
    create_objects(server, [divided_binding("after-stop", NAMESPACE, 6, CLUSTERS)])
    late = wait_until(lambda: scheduled(server, {"after-stop"}), timeout=30, message=r0.log_tail)
    assert clusters_manager(late["after-stop"]) == f"fleetsched-scheduler/{MEMBERS['r0']}"
    # what r1 scheduled is not written again by its new owner
    current = {b["metadata"]["name"]: b for b in list_bindings(server, NAMESPACE)}
    assert {name: current[name]["metadata"]["resourceVersion"] for name in names} == versions
    assert r0.metric("fleetsched_scheduler_owned_bindings") == BINDINGS + 1
