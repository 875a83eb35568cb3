"""``build_binding_fields``: the JSON form of the binding, the same as the model path gave.

The reference is the model path as it was before the JSON form existed, kept here literally:
models built field by field, the placement deep-copied, the result re-read from ``to_dict()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fleetsched.api import ClusterPropagationPolicy, PropagationPolicy, ResourceTemplate, load_text
from fleetsched.api.meta import ObjectMeta, ObjectReference, OwnerReference
from fleetsched.api.policy import Placement
from fleetsched.api.work import ResourceBindingSpec
from fleetsched.detector import FeatureGates, admit_offline, build_binding, derive
from fleetsched.detector import build as build_module
from fleetsched.detector.build import (
    Binding,
    BuildError,
    Policy,
    binding_kind,
    binding_name,
    build_binding_fields,
    claim_metadata,
)
from fleetsched.detector.interpret import InterpretError, interpret_replicas

from .test_derive import a_cpp, a_pp, a_template, selector

ROOT = Path(__file__).resolve().parents[3]


def reference_build_binding(
    template: ResourceTemplate,
    policy: Policy,
    *,
    gates: FeatureGates | None = None,
    priority_class_value: Callable[[str], int | None] | None = None,
) -> Binding:
    """``build_binding`` before the JSON form (fleetsched 9a004d9), unchanged."""
    gates = gates or FeatureGates()
    cls = binding_kind(policy, template)
    namespaced_binding = cls.KIND == "ResourceBinding"
    replicas, requirements = interpret_replicas(
        template.api_version,
        template.kind,
        template.raw,
        resource_quota_estimate=gates.resource_quota_estimate,
    )
    labels, annotations = claim_metadata(policy)
    spec = policy.spec
    metadata = ObjectMeta(
        name=binding_name(template.name, template.kind),
        namespace=template.namespace if namespaced_binding else None,
        labels=labels,
        annotations=annotations,
        # no owner reference without the template's uid (the API server refuses an empty one)
        owner_references=[
            OwnerReference(
                api_version=template.api_version,
                kind=template.kind,
                name=template.name,
                uid=template.uid,
                controller=True,
                block_owner_deletion=True,
            )
        ]
        if template.uid
        else None,
        finalizers=[
            "karmada.io/binding-controller"
            if namespaced_binding
            else "karmada.io/cluster-resource-binding-controller"
        ],
    )
    binding_spec = ResourceBindingSpec(
        resource=ObjectReference(
            api_version=template.api_version,
            kind=template.kind,
            namespace=template.namespace if namespaced_binding and template.namespaced else None,
            name=template.name,
            uid=template.uid,
            resource_version=template.metadata.resource_version,
        ),
        propagate_deps=True if spec.propagate_deps else None,
        replicas=replicas,
        replica_requirements=requirements,
        placement=spec.placement.model_copy(deep=True) if spec.placement is not None else Placement(),
        scheduler_name=spec.scheduler_name,
        failover=spec.failover.model_copy(deep=True) if spec.failover is not None else None,
        conflict_resolution=spec.conflict_resolution,
        preserve_resources_on_deletion=spec.preserve_resources_on_deletion,
        suspension=build_module._suspension(spec.suspension),
    )
    if namespaced_binding:
        if gates.priority_based_scheduling:
            binding_spec.schedule_priority = build_module._schedule_priority(policy, priority_class_value)
        if gates.workload_affinity:
            binding_spec.workload_affinity_groups = build_module._workload_affinity_groups(policy, template)
    built = cls(metadata=metadata, spec=binding_spec)
    return cls.model_validate(built.to_dict())


def _dumped(binding: Binding) -> str:
    # What simulate keeps of a binding: the fields set, in order, as compact JSON.
    fields = binding.model_dump(mode="python", by_alias=True, exclude_unset=True)
    return json.dumps(fields, default=str, separators=(",", ":"), ensure_ascii=False)


def _both(template: ResourceTemplate, policy: Policy, **kwargs: Any) -> tuple[Any, Any]:
    def run(build: Callable[..., Any]) -> Any:
        try:
            return build(template, policy, **kwargs)
        except (BuildError, InterpretError) as exc:
            return f"{type(exc).__name__}: {exc}"

    return run(reference_build_binding), run(build_binding_fields)


REQUESTS = {"containers": [{"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1.5Gi"}}}]}
POD = {
    "template": {
        "spec": {
            **REQUESTS,
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        }
    }
}
RICH_SPEC: dict[str, Any] = {
    "propagateDeps": True,
    "schedulerName": "other-scheduler",
    "conflictResolution": "Overwrite",
    "preserveResourcesOnDeletion": False,
    "suspension": {"dispatching": True, "dispatchingOnClusters": {"clusterNames": ["m1"]}},
    "failover": {"application": {"decisionConditions": {"tolerationSeconds": 30}, "purgeMode": "Gracefully"}},
    "schedulePriority": {"priorityClassSource": "KubePriorityClass", "priorityClassName": "high"},
    "placement": {
        "clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1", "m2"]}],
        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
        "workloadAffinity": {"affinity": {"groupByLabelKey": "group"}},
    },
}
GATES = [
    pytest.param(None, id="default gates"),
    pytest.param(
        FeatureGates(workload_affinity=True, resource_quota_estimate=True), id="affinity and quota gates"
    ),
    pytest.param(FeatureGates(priority_based_scheduling=False), id="no priority scheduling"),
]
CASES = [
    pytest.param(a_template(spec={"replicas": 3, **POD}), a_pp("p"), id="PP, no placement"),
    pytest.param(
        a_template(spec={"replicas": 3, **POD}, labels={"group": "g1"}),
        a_pp("p", **RICH_SPEC),
        id="PP, every field",
    ),
    pytest.param(
        a_template(spec={"replicas": 2, **POD}), a_cpp("c", **RICH_SPEC), id="CPP, namespaced template"
    ),
    pytest.param(
        a_template("ClusterRole", "reader", None, api_version="rbac.authorization.k8s.io/v1"),
        a_cpp("c", selector("ClusterRole", "rbac.authorization.k8s.io/v1"), **RICH_SPEC),
        id="CPP, cluster-scoped template",
    ),
    pytest.param(
        a_template("Job", "batch", spec={"parallelism": 4, "completions": 2, **POD}, api_version="batch/v1"),
        a_pp("p", selector("Job", "batch/v1"), suspension={}),
        id="Job, empty suspension",
    ),
    pytest.param(
        a_template(spec={"replicas": 1, "template": {"spec": {"containers": "bad"}}}),
        a_pp("p"),
        id="malformed template",
    ),
    pytest.param(
        a_template(spec={"replicas": 1}),
        a_pp(
            "p", schedulePriority={"priorityClassSource": "KubePriorityClass", "priorityClassName": "missing"}
        ),
        id="missing PriorityClass",
    ),
]


@pytest.mark.parametrize("gates", GATES)
@pytest.mark.parametrize(("template", "policy"), CASES)
def test_fields_are_the_reference_models_dump(
    template: ResourceTemplate, policy: Policy, gates: FeatureGates | None
) -> None:
    kwargs = {"gates": gates, "priority_class_value": {"high": 1000}.get}
    expected, fields = _both(template, policy, **kwargs)
    if isinstance(expected, str):
        assert fields == expected
        return
    assert isinstance(fields, dict)
    assert json.dumps(fields) == json.dumps(expected.to_dict())
    assert json.dumps(fields, separators=(",", ":"), ensure_ascii=False) == _dumped(expected)
    model = build_binding(template, policy, **kwargs)  # type: ignore[arg-type]
    assert type(model) is type(expected)
    assert _dumped(model) == _dumped(expected)


def test_no_two_bindings_share_a_nested_value() -> None:
    policy = a_pp("p", **RICH_SPEC)
    parts: dict[int, Any] = {}
    classes = {"high": 1000}.get
    one = build_binding_fields(a_template(name="a"), policy, parts=parts, priority_class_value=classes)
    two = build_binding_fields(a_template(name="b"), policy, parts=parts, priority_class_value=classes)
    assert len(parts) == 1  # the policy's parts were computed once
    assert one["spec"]["placement"] == two["spec"]["placement"]
    one["spec"]["placement"]["clusterAffinities"][0]["clusterNames"].append("m3")
    one["metadata"]["labels"]["x"] = "y"
    assert two["spec"]["placement"]["clusterAffinities"][0]["clusterNames"] == ["m1", "m2"]
    assert "x" not in two["metadata"]["labels"]
    three = build_binding_fields(a_template(name="c"), policy, parts=parts, priority_class_value=classes)
    assert three["spec"]["placement"] == two["spec"]["placement"] and "x" not in three["metadata"]["labels"]


@pytest.mark.parametrize(
    "path", ["examples/policies.yaml", "tests/unit/golden/policies-12x40x160.input.yaml.gz"]
)
def test_derived_fields_match_the_reference_on_whole_inputs(path: str) -> None:
    import gzip

    data = (ROOT / path).read_bytes()
    loaded = load_text(gzip.decompress(data).decode() if path.endswith(".gz") else data.decode())
    policies = [admit_offline(p) for p in loaded.policies]
    pps = [p for p in policies if isinstance(p, PropagationPolicy)]
    cpps = [p for p in policies if isinstance(p, ClusterPropagationPolicy)]
    fields = derive(loaded.templates, pps, cpps, as_fields=True)
    models = derive(loaded.templates, pps, cpps)
    assert len(fields.binding_fields) == len(models.bindings) > 5
    assert [r.reason for r in fields.results] == [r.reason for r in models.results]
    assert not any(r.binding is not None for r in fields.results)
    for result, model in zip(fields.results, models.results, strict=True):
        if result.fields is None:
            continue
        expected = reference_build_binding(result.template, result.policy)  # type: ignore[arg-type]
        assert json.dumps(result.fields, separators=(",", ":")) == _dumped(expected)
        assert _dumped(model.binding) == _dumped(expected)  # type: ignore[arg-type]


def test_a_policys_move_budget_goes_to_its_bindings_and_nothing_else_does() -> None:
    policy = a_pp("budget")
    policy.metadata.annotations = {
        "scheduler.fleetsched.io/max-unavailable": "10%",
        "scheduler.fleetsched.io/max-surge": "1",
        "team.example/owner": "shop",
    }
    fields = build_binding_fields(a_template(), policy)
    annotations = fields["metadata"]["annotations"]
    assert annotations["scheduler.fleetsched.io/max-unavailable"] == "10%"
    assert annotations["scheduler.fleetsched.io/max-surge"] == "1"
    assert "team.example/owner" not in annotations
    # the claim annotations put on templates stay the claim's alone
    assert "scheduler.fleetsched.io/max-surge" not in claim_metadata(policy)[1]
    assert "scheduler.fleetsched.io/max-surge" not in build_binding_fields(a_template(), a_pp("plain"))[
        "metadata"]["annotations"]
