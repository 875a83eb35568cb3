"""Model details: Karmada's odd JSON names, times, int32 bounds, helpers the core relies on."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fleetsched.api import (
    Cluster,
    ClusterSpec,
    Condition,
    Placement,
    PropagationPolicy,
    Quantity,
    ResourceBinding,
    ResourceBindingSpec,
)
from fleetsched.api.crds import QUANTITY_PATTERN


def test_irregular_json_names() -> None:
    spec = ClusterSpec.model_validate(
        {
            "proxyURL": "http://p",
            "insecureSkipTLSVerification": True,
            "syncMode": "Pull",
            "apiEndpoint": "https://a",
        }
    )
    assert (spec.proxy_url, spec.insecure_skip_tls_verification, spec.api_endpoint) == (
        "http://p",
        True,
        "https://a",
    )
    assert spec.to_dict() == {
        "syncMode": "Pull",
        "apiEndpoint": "https://a",
        "insecureSkipTLSVerification": True,
        "proxyURL": "http://p",
    }
    status = ResourceBinding.model_validate(
        {
            "spec": {"resource": {"apiVersion": "v1", "kind": "Pod", "name": "p"}},
            "status": {"schedulerObservingAffinityName": "g1", "schedulerObservedGeneration": 4},
        }
    ).status
    assert status is not None and status.scheduler_observing_affinity_name == "g1"


def test_snake_case_names_are_accepted_in_python() -> None:
    spec = ResourceBindingSpec(resource={"apiVersion": "v1", "kind": "Pod", "name": "p"}, replicas=2)  # type: ignore[arg-type]
    assert spec.replicas == 2 and spec.resource.api_version == "v1"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01T00:00:00Z", datetime(2026, 1, 1, tzinfo=UTC)),
        ("2026-01-01T02:00:00+02:00", datetime(2026, 1, 1, tzinfo=UTC)),
        (datetime(2026, 1, 1, 3, 0, tzinfo=timezone(timedelta(hours=3))), datetime(2026, 1, 1, tzinfo=UTC)),
        (datetime(2026, 1, 1), datetime(2026, 1, 1, tzinfo=UTC)),
    ],
)
def test_times_are_utc_and_print_like_kubernetes(text: object, expected: datetime) -> None:
    condition = Condition.model_validate({"type": "Ready", "status": "True", "lastTransitionTime": text})
    assert condition.last_transition_time == expected
    assert condition.to_dict()["lastTransitionTime"] == "2026-01-01T00:00:00Z"


def test_bad_time_and_bad_condition_status() -> None:
    with pytest.raises(ValidationError):
        Condition.model_validate({"type": "Ready", "status": "True", "lastTransitionTime": "yesterday"})
    with pytest.raises(ValidationError):
        Condition.model_validate({"type": "Ready", "status": "Yes"})


def test_int32_bounds() -> None:
    base = {"resourceSelectors": [{"apiVersion": "v1", "kind": "Pod"}]}
    PropagationPolicy.model_validate({"spec": {**base, "priority": -(2**31)}})
    with pytest.raises(ValidationError):
        PropagationPolicy.model_validate({"spec": {**base, "priority": 2**31}})
    with pytest.raises(ValidationError):
        ResourceBindingSpec.model_validate(
            {"resource": {"apiVersion": "v1", "kind": "Pod", "name": "p"}, "replicas": 2**31}
        )


def test_replica_scheduling_type_as_karmada_reads_it() -> None:
    assert Placement().replica_scheduling_type() == "Duplicated"
    assert Placement.model_validate({"replicaScheduling": {}}).replica_scheduling_type() == "Divided"
    duplicated = Placement.model_validate({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}})
    assert duplicated.replica_scheduling_type() == "Duplicated"


def test_is_workload() -> None:
    def spec(**extra: object) -> ResourceBindingSpec:
        return ResourceBindingSpec.model_validate(
            {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}, **extra}
        )

    assert not spec().is_workload()
    assert spec(replicas=1).is_workload()
    assert spec(replicaRequirements={}).is_workload()
    assert spec(components=[{"name": "a", "replicas": 0}]).is_workload()


def test_cluster_helpers() -> None:
    cluster = Cluster.model_validate(
        {
            "metadata": {"name": "m1"},
            "spec": {"zone": "z1"},
            "status": {
                "conditions": [{"type": "Ready", "status": "False"}],
                "resourceSummary": {"allocatable": {"cpu": "1500m", "memory": 1073741824}},
            },
        }
    )
    assert cluster.name == "m1"
    assert cluster.spec.zone_list() == ["z1"]
    assert cluster.status is not None
    ready = cluster.status.condition("Ready")
    assert ready is not None and ready.status == "False"
    summary = cluster.status.resource_summary
    assert summary is not None and summary.allocatable is not None
    assert summary.allocatable["cpu"].milli_value() == 1500
    assert summary.allocatable["memory"] == Quantity(1024**3)


_PATTERN = re.compile(QUANTITY_PATTERN)


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(r"\A[+-]?([0-9]{1,4}(\.[0-9]{0,3})?|\.[0-9]{1,3})(Ki|Mi|Gi|Ti|[numkMGT]|[eE][+-]?[0-9])?\Z")
)
def test_model_quantities_round_trip_and_match_the_crd_pattern(text: str) -> None:
    """Whatever the CRD accepts, the model parses; what the model writes, the CRD accepts again."""
    assert _PATTERN.match(text)
    parsed = Quantity.parse(text)
    written = str(parsed)
    assert _PATTERN.match(written), written
    again = Quantity.parse(written)
    # Canonical text rounds the magnitude up to nano units, never down.
    assert abs(again.value_exact) >= abs(parsed.value_exact)
    assert abs(again.value_exact - parsed.value_exact) < Fraction(1, 10**9)
