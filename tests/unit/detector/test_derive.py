"""Policy matching and binding derivation (api.md §7.2-§7.6, §7.10)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api import (
    ClusterPropagationPolicy,
    ClusterResourceBinding,
    LoadError,
    PropagationPolicy,
    ResourceBinding,
    ResourceTemplate,
    load_text,
)
from fleetsched.detector import (
    FeatureGates,
    binding_name,
    build_binding,
    choose_policy,
    derive,
    derive_bindings,
    offline_permanent_id,
)


def a_template(
    kind: str = "Deployment",
    name: str = "web",
    namespace: str | None = "shop",
    *,
    api_version: str = "apps/v1",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    **extra: Any,
) -> ResourceTemplate:
    metadata: dict[str, Any] = {"name": name, "uid": f"uid-{name}", "resourceVersion": "7"}
    if namespace is not None:
        metadata["namespace"] = namespace
    if labels:
        metadata["labels"] = labels
    if annotations:
        metadata["annotations"] = annotations
    raw = {"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": spec or {}, **extra}
    return ResourceTemplate.from_dict(raw, namespaced=namespace is not None)


def selector(kind: str = "Deployment", api_version: str = "apps/v1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, **fields}


def a_pp(name: str, *selectors: dict[str, Any], namespace: str = "shop", **spec: Any) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "metadata": {
                "name": name,
                "namespace": namespace,
                "labels": {"propagationpolicy.karmada.io/permanent-id": f"id-{name}"},
            },
            "spec": {"resourceSelectors": list(selectors) or [selector()], **spec},
        }
    )


def a_cpp(name: str, *selectors: dict[str, Any], **spec: Any) -> ClusterPropagationPolicy:
    return ClusterPropagationPolicy.model_validate(
        {
            "metadata": {
                "name": name,
                "labels": {"clusterpropagationpolicy.karmada.io/permanent-id": f"id-{name}"},
            },
            "spec": {"resourceSelectors": list(selectors) or [selector()], **spec},
        }
    )


def winner(
    template: ResourceTemplate, pps: list[PropagationPolicy], cpps: list[ClusterPropagationPolicy]
) -> str:
    match = choose_policy(template, pps, cpps)
    return "" if match is None else f"{match.policy.kind}/{match.policy.metadata.name}"


@pytest.mark.parametrize(
    ("pps", "cpps", "expected"),
    [
        pytest.param([a_pp("a")], [], "PropagationPolicy/a", id="one match-all policy"),
        pytest.param(
            [a_pp("a", selector(name="web")), a_pp("b")],
            [],
            "PropagationPolicy/a",
            id="name match beats kind match",
        ),
        pytest.param(
            [a_pp("a"), a_pp("b", selector(labelSelector={"matchLabels": {"app": "web"}}))],
            [],
            "PropagationPolicy/b",
            id="label match beats kind match",
        ),
        pytest.param(
            [a_pp("a", selector(name="web")), a_pp("b", priority=1)],
            [],
            "PropagationPolicy/b",
            id="explicit priority first",
        ),
        pytest.param([a_pp("foo"), a_pp("bar")], [], "PropagationPolicy/bar", id="name tie-break"),
        pytest.param(
            [a_pp("a", namespace="other")],
            [a_cpp("c")],
            "ClusterPropagationPolicy/c",
            id="PP in another namespace never matches",
        ),
        pytest.param(
            [a_pp("a")],
            [a_cpp("c", priority=100)],
            "PropagationPolicy/a",
            id="PP wins over CPP regardless of priority",
        ),
        pytest.param(
            [a_pp("a", selector(name="api"))],
            [a_cpp("c")],
            "ClusterPropagationPolicy/c",
            id="named selector for another object",
        ),
        pytest.param([a_pp("a", selector(namespace="other"))], [], "", id="selector namespace mismatch"),
        pytest.param(
            [a_pp("a", selector(labelSelector={"matchLabels": {"app": "db"}}))], [], "", id="label mismatch"
        ),
        pytest.param([a_pp("a", selector(api_version="apps/v1beta1"))], [], "", id="apiVersion mismatch"),
        pytest.param(
            [a_pp("a", selector(labelSelector={"matchExpressions": [{"key": "app", "operator": "In"}]}))],
            [],
            "",
            id="unparsable selector never matches",
        ),
        pytest.param(
            [],
            [a_cpp("z"), a_cpp("y", selector(name="web"))],
            "ClusterPropagationPolicy/y",
            id="CPP implicit priority",
        ),
    ],
)
def test_choose_policy(
    pps: list[PropagationPolicy], cpps: list[ClusterPropagationPolicy], expected: str
) -> None:
    assert winner(a_template(labels={"app": "web"}), pps, cpps) == expected


def test_deleting_policies_are_never_candidates() -> None:
    deleting = a_pp("a", priority=9)
    deleting.metadata.deletion_timestamp = datetime(2026, 1, 1, tzinfo=UTC)
    assert winner(a_template(), [deleting, a_pp("b")], []) == "PropagationPolicy/b"


def test_cluster_scoped_template_only_by_cpp() -> None:
    role = a_template("ClusterRole", "admin", None, api_version="rbac.authorization.k8s.io/v1")
    rbac = selector("ClusterRole", "rbac.authorization.k8s.io/v1")
    assert winner(role, [a_pp("a", rbac)], [a_cpp("c", rbac)]) == "ClusterPropagationPolicy/c"
    assert winner(role, [], [a_cpp("c", {**rbac, "namespace": "shop"})]) == ""


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("nginx", "Deployment", "nginx-deployment"),
        ("system:controller:tom", "ClusterRole", "system.controller.tom-clusterrole"),
        ("Web", "Pod", "web-pod"),
    ],
)
def test_binding_name(name: str, kind: str, expected: str) -> None:
    assert binding_name(name, kind) == expected


def test_build_resource_binding_from_pp() -> None:
    template = a_template(
        spec={
            "replicas": 3,
            "template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}},
        }
    )
    policy = a_pp(
        "web",
        placement={
            "clusterAffinity": {"clusterNames": ["m1"]},
            "replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
            },
        },
        propagateDeps=True,
        schedulerName="fleetsched",
        conflictResolution="Overwrite",
        preserveResourcesOnDeletion=True,
        failover={"cluster": {"purgeMode": "Directly"}},
        suspension={"dispatching": True},
        priority=5,
    )
    binding = build_binding(template, policy)
    assert isinstance(binding, ResourceBinding)
    out = binding.to_dict()
    assert out["metadata"] == {
        "name": "web-deployment",
        "namespace": "shop",
        "labels": {"propagationpolicy.karmada.io/permanent-id": "id-web"},
        "annotations": {
            "propagationpolicy.karmada.io/namespace": "shop",
            "propagationpolicy.karmada.io/name": "web",
        },
        "ownerReferences": [
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "name": "web",
                "uid": "uid-web",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "finalizers": ["karmada.io/binding-controller"],
    }
    spec = out["spec"]
    assert spec["resource"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "shop",
        "name": "web",
        "uid": "uid-web",
        "resourceVersion": "7",
    }
    assert spec["replicas"] == 3
    assert spec["replicaRequirements"] == {"resourceRequest": {"cpu": "500m"}}
    assert spec["placement"] == policy.spec.placement.to_dict()  # type: ignore[union-attr]
    assert (spec["propagateDeps"], spec["schedulerName"], spec["conflictResolution"]) == (
        True,
        "fleetsched",
        "Overwrite",
    )
    assert spec["preserveResourcesOnDeletion"] is True
    assert spec["failover"] == {"cluster": {"purgeMode": "Directly"}}
    assert spec["suspension"] == {"dispatching": True}
    assert not {"clusters", "priority", "schedulePriority", "gracefulEvictionTasks"} & set(spec)
    assert "status" not in out


def test_cpp_on_namespaced_template_builds_resource_binding() -> None:
    binding = build_binding(a_template(), a_cpp("all"))
    assert binding.to_dict()["spec"]["placement"] == {}, "a policy without placement still gives one"
    assert isinstance(binding, ResourceBinding)
    assert binding.metadata.namespace == "shop"
    assert binding.metadata.labels == {"clusterpropagationpolicy.karmada.io/permanent-id": "id-all"}
    assert binding.metadata.annotations == {"clusterpropagationpolicy.karmada.io/name": "all"}
    assert binding.metadata.finalizers == ["karmada.io/binding-controller"]


def test_cpp_on_cluster_scoped_template_builds_cluster_resource_binding() -> None:
    role = a_template("ClusterRole", "system:admin", None, api_version="rbac.authorization.k8s.io/v1")
    binding = build_binding(role, a_cpp("all", selector("ClusterRole", "rbac.authorization.k8s.io/v1")))
    assert isinstance(binding, ClusterResourceBinding)
    assert binding.metadata.name == "system.admin-clusterrole" and binding.metadata.namespace is None
    assert binding.spec.resource.namespace is None
    assert binding.metadata.finalizers == ["karmada.io/cluster-resource-binding-controller"]
    assert binding.spec.replicas == 0 and binding.spec.replica_requirements is None


def test_schedule_priority_from_priority_class() -> None:
    policy = a_pp(
        "p", schedulePriority={"priorityClassSource": "KubePriorityClass", "priorityClassName": "high"}
    )
    binding = build_binding(a_template(), policy, priority_class_value={"high": 1000}.get)
    assert binding.spec.schedule_priority is not None and binding.spec.schedule_priority.priority == 1000
    off = build_binding(a_template(), policy, gates=FeatureGates(priority_based_scheduling=False))
    assert off.spec.schedule_priority is None
    result = derive([a_template()], [policy], [], priority_class_value={}.get)
    (unmatched,) = result.unmatched
    assert 'PriorityClass "high"' in unmatched.reason


def test_workload_affinity_groups_behind_gate() -> None:
    policy = a_pp(
        "p",
        placement={
            "workloadAffinity": {
                "affinity": {"groupByLabelKey": "app"},
                "antiAffinity": {"groupByLabelKey": "tier"},
            }
        },
    )
    template = a_template(labels={"app": "web"})
    assert build_binding(template, policy).spec.workload_affinity_groups is None
    groups = build_binding(
        template, policy, gates=FeatureGates(workload_affinity=True)
    ).spec.workload_affinity_groups
    assert groups is not None and groups.to_dict() == {"affinityGroup": "app=web"}


def test_sticky_claim_and_its_outcomes() -> None:
    claimed = a_template(
        labels={"propagationpolicy.karmada.io/permanent-id": "id-old"},
        annotations={
            "propagationpolicy.karmada.io/namespace": "shop",
            "propagationpolicy.karmada.io/name": "old",
        },
    )
    better = a_pp("better", selector(name="web"), priority=10)
    # Claims are sticky: a better policy does not take over.
    (result,) = derive([claimed], [a_pp("old"), better], []).results
    assert result.policy is not None and result.policy.metadata.name == "old"
    # The claiming policy no longer matches: nothing happens.
    (result,) = derive([claimed], [a_pp("old", selector("StatefulSet")), better], []).results
    assert result.binding is None and "no longer match" in result.reason
    # The claiming policy is gone: matched afresh.
    (result,) = derive([claimed], [better], []).results
    assert result.policy is better


def test_preemption_only_with_gate() -> None:
    claimed = a_template(
        labels={"clusterpropagationpolicy.karmada.io/permanent-id": "id-c"},
        annotations={"clusterpropagationpolicy.karmada.io/name": "c"},
    )
    preemptor = a_pp("p", selector(name="web"), preemption="Always")
    without = derive([claimed], [preemptor], [a_cpp("c", priority=50)]).results[0]
    assert without.policy is not None and without.policy.metadata.name == "c"
    gates = FeatureGates(policy_preemption=True)
    with_gate = derive([claimed], [preemptor], [a_cpp("c", priority=50)], gates=gates).results[0]
    assert with_gate.policy is preemptor, "a PP preempts a CPP regardless of priority"
    low_cpp = a_cpp("d", selector(name="web", namespace="shop"), preemption="Always", priority=10)
    assert (
        derive([claimed], [], [a_cpp("c", priority=50), low_cpp], gates=gates).results[0].policy.metadata.name
        == "c"
    )  # type: ignore[union-attr]
    high_cpp = a_cpp("d", selector(name="web", namespace="shop"), preemption="Always", priority=60)
    assert (
        derive([claimed], [], [a_cpp("c", priority=50), high_cpp], gates=gates).results[0].policy is high_cpp
    )


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        pytest.param(a_template(namespace="karmada-system"), "reserved", id="karmada-system"),
        pytest.param(a_template(namespace="karmada-es-member1"), "reserved", id="execution namespace"),
        pytest.param(a_template(namespace="kube-public"), "skipped-propagating-namespaces", id="kube-*"),
        pytest.param(
            a_template(labels={"resourcetemplate.karmada.io/claimed-by": "mcs"}),
            "claimed by mcs",
            id="claimed-by label",
        ),
        pytest.param(a_template(name="x", namespace="shop"), "", id="plain template"),
    ],
)
def test_ignored_templates(template: ResourceTemplate, reason: str) -> None:
    (result,) = derive([template], [a_pp("a")], [a_cpp("c")]).results
    if reason:
        assert result.binding is None and reason in result.reason
    else:
        assert result.binding is not None


def test_dependent_overrides_are_waited_for() -> None:
    policy = a_pp("a", dependentOverrides=["op1", "op2"])
    (result,) = derive([a_template()], [policy], [], override_exists=lambda ns, name: name == "op1").results
    assert result.binding is None and result.reason.endswith("op2")
    (result,) = derive([a_template()], [policy], [], override_exists=lambda ns, name: True).results
    assert result.binding is not None


SIMULATE_INPUT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec: {replicas: 2}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    replicaScheduling: {}
    spreadConstraints: [{maxGroups: 2}]
"""


def test_derive_bindings_from_files_admits_policies_offline() -> None:
    loaded = load_text(SIMULATE_INPUT, filename="in.yaml")
    (binding,) = derive_bindings(loaded)
    placement = binding.spec.placement
    assert placement is not None and placement.replica_scheduling is not None
    # CRD default, then the webhook's defaults (webhook.md §5).
    assert placement.replica_scheduling.replica_scheduling_type == "Divided"
    assert placement.replica_scheduling.replica_division_preference == "Weighted"
    assert placement.to_dict()["spreadConstraints"] == [
        {"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}
    ]
    assert binding.spec.scheduler_name == "default-scheduler"
    policy = loaded.policies[0]
    assert binding.metadata.labels == {
        "propagationpolicy.karmada.io/permanent-id": offline_permanent_id(policy)
    }
    dumped = binding.model_dump(by_alias=True, exclude_unset=True)
    assert None not in _values(dumped), "no explicit nulls for callers dumping with exclude_unset"


def _values(node: Any) -> list[Any]:
    if isinstance(node, dict):
        return [v for value in node.values() for v in ([value, *_values(value)])]
    if isinstance(node, list):
        return [v for value in node for v in ([value, *_values(value)])]
    return []


def test_denied_policy_is_a_load_error_naming_the_file() -> None:
    text = SIMULATE_INPUT.replace(
        "    replicaScheduling: {}", "    clusterAffinity: {}\n    clusterAffinities: [{affinityName: a}]"
    )
    with pytest.raises(LoadError) as caught:
        derive_bindings(load_text(text, filename="in.yaml"))
    message = str(caught.value)
    assert message.startswith(
        "in.yaml: document 3: PropagationPolicy shop/web would be denied by the webhook:"
    )
    assert "clusterAffinities cannot co-exist with clusterAffinity" in message


names = st.sampled_from(["a", "b", "bar", "foo", "web", "z"])
label_values = st.sampled_from(["web", "db", "api"])
selectors = st.one_of(
    st.just(selector()),
    st.builds(lambda n: selector(name=n), names),
    st.builds(lambda v: selector(labelSelector={"matchLabels": {"app": v}}), label_values),
    st.just(selector("StatefulSet")),
)
pp_lists = st.lists(
    st.tuples(st.integers(-2, 2), st.lists(selectors, min_size=1, max_size=3)), max_size=5
).map(lambda specs: [a_pp(f"p{i}", *sels, priority=prio) for i, (prio, sels) in enumerate(specs)])
cpp_lists = st.lists(
    st.tuples(st.integers(-2, 2), st.lists(selectors, min_size=1, max_size=3)), max_size=4
).map(lambda specs: [a_cpp(f"c{i}", *sels, priority=prio) for i, (prio, sels) in enumerate(specs)])


@settings(max_examples=80, deadline=None)
@given(
    pps=pp_lists,
    cpps=cpp_lists,
    name=names,
    app=label_values,
    replicas=st.integers(0, 2**31 - 1),
    order=st.randoms(use_true_random=False),
)
def test_derivation_is_deterministic_and_order_free(
    pps: list[PropagationPolicy],
    cpps: list[ClusterPropagationPolicy],
    name: str,
    app: str,
    replicas: int,
    order: Any,
) -> None:
    template = a_template(name=name, labels={"app": app}, spec={"replicas": replicas})
    first = derive([template], pps, cpps).results[0]
    shuffled_pps, shuffled_cpps = list(pps), list(cpps)
    order.shuffle(shuffled_pps)
    order.shuffle(shuffled_cpps)
    again = derive([template], shuffled_pps, shuffled_cpps).results[0]
    assert (first.binding, first.reason) == (again.binding, again.reason), "policy order never matters"
    if first.binding is None:
        assert choose_policy(template, pps, cpps) is None, "only an unmatched template gets no binding"
        return
    assert first.binding.spec.replicas == replicas >= 0
    assert first.binding.metadata.name == f"{name}-deployment"
    winner_policy = first.policy
    assert winner_policy is not None
    if isinstance(winner_policy, ClusterPropagationPolicy):
        assert choose_policy(template, pps, []) is None, "a matching PP always wins over CPPs"
