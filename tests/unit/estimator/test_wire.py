"""Wire encoding as Go writes it (spec 2.3) and decoding of both the current and the legacy layout."""

from __future__ import annotations

import pytest

from fleetsched.estimator import handlers, wire
from fleetsched.estimator.inventory import MemberInventory
from fleetsched.estimator.limits import LimitExceeded, RequestLimits
from fleetsched.estimator.pb import compat_pb2, estimator_pb2, k8s_types_pb2


def test_quantity_is_one_text_field() -> None:
    assert wire.encode_quantity("500m") == bytes.fromhex("0a04") + b"500m"
    assert wire.encode_quantity("0") == bytes.fromhex("0a01") + b"0"
    assert wire.encode_quantity("0.1") == bytes.fromhex("0a04") + b"100m"  # canonical text, as Go sends
    assert wire.decode_quantity(b"").value_exact == 0  # a missing field decodes as zero


def test_request_map_entry_matches_the_spec_example() -> None:
    message = estimator_pb2.ReplicaRequirements()
    wire.requirements_to_pb({"resourceRequest": {"cpu": "500m"}}, message)
    assert bytes.fromhex("2a0d0a0363707512060a04") + b"500m" in message.SerializeToString()


def test_toleration_always_carries_its_four_strings() -> None:
    data = wire.encode_toleration({"operator": "Exists"})
    assert data == bytes.fromhex("0a00") + bytes.fromhex("1206") + b"Exists" + bytes.fromhex("1a00") + \
        bytes.fromhex("2200")
    data = wire.encode_toleration({"key": "k", "tolerationSeconds": 30})
    with_seconds = k8s_types_pb2.Toleration.FromString(data)
    assert with_seconds.tolerationSeconds == 30


def test_empty_affinity_and_lists_are_left_unset() -> None:
    message = wire.replicas_request_to_pb({"cluster": "c", "replicaRequirements": {
        "nodeClaim": {"hardNodeAffinity": {}, "tolerations": []}, "resourceRequest": {}}})
    claim = message.replicaRequirements.nodeClaim
    assert message.replicaRequirements.HasField("nodeClaim")
    assert claim.nodeAffinityBytes == b"" and not claim.tolerationsBytes
    one_empty_term = wire.encode_node_selector({"nodeSelectorTerms": [{}]})
    assert one_empty_term == bytes.fromhex("0a00")


def test_decoding_round_trips_a_full_request() -> None:
    raw = {"cluster": "m1", "replicaRequirements": {
        "resourceRequest": {"cpu": "1500m", "memory": "2Gi"}, "namespace": "ns", "priorityClassName": "high",
        "nodeClaim": {"nodeSelector": {"disk": "ssd"},
                      "hardNodeAffinity": {"nodeSelectorTerms": [
                          {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}],
                           "matchFields": [{"key": "metadata.name", "operator": "NotIn",
                                            "values": ["n1"]}]}]},
                      "tolerations": [{"key": "k", "operator": "Equal", "value": "v",
                                       "effect": "NoSchedule"}]}},
        "assumedWorkloads": [{"namespace": "ns", "components": [{"name": "a", "replicas": 2}]}]}
    message = estimator_pb2.MaxAvailableReplicasRequest.FromString(
        wire.replicas_request_to_pb(raw).SerializeToString())
    request = wire.replicas_request_from_pb(message)
    requirements = request.replica_requirements
    assert requirements is not None and requirements.node_claim is not None
    assert dict(requirements.resource_request)["cpu"].milli_value() == 1500
    assert requirements.namespace == "ns" and requirements.priority_class_name == "high"
    claim = requirements.node_claim
    assert claim.node_selector == (("disk", "ssd"),)
    assert claim.node_affinity is not None
    assert claim.node_affinity[0].match_expressions[0].values == ("a", "b")
    assert claim.node_affinity[0].match_fields[0].operator == "NotIn"
    assert claim.tolerations[0].effect == "NoSchedule"
    assert request.assumed_workloads[0].components[0].replicas == 2
    assert request.assumed_workloads[0].components[0].requirements is None


def test_legacy_fields_of_old_schedulers_are_read() -> None:
    legacy = compat_pb2.LegacyReplicaRequirements()
    legacy.resourceRequest["cpu"] = wire.encode_quantity("2")
    legacy.nodeClaim.tolerations.append(wire.encode_toleration({"operator": "Exists"}))
    legacy.nodeClaim.nodeAffinity = wire.encode_node_selector(
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]})
    data = estimator_pb2.MaxAvailableReplicasRequest(cluster="m1").SerializeToString() + \
        bytes([0x12, len(legacy.SerializeToString())]) + legacy.SerializeToString()
    request = wire.replicas_request_from_pb(estimator_pb2.MaxAvailableReplicasRequest.FromString(data))
    requirements = request.replica_requirements
    assert requirements is not None and requirements.node_claim is not None
    assert dict(requirements.resource_request)["cpu"].value() == 2
    assert requirements.node_claim.tolerations[0].operator == "Exists"
    assert requirements.node_claim.node_affinity is not None


def test_dual_write_carries_both_layouts() -> None:
    raw = {"cluster": "m1", "replicaRequirements": {
        "resourceRequest": {"cpu": "2"},
        "nodeClaim": {"tolerations": [{"operator": "Exists"}],
                      "hardNodeAffinity": {"nodeSelectorTerms": [
                          {"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}}}
    data = wire.add_legacy_fields(wire.replicas_request_to_pb(raw)).SerializeToString()
    current = estimator_pb2.MaxAvailableReplicasRequest.FromString(data)
    assert current.replicaRequirements.resourceRequestBytes["cpu"] == wire.encode_quantity("2")
    # what a <= 1.17 reader sees: the legacy field numbers inside the requirements
    legacy = compat_pb2.LegacyReplicaRequirements.FromString(current.replicaRequirements.SerializeToString())
    assert legacy.resourceRequest["cpu"] == wire.encode_quantity("2")
    assert list(legacy.nodeClaim.tolerations) == list(current.replicaRequirements.nodeClaim.tolerationsBytes)
    assert legacy.nodeClaim.nodeAffinity == current.replicaRequirements.nodeClaim.nodeAffinityBytes
    # and a current reader decodes the same request as without the extra fields
    plain = wire.replicas_request_from_pb(wire.replicas_request_to_pb(raw))
    assert wire.replicas_request_from_pb(current) == plain


# ---------------------------------------------------------------------------------------------- limits
def test_limits_are_checked_before_values_are_built_and_name_the_field() -> None:
    raw = {"cluster": "m", "replicaRequirements": {"nodeClaim": {"hardNodeAffinity": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x", "y"]}]}]}}}}
    message = wire.replicas_request_to_pb(raw)
    assert wire.replicas_request_from_pb(message) == wire.replicas_request_from_pb(
        message, RequestLimits(max_affinity_terms=2, max_affinity_values=2))
    with pytest.raises(LimitExceeded) as terms:
        wire.replicas_request_from_pb(message, RequestLimits(max_affinity_terms=1))
    assert terms.value.code == "InvalidArgument" and terms.value.limit == "max_affinity_terms"
    assert terms.value.message == ("replicaRequirements.nodeClaim.nodeAffinity has 2 terms, "
                                   "more than --max-affinity-terms=1")
    with pytest.raises(LimitExceeded) as values:
        wire.replicas_request_from_pb(message, RequestLimits(max_affinity_values=1))
    assert values.value.message == (
        "replicaRequirements.nodeClaim.nodeAffinity.nodeSelectorTerms[1].matchFields[0].values has 2 "
        "entries, more than --max-affinity-values=1")


def test_legacy_fields_are_bounded_like_current_ones() -> None:
    raw = {"cluster": "m", "replicaRequirements": {"resourceRequest": {"cpu": "1"}, "nodeClaim": {
        "tolerations": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "Exists"}]}}}
    current = wire.replicas_request_to_pb(raw)
    legacy_only = estimator_pb2.MaxAvailableReplicasRequest.FromString(
        wire.add_legacy_fields(current).SerializeToString())
    legacy_only.replicaRequirements.nodeClaim.ClearField("tolerationsBytes")
    with pytest.raises(LimitExceeded, match=
            r"nodeClaim.tolerations has 2 entries, more than --max-tolerations=1$"):
        wire.replicas_request_from_pb(legacy_only, RequestLimits(max_tolerations=1))


def test_an_empty_cluster_still_refuses_a_request_over_a_limit_but_not_a_corrupt_one() -> None:
    empty = MemberInventory("m", [])
    over = wire.replicas_request_to_pb({"cluster": "m", "replicaRequirements": {
        "resourceRequest": {"cpu": "1", "memory": "1Gi"}}})
    with pytest.raises(LimitExceeded):
        handlers.max_available_replicas(empty.service, over, limits=RequestLimits(max_resource_entries=1))
    corrupt = wire.replicas_request_to_pb({"cluster": "m"})
    corrupt.replicaRequirements.resourceRequestBytes["cpu"] = b"\x0a\x03abc"
    answer = handlers.max_available_replicas(empty.service, corrupt, limits=RequestLimits())
    assert answer.maxReplicas == 0  # Karmada's order: an empty cluster answers before decoding
