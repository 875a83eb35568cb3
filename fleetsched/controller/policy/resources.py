"""The policy controller's resource catalogue and the API paths it reads and writes.

Owns: the kinds of resource template the controller can watch (``TemplateResource``,
``KNOWN_RESOURCES``, the opt-in and default sets behind ``--resources``), the Karmada groups,
kinds, plurals and finalizers it deals with, the paths of templates, bindings, policies and what a
reconcile reads beside them, and the typed queue keys of the three kinds of work.

Pure values and string building: no I/O, no caches, no decisions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fleetsched.api.names import POLICY_GROUP, POLICY_VERSION
from fleetsched.api.policy import ClusterPropagationPolicy, PropagationPolicy
from fleetsched.controller.runtime.queue import QueueKey
from fleetsched.detector import constants as keys
from fleetsched.detector.match import Claim

PP, CPP = PropagationPolicy.KIND, ClusterPropagationPolicy.KIND
POLICY_PLURALS = {PP: "propagationpolicies", CPP: "clusterpropagationpolicies"}
POLICY_FINALIZERS = {
    PP: "karmada.io/propagation-policy-controller",
    CPP: "karmada.io/cluster-propagation-policy-controller",
}
BINDING_PLURALS = {"ResourceBinding": "resourcebindings", "ClusterResourceBinding": "clusterresourcebindings"}


@dataclass(frozen=True, slots=True)
class TemplateResource:
    """One kind of resource template the controller watches."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def collection_path(self, namespace: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace and self.namespaced:
            return f"{base}/namespaces/{namespace}/{self.plural}"
        return f"{base}/{self.plural}"

    def object_path(self, key: str) -> str:
        if self.namespaced:
            namespace, name = key.split("/", 1)
            return f"{self.collection_path(namespace)}/{name}"
        return f"{self.collection_path()}/{key}"


KNOWN_RESOURCES: dict[str, TemplateResource] = {
    r.name: r
    for r in (
        TemplateResource("apps", "v1", "deployments", "Deployment", True),
        TemplateResource("apps", "v1", "statefulsets", "StatefulSet", True),
        TemplateResource("apps", "v1", "replicasets", "ReplicaSet", True),
        TemplateResource("apps", "v1", "daemonsets", "DaemonSet", True),
        TemplateResource("batch", "v1", "jobs", "Job", True),
        TemplateResource("batch", "v1", "cronjobs", "CronJob", True),
        TemplateResource("", "v1", "pods", "Pod", True),
        TemplateResource("", "v1", "configmaps", "ConfigMap", True),
        TemplateResource("", "v1", "secrets", "Secret", True),
        TemplateResource("", "v1", "services", "Service", True),
        TemplateResource("", "v1", "serviceaccounts", "ServiceAccount", True),
        TemplateResource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
        TemplateResource("networking.k8s.io", "v1", "ingresses", "Ingress", True),
        TemplateResource("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        TemplateResource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        TemplateResource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        TemplateResource(
            "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False
        ),
        TemplateResource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True),
        TemplateResource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True),
    )
}
# Kinds the controller can watch but does not by default. Pods: Karmada propagates their
# controllers, not them. Secrets: reading every Secret is reading every credential of the control
# plane. RBAC kinds: the API server refuses even a label patch on a Role, ClusterRole or binding
# granting more than the writer holds unless the writer may ``escalate`` and ``bind``, which lets
# it grant itself anything. The install grants neither; manifests/overlays/propagate-secrets and
# propagate-rbac add the rights and the kinds (README "Propagating Secrets and RBAC objects").
SECRET_RESOURCES = ("secrets",)
RBAC_RESOURCES = (
    "roles.rbac.authorization.k8s.io",
    "rolebindings.rbac.authorization.k8s.io",
    "clusterroles.rbac.authorization.k8s.io",
    "clusterrolebindings.rbac.authorization.k8s.io",
)
OPT_IN_RESOURCES = ("pods", *SECRET_RESOURCES, *RBAC_RESOURCES)
DEFAULT_RESOURCES = tuple(name for name in KNOWN_RESOURCES if name not in OPT_IN_RESOURCES)


def permanent_id_label(policy_kind: str) -> str:
    """The label a claimed template (and its binding) carries with the claiming policy's id."""
    return keys.PP_PERMANENT_ID_LABEL if policy_kind == PP else keys.CPP_PERMANENT_ID_LABEL


def claim_label_value(obj: Mapping[str, Any], policy_kind: str) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(permanent_id_label(policy_kind), ""))


def claiming_policy_key(claim: Claim) -> str:
    """The cache key of the policy a template's claim names."""
    return f"{claim.namespace}/{claim.name}" if claim.kind == PP else claim.name


def template_qkey(resource: TemplateResource, key: str) -> QueueKey:
    """A template's key names its resource (``plural.group``), not its kind; a policy's and a
    binding's key name their kind (``QueueKey.of(kind, key)``)."""
    return QueueKey.of(resource.name, key)


def works_served(discovery: Mapping[str, Any]) -> bool:
    """Whether an APIResourceList (``GET /apis/work.karmada.io/v1alpha1``) lists Karmada's Works."""
    return any(r.get("name") == "works" for r in discovery.get("resources") or ())


def policy_path(kind: str, key: str) -> str:
    base = f"/apis/{POLICY_GROUP}/{POLICY_VERSION}"
    if kind == PP:
        namespace, name = key.split("/", 1)
        return f"{base}/namespaces/{namespace}/propagationpolicies/{name}"
    return f"{base}/clusterpropagationpolicies/{key}"


def override_policy_path(policy: PropagationPolicy | ClusterPropagationPolicy, name: str) -> str:
    """The (Cluster)OverridePolicy ``name`` a policy's ``dependentOverrides`` waits for."""
    if isinstance(policy, PropagationPolicy):
        return (
            f"/apis/{POLICY_GROUP}/{POLICY_VERSION}/namespaces/{policy.metadata.namespace}"
            f"/overridepolicies/{name}"
        )
    return f"/apis/{POLICY_GROUP}/{POLICY_VERSION}/clusteroverridepolicies/{name}"


def priority_class_path(name: str) -> str:
    return f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}"
