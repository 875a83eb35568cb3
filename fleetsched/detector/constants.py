"""Well-known label, annotation and finalizer keys the detector reads and writes (Karmada's
pkg/apis/policy/v1alpha1 and work/v1alpha2 well-known names)."""

from __future__ import annotations

PP_PERMANENT_ID_LABEL = "propagationpolicy.karmada.io/permanent-id"
CPP_PERMANENT_ID_LABEL = "clusterpropagationpolicy.karmada.io/permanent-id"
PP_NAMESPACE_ANNOTATION = "propagationpolicy.karmada.io/namespace"
PP_NAME_ANNOTATION = "propagationpolicy.karmada.io/name"
CPP_NAME_ANNOTATION = "clusterpropagationpolicy.karmada.io/name"
CLAIMED_BY_LABEL = "resourcetemplate.karmada.io/claimed-by"

BINDING_FINALIZER = "karmada.io/binding-controller"
CLUSTER_BINDING_FINALIZER = "karmada.io/cluster-resource-binding-controller"

DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Objects in these namespaces are never propagated; ``kube-.*`` is the default of
# --skipped-propagating-namespaces.
RESERVED_NAMESPACES = frozenset({"karmada-system", "karmada-cluster"})
RESERVED_NAMESPACE_PREFIX = "karmada-es-"
DEFAULT_SKIPPED_NAMESPACE_PATTERNS = ("kube-.*",)
SKIPPED_OBJECT = ("kube-system", "ConfigMap", "extension-apiserver-authentication")

# API groups whose resources are never templates.
SKIPPED_API_GROUPS = frozenset(
    {
        "cluster.karmada.io",
        "policy.karmada.io",
        "work.karmada.io",
        "config.karmada.io",
        "networking.karmada.io",
        "autoscaling.karmada.io",
        "remedy.karmada.io",
        "apps.karmada.io",
        "events.k8s.io",
        "coordination.k8s.io",
    }
)
