"""Issue 30, items 1 and 2, on the real kube-apiserver: three sharded replicas
(``--shard-mode=lease``) with ``SchedulingOvercommitProtection``, and what someone else writes into
the group's Leases.

Before: one ledger annotation that was JSON but not an object, or an entry with ``"t": "abc"``,
failed every commit of every replica (0 of 11 bindings decided in 60 s); an entry from a member
that does not exist, stamped in the future and claiming every cpu, held every binding back past
its 30 s expiry; a well-formed member Lease for an identity no replica runs, renewed by a third
party, held a quarter of the bindings unscheduled, all without a word in the logs.

Now, with each hostile annotation on ``<group>.assume-ledger`` (one set of replicas serves every
case, each case in its own namespace with its own annotation): every binding gets its Scheduled
condition within 10 s, the cpu handed out is exactly what the clusters have free (so the hostile
claim counted for nothing, and nothing was overcommitted), and each replica that committed says
the skipped entry once, naming its member. A fake member Lease that the test renews is counted
for its first lease duration at most: no binding waits longer than that, and each replica says so
once (``shard_member_unproven``).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import threading
import time
import urllib.error
from collections.abc import Iterator
from typing import Any

import pytest

from fleetsched.api.quantity import parse_quantity
from fleetsched.controller.runtime.shard import GROUP_LABEL
from fleetsched.controller.scheduler.assume.ledger import ANNOTATION_PREFIX, encode_entry, ledger_name
from fleetsched.kube.lease import micro_time
from fleetsched.scheduler.types import AssumedWorkload, Component, ReplicaRequirements
from tests.support.controlplane import APIServer, wait_until
from tests.support.overcommit import CLUSTERS, GATE, MERGE, RB_NS, cpu_binding, cpu_cluster, create_all, tally
from tests.support.processes import ShardedReplicas, ShardTimings

NAMES = [f"lh-{i}" for i in range(10)]
CPU = 100
FREE = {c: CPU for c in NAMES}
LEASES = "/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases"
# Short member-Lease timings, so that a fake member's grace is seconds; long enough that a loaded
# 2-core machine does not lapse them.
TIMINGS = ShardTimings(lease_duration=6.0, renew_deadline=4.0, retry_period=1.0)
DECIDED_WITHIN = 10.0
SKIPPED = "fleetsched_scheduler_ledger_entries_skipped_total"
WRITES = "fleetsched_scheduler_ledger_writes_total"


@pytest.fixture(scope="module")
def replicas(
    isolated_apiserver: APIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ShardedReplicas]:
    server = isolated_apiserver
    for name in NAMES:
        doc = cpu_cluster(name, CPU)
        server.request("POST", CLUSTERS, {k: v for k, v in doc.items() if k != "status"})
        server.request("PATCH", f"{CLUSTERS}/{name}/status", {"status": doc["status"]}, content_type=MERGE)
    group = ShardedReplicas(
        kubeconfig=server.kubeconfig, workdir=tmp_path_factory.mktemp("ledger-hostile"), timings=TIMINGS,
        extra_args=("--workers=8", "--kube-api-qps=0", "--log-level=info", GATE),
    )
    try:
        group.start("r0", "r1", "r2")
        group.wait_settled()
        yield group
    finally:
        group.stop()


def _ledger_path(replicas: ShardedReplicas) -> str:
    return f"{LEASES}/{ledger_name(replicas.group)}"


def _annotate(server: APIServer, path: str, name: str, value: str | None) -> None:
    """Set (or with None remove) one annotation of the ledger Lease, creating the Lease if no
    replica has yet."""
    patch = {"metadata": {"annotations": {name: value}}}
    try:
        server.request("PATCH", path, patch, content_type=MERGE)
    except urllib.error.HTTPError as exc:
        if exc.code != 404 or value is None:
            raise
        lease = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": path.rsplit("/", 1)[1], "annotations": {name: value}}, "spec": {},
        }
        server.request("POST", LEASES, lease)


def _all_cpu_entry(at: float) -> str:
    """One entry claiming every cpu of the fleet (10 x 100 replicas of 1 cpu), stamped ``at``."""
    one = ReplicaRequirements(resource_request=(("cpu", parse_quantity("1")),))
    footprints = {c: AssumedWorkload("lh", (Component("greedy", CPU, one),)) for c in NAMES}
    return json.dumps({"lh/greedy": encode_entry(footprints, at, "1")})


def _hostile(case: str) -> str:
    now = time.time()
    return {
        "garbage": "garbage{",
        "list": "[1,2,3]",
        "t-abc": json.dumps({"lh/x": {**json.loads(_all_cpu_entry(now))["lh/greedy"], "t": "abc"}}),
        "unknown-member": _all_cpu_entry(now),
        "future-all-cpu": _all_cpu_entry(now + 3600),
    }[case]


@pytest.fixture
def namespace(
    replicas: ShardedReplicas, isolated_apiserver: APIServer, request: pytest.FixtureRequest
) -> Iterator[str]:
    server = isolated_apiserver
    name = f"lh-{request.node.callspec.id if hasattr(request.node, 'callspec') else 'lease'}"
    server.kubectl("create", "namespace", name)
    yield name
    server.request("DELETE", RB_NS.format(ns=name))
    wait_until(
        lambda: not server.request("GET", RB_NS.format(ns=name))["items"], timeout=60,
        message="bindings left after the test",
    )
    # Every replica has seen the deletions and dropped its entries from the ledger (3 s after their
    # writes): nothing assumed carries over into the next case.
    started = time.monotonic()
    own = {ANNOTATION_PREFIX + replicas.member(i) for i in replicas.replicas}

    def clear() -> bool:
        try:
            lease = server.request("GET", _ledger_path(replicas))
        except urllib.error.HTTPError:
            return False
        entries = own & set(lease["metadata"].get("annotations") or {})  # type: ignore[union-attr]
        gauges = replicas.gauges("fleetsched_scheduler_assumed_bindings").values()
        return not entries and all(v == 0 for v in gauges)

    wait_until(
        clear, timeout=60, interval=0.25,
        message=lambda: f"assumptions left: {replicas.gauges('fleetsched_scheduler_assumed_bindings')}",
    )
    print(f"assumptions released {time.monotonic() - started:.1f}s after the bindings were gone")


def _decided_within(server: APIServer, namespace: str, names: set[str], timeout: float, logs: Any) -> Any:
    state: dict[str, Any] = {}

    def probe() -> Any:
        current = tally(server.request("GET", RB_NS.format(ns=namespace))["items"], names)  # type: ignore[arg-type]
        state["last"] = current
        return None if current.undecided else current

    return wait_until(
        probe, timeout=timeout, interval=0.25,
        message=lambda: f"not every binding decided within {timeout:g}s: "
        f"{state['last'].summary(FREE) if 'last' in state else '-'}\n{logs()}",
    )


@pytest.mark.parametrize("case", ["garbage", "list", "t-abc", "unknown-member", "future-all-cpu"])
def test_a_hostile_ledger_annotation_leaves_scheduling_going(
    replicas: ShardedReplicas, isolated_apiserver: APIServer, namespace: str, case: str
) -> None:
    server = isolated_apiserver
    member = f"{replicas.group}-hostile-{case}"
    annotation = ANNOTATION_PREFIX + member
    procs = replicas.running()
    writes_before = {i: p.metric(WRITES, result="success") for i, p in procs.items()}
    skipped_before = {i: p.metric(SKIPPED) for i, p in procs.items()}
    _annotate(server, _ledger_path(replicas), annotation, _hostile(case))
    try:
        # 22 bindings of 10 x 5 cpu: 1,100 cpu asked of 1,000 free (the claim above holds all 1,000)
        docs = [cpu_binding(f"b-{i}", namespace, 10, 5, NAMES) for i in range(22)]
        create_all(str(server.kubeconfig), docs)
        t = _decided_within(server, namespace, {d["metadata"]["name"] for d in docs}, DECIDED_WITHIN,
                            replicas.log_tails)
        print(f"{case}: {t.summary(FREE)}")
        assert t.overcommit(FREE) == 0, t.summary(FREE)
        assert (len(t.scheduled), len(t.failed), t.total) == (20, 2, CPU * len(NAMES)), (
            f"{t.summary(FREE)}; failed: {t.failed}"
        )
        committed = [i for i, p in procs.items() if p.metric(WRITES, result="success") > writes_before[i]]
        assert committed, "no replica committed to the ledger"
        for identity, proc in procs.items():
            said = [e for e in proc.log_events("ledger_entry_skipped") if e.get("member") == member]
            assert len(said) <= 1, f"{identity} said it {len(said)} times: {said}"
            if identity in committed:
                assert len(said) == 1, f"{identity} committed but never said the skipped entry"
                assert proc.metric(SKIPPED) > skipped_before[identity]
        for proc in procs.values():
            assert not proc.log_events("ledger_commit_failed"), proc.log_tail()
    finally:
        _annotate(server, _ledger_path(replicas), annotation, None)


def test_a_fake_member_lease_holds_no_binding_back_longer_than_its_lease_duration(
    replicas: ShardedReplicas, isolated_apiserver: APIServer, namespace: str
) -> None:
    server = isolated_apiserver
    name = replicas.member("ghost")
    duration = int(TIMINGS.lease_duration)
    lease = {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "labels": {GROUP_LABEL: replicas.group}},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": duration, "renewTime": micro_time_now()},
    }
    server.request("POST", LEASES, lease)
    stop = threading.Event()

    def renew() -> None:  # a third party keeps the Lease well-formed and renewed
        while not stop.wait(0.5):
            body = {"spec": {"renewTime": micro_time_now()}}
            with contextlib.suppress(urllib.error.URLError):
                server.request("PATCH", f"{LEASES}/{name}", body, content_type=MERGE)

    renewer = threading.Thread(target=renew, daemon=True)
    renewer.start()
    try:
        procs = replicas.running()
        counted = wait_until(  # counted at first: the grace of a joining replica
            lambda: any(p.metric("fleetsched_scheduler_shard_members") == 4 for p in procs.values()),
            timeout=10, interval=0.1, message=replicas.log_tails,
        )
        assert counted
        docs = [cpu_binding(f"g-{i}", namespace, 4, 1, NAMES) for i in range(40)]
        started = time.monotonic()
        create_all(str(server.kubeconfig), docs)
        t = _decided_within(server, namespace, {d["metadata"]["name"] for d in docs},
                            duration + DECIDED_WITHIN, replicas.log_tails)
        print(f"fake member: every binding decided {time.monotonic() - started:.1f}s after creation")
        assert len(t.scheduled) == len(docs), t.summary(FREE)
        replicas.wait_settled(timeout=5)  # three members again, while the fake is still renewed
        assert renewer.is_alive()
        for identity, proc in procs.items():
            said = [e for e in proc.log_events("shard_member_unproven") if e.get("lease", "").endswith(name)]
            assert len(said) == 1, f"{identity}: {said}\n{proc.log_tail()}"
    finally:
        stop.set()
        renewer.join(5)
        server.request("DELETE", f"{LEASES}/{name}")
        replicas.wait_settled()


def micro_time_now() -> str:
    return micro_time(datetime.datetime.now(datetime.UTC))
