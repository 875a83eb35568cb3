"""The policy index gives the same claims as matching every policy against every template."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleetsched.api import ClusterPropagationPolicy, PropagationPolicy, ResourceTemplate
from fleetsched.detector.index import PolicyIndex, PolicySet
from fleetsched.detector.match import Claim, choose_policy, preempting_policy

KINDS = (("apps/v1", "Deployment"), ("v1", "ConfigMap"), ("apps/v1", "StatefulSet"))
NAMES = ("a", "b", "c")
NAMESPACES = ("shop", "ops")
LABELS = (("app", "web"), ("app", "api"), ("tier", "front"), ("team", "x"))

label_sets = st.dictionaries(
    st.sampled_from(("app", "tier", "team")), st.sampled_from(("web", "api", "front", "x")), max_size=3
)


@st.composite
def selectors(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(st.sampled_from(KINDS))
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    if draw(st.booleans()):
        out["namespace"] = draw(st.sampled_from(NAMESPACES))
    shape = draw(st.sampled_from(("kind", "name", "labels", "expressions", "empty")))
    if shape == "name":
        out["name"] = draw(st.sampled_from(NAMES))
    elif shape == "labels":
        out["labelSelector"] = {"matchLabels": draw(label_sets.filter(bool))}
    elif shape == "expressions":
        key, value = draw(st.sampled_from(LABELS))
        operator = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")))
        expression: dict[str, Any] = {"key": key, "operator": operator}
        if operator in ("In", "NotIn"):
            expression["values"] = [value]
        out["labelSelector"] = {"matchExpressions": [expression]}
    elif shape == "empty":
        out["labelSelector"] = {}
    return out


@st.composite
def policies(draw: st.DrawFn, cluster: bool) -> list[Any]:
    out: list[Any] = []
    for i in range(draw(st.integers(0, 8))):
        metadata: dict[str, Any] = {"name": f"p{i}"}
        if not cluster:
            metadata["namespace"] = draw(st.sampled_from(NAMESPACES))
        spec: dict[str, Any] = {
            "resourceSelectors": draw(st.lists(selectors(), min_size=1, max_size=3)),
            "priority": draw(st.integers(0, 2)),
            "preemption": draw(st.sampled_from(("Always", "Never"))),
        }
        model = ClusterPropagationPolicy if cluster else PropagationPolicy
        out.append(model.model_validate({"metadata": metadata, "spec": spec}))
    return out


@st.composite
def templates(draw: st.DrawFn) -> ResourceTemplate:
    api_version, kind = draw(st.sampled_from(KINDS))
    metadata: dict[str, Any] = {
        "name": draw(st.sampled_from(NAMES)),
        "namespace": draw(st.sampled_from(NAMESPACES)),
        "labels": draw(label_sets),
    }
    return ResourceTemplate.from_dict(
        {"apiVersion": api_version, "kind": kind, "metadata": metadata}, namespaced=True
    )


def _identity(match: Any) -> Any:
    if match is None:
        return None
    return (
        match.policy.kind,
        match.policy.metadata.namespace,
        match.policy.metadata.name,
        match.implicit_priority,
    )


@settings(max_examples=300, deadline=None, derandomize=True)
@given(policies(cluster=False), policies(cluster=True), st.lists(templates(), min_size=1, max_size=6))
def test_indexed_choice_equals_full_scan(
    pps: list[PropagationPolicy], cpps: list[ClusterPropagationPolicy], items: list[ResourceTemplate]
) -> None:
    index = PolicySet(pps, cpps)
    for template in items:
        assert _identity(choose_policy(template, pps, cpps, index=index)) == _identity(
            choose_policy(template, pps, cpps)
        )


@settings(max_examples=200, deadline=None, derandomize=True)
@given(policies(cluster=False), policies(cluster=True), templates(), st.booleans())
def test_indexed_preemption_equals_full_scan(
    pps: list[PropagationPolicy],
    cpps: list[ClusterPropagationPolicy],
    template: ResourceTemplate,
    claimed_by_cpp: bool,
) -> None:
    index = PolicySet(pps, cpps)
    if claimed_by_cpp:
        claim = Claim(ClusterPropagationPolicy.KIND, "p0", None, "id")
        claimant: Any = cpps[0] if cpps else None
    else:
        claim = Claim(PropagationPolicy.KIND, "p0", template.namespace, "id")
        claimant = next(
            (p for p in pps if (p.metadata.namespace, p.metadata.name) == (template.namespace, "p0")), None
        )
    full = preempting_policy(template, claim, claimant, pps, cpps)
    indexed = preempting_policy(template, claim, claimant, pps, cpps, index=index)
    assert _identity(indexed) == _identity(full)


def test_candidates_skip_policies_that_cannot_match() -> None:
    named = ClusterPropagationPolicy.model_validate(
        {
            "metadata": {"name": "named"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "other"}]},
        }
    )
    labelled = ClusterPropagationPolicy.model_validate(
        {
            "metadata": {"name": "labelled"},
            "spec": {
                "resourceSelectors": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "Deployment",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    }
                ]
            },
        }
    )
    by_kind = ClusterPropagationPolicy.model_validate(
        {
            "metadata": {"name": "by-kind"},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]},
        }
    )
    index = PolicyIndex([named, labelled, by_kind])
    found = index.candidates(api_version="apps/v1", kind="Deployment", name="web", labels={"app": "web"})
    assert [p.metadata.name for p in found] == ["labelled"]
    assert index.candidates(api_version="apps/v1", kind="Deployment", name="other", labels={}) == [named]
    assert index.candidates(api_version="v1", kind="ConfigMap", name="x", labels=None) == [by_kind]
