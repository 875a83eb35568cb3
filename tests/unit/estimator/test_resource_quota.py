"""ResourceQuotaEstimator (spec 3.9) with the ResourceQuotaEstimate gate on."""

from __future__ import annotations

import pytest

from .builders import a_node, a_quota, component, member, replicas, sets

BIG = a_node("big", "64", "256Gi", extra={"nvidia.com/gpu": "8"})  # 110 pod slots bound everything


def ask(*quotas, request=None, namespace="ns", priority="", assumed=()):  # type: ignore[no-untyped-def]
    requirements = {"resourceRequest": request or {"cpu": "500m"}, "namespace": namespace,
                    "priorityClassName": priority}
    return replicas(member(BIG, *quotas, quota=True, overcommit=True), requirements, assumed=assumed)


@pytest.mark.parametrize(("hard", "used", "want"), [
    pytest.param({"requests.cpu": "2"}, {"requests.cpu": "1"}, 2, id="requests.cpu"),
    pytest.param({"cpu": "2"}, {"cpu": "500m"}, 3, id="bare cpu"),
    pytest.param({"cpu": "10", "requests.cpu": "2"}, {"cpu": "0", "requests.cpu": "0"}, 4,
                 id="requests wins"),
    pytest.param({"limits.cpu": "1"}, {"limits.cpu": "0"}, 110, id="limits ignored"),
    pytest.param({"requests.cpu": "2"}, {}, 110, id="needs a used entry"),
    pytest.param({"pods": "1", "requests.storage": "1Gi"}, {"pods": "1", "requests.storage": "0"}, 110,
                 id="pod count and storage ignored"),
    pytest.param({"requests.memory": "1Gi"}, {"requests.memory": "0"}, 110, id="unrequested resource"),
])
def test_free_resources(hard: dict[str, str], used: dict[str, str], want: int) -> None:
    assert ask(a_quota("q", "ns", hard, used)) == want


def test_extended_resources_and_the_minimum_over_quotas() -> None:
    gpu = a_quota("gpu", "ns", {"requests.nvidia.com/gpu": "3"}, {"requests.nvidia.com/gpu": "1"})
    cpu = a_quota("cpu", "ns", {"cpu": "20"}, {"cpu": "19"})
    assert ask(gpu, request={"cpu": "1", "nvidia.com/gpu": "1"}) == 2
    assert ask(gpu, cpu, request={"cpu": "1", "nvidia.com/gpu": "1"}) == 1


def test_scopes_or_and_only_priority_class_matches() -> None:
    exists = a_quota("q", "ns", {"cpu": "1"}, {"cpu": "0"}, scopes=["PriorityClass"])
    assert ask(exists, priority="high") == 2
    assert ask(exists, priority="") == 110
    best_effort = a_quota("q", "ns", {"cpu": "1"}, {"cpu": "0"}, scopes=["NotBestEffort"])
    assert ask(best_effort, priority="high") == 110  # never matches: the quota is ignored
    either = a_quota("q", "ns", {"cpu": "1"}, {"cpu": "0"}, scopes=["BestEffort"], selector=[
        {"scopeName": "PriorityClass", "operator": "NotIn", "values": ["low"]}])
    assert ask(either, priority="high") == 2
    assert ask(either, priority="low") == 110


def test_namespaces() -> None:
    other = a_quota("q", "other", {"cpu": "1"}, {"cpu": "0"})
    assert ask(other) == 110
    assert ask(other, namespace="") == 2  # an empty namespace consults every namespace's quotas


def test_quota_leaving_nothing_is_unschedulable_and_over_use_goes_negative() -> None:
    assert ask(a_quota("q", "ns", {"cpu": "1"}, {"cpu": "1"})) == 0
    assert ask(a_quota("q", "ns", {"cpu": "1"}, {"cpu": "2300m"})) == -2


def test_component_sets_per_set_demand() -> None:
    quota = a_quota("q", "ns", {"requests.cpu": "10", "requests.memory": "10Gi"},
                    {"requests.cpu": "1", "requests.memory": "0"})
    inventory = member(BIG, quota, quota=True)
    parts = [component("jm", 1, cpu="1", memory="1Gi"), component("tm", 2, cpu="1", memory="2Gi")]
    assert sets(inventory, parts, namespace="ns") == 2  # 9 CPUs / 3 per set = 3, 10Gi / 5Gi = 2
    assert sets(inventory, parts, namespace="") == 21  # no namespace: quotas not consulted; node 64 CPUs / 3
