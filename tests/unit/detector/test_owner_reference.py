"""A derived binding's owner reference needs the template's uid: the API server refuses one without
(``ownerReferences.uid: "" must not be empty``), so a template read from a file (no uid) gives a
binding without any, and ``simulate -o yaml | kubectl apply -f -`` is accepted (the e2e test
applies it to a real kube-apiserver)."""

from __future__ import annotations

from fleetsched.api import PropagationPolicy, ResourceTemplate
from fleetsched.detector import build_binding


def template(uid: str | None) -> ResourceTemplate:
    metadata = {"name": "web", "namespace": "shop", **({"uid": uid} if uid is not None else {})}
    return ResourceTemplate.from_dict(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata, "spec": {"replicas": 1}},
        namespaced=True,
    )


POLICY = PropagationPolicy.model_validate(
    {
        "metadata": {"name": "p", "namespace": "shop",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "id-p"}},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]},
    }
)


def test_a_template_without_uid_gives_a_binding_without_owner_reference() -> None:
    out = build_binding(template(None), POLICY).to_dict()
    assert "ownerReferences" not in out["metadata"]
    assert "uid" not in out["spec"]["resource"]


def test_a_live_template_owns_its_binding() -> None:
    out = build_binding(template("u-1"), POLICY).to_dict()
    assert out["metadata"]["ownerReferences"] == [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-1", "controller": True,
         "blockOwnerDeletion": True}
    ]
