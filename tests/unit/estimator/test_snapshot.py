"""The node table read through snapshots: an estimate sees one version of the table, and the watch's
writes never wait for an estimate's filter work (cache.py's thread model)."""

from __future__ import annotations

import threading

from fleetsched.api.resources import CPU, PODS
from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.framework import EstimateContext
from fleetsched.estimator.model import (
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaRequirements,
)
from fleetsched.estimator.plugins.node_resource import NodeResourceEstimator
from fleetsched.estimator.service import apply_node, apply_pod

from .builders import a_node, a_pod

SSD = NodeClaim(node_selector=(("disk", "ssd"),))


def test_a_snapshot_is_unchanged_by_later_writes() -> None:
    table = NodeTable(capacity=2)
    apply_node(table, a_node("n1", "4", labels={"disk": "ssd"}))
    apply_node(table, a_node("n2", "4"))
    before = table.snapshot([CPU])
    free_cpu = before.free[CPU].copy()
    mask = before.claim_mask(SSD).copy()
    # pods, label changes, deletions and enough new nodes to grow the arrays
    apply_pod(table, a_pod("p", "n1", cpu="3"))
    apply_node(table, a_node("n2", "4", labels={"disk": "ssd"}))
    table.delete_node("n1")
    for i in range(5):
        apply_node(table, a_node(f"m{i}", "8", labels={"disk": "ssd"}))
    assert (before.free[CPU] == free_cpu).all()
    assert (before.claim_mask(SSD) == mask).all() and int(mask.sum()) == 1
    after = table.snapshot([CPU])
    assert int(after.claim_mask(SSD).sum()) == 6
    assert int(after.free[CPU][after.claim_mask(SSD)].sum()) == 4000 + 5 * 8000


def test_the_filter_index_is_shared_until_a_node_changes_what_filters_read() -> None:
    table = NodeTable()
    apply_node(table, a_node("n1", "4"))
    first = table.snapshot().index
    apply_pod(table, a_pod("p", "n1", cpu="1"))
    apply_node(table, a_node("n1", "2"))  # allocatable only
    assert table.snapshot().index is first, "pods and allocatable changes keep the filter index"
    apply_node(table, a_node("n1", "2", labels={"a": "b"}))
    assert table.snapshot().index is not first


def _heavy_claim(terms: int = 400, expressions: int = 50) -> NodeClaim:
    return NodeClaim(node_affinity=tuple(
        NodeSelectorTerm(tuple(NodeSelectorRequirement("zone", "NotIn", (f"x{t}-{e}",))
                               for e in range(expressions)))
        for t in range(terms)))


def test_watch_writes_complete_while_an_estimate_evaluates_a_heavy_claim() -> None:
    table = NodeTable()
    for i in range(200):
        apply_node(table, a_node(f"n{i:03d}", "4", labels={"zone": f"z{i % 3}"}))
    plugin = NodeResourceEstimator(table)
    requirements = ReplicaRequirements(node_claim=_heavy_claim())
    started, results = threading.Event(), []

    def estimate() -> None:
        started.set()
        results.append(plugin.estimate_replicas(EstimateContext(), requirements).value)

    worker = threading.Thread(target=estimate)
    worker.start()
    started.wait()
    writes = 0
    while worker.is_alive() and writes < 50:
        # what the watch does on the event loop: each write takes the table's lock
        apply_pod(table, a_pod(f"p{writes}", "n000", cpu="1"))
        writes += 1
    finished_after_writes = worker.is_alive()
    worker.join()
    assert writes == 50 and finished_after_writes, "the writes waited for the estimate's filter work"
    # one pod slot per write: the estimate saw the table as it was at some moment of the writes
    assert results and 200 * 110 - writes <= results[0] <= 200 * 110, results


def test_concurrent_estimates_see_one_version_of_the_table() -> None:
    table = NodeTable()
    for i in range(20):
        apply_node(table, a_node(f"n{i}", "4", pods="10"))
    plugin = NodeResourceEstimator(table)
    seen: set[int] = set()
    stop = threading.Event()

    def estimate() -> None:
        while not stop.is_set():
            seen.add(plugin.estimate_replicas(EstimateContext(), None).value)

    readers = [threading.Thread(target=estimate) for _ in range(3)]
    for reader in readers:
        reader.start()
    for _ in range(200):  # one extra node comes and goes: 200 or 210 pod slots, nothing between
        apply_node(table, a_node("extra", "4", pods="10"))
        table.delete_node("extra")
    stop.set()
    for reader in readers:
        reader.join()
    assert seen <= {200, 210} and 200 in seen
    assert int(table.snapshot().free[PODS].sum()) == 200
