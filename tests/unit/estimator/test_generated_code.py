"""The committed protobuf code matches the .proto files, and the wire names are Karmada's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fleetsched.estimator.pb import estimator_pb2, service_pb2

ROOT = Path(__file__).resolve().parents[3]


def test_generated_code_is_not_stale() -> None:
    result = subprocess.run([sys.executable, str(ROOT / "hack" / "gen_proto.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


def test_service_and_method_paths_are_karmadas() -> None:
    service = service_pb2.DESCRIPTOR.services_by_name["Estimator"]
    assert service.full_name == "github.com.karmada_io.karmada.pkg.estimator.service.Estimator"
    assert [m.name for m in service.methods] == [
        "MaxAvailableReplicas", "MaxAvailableComponentSets", "GetUnschedulableReplicas"]
    assert estimator_pb2.DESCRIPTOR.name == "pkg/estimator/pb/estimator.proto"
    assert estimator_pb2.DESCRIPTOR.package == "github.com.karmada_io.karmada.pkg.estimator.pb"


def test_field_numbers_follow_the_spec() -> None:
    def numbers(message: object) -> dict[str, int]:
        return {f.name: f.number for f in message.DESCRIPTOR.fields}  # type: ignore[attr-defined]

    assert numbers(estimator_pb2.ReplicaRequirements) == {
        "nodeClaim": 1, "namespace": 3, "priorityClassName": 4, "resourceRequestBytes": 5}
    assert numbers(estimator_pb2.ComponentReplicaRequirements) == {
        "nodeClaim": 1, "priorityClassName": 3, "resourceRequestBytes": 4}
    assert numbers(estimator_pb2.NodeClaim) == {
        "nodeSelector": 2, "nodeAffinityBytes": 4, "tolerationsBytes": 5}
    assert numbers(estimator_pb2.MaxAvailableComponentSetsRequest) == {
        "cluster": 1, "components": 2, "namespace": 3, "assumedWorkloads": 4}
    assert numbers(estimator_pb2.UnschedulableReplicasRequest) == {
        "cluster": 1, "resource": 2, "unschedulableThreshold": 3}
    claim = estimator_pb2.ReplicaRequirements.DESCRIPTOR.fields_by_name["nodeClaim"]
    assert claim.containing_oneof is not None and claim.containing_oneof.name == "_nodeClaim"
