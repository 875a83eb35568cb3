from __future__ import annotations

from collections.abc import Callable

import pytest

from fleetsched.scheduler.outcome import ScheduleResult
from fleetsched.scheduler.pipeline import Scheduler, Settings
from fleetsched.scheduler.snapshot import Snapshot
from fleetsched.scheduler.types import ClusterInfo

from .builders import BindingBuilder, ClusterBuilder

Schedule = Callable[..., ScheduleResult]


def run_schedule(
    binding: BindingBuilder, clusters: list[ClusterBuilder | ClusterInfo], **settings: object
) -> ScheduleResult:
    built = [c.build() if isinstance(c, ClusterBuilder) else c for c in clusters]
    scheduler = Scheduler(settings=Settings(**settings))  # type: ignore[arg-type]
    return scheduler.schedule(binding.build(), binding.status(), Snapshot(built))


def division(result: ScheduleResult) -> dict[str, int]:
    assert result.clusters is not None, f"spec.clusters left unchanged: {result.condition}"
    return {t.name: t.replicas for t in result.clusters}


@pytest.fixture
def schedule() -> Schedule:
    return run_schedule
