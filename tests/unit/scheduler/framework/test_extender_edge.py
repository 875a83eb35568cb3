"""The edge's extender errors as the framework runtime meets them: one filter-result type, a failure
message that names the extender once, and ignorable failures counted by the edge's metric."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleetsched.extender import metrics
from fleetsched.extender.errors import ExtenderError, FaultKind
from fleetsched.extender.metrics import count_ignored_failure
from fleetsched.extender.protocol import decode_filter_result
from fleetsched.scheduler.framework.interface import ExtenderError as CoreExtenderError
from fleetsched.scheduler.framework.interface import ExtenderFilterResult
from fleetsched.scheduler.pipeline import Scheduler
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo

from ..builders import a_binding, a_cluster

NAME = "https://ext.example:8443/scheduler"


@dataclass
class Broken:
    """An extender whose every call fails the way the HTTPS client reports it."""

    ignorable: bool
    kind: FaultKind = FaultKind.UNREACHABLE
    answer: Any = None
    name: str = NAME
    weight: int = 1
    supports_filter: bool = True
    supports_prioritize: bool = False

    def filter(self, binding: Any, clusters: Sequence[ClusterInfo]) -> Any:
        if self.answer is not None:
            return self.answer
        raise ExtenderError(self.name, "filter", self.kind, "connection refused")

    def prioritize(self, binding: Any, clusters: Sequence[ClusterInfo]) -> Mapping[str, int]:
        raise AssertionError("not a prioritizer")


def ignored(kind: str) -> float:
    return metrics.IGNORED_FAILURES.labels(NAME, "filter", kind)._value.get()


def run(extender: Broken) -> Any:
    scheduler = Scheduler(extenders=[extender], extender_skipped=count_ignored_failure)
    binding = a_binding().replicas(1).duplicated()
    snapshot = Snapshot([a_cluster("m1").build()])
    return scheduler.schedule(binding.build(), binding.status(), snapshot)


def test_one_filter_result_type_and_the_edge_error_is_the_cores() -> None:
    decoded = decode_filter_result(b'{"clusterNames": ["m1"]}', ["m1", "m2"], extender=NAME)
    assert type(decoded) is ExtenderFilterResult and decoded.kept == ("m1",)
    assert issubclass(ExtenderError, CoreExtenderError)


def test_a_failing_extender_is_named_once_in_the_binding_condition() -> None:
    result = run(Broken(ignorable=False))
    assert result.condition is not None and not result.condition.status
    message = result.condition.message
    assert f"extender {NAME} failed at Filter: unreachable: connection refused" in message
    assert message.count(NAME) == 1


def test_an_ignorable_failure_is_skipped_and_counted_by_kind() -> None:
    before = ignored("slow")
    result = run(Broken(ignorable=True, kind=FaultKind.SLOW))
    assert [c.name for c in result.clusters or ()] == ["m1"]
    assert [s.plugin for s in result.attempts[0].skipped] == [NAME]
    assert ignored("slow") == before + 1


def test_a_malformed_answer_of_an_ignorable_extender_counts_as_malformed() -> None:
    before = ignored("malformed")
    result = run(Broken(ignorable=True, answer=object()))
    assert [c.name for c in result.clusters or ()] == ["m1"]
    assert ignored("malformed") == before + 1
