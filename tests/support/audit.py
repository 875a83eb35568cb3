"""The kube-apiserver's audit log as a test's witness of who wrote what, and when.

``AuditLog.create(directory)`` writes an audit policy that records, only at the ``ResponseComplete``
stage, every create/update/patch/delete of bindings (and their status) and of Leases, at
``Metadata`` level except binding patches, logged with their body (``Request``); pass
``audit.args`` to the kube-apiserver (``ControlPlane.add_apiserver(..., extra_args=audit.args)``).
Every other request is not audited, so the log stays small and the apiserver's cost is a JSON line
per write.

``read_audit_log`` parses that file into ``WriteRecord`` values: the object written (resource,
subresource, namespace, name), the verb, the HTTP code the apiserver answered, the writer (the
``fieldManager`` of the request URI, which fleetsched sets to ``<agent>/<member>`` in shard mode,
and the ``User-Agent``), the times the request arrived and completed, by the apiserver's clock, and
the patch body where it was logged.
``successful_writes`` keeps the 2xx ones, grouped per object.

Pure code: no server needed, so the parser is unit-tested on recorded lines.
"""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BINDING_RESOURCES = ("resourcebindings", "clusterresourcebindings")
WRITE_VERBS = ("create", "update", "patch", "delete")

# Only ResponseComplete (and Panic): one line per request, carrying its response code.
AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
omitManagedFields: true
rules:
# A binding patch's body says what was written (spec.clusters or only annotations; status keys).
- level: Request
  verbs: ["patch"]
  resources:
  - group: work.karmada.io
    resources:
    - resourcebindings
    - resourcebindings/status
    - clusterresourcebindings
    - clusterresourcebindings/status
- level: Metadata
  verbs: ["create", "update", "patch", "delete"]
  resources:
  - group: work.karmada.io
    resources:
    - resourcebindings
    - resourcebindings/status
    - clusterresourcebindings
    - clusterresourcebindings/status
  - group: coordination.k8s.io
    resources: ["leases"]
- level: None
"""


@dataclass(frozen=True, slots=True)
class WriteRecord:
    """One audited write request, as the apiserver answered it."""

    resource: str
    subresource: str  # "" for the object itself, "status" for the status subresource
    namespace: str
    name: str
    verb: str
    code: int
    field_manager: str  # "" when the request named none
    user_agent: str
    received: dt.datetime  # requestReceivedTimestamp (apiserver clock, UTC)
    completed: dt.datetime  # stageTimestamp of ResponseComplete
    body: Mapping[str, Any] | None = None  # the request body (a patch), where the policy logs it

    @property
    def writes_spec(self) -> bool:
        """Whether this write may change ``spec`` (True when its body was not logged)."""
        return self.body is None or "spec" in self.body

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300

    @property
    def key(self) -> tuple[str, str]:
        return self.namespace, self.name


def parse_time(text: str) -> dt.datetime:
    """An audit timestamp (RFC 3339, microseconds, ``Z``) as an aware UTC datetime."""
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def parse_event(event: Mapping[str, Any]) -> WriteRecord | None:
    """The write an audit event records, or None for an event that is not a completed write."""
    verb = event.get("verb", "")
    ref = event.get("objectRef") or {}
    if verb not in WRITE_VERBS or not ref.get("resource"):
        return None
    if event.get("stage") not in ("ResponseComplete", "Panic"):
        return None
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(event.get("requestURI", "")).query)
    status = event.get("responseStatus") or {}
    # A Panic stage has no response code: count it as a failure.
    code = int(status.get("code") or (500 if event.get("stage") == "Panic" else 200))
    return WriteRecord(
        resource=ref["resource"],
        subresource=ref.get("subresource", ""),
        namespace=ref.get("namespace", ""),
        name=ref.get("name", ""),
        verb=verb,
        code=code,
        field_manager=(query.get("fieldManager") or [""])[0],
        user_agent=event.get("userAgent", ""),
        received=parse_time(event["requestReceivedTimestamp"]),
        completed=parse_time(event["stageTimestamp"]),
        body=event.get("requestObject") if isinstance(event.get("requestObject"), dict) else None,
    )


def parse_lines(lines: Iterable[str]) -> list[WriteRecord]:
    """Every write in the audit lines; a last line still being written is left for the next read."""
    records: list[WriteRecord] = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # only the line the apiserver is appending can be incomplete
        record = parse_event(event)
        if record is not None:
            records.append(record)
    return records


def read_audit_log(path: Path) -> list[WriteRecord]:
    if not path.exists():
        return []
    with path.open(errors="replace") as handle:
        return parse_lines(handle)


def successful_writes(
    records: Iterable[WriteRecord], *, resources: tuple[str, ...] = BINDING_RESOURCES, writer_prefix: str = ""
) -> dict[tuple[str, str], list[WriteRecord]]:
    """The 2xx writes of ``resources`` per (namespace, name), in log order; only the writers whose
    field manager starts with ``writer_prefix`` when one is given (e.g. ``fleetsched-scheduler/``)."""
    out: dict[tuple[str, str], list[WriteRecord]] = defaultdict(list)
    for record in records:
        if record.resource not in resources or not record.succeeded:
            continue
        if record.field_manager.startswith(writer_prefix):
            out[record.key].append(record)
    return dict(out)


class AuditReader:
    """Follows a growing audit log: each ``poll`` parses only what was appended since the last one
    (a log of thousands of writes is polled every half second by a waiting test)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: list[WriteRecord] = []
        self._offset = 0
        self._partial = b""

    def poll(self) -> list[WriteRecord]:
        """The records appended since the last call (also added to ``records``)."""
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        self._offset += len(data)
        lines = (self._partial + data).split(b"\n")
        self._partial = lines.pop()  # b"" after a complete line; else the line being appended
        new = parse_lines(line.decode(errors="replace") for line in lines)
        self.records.extend(new)
        return new


@dataclass(frozen=True)
class AuditLog:
    """An audit policy file and the log path a kube-apiserver writes to."""

    policy: Path
    path: Path

    @classmethod
    def create(cls, directory: Path) -> AuditLog:
        directory.mkdir(parents=True, exist_ok=True)
        policy = directory / "audit-policy.yaml"
        policy.write_text(AUDIT_POLICY)
        return cls(policy=policy, path=directory / "audit.log")

    @property
    def args(self) -> tuple[str, ...]:
        """kube-apiserver flags: a JSON log, each line written as its request completes."""
        return (
            f"--audit-policy-file={self.policy}",
            f"--audit-log-path={self.path}",
            "--audit-log-format=json",
            "--audit-log-mode=blocking",
            "--audit-log-maxsize=4096",  # megabytes: a test's log never rotates
        )

    def records(self) -> list[WriteRecord]:
        return read_audit_log(self.path)
