"""One set of Kubernetes label rules for the API selectors, the scheduling core and the node filter."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api import LabelSelector
from fleetsched.api.selectors import label_selector_matches as api_matches
from fleetsched.estimator.model import NodeSelectorRequirement, Toleration
from fleetsched.estimator.nodefilter import Taint as NodeTaint
from fleetsched.estimator.nodefilter import compile_requirement as node_requirement
from fleetsched.labels import (
    compile_requirement,
    is_label_value,
    is_qualified_name,
    parse_int64,
    tolerates,
    zones_match,
)
from fleetsched.scheduler import matching, types


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0", 0),
        ("+7", 7),
        ("-12", -12),
        (str(2**63 - 1), 2**63 - 1),
        (str(-(2**63)), -(2**63)),
        (str(2**63), None),
        (str(-(2**63) - 1), None),
        ("1.5", None),
        ("", None),
        ("0x10", None),
        (" 1", None),
        ("5\n", None),  # Python's '$' would accept the newline; Go's ParseInt does not
    ],
)
def test_parse_int64_is_go_parseint_base_10(text: str, expected: int | None) -> None:
    assert parse_int64(text) == expected


@pytest.mark.parametrize(
    ("key", "valid"),
    [("a", True), ("example.com/a", True), ("a/b/c", False), ("/a", False), ("Example.com/a", False),
     ("a" * 63, True), ("a" * 64, False), ("", False), ("-a", False), ("a\n", False), ("x.io\n/a", False)],
)
def test_qualified_name(key: str, valid: bool) -> None:
    assert is_qualified_name(key) is valid


def test_a_trailing_newline_is_not_a_label_value() -> None:
    assert is_label_value("a") and is_label_value("")
    assert not is_label_value("a\n")
    assert compile_requirement("k", "In", ("a\n",), allow_compare=False) is None
    gt = compile_requirement("n", "Gt", ("3",), allow_compare=True)
    assert gt is not None and not gt.matches({"n": "5\n"})


def test_gt_lt_only_where_comparisons_are_allowed() -> None:
    assert compile_requirement("n", "Gt", ("3",), allow_compare=False) is None
    gt = compile_requirement("n", "Gt", ("3",), allow_compare=True)
    assert gt is not None and gt.bound == 3
    assert gt.matches({"n": "4"}) and not gt.matches({"n": "3"}) and not gt.matches({})
    assert not gt.matches({"n": str(2**63)})  # the label must parse as an int64
    assert compile_requirement("n", "Lt", (str(2**63),), allow_compare=True) is None
    assert compile_requirement("n", "Lt", ("1", "2"), allow_compare=True) is None


@pytest.mark.parametrize(
    ("operator", "values", "zones", "expected"),
    [("In", ("a",), ("b", "a"), True), ("In", ("a",), (), False), ("NotIn", ("a",), (), True),
     ("NotIn", ("a",), ("a",), False), ("Exists", (), ("a",), True), ("DoesNotExist", (), ("a",), False),
     ("Gt", ("1",), ("a",), False)],
)
def test_zones_match(operator: str, values: tuple[str, ...], zones: tuple[str, ...], expected: bool) -> None:
    assert zones_match(operator, values, zones) is expected


@pytest.mark.parametrize("operator", ["Gt", "Lt"])
def test_comparison_tolerations_never_tolerate_in_either_taint_type(operator: str) -> None:
    taint_core = types.Taint("k", "1", "NoSchedule")
    taint_node = NodeTaint("k", "1", "NoSchedule")
    for toleration in (types.Toleration("k", operator, "5", "NoSchedule"), Toleration("k", operator, "5")):
        assert not tolerates(toleration, taint_core)
        assert not tolerates(toleration, taint_node)
    assert tolerates(types.Toleration("k", "Exists"), taint_core)
    assert tolerates(Toleration("", "Equal", "1", "NoSchedule"), taint_node)


_KEYS = st.sampled_from(["env", "zone", "example.com/tier", "Bad Key", "n"])
_VALUES = st.lists(st.sampled_from(["a", "b", "", "3", "-1", "bad value", str(2**63)]), max_size=2)
_OPERATORS = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"])
_LABELS = st.dictionaries(st.sampled_from(["env", "example.com/tier", "n"]),
                          st.sampled_from(["a", "b", "", "3", "7", str(2**63)]), max_size=3)


@settings(max_examples=150, deadline=None)
@given(key=_KEYS, operator=_OPERATORS, values=_VALUES, labels=_LABELS)
def test_api_core_and_node_filter_agree(
    key: str, operator: str, values: list[str], labels: dict[str, str]
) -> None:
    """A labelSelector requirement gives one answer in the API and the core; a node-selector requirement
    differs from it only by also accepting Gt/Lt."""
    api = api_matches(LabelSelector.model_validate(
        {"matchExpressions": [{"key": key, "operator": operator, "values": values}]}), labels)
    requirement = types.LabelRequirement(key, operator, tuple(values))
    core = matching.label_selector_matches(types.LabelSelector(match_expressions=(requirement,)), labels)
    assert api is core
    node = node_requirement(NodeSelectorRequirement(key, operator, tuple(values)))
    node_answer = node is not None and node.matches(labels)
    if operator in ("Gt", "Lt"):
        assert api is False
        assert node_answer is matching.requirements_match((requirement,), labels, allow_compare=True)
    else:
        assert node_answer is api
