"""Label selectors, cluster affinity and resource-selector priority (api.md §2.2, §7.3; scheduler.md §5.3)."""

from __future__ import annotations

from typing import Any

import pytest

from fleetsched.api import Cluster, ClusterAffinity, LabelSelector, ResourceSelector
from fleetsched.api.selectors import (
    PRIORITY_LABEL_SELECTOR,
    PRIORITY_MATCH_ALL,
    PRIORITY_MISMATCH,
    PRIORITY_NAME,
    cluster_matches,
    is_valid_label_key,
    label_selector_matches,
    selector_priority,
)


def a_cluster(name: str, *, labels: dict[str, str] | None = None, **spec: Any) -> Cluster:
    return Cluster.model_validate({"metadata": {"name": name, "labels": labels or {}}, "spec": spec})


LABELS = {"env": "prod", "tier": "gold", "count": "5"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param({}, True, id="empty selector matches everything"),
        pytest.param({"matchLabels": {"env": "prod"}}, True, id="matchLabels hit"),
        pytest.param({"matchLabels": {"env": "dev"}}, False, id="matchLabels miss"),
        pytest.param(
            {"matchExpressions": [{"key": "env", "operator": "In", "values": ["dev", "prod"]}]}, True, id="In"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]},
            True,
            id="NotIn absent key",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
            False,
            id="NotIn present value",
        ),
        pytest.param({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True, id="Exists"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False, id="DoesNotExist"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "env", "operator": "In", "values": []}]},
            False,
            id="In without values is invalid",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["x"]}]},
            False,
            id="Exists with values is invalid",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "count", "operator": "Gt", "values": ["1"]}]},
            False,
            id="Gt is not a label-selector operator",
        ),
        pytest.param({"matchLabels": {"bad key": "x"}}, False, id="invalid key"),
        pytest.param(
            {
                "matchLabels": {"env": "prod"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["silver"]}],
            },
            False,
            id="all requirements ANDed",
        ),
    ],
)
def test_label_selector(selector: dict[str, Any], expected: bool) -> None:
    assert label_selector_matches(LabelSelector.model_validate(selector), LABELS) is expected


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("env", True),
        ("karmada.io/x", True),
        ("a/b/c", False),
        ("-x", False),
        ("x" * 64, False),
        ("/x", False),
    ],
)
def test_label_key_validity(key: str, valid: bool) -> None:
    assert is_valid_label_key(key) is valid


CLUSTER = a_cluster("m1", labels={"env": "prod"}, provider="aws", region="us-east-1", zones=["us-east-1a"])


@pytest.mark.parametrize(
    ("affinity", "expected"),
    [
        pytest.param({}, True, id="empty affinity"),
        pytest.param({"clusterNames": ["m1", "m2"]}, True, id="listed"),
        pytest.param({"clusterNames": ["m2"]}, False, id="not listed"),
        pytest.param({"clusterNames": ["m1"], "exclude": ["m1"]}, False, id="exclude wins"),
        pytest.param({"labelSelector": {"matchLabels": {"env": "dev"}}}, False, id="labels miss"),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "provider", "operator": "In", "values": ["aws"]}]
                }
            },
            True,
            id="provider In",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["us-east-1"]}]
                }
            },
            False,
            id="region NotIn",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "zone", "operator": "In", "values": ["us-east-1a", "x"]}]
                }
            },
            True,
            id="zone In",
        ),
        pytest.param(
            {
                "fieldSelector": {
                    "matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["us-east-1a"]}]
                }
            },
            False,
            id="zone NotIn",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "provider", "operator": "In", "values": []}]}},
            False,
            id="invalid field requirement",
        ),
        pytest.param(
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["1"]}]}},
            False,
            id="zone with other operator",
        ),
    ],
)
def test_cluster_matches(affinity: dict[str, Any], expected: bool) -> None:
    assert cluster_matches(CLUSTER, ClusterAffinity.model_validate(affinity)) is expected


def test_zone_operators_on_a_cluster_without_zones() -> None:
    bare = a_cluster("m2")

    def zone(op: str, values: list[str] | None = None) -> ClusterAffinity:
        return ClusterAffinity.model_validate(
            {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": op, "values": values}]}}
        )

    assert cluster_matches(bare, zone("NotIn", ["a"]))
    assert not cluster_matches(bare, zone("In", ["a"]))
    assert not cluster_matches(bare, zone("Exists"))
    assert cluster_matches(bare, zone("DoesNotExist"))


def _priority(selector: dict[str, Any], **obj: Any) -> int:
    target = {
        "api_version": "apps/v1",
        "kind": "Deployment",
        "namespace": "ns",
        "name": "web",
        "labels": {"app": "web"},
    }
    target.update(obj)
    return selector_priority(ResourceSelector.model_validate(selector), **target)


def test_selector_priority() -> None:
    base = {"apiVersion": "apps/v1", "kind": "Deployment"}
    assert _priority(base) == PRIORITY_MATCH_ALL
    assert _priority({**base, "name": "web"}) == PRIORITY_NAME
    assert _priority({**base, "name": "api"}) == PRIORITY_MISMATCH
    assert _priority({**base, "name": "web", "labelSelector": {"matchLabels": {"app": "x"}}}) == PRIORITY_NAME
    assert _priority({**base, "labelSelector": {"matchLabels": {"app": "web"}}}) == PRIORITY_LABEL_SELECTOR
    assert _priority({**base, "labelSelector": {"matchLabels": {"app": "x"}}}) == PRIORITY_MISMATCH
    assert _priority({**base, "namespace": "other"}) == PRIORITY_MISMATCH
    assert _priority({**base, "namespace": "ns"}) == PRIORITY_MATCH_ALL
    assert _priority({"apiVersion": "apps/v1beta1", "kind": "Deployment"}) == PRIORITY_MISMATCH
    assert _priority({"apiVersion": "apps/v1", "kind": "StatefulSet"}) == PRIORITY_MISMATCH
