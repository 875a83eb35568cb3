"""The fields Kubernetes' core API declares for the objects fleetsched reads as member inventory.

Nodes, Pods and ResourceQuotas are what a member cluster's estimator counts (``fleetsched estimate``,
``simulate`` with Nodes): a field their API type does not declare (``spec.taint:`` for
``spec.taints:``) would be dropped by the API server's pruning, or refused with
``fieldValidation=Strict``; read offline, it would be silently ignored and the answer would be for
another cluster. The tables below are facts of the Kubernetes API (``k8s.io/api/core/v1``, the JSON
names), declared per object path, down to the depth checked: a path not in a table is not checked
(maps of resource names, label maps, and the objects below the listed ones are free here).

A path is a tuple of field names, ``"[]"`` standing for every item of a list:
``("spec", "taints", "[]")`` is each of a Node's taints. ``metadata`` is ObjectMeta's
(``strict.OBJECT_META_FIELDS``), checked for every kind.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CORE_FIELDS", "ITEM", "FieldTable"]

ITEM = "[]"
FieldTable = Mapping[tuple[str, ...], frozenset[str]]

_ENVELOPE = ("apiVersion", "kind", "metadata")

OWNER_REFERENCE = frozenset({"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"})

NODE_SPEC = frozenset({
    "podCIDR", "podCIDRs", "providerID", "unschedulable", "taints", "configSource", "externalID",
    "podPreemptionPolicy",
})
TAINT = frozenset({"key", "value", "effect", "timeAdded"})
NODE_STATUS = frozenset({
    "capacity", "allocatable", "phase", "conditions", "addresses", "daemonEndpoints", "nodeInfo", "images",
    "volumesInUse", "volumesAttached", "config", "runtimeHandlers", "features", "declaredFeatures",
})
NODE_CONDITION = frozenset({"type", "status", "lastHeartbeatTime", "lastTransitionTime", "reason", "message"})

POD_SPEC = frozenset({
    "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName", "hostNetwork",
    "hostPID", "hostIPC", "shareProcessNamespace", "securityContext", "imagePullSecrets", "hostname",
    "subdomain", "affinity", "schedulerName", "tolerations", "hostAliases", "priorityClassName", "priority",
    "dnsConfig", "readinessGates", "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
    "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates", "resourceClaims",
    "resources", "hostnameOverride", "schedulingGroup", "evictionResponders",
})
CONTAINER = frozenset({
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources", "resizePolicy",
    "restartPolicy", "restartPolicyRules", "volumeMounts", "volumeDevices", "livenessProbe", "readinessProbe",
    "startupProbe", "lifecycle", "terminationMessagePath", "terminationMessagePolicy", "imagePullPolicy",
    "securityContext", "stdin", "stdinOnce", "tty",
})
EPHEMERAL_CONTAINER = CONTAINER | {"targetContainerName"}
RESOURCE_REQUIREMENTS = frozenset({"limits", "requests", "claims"})
TOLERATION = frozenset({"key", "operator", "value", "effect", "tolerationSeconds"})
AFFINITY = frozenset({"nodeAffinity", "podAffinity", "podAntiAffinity"})
NODE_AFFINITY = frozenset({"requiredDuringSchedulingIgnoredDuringExecution",
                           "preferredDuringSchedulingIgnoredDuringExecution"})
POD_AFFINITY = NODE_AFFINITY  # PodAffinity and PodAntiAffinity: the same two fields
NODE_SELECTOR = frozenset({"nodeSelectorTerms"})
NODE_SELECTOR_TERM = frozenset({"matchExpressions", "matchFields"})
NODE_SELECTOR_REQUIREMENT = frozenset({"key", "operator", "values"})
PREFERRED_SCHEDULING_TERM = frozenset({"weight", "preference"})
POD_STATUS = frozenset({
    "observedGeneration", "phase", "conditions", "message", "reason", "nominatedNodeName", "hostIP",
    "hostIPs", "podIP", "podIPs", "startTime", "initContainerStatuses", "containerStatuses",
    "ephemeralContainerStatuses", "qosClass", "resize", "resourceClaimStatuses",
    "extendedResourceClaimStatus", "allocatedResources", "resources", "nodeAllocatableResourceClaimStatuses",
    "volumeHealth",
})
POD_CONDITION = frozenset({"type", "observedGeneration", "status", "lastProbeTime", "lastTransitionTime",
                           "reason", "message"})

RESOURCE_QUOTA_SPEC = frozenset({"hard", "scopes", "scopeSelector"})
RESOURCE_QUOTA_STATUS = frozenset({"hard", "used"})
SCOPE_SELECTOR = frozenset({"matchExpressions"})
SCOPED_RESOURCE_SELECTOR_REQUIREMENT = frozenset({"scopeName", "operator", "values"})


def _node_selector_term(at: tuple[str, ...]) -> dict[tuple[str, ...], frozenset[str]]:
    return {
        at: NODE_SELECTOR_TERM,
        (*at, "matchExpressions", ITEM): NODE_SELECTOR_REQUIREMENT,
        (*at, "matchFields", ITEM): NODE_SELECTOR_REQUIREMENT,
    }


def _pod() -> dict[tuple[str, ...], frozenset[str]]:
    required = ("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    preferred = ("spec", "affinity", "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution", ITEM)
    table: dict[tuple[str, ...], frozenset[str]] = {
        (): frozenset({*_ENVELOPE, "spec", "status"}),
        ("metadata", "ownerReferences", ITEM): OWNER_REFERENCE,
        ("spec",): POD_SPEC,
        ("spec", "resources"): RESOURCE_REQUIREMENTS,
        ("spec", "tolerations", ITEM): TOLERATION,
        ("spec", "affinity"): AFFINITY,
        ("spec", "affinity", "nodeAffinity"): NODE_AFFINITY,
        ("spec", "affinity", "podAffinity"): POD_AFFINITY,
        ("spec", "affinity", "podAntiAffinity"): POD_AFFINITY,
        required: NODE_SELECTOR,
        preferred: PREFERRED_SCHEDULING_TERM,
        **_node_selector_term((*required, "nodeSelectorTerms", ITEM)),
        **_node_selector_term((*preferred, "preference")),
        ("status",): POD_STATUS,
        ("status", "conditions", ITEM): POD_CONDITION,
    }
    for field, fields in (("containers", CONTAINER), ("initContainers", CONTAINER),
                          ("ephemeralContainers", EPHEMERAL_CONTAINER)):
        table[("spec", field, ITEM)] = fields
        table[("spec", field, ITEM, "resources")] = RESOURCE_REQUIREMENTS
    return table


# (apiVersion, kind) -> the known fields at each checked path.
CORE_FIELDS: Mapping[tuple[str, str], FieldTable] = {
    ("v1", "Node"): {
        (): frozenset({*_ENVELOPE, "spec", "status"}),
        ("metadata", "ownerReferences", ITEM): OWNER_REFERENCE,
        ("spec",): NODE_SPEC,
        ("spec", "taints", ITEM): TAINT,
        ("status",): NODE_STATUS,
        ("status", "conditions", ITEM): NODE_CONDITION,
    },
    ("v1", "Pod"): _pod(),
    ("v1", "ResourceQuota"): {
        (): frozenset({*_ENVELOPE, "spec", "status"}),
        ("metadata", "ownerReferences", ITEM): OWNER_REFERENCE,
        ("spec",): RESOURCE_QUOTA_SPEC,
        ("spec", "scopeSelector"): SCOPE_SELECTOR,
        ("spec", "scopeSelector", "matchExpressions", ITEM): SCOPED_RESOURCE_SELECTOR_REQUIREMENT,
        ("status",): RESOURCE_QUOTA_STATUS,
    },
}
