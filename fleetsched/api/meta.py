"""Kubernetes building blocks that Karmada's kinds embed: object metadata, conditions, selectors,
taints and tolerations, node selectors, object references.

Only the subset fleetsched reads or writes is modelled; unknown fields are ignored.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from fleetsched.api._base import Int64, KarmadaModel, Time


class OwnerReference(KarmadaModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KarmadaModel):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: Int64 | None = None
    creation_timestamp: Time | None = None
    deletion_timestamp: Time | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None


class Condition(KarmadaModel):
    """metav1.Condition. The CRD requires every field but ``observedGeneration``; the model is lenient
    so that hand-written inputs without times or messages still load."""

    model_config = ConfigDict(
        json_schema_extra={"required": ["type", "status", "reason", "message", "lastTransitionTime"]}
    )

    type: str = Field(max_length=316)
    status: Literal["True", "False", "Unknown"]
    observed_generation: Int64 | None = None
    last_transition_time: Time | None = None
    reason: str | None = Field(default=None, max_length=1024)
    message: str | None = Field(default=None, max_length=32768)


class LabelSelectorRequirement(KarmadaModel):
    key: str
    operator: str
    values: list[str] | None = None


class LabelSelector(KarmadaModel):
    """metav1.LabelSelector. Matching lives in ``fleetsched.api.selectors``."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


class NodeSelectorRequirement(KarmadaModel):
    """corev1.NodeSelectorRequirement; also the element of a cluster ``fieldSelector``."""

    key: str
    operator: str
    values: list[str] | None = None


class NodeSelectorTerm(KarmadaModel):
    match_expressions: list[NodeSelectorRequirement] | None = None
    match_fields: list[NodeSelectorRequirement] | None = None


class NodeSelector(KarmadaModel):
    node_selector_terms: list[NodeSelectorTerm]


class Toleration(KarmadaModel):
    key: str | None = None
    operator: str | None = None
    value: str | None = None
    effect: str | None = None
    toleration_seconds: Int64 | None = None


class Taint(KarmadaModel):
    key: str
    value: str | None = None
    effect: str
    time_added: Time | None = None


class ObjectReference(KarmadaModel):
    """The resource template a binding stands for (``spec.resource``)."""

    api_version: str
    kind: str
    namespace: str | None = None
    name: str
    uid: str | None = None
    resource_version: str | None = None


__all__ = [
    "Condition",
    "LabelSelector",
    "LabelSelectorRequirement",
    "NodeSelector",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectMeta",
    "ObjectReference",
    "OwnerReference",
    "Taint",
    "Toleration",
]
