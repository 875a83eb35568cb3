"""tests/support/audit.py reads the kube-apiserver's audit log into write records: who wrote which
binding (field manager and user agent), with what answer, when. Lines recorded from kube-apiserver
v1.36.3 with the policy of that module."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/unit is no package: reach tests/

from tests.support.audit import (
    AUDIT_POLICY,
    AuditLog,
    AuditReader,
    parse_lines,
    read_audit_log,
    successful_writes,
)

STATUS_PATCH = (
    '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"787316f1-efe7-4251-b38c-'
    '903f3b937665","stage":"ResponseComplete","requestURI":"/apis/work.karmada.io/v1alpha2/namespaces/ns1/'
    'resourcebindings/b1/status?fieldManager=fleetsched-scheduler%2Ffleetsched-scheduler-r0","verb":"patch",'
    '"user":{"username":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],'
    '"userAgent":"fleetsched-scheduler/0.1","objectRef":{"resource":"resourcebindings","namespace":"ns1",'
    '"name":"b1","apiGroup":"work.karmada.io","apiVersion":"v1alpha2","subresource":"status"},'
    '"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T23:09:42.323995Z",'
    '"stageTimestamp":"2026-12-01T23:09:42.326929Z","annotations":{"authorization.k8s.io/decision":"allow",'
    '"authorization.k8s.io/reason":""}}'
)
CONFLICT = (
    '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"7c64b4ac-ccc4-4aa0-867d-'
    '15214e7128ee","stage":"ResponseComplete","requestURI":"/apis/work.karmada.io/v1alpha2/namespaces/ns1/'
    'resourcebindings/b1?fieldManager=fleetsched-scheduler/fleetsched-scheduler-r1","verb":"patch",'
    '"user":{"username":"admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],'
    '"userAgent":"fleetsched-scheduler/0.1","objectRef":{"resource":"resourcebindings","namespace":"ns1",'
    '"name":"b1","apiGroup":"work.karmada.io","apiVersion":"v1alpha2"},"responseStatus":{"metadata":{},'
    '"status":"Failure","message":"Operation cannot be fulfilled","reason":"Conflict","code":409},'
    '"requestReceivedTimestamp":"2026-12-01T23:09:42.317452Z","stageTimestamp":"2026-12-01T23:09:42.322624Z"}'
)
CREATE = (
    '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete",'
    '"requestURI":"/apis/work.karmada.io/v1alpha2/namespaces/ns1/resourcebindings","verb":"create",'
    '"userAgent":"Python-urllib/3.11","objectRef":{"resource":"resourcebindings","namespace":"ns1",'
    '"name":"b1","apiGroup":"work.karmada.io","apiVersion":"v1alpha2"},"responseStatus":{"metadata":{},'
    '"code":201},"requestReceivedTimestamp":"2026-12-01T23:09:39.766411Z",'
    '"stageTimestamp":"2026-12-01T23:09:41.780257Z"}'
)
LEASE_RENEWAL = (
    '{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete",'
    '"requestURI":"/apis/coordination.k8s.io/v1/namespaces/karmada-system/leases/fleetsched-scheduler-r0'
    '?fieldManager=fleetsched-scheduler%2Ffleetsched-scheduler-r0","verb":"update",'
    '"userAgent":"fleetsched-scheduler/0.1","objectRef":{"resource":"leases","namespace":"karmada-system",'
    '"name":"fleetsched-scheduler-r0","apiGroup":"coordination.k8s.io","apiVersion":"v1"},'
    '"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-12-01T23:09:43.000001Z",'
    '"stageTimestamp":"2026-12-01T23:09:43.002000Z"}'
)


def test_a_status_patch_names_its_writer_object_and_times() -> None:
    (record,) = parse_lines([STATUS_PATCH])
    assert (record.resource, record.subresource, record.namespace, record.name) == (
        "resourcebindings", "status", "ns1", "b1"
    )
    assert (record.verb, record.code, record.succeeded) == ("patch", 200, True)
    assert record.field_manager == "fleetsched-scheduler/fleetsched-scheduler-r0"  # %2F decoded
    assert record.user_agent == "fleetsched-scheduler/0.1"
    assert record.received == dt.datetime(2026, 12, 1, 23, 9, 42, 323995, tzinfo=dt.UTC)
    assert record.body is None and record.writes_spec  # a Metadata-level line: the body is unknown
    assert record.completed - record.received == dt.timedelta(microseconds=2934)


def test_successful_writes_group_per_binding_and_keep_only_2xx_of_bindings() -> None:
    records = parse_lines([CREATE, CONFLICT, STATUS_PATCH, LEASE_RENEWAL])
    assert [r.code for r in records] == [201, 409, 200, 200]
    every = successful_writes(records)
    assert [(r.verb, r.subresource) for r in every[("ns1", "b1")]] == [("create", ""), ("patch", "status")]
    by_scheduler = successful_writes(records, writer_prefix="fleetsched-scheduler/")
    writers = [r.field_manager for r in by_scheduler[("ns1", "b1")]]
    assert writers == ["fleetsched-scheduler/fleetsched-scheduler-r0"]
    leases = successful_writes(records, resources=("leases",))
    assert list(leases) == [("karmada-system", "fleetsched-scheduler-r0")]


def test_a_line_still_being_written_and_events_that_are_not_writes_are_left_out(tmp_path: Path) -> None:
    read = json.loads(STATUS_PATCH)
    read.update(verb="get")
    started = json.loads(STATUS_PATCH)
    started.update(stage="RequestReceived")
    path = tmp_path / "audit.log"
    path.write_text("\n".join([CREATE, json.dumps(read), json.dumps(started), "", STATUS_PATCH[:80]]))
    assert [r.verb for r in read_audit_log(path)] == ["create"]
    assert read_audit_log(tmp_path / "missing.log") == []


def test_the_policy_file_and_flags_go_together(tmp_path: Path) -> None:
    audit = AuditLog.create(tmp_path / "audit")
    assert audit.policy.read_text() == AUDIT_POLICY
    assert f"--audit-policy-file={audit.policy}" in audit.args
    assert f"--audit-log-path={audit.path}" in audit.args
    assert audit.records() == []


def test_the_reader_parses_each_appended_line_once_even_when_it_arrives_in_pieces(tmp_path: Path) -> None:
    path = tmp_path / "audit.log"
    reader = AuditReader(path)
    assert reader.poll() == []
    path.write_text(CREATE + "\n" + STATUS_PATCH[:100])
    assert [r.verb for r in reader.poll()] == ["create"]
    with path.open("a") as handle:
        handle.write(STATUS_PATCH[100:] + "\n")
    assert [(r.verb, r.subresource) for r in reader.poll()] == [("patch", "status")]
    assert reader.poll() == []
    assert [r.code for r in reader.records] == [201, 200]


def test_a_logged_patch_body_says_whether_the_spec_was_written() -> None:
    spec = json.loads(CONFLICT)
    spec.update(level="Request", requestObject={"spec": {"clusters": [{"name": "m1", "replicas": 2}]},
                                                 "metadata": {"resourceVersion": "7"}})
    annotations = json.loads(CONFLICT)
    annotations.update(level="Request", requestObject={"metadata": {"annotations": {"a": "b"}}})
    first, second = parse_lines([json.dumps(spec), json.dumps(annotations)])
    assert first.writes_spec and first.body is not None and first.body["spec"]["clusters"][0]["name"] == "m1"
    assert not second.writes_spec
