"""Node filtering (spec 3.4): every operator, terms ORed and expressions ANDed, matchFields, taints
against tolerations, cordoned nodes; the indexed mask of NodeTable agrees with the per-node reference."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.estimator.cache import NodeTable
from fleetsched.estimator.model import NodeClaim, NodeSelectorRequirement, NodeSelectorTerm, Toleration
from fleetsched.estimator.nodefilter import Taint, node_matches

LABELS = {"zone": "a", "gen": "5", "rack": "07", "empty": ""}


def req(key: str, op: str, *values: str) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, op, tuple(values))


Requirements = tuple[NodeSelectorRequirement, ...]


def affinity(*terms: tuple[Requirements, Requirements]) -> NodeClaim:
    return NodeClaim(node_affinity=tuple(NodeSelectorTerm(e, f) for e, f in terms))


def matches(claim: NodeClaim, *, name: str = "node-1", labels: dict[str, str] | None = None,
            taints: tuple[Taint, ...] = (), unschedulable: bool = False) -> bool:
    labels = LABELS if labels is None else labels
    reference = node_matches(name=name, labels=labels, taints=taints, unschedulable=unschedulable,
                             claim=claim)
    table = NodeTable()
    table.upsert_node(name, labels=labels, taints=taints, unschedulable=unschedulable, allocatable={})
    indexed = bool(table.claim_mask(claim)[table.slot_of(name)])
    assert indexed == reference
    return reference


@pytest.mark.parametrize(("requirement", "want"), [
    pytest.param(req("zone", "In", "a", "b"), True, id="In listed"),
    pytest.param(req("zone", "In", "b"), False, id="In not listed"),
    pytest.param(req("missing", "In", "a"), False, id="In absent label"),
    pytest.param(req("zone", "NotIn", "b"), True, id="NotIn not listed"),
    pytest.param(req("missing", "NotIn", "a"), True, id="NotIn absent label"),
    pytest.param(req("zone", "NotIn", "a"), False, id="NotIn listed"),
    pytest.param(req("zone", "Exists"), True, id="Exists"),
    pytest.param(req("empty", "Exists"), True, id="Exists with empty value"),
    pytest.param(req("zone", "DoesNotExist"), False, id="DoesNotExist present"),
    pytest.param(req("missing", "DoesNotExist"), True, id="DoesNotExist absent"),
    pytest.param(req("gen", "Gt", "4"), True, id="Gt greater"),
    pytest.param(req("gen", "Gt", "5"), False, id="Gt equal is not greater"),
    pytest.param(req("gen", "Lt", "6"), True, id="Lt"),
    pytest.param(req("rack", "Gt", "6"), True, id="Gt parses leading zero"),
    pytest.param(req("zone", "Gt", "1"), False, id="Gt non-integer label"),
    pytest.param(req("missing", "Lt", "100"), False, id="Lt absent label"),
    pytest.param(req("gen", "Gt", "x"), False, id="Gt non-integer value is invalid"),
    pytest.param(req("gen", "Gt", "1", "2"), False, id="Gt two values is invalid"),
    pytest.param(req("zone", "In"), False, id="In without values is invalid"),
    pytest.param(req("zone", "Exists", "a"), False, id="Exists with values is invalid"),
    pytest.param(req("zone", "Matches", "a"), False, id="unknown operator is invalid"),
    pytest.param(req("bad key!", "Exists"), False, id="invalid key"),
    pytest.param(req("zone", "NotIn", "not valid!"), False, id="invalid label value"),
])
def test_label_operators(requirement: NodeSelectorRequirement, want: bool) -> None:
    assert matches(affinity(((requirement,), ()))) is want


@pytest.mark.parametrize(("fields", "want"), [
    pytest.param((req("metadata.name", "In", "node-1"),), True, id="name In"),
    pytest.param((req("metadata.name", "NotIn", "node-1"),), False, id="name NotIn"),
    pytest.param((req("metadata.name", "In", "node-1", "node-2"),), False, id="two values invalid"),
    pytest.param((req("metadata.name", "Exists"),), False, id="Exists invalid for fields"),
    pytest.param((req("metadata.uid", "NotIn", "x"),), True, id="other key reads empty: NotIn matches"),
    pytest.param((req("metadata.uid", "In", "x"),), False, id="other key reads empty: In fails"),
])
def test_match_fields(fields: tuple[NodeSelectorRequirement, ...], want: bool) -> None:
    assert matches(affinity(((), fields))) is want


def test_terms_are_ored_and_expressions_anded() -> None:
    a_and_not_b = ((req("zone", "In", "a"), req("gen", "Lt", "3")), ())
    assert not matches(affinity(a_and_not_b))
    assert matches(affinity(a_and_not_b, ((req("gen", "Gt", "3"),), ())))
    invalid_then_valid = affinity(((req("gen", "Gt", "x"),), ()), ((req("zone", "In", "a"),), ()))
    assert matches(invalid_then_valid)
    assert not matches(affinity(((), ())))  # only an empty term: no node
    assert not matches(NodeClaim(node_affinity=()))
    assert matches(NodeClaim(node_affinity=None))


def test_node_selector_needs_exact_label() -> None:
    assert matches(NodeClaim(node_selector=(("zone", "a"),)))
    assert matches(NodeClaim(node_selector=(("empty", ""),)))
    assert not matches(NodeClaim(node_selector=(("missing", ""),)))
    assert not matches(NodeClaim(node_selector=(("zone", "a"), ("gen", "4"))))


GPU = Taint("dedicated", "gpu", "NoSchedule")


@pytest.mark.parametrize(("tolerations", "taints", "unschedulable", "want"), [
    pytest.param((), (GPU,), False, False, id="untolerated NoSchedule"),
    pytest.param((), (Taint("spot", "true", "PreferNoSchedule"),), False, True,
                 id="PreferNoSchedule ignored"),
    pytest.param((), (Taint("m", "", "NoExecute"),), False, False, id="NoExecute filtered"),
    pytest.param((Toleration("dedicated", "Equal", "gpu", "NoSchedule"),), (GPU,), False, True, id="Equal"),
    pytest.param((Toleration("dedicated", "", "gpu"),), (GPU,), False, True, id="empty operator is Equal"),
    pytest.param((Toleration("dedicated", "Equal", "cpu"),), (GPU,), False, False, id="value differs"),
    pytest.param((Toleration("dedicated", "Exists"),), (GPU,), False, True, id="Exists any value"),
    pytest.param((Toleration("", "Exists"),), (GPU,), True, True, id="empty key Exists tolerates all"),
    pytest.param((Toleration("", "Exists", effect="NoExecute"),), (GPU,), False, False, id="effect differs"),
    pytest.param((Toleration("dedicated", "Gt", "1"),), (GPU,), False, False, id="Gt never tolerates"),
    pytest.param((), (), True, False, id="cordoned"),
    pytest.param((Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),), (), True,
                 True, id="cordon tolerated"),
    pytest.param((Toleration("node.kubernetes.io/unschedulable", "Equal", ""),), (), True, True,
                 id="cordon tolerated by empty value"),
])
def test_taints_and_tolerations(tolerations: tuple[Toleration, ...], taints: tuple[Taint, ...],
                                unschedulable: bool, want: bool) -> None:
    claim = NodeClaim(tolerations=tolerations)
    assert matches(claim, taints=taints, unschedulable=unschedulable) is want


keys = st.sampled_from(["zone", "gen", "disk", "bad key!"])
values = st.sampled_from(["a", "b", "1", "5", "10", "", "x y"])
operators = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"])
requirements = st.builds(NodeSelectorRequirement, keys, operators, st.lists(values, max_size=2).map(tuple))
fields = st.builds(NodeSelectorRequirement, st.sampled_from(["metadata.name", "metadata.uid"]),
                   st.sampled_from(["In", "NotIn", "Exists"]),
                   st.lists(st.sampled_from(["n0", "n1", "n2", ""]), min_size=0, max_size=2).map(tuple))
terms = st.builds(NodeSelectorTerm, st.lists(requirements, max_size=3).map(tuple),
                  st.lists(fields, max_size=1).map(tuple))
tolerations = st.builds(Toleration, st.sampled_from(["", "t1", "t2"]),
                        st.sampled_from(["", "Equal", "Exists", "Lt"]),
                        st.sampled_from(["", "v"]), st.sampled_from(["", "NoSchedule", "NoExecute"]))
claims = st.builds(NodeClaim,
                   st.lists(st.tuples(st.sampled_from(["zone", "disk"]), values), max_size=2).map(tuple),
                   st.none() | st.lists(terms, max_size=3).map(tuple),
                   st.lists(tolerations, max_size=2).map(tuple))
node_labels = st.dictionaries(st.sampled_from(["zone", "gen", "disk"]), values, max_size=3)
effects = st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])
node_taints = st.lists(st.builds(Taint, st.sampled_from(["t1", "t2"]), st.sampled_from(["", "v"]), effects),
                       max_size=2)


@settings(max_examples=150, deadline=None)
@given(nodes=st.lists(st.tuples(node_labels, node_taints, st.booleans()), min_size=1, max_size=4),
       claim=claims)
def test_indexed_mask_equals_reference(nodes, claim) -> None:  # type: ignore[no-untyped-def]
    table = NodeTable(capacity=1)
    for i, (labels, taints, cordoned) in enumerate(nodes):
        table.upsert_node(f"n{i}", labels=labels, taints=taints, unschedulable=cordoned, allocatable={})
    mask = table.claim_mask(claim)
    for i, (labels, taints, cordoned) in enumerate(nodes):
        expected = node_matches(name=f"n{i}", labels=labels, taints=taints, unschedulable=cordoned,
                                claim=claim)
        assert bool(mask[table.slot_of(f"n{i}")]) is expected
