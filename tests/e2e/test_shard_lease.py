"""Two scheduler replicas in sharded mode (``--shard-mode=lease``) on a real kube-apiserver.

Each holds a member Lease; the bindings are divided by rendezvous hashing of their UID over the two
member names. Every binding is scheduled once, by its owner (managedFields name the writing
replica), the owned gauges add up, and when one replica stops gracefully (deleting its Lease) the
other owns everything and schedules what comes next.

What others may write in the group's Leases does not divide the bindings: a hand-made member Lease
with an unbelievable duration (or a holder that is not its name) is ignored and logged once, and a
second process started with an identity already in use stops one of the two, which turns unready
and says why, until the other goes away.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
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


def scheduled(
    server: APIServer, names: set[str], namespace: str = NAMESPACE
) -> dict[str, dict[str, Any]] | None:
    found = {
        b["metadata"]["name"]: b for b in list_bindings(server, namespace) if b["metadata"]["name"] in names
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


def hostile_lease(name: str, holder: str, duration: int) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "karmada-system", "labels": {GROUP_LABEL: GROUP}},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": duration},
    }


def check_each_scheduled_once_by_its_owner(
    found: dict[str, dict[str, Any]], members: list[str]
) -> dict[str, int]:
    """Each binding's placement was written by the rendezvous owner among ``members``; the
    bindings per owner."""
    shares = {member: 0 for member in members}
    for binding in found.values():
        owner = rendezvous_owner(binding["metadata"]["uid"], members)
        assert owner is not None
        shares[owner] += 1
        assert clusters_manager(binding) == f"fleetsched-scheduler/{owner}"
    return shares


def readyz(proc: SchedulerProcess) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{proc.port}/readyz", timeout=5) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def test_hand_made_member_leases_out_of_bounds_are_ignored_and_logged_once(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    namespace = "sharded-hostile"
    server.kubectl("create", "namespace", namespace)
    apply_with_status(server, [ready_cluster(name, 100_000) for name in CLUSTERS])
    ghost, impostor = f"{GROUP}-ghost", f"{GROUP}-impostor"
    for lease in (hostile_lease(ghost, ghost, 2**31 - 1), hostile_lease(impostor, MEMBERS["r0"], 4)):
        server.request("POST", "/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases", lease)
    replicas = {
        identity: start_scheduler(
            server, "--shard-mode=lease", f"--shard-identity={identity}", "--workers=4", *TIMINGS,
            name=identity,
        )
        for identity in MEMBERS
    }
    for proc in replicas.values():  # the two replicas only: neither hand-made Lease is a member
        wait_until(lambda p=proc: sees_both(p), timeout=30, message=lambda p=proc: p.log_tail())
    count = 100
    names = {f"h-{i:03d}" for i in range(count)}
    create_objects(server, [divided_binding(n, namespace, 6, CLUSTERS) for n in sorted(names)])
    found = wait_until(
        lambda: scheduled(server, names, namespace), timeout=120,
        message=lambda: "\n".join(p.log_tail(10) for p in replicas.values()),
    )
    shares = check_each_scheduled_once_by_its_owner(found, list(MEMBERS.values()))
    assert all(shares.values())
    writes = sum(
        p.metric("fleetsched_scheduler_binding_writes_total", result="success") for p in replicas.values()
    )
    assert writes == 2 * count
    for proc in replicas.values():
        ignored = proc.log_events("shard_member_lease_ignored")
        # once each, although the replica listed the group every second meanwhile
        expected = [f"karmada-system/{ghost}", f"karmada-system/{impostor}"]
        assert sorted(e["lease"] for e in ignored) == expected
        reasons = {e["lease"]: e["reason"] for e in ignored}
        assert "2147483647" in reasons[f"karmada-system/{ghost}"]
        assert "holderIdentity" in reasons[f"karmada-system/{impostor}"]


def test_a_second_replica_with_an_identity_in_use_leaves_one_writer_and_the_other_says_why(
    isolated_apiserver: APIServer, start_scheduler: Callable[..., SchedulerProcess]
) -> None:
    server = isolated_apiserver
    namespace = "sharded-duplicate"
    server.kubectl("create", "namespace", namespace)
    apply_with_status(server, [ready_cluster(name, 100_000) for name in CLUSTERS])
    first = start_scheduler(
        server, "--shard-mode=lease", "--shard-identity=r0", "--workers=4", *TIMINGS, name="r0-first"
    )
    r1 = start_scheduler(
        server, "--shard-mode=lease", "--shard-identity=r1", "--workers=4", *TIMINGS, name="r1"
    )
    for proc in (first, r1):
        wait_until(lambda p=proc: sees_both(p), timeout=30, message=lambda p=proc: p.log_tail())
    second = start_scheduler(
        server, "--shard-mode=lease", "--shard-identity=r0", "--workers=4", *TIMINGS, name="r0-second"
    )
    wait_until(
        lambda: first.log_events("shard_member_identity_duplicate"), timeout=30, message=first.log_tail
    )
    status, reason = readyz(first)
    assert status == 503 and "duplicate shard identity 'r0'" in reason
    assert f"karmada-system/{MEMBERS['r0']}" in reason
    wait_until(lambda: sees_both(second), timeout=30, message=second.log_tail)

    count = 100
    names = {f"d-{i:03d}" for i in range(count)}
    create_objects(server, [divided_binding(n, namespace, 6, CLUSTERS) for n in sorted(names)])
    procs = {"first": first, "second": second, "r1": r1}
    found = wait_until(
        lambda: scheduled(server, names, namespace), timeout=120,
        message=lambda: "\n".join(p.log_tail(10) for p in procs.values()),
    )
    shares = check_each_scheduled_once_by_its_owner(found, list(MEMBERS.values()))
    writes = {
        name: p.metric("fleetsched_scheduler_binding_writes_total", result="success")
        for name, p in procs.items()
    }
    # one spec and one status write per binding; the replica that found the duplicate wrote none
    assert writes == {"first": 0, "second": 2 * shares[MEMBERS["r0"]], "r1": 2 * shares[MEMBERS["r1"]]}
    duplicate = first.log_events("shard_member_identity_duplicate")
    assert len(duplicate) == 1  # once, although it kept watching the Lease every second
    assert duplicate[0]["identity"] == "r0" and duplicate[0]["namespace"] == "karmada-system"
    assert second.log_events("shard_member_identity_duplicate") == []
    assert readyz(first)[0] == 503

    # the second one stops gracefully (deleting the Lease): the first takes the identity back
    assert second.stop() == 0
    wait_until(lambda: readyz(first)[0] == 200, timeout=30, message=first.log_tail)
    wait_until(lambda: sees_both(first), timeout=30, message=first.log_tail)
    late = {f"late-{i}" for i in range(10)}
    create_objects(server, [divided_binding(n, namespace, 6, CLUSTERS) for n in sorted(late)])
    done = wait_until(lambda: scheduled(server, late, namespace), timeout=30, message=first.log_tail)
    late_shares = check_each_scheduled_once_by_its_owner(done, list(MEMBERS.values()))
    assert late_shares[MEMBERS["r0"]] > 0
    assert first.metric("fleetsched_scheduler_binding_writes_total", result="success") == (
        2 * late_shares[MEMBERS["r0"]]
    )
    assert first.log_events("shard_member_identity_free")[0]["lease"] == "deleted"
