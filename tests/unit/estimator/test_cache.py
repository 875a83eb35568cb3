"""The node table kept incrementally: Node and Pod events adjust aggregates, and after any sequence of
events the answers equal those of a table built fresh from the final objects."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.model import NodeClaim
from fleetsched.estimator.service import apply_node, apply_pod

from .builders import a_node, a_pod, member, replicas

CPU1 = {"resourceRequest": {"cpu": "1"}}


def test_pod_events_update_the_node() -> None:
    inventory = member(a_node("n1", "4", pods="10"))
    table = inventory.table
    assert replicas(inventory, CPU1) == 4
    apply_pod(table, a_pod("p", "n1", cpu="2"))
    assert replicas(inventory, CPU1) == 2
    apply_pod(table, a_pod("p", "n1", cpu="1"))  # update replaces the old request
    assert replicas(inventory, CPU1) == 3
    apply_pod(table, a_pod("p", "n1", phase="Succeeded", cpu="1"))  # terminal: no longer counted
    assert replicas(inventory, CPU1) == 4
    apply_pod(table, a_pod("q", "n1", cpu="1"))
    table.delete_pod("default/q")
    assert replicas(inventory, CPU1) == 4
    assert replicas(inventory, {}) == 10


def test_pods_seen_before_their_node_count_once_it_appears() -> None:
    inventory = member(a_node("n1", "4"))
    apply_pod(inventory.table, a_pod("early", "n2", cpu="3"))
    assert replicas(inventory, CPU1) == 4
    apply_node(inventory.table, a_node("n2", "4"))
    assert replicas(inventory, CPU1) == 5
    inventory.table.delete_node("n2")
    assert replicas(inventory, CPU1) == 4
    apply_node(inventory.table, a_node("n2", "4"))  # the pod is still known and counted again
    assert replicas(inventory, CPU1) == 5


def test_label_changes_invalidate_cached_filters() -> None:
    inventory = member(a_node("n1", "4"), a_node("n2", "4"))
    selector = {**CPU1, "nodeClaim": {"nodeSelector": {"disk": "ssd"}}}
    assert replicas(inventory, selector) == 0
    apply_node(inventory.table, a_node("n2", "4", labels={"disk": "ssd"}))
    assert replicas(inventory, selector) == 4
    apply_node(inventory.table, a_node("n2", "4", taints=[("x", "", "NoSchedule")], labels={"disk": "ssd"}))
    assert replicas(inventory, selector) == 0


def test_zone_round_robin_order_and_moves() -> None:
    table = NodeTable()

    def add(name: str, zone: str) -> None:
        table.upsert_node(name, labels={"topology.kubernetes.io/zone": zone}, taints=(), unschedulable=False,
                          allocatable={})

    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("c2", "c")]:
        add(name, zone)

    def order() -> list[str]:
        names = {table.slot_of(n): n for n in table.node_names()}
        return [names[s] for s in table.ordered_slots()]

    assert order() == ["a1", "b1", "c1", "a2", "c2", "a3"]
    add("a1", "c")  # a zone change moves the node to the end of its new zone
    assert order() == ["a2", "b1", "c1", "a3", "c2", "a1"]
    table.delete_node("b1")  # an emptied zone disappears
    assert order() == ["a2", "c1", "a3", "c2", "a1"]


def test_huge_quantities_switch_to_exact_integers() -> None:
    inventory = member(a_node("n1", "8", memory="100E", pods="1000"))
    assert replicas(inventory, {"resourceRequest": {"memory": "30E"}}) == 3
    assert replicas(inventory, {"resourceRequest": {"memory": "200E"}}) == 0


def test_sum_saturates_at_int32_max() -> None:
    nodes = [a_node(f"n{i}", "1", pods="2000000000") for i in range(3)]
    assert replicas(member(*nodes), {}) == 2147483647


names = st.sampled_from(["n0", "n1", "n2"])
pod_names = st.sampled_from(["p0", "p1", "p2", "p3"])
events = st.one_of(
    st.tuples(st.just("node"), names, st.sampled_from(["2", "4", "8"]), st.sampled_from(["", "ssd"]),
              st.sampled_from(["zone-a", "zone-b"])),
    st.tuples(st.just("del-node"), names),
    st.tuples(st.just("pod"), pod_names, st.sampled_from(["n0", "n1", "n2", ""]),
              st.sampled_from(["500m", "1"]),
              st.sampled_from(["Running", "Pending", "Succeeded"])),
    st.tuples(st.just("del-pod"), pod_names),
)


@settings(max_examples=120, deadline=None)
@given(st.lists(events, max_size=25))
def test_incremental_equals_rebuild(sequence) -> None:  # type: ignore[no-untyped-def]
    live = member()
    nodes: dict[str, dict] = {}
    pods: dict[str, dict] = {}
    for event in sequence:
        if event[0] == "node":
            _, name, cpu, disk, zone = event
            obj = a_node(name, cpu, pods="5", labels={"disk": disk, "topology.kubernetes.io/zone": zone})
            nodes[name] = obj
            apply_node(live.table, obj)
        elif event[0] == "del-node":
            nodes.pop(event[1], None)
            live.table.delete_node(event[1])
        elif event[0] == "pod":
            _, name, node_name, cpu, phase = event
            obj = a_pod(name, node_name or None, phase=phase, cpu=cpu)
            pods[name] = obj
            apply_pod(live.table, obj)
        else:
            pods.pop(event[1], None)
            live.table.delete_pod(f"default/{event[1]}")
    fresh = MemberInventory("member1", [*nodes.values(), *pods.values()])
    for requirements in (None, {}, CPU1, {"resourceRequest": {"cpu": "500m"},
                                         "nodeClaim": {"nodeSelector": {"disk": "ssd"}}}):
        assert replicas(live, requirements) == replicas(fresh, requirements)
    assert sorted(live.table.node_names()) == sorted(fresh.table.node_names())
    assert live.table.claim_mask(NodeClaim()).sum() == len(nodes)
