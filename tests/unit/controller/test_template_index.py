"""TemplateIndex against a full scan: the templates a policy matches, found through the index, are
exactly those ``implicit_priority`` selects from every cached template, in cache order."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from fleetsched.api.load import ResourceTemplate
from fleetsched.api.policy import PropagationPolicy
from fleetsched.controller.policy.template_index import TemplateIndex
from fleetsched.controller.runtime.cache import ObjectCache, object_key
from fleetsched.detector import implicit_priority

KINDS = [("apps/v1", "Deployment"), ("v1", "ConfigMap"), ("apps/v2", "Deployment")]
NAMESPACES = ["a", "b"]
NAMES = ["n1", "n2", "n3"]
LABEL_KEYS = ["app", "tier"]
VALUES = ["x", "y"]

labels = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(VALUES), max_size=2)


@st.composite
def templates(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(st.sampled_from(KINDS))
    meta: dict[str, Any] = {
        "name": draw(st.sampled_from(NAMES)),
        "namespace": draw(st.sampled_from(NAMESPACES)),
    }
    found = draw(labels)
    if found:
        meta["labels"] = found
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


@st.composite
def selectors(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(st.sampled_from(KINDS))
    selector: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    if draw(st.booleans()):
        selector["namespace"] = draw(st.sampled_from(NAMESPACES))
    shape = draw(st.sampled_from(["kind", "name", "labels", "expressions"]))
    if shape == "name":
        selector["name"] = draw(st.sampled_from(NAMES))
    elif shape == "labels":
        selector["labelSelector"] = {
            "matchLabels": draw(
                st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(VALUES), min_size=1, max_size=2)
            )
        }
    elif shape == "expressions":
        op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
        values = draw(st.lists(st.sampled_from(VALUES), min_size=1)) if op in ("In", "NotIn") else []
        selector["labelSelector"] = {
            "matchExpressions": [{"key": draw(st.sampled_from(LABEL_KEYS)), "operator": op, "values": values}]
        }
    return selector


def policy_of(found: list[dict[str, Any]]) -> PropagationPolicy:
    return PropagationPolicy.model_validate(
        {
            "apiVersion": "policy.karmada.io/v1alpha1",
            "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "a"},
            "spec": {"resourceSelectors": found, "placement": {}},
        }
    )


CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap"}


@settings(max_examples=500, deadline=None)
@example(
    [{**CONFIGMAP, "metadata": {"name": "n1", "namespace": "a", "labels": {"app": "y", "tier": "x"}}}],
    [{**CONFIGMAP, "labelSelector": {"matchLabels": {"app": "y"}}}],
)
@given(
    st.lists(st.one_of(templates(), st.sampled_from(NAMESPACES).map(lambda ns: {"delete": ns})), max_size=30),
    st.lists(selectors(), min_size=1, max_size=3),
)
def test_candidates_hold_every_match_in_cache_order(
    script: list[dict[str, Any]], found: list[dict[str, Any]]
) -> None:
    cache = ObjectCache(TemplateIndex())
    for step in script:
        if "delete" in step:
            for obj in cache:
                if obj["metadata"]["namespace"] == step["delete"]:
                    cache.delete(object_key(obj))
                    break
        else:
            cache.upsert(step)
    index = cache.index
    assert isinstance(index, TemplateIndex)
    policy = policy_of(found)
    scan = [
        object_key(obj) for obj in cache if implicit_priority(policy, ResourceTemplate.from_dict(obj)) > 0
    ]
    candidates = index.candidates(policy.spec.resource_selectors)
    via_index = []
    for key in candidates:
        parsed = index.parsed(key)
        assert parsed is not None
        if implicit_priority(policy, parsed) > 0:
            via_index.append(key)
    assert via_index == scan
    order = [object_key(obj) for obj in cache]
    assert candidates == sorted(candidates, key=order.index)
    for label_key in LABEL_KEYS:
        for value in VALUES:
            expected = [
                object_key(o) for o in cache if (o["metadata"].get("labels") or {}).get(label_key) == value
            ]
            assert index.labelled(label_key, value) == expected


def test_an_update_refiles_and_reparses() -> None:
    index = TemplateIndex()
    template = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "n1", "namespace": "a", "labels": {"app": "x"}},
    }
    index.upsert("a/n1", template)
    first = index.parsed("a/n1")
    assert index.labelled("app", "x") == ["a/n1"]
    changed = {**template, "metadata": {"name": "n1", "namespace": "a", "labels": {"app": "y"}}}
    index.upsert("a/n1", changed)
    assert index.labelled("app", "x") == []
    assert index.labelled("app", "y") == ["a/n1"]
    parsed = index.parsed("a/n1")
    assert parsed is not first and parsed is not None and parsed.labels == {"app": "y"}
    index.delete("a/n1")
    assert index.parsed("a/n1") is None and len(index) == 0
