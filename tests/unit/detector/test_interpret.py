"""Replica interpretation (api.md §7.7): replicas per kind, nodeClaim, effective per-pod request."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api import Quantity
from fleetsched.detector import InterpretError, interpret_replicas


def a_deployment(replicas: int | None = 2, **pod_spec: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"template": {"spec": pod_spec}}
    if replicas is not None:
        spec["replicas"] = replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": spec,
    }


def container(requests: dict[str, Any] | None = None, limits: dict[str, Any] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    return {"name": "c", "resources": resources}


def request_of(obj: dict[str, Any]) -> dict[str, str] | None:
    _, requirements = interpret_replicas(obj["apiVersion"], obj["kind"], obj)
    if requirements is None or requirements.resource_request is None:
        return None
    return {name: str(q) for name, q in requirements.resource_request.items()}


@pytest.mark.parametrize(
    ("obj", "replicas"),
    [
        pytest.param(a_deployment(5), 5, id="deployment"),
        pytest.param(a_deployment(None), 0, id="deployment without replicas"),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 3}}, 3, id="statefulset"
        ),
        pytest.param(
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {"replicas": 4}}, 4, id="replicaset"
        ),
        pytest.param(
            {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "completions": 2}},
            2,
            id="job min(parallelism, completions)",
        ),
        pytest.param(
            {"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 3}},
            3,
            id="job completions default to parallelism",
        ),
        pytest.param(
            {"apiVersion": "batch/v1", "kind": "Job", "spec": {"completions": 3}},
            0,
            id="job without parallelism",
        ),
        pytest.param({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}}, 1, id="pod"),
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "spec": {"template": {"spec": {"containers": [container({"cpu": "1"})]}}},
            },
            0,
            id="daemonset has no interpreter",
        ),
        pytest.param(
            {"apiVersion": "apps/v1beta2", "kind": "Deployment", "spec": {"replicas": 3}},
            0,
            id="other version has no interpreter",
        ),
        pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}, 0, id="configmap"),
    ],
)
def test_replicas_by_kind(obj: dict[str, Any], replicas: int) -> None:
    assert interpret_replicas(obj["apiVersion"], obj["kind"], obj)[0] == replicas


def test_daemonset_has_no_requirements() -> None:
    obj = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "spec": {"template": {"spec": {"containers": [container({"cpu": "1"})]}}},
    }
    assert interpret_replicas("apps/v1", "DaemonSet", obj) == (0, None)


@pytest.mark.parametrize(
    ("pod_spec", "expected"),
    [
        pytest.param(
            {"containers": [container({"cpu": "500m"}), container({"cpu": "1", "memory": "128Mi"})]},
            {"cpu": "1500m", "memory": "128Mi"},
            id="containers are summed",
        ),
        pytest.param(
            {"containers": [container({"cpu": "250m"}, {"cpu": "1", "memory": "1Gi"})]},
            {"cpu": "250m", "memory": "1Gi"},
            id="limits fill missing requests only",
        ),
        pytest.param(
            {
                "containers": [container({"cpu": "500m"})],
                "initContainers": [container({"cpu": "2"}), container({"cpu": "1", "memory": "1Gi"})],
            },
            {"cpu": "2", "memory": "1Gi"},
            id="init containers: max, not sum",
        ),
        pytest.param(
            {"containers": [container({"cpu": "500m"})], "overhead": {"cpu": "250m", "memory": "64Mi"}},
            {"cpu": "750m", "memory": "64Mi"},
            id="overhead added",
        ),
        pytest.param(
            {"containers": [container({"cpu": "0.1m"})]}, {"cpu": "1m"}, id="cpu rounds up to millicores"
        ),
        pytest.param(
            {"containers": [container({"memory": "1G"})]},
            {"memory": "1000000000"},
            id="memory not a power of 1024",
        ),
        pytest.param(
            {
                "containers": [
                    container(
                        {
                            "nvidia.com/gpu": "2",
                            "example.com/foo": "1",
                            "foo": "3",
                            "hugepages-2Mi": "4Mi",
                            "pods": "1",
                        }
                    )
                ]
            },
            {"nvidia.com/gpu": "2", "example.com/foo": "1", "hugepages-2Mi": "4Mi", "pods": "1"},
            id="extended, hugepages and pods kept; unknown native dropped",
        ),
        pytest.param({"containers": [container({"cpu": "0"})]}, None, id="all zero means no request"),
        pytest.param({"containers": [container()]}, None, id="no resources"),
    ],
)
def test_effective_request(pod_spec: dict[str, Any], expected: dict[str, str] | None) -> None:
    assert request_of(a_deployment(1, **pod_spec)) == expected


def test_node_claim_from_pod_spec() -> None:
    obj = a_deployment(
        1,
        nodeSelector={"disk": "ssd"},
        tolerations=[{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}],
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
        },
        containers=[container({"cpu": "1"})],
    )
    _, requirements = interpret_replicas("apps/v1", "Deployment", obj)
    assert requirements is not None
    claim = requirements.to_dict()["nodeClaim"]
    assert claim == {
        "hardNodeAffinity": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        },
        "nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }
    assert requirements.namespace is None and requirements.priority_class_name is None


def test_empty_node_selector_counts_as_present() -> None:
    _, requirements = interpret_replicas("apps/v1", "Deployment", a_deployment(1, nodeSelector={}))
    assert requirements is not None
    assert requirements.to_dict() == {"nodeClaim": {}}


def test_no_claim_and_no_request_means_no_requirements() -> None:
    assert interpret_replicas("apps/v1", "Deployment", a_deployment(3, tolerations=[])) == (3, None)


def test_resource_quota_estimate_gate_adds_namespace_and_priority_class() -> None:
    obj = a_deployment(1, priorityClassName="high", containers=[container({"cpu": "1"})])
    _, requirements = interpret_replicas("apps/v1", "Deployment", obj, resource_quota_estimate=True)
    assert requirements is not None
    assert (requirements.namespace, requirements.priority_class_name) == ("ns", "high")


def test_malformed_template_names_the_field() -> None:
    obj = a_deployment(1, containers=[container({"cpu": "lots"})])
    with pytest.raises(InterpretError) as caught:
        interpret_replicas("apps/v1", "Deployment", obj)
    assert caught.value.path == "spec.template.spec.containers[0].resources.requests[cpu]"


quantities = st.builds(lambda n, unit: f"{n}{unit}", st.integers(0, 4000), st.sampled_from(["m", "", "k"]))
memories = st.builds(
    lambda n, unit: f"{n}{unit}", st.integers(0, 4096), st.sampled_from(["Mi", "Gi", "", "M"])
)
containers = st.lists(
    st.builds(lambda c, m: container({"cpu": c, "memory": m}), quantities, memories), min_size=0, max_size=4
)


@settings(max_examples=60, deadline=None)
@given(main=containers, init=containers, replicas=st.integers(0, 2**31 - 1))
def test_request_is_at_least_every_container_and_stable(
    main: list[dict[str, Any]], init: list[dict[str, Any]], replicas: int
) -> None:
    obj = a_deployment(replicas, containers=main, initContainers=init)
    first = interpret_replicas("apps/v1", "Deployment", obj)
    assert first == interpret_replicas("apps/v1", "Deployment", obj), "same input, same result"
    count, requirements = first
    assert count == replicas >= 0
    request = (requirements.resource_request if requirements else None) or {}
    for name in ("cpu", "memory"):
        total = request.get(name, Quantity(0))
        assert total.value_exact >= 0
        for c in main + init:
            assert total >= Quantity.parse(c["resources"]["requests"][name]) or name == "cpu"
        milli = sum(Quantity.parse(c["resources"]["requests"]["cpu"]).milli_value() for c in main)
        init_max = max(
            (Quantity.parse(c["resources"]["requests"]["cpu"]).milli_value() for c in init), default=0
        )
        if name == "cpu":
            assert total.milli_value() == max(milli, init_max)
