"""ExampleFlaky raises exactly where its args say, and nowhere else."""

from __future__ import annotations

import pytest
from fleetsched_example_plugins.flaky import ExampleFlaky, ExampleFlakyArgs, InjectedFailure

from fleetsched.plugin import ClusterInfo, FilterContext, SchedulingBinding

CTX = FilterContext(SchedulingBinding(kind="ResourceBinding", name="b", namespace="n"), "", frozenset(), True)
CLUSTER = ClusterInfo(name="m")


def test_fail_at_filter_raises_in_filter_only() -> None:
    plugin = ExampleFlaky(ExampleFlakyArgs(failAt="Filter", message="boom"))
    with pytest.raises(InjectedFailure, match="boom"):
        plugin.filter(CTX, CLUSTER)
    assert plugin.score(CTX, CLUSTER) == 0


def test_fail_at_score_raises_in_score_only() -> None:
    plugin = ExampleFlaky(ExampleFlakyArgs(failAt="Score"))
    assert plugin.filter(CTX, CLUSTER).is_success
    with pytest.raises(InjectedFailure, match="injected failure"):
        plugin.score(CTX, CLUSTER)


def test_fail_at_nothing_never_raises() -> None:
    plugin = ExampleFlaky(ExampleFlakyArgs(failAt=""))
    assert plugin.filter(CTX, CLUSTER).is_success and plugin.score(CTX, CLUSTER) == 0


def test_an_unknown_point_is_refused() -> None:
    with pytest.raises(ValueError, match="failAt: must be one of Filter, Score or empty, got 'Permit'"):
        ExampleFlakyArgs(failAt="Permit")
