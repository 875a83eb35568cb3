"""Validation and defaulting rules for (Cluster)PropagationPolicy and the bindings (karmada-webhook).

Pure functions over decoded objects (see ``schema``): no I/O, no clock, no randomness — the
permanent id is passed in. Each validation rule returns ``FieldError`` values; the order of
evaluation is the order in which Karmada's validating webhook runs its checks, which decides the
order inside Karmada's ``[...]`` message. Rules read the literal fields of the object as received:
absent is absent, not the CRD default (with one exception: S24's tolerationSeconds, below).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from fleetsched.webhook import gojson, schema
from fleetsched.webhook.fielderrors import (
    FieldError,
    aggregate,
    invalid,
    label_key_messages,
    not_supported,
    render,
)

__all__ = [
    "CLUSTER_PROPAGATION_POLICY",
    "PROPAGATION_POLICY",
    "PolicyKind",
    "mutate_binding",
    "mutate_policy",
    "validate_binding",
    "validate_policy",
    "validate_propagation_spec",
]


@dataclass(frozen=True, slots=True)
class PolicyKind:
    kind: str
    type: schema.Struct
    permanent_id_label: str
    finalizer: str
    namespaced: bool


PROPAGATION_POLICY = PolicyKind(
    kind="PropagationPolicy",
    type=schema.PROPAGATION_POLICY,
    permanent_id_label="propagationpolicy.karmada.io/permanent-id",
    finalizer="karmada.io/propagation-policy-controller",
    namespaced=True,
)
CLUSTER_PROPAGATION_POLICY = PolicyKind(
    kind="ClusterPropagationPolicy",
    type=schema.CLUSTER_PROPAGATION_POLICY,
    permanent_id_label="clusterpropagationpolicy.karmada.io/permanent-id",
    finalizer="karmada.io/cluster-propagation-policy-controller",
    namespaced=False,
)

SERVICE_IMPORT_API_VERSION = "multicluster.x-k8s.io/v1alpha1"
SERVICE_IMPORT_KIND = "ServiceImport"
DEFAULT_GRACE_PERIOD_SECONDS = 600
# S24 reads tolerationSeconds as if the CRD default had been applied (300), as Karmada does.
CRD_DEFAULT_TOLERATION_SECONDS = 300
SUPPORTED_FIELD_SELECTOR_KEYS = ("provider", "region", "zone")
SUPPORTED_FIELD_SELECTOR_OPERATORS = ("In", "NotIn")
REJECTED_TOLERATION_OPERATORS = ("Lt", "Gt")
SUPPORTED_TOLERATION_OPERATORS = ("", "Exists", "Equal")


# --- validation: metadata rules (V1-V3) ----------------------------------------------------

def _labels(obj: dict[str, Any]) -> dict[str, str]:
    return obj.get("metadata", {}).get("labels") or {}


def _metadata_denial(kind: PolicyKind, *, operation: str, obj: dict[str, Any],
                     old: dict[str, Any] | None) -> str | None:
    if operation == "UPDATE" and old is not None:
        if obj.get("spec", {}).get("schedulerName", "") != old.get("spec", {}).get("schedulerName", ""):
            return "the schedulerName should not be updated"
        if _labels(obj).get(kind.permanent_id_label, "") != _labels(old).get(kind.permanent_id_label, ""):
            return (f"label {kind.permanent_id_label} is immutable, "
                    "it can only be set by the system during creation")
    if kind.permanent_id_label not in _labels(obj):
        return (f"label {kind.permanent_id_label} is required, "
                "it should be set by the mutating admission webhook during creation")
    return None


def validate_policy(kind: PolicyKind, *, operation: str, obj: dict[str, Any], old: dict[str, Any] | None,
                    request_namespace: str) -> str | None:
    """The denial message for a decoded policy, or ``None`` when it is allowed."""
    denial = _metadata_denial(kind, operation=operation, obj=obj, old=old)
    if denial is not None:
        return denial
    errors = validate_propagation_spec(obj.get("spec", {}), namespaced=kind.namespaced,
                                       request_namespace=request_namespace)
    return aggregate(errors) if errors else None


# --- validation: spec rules (S1-S32) -------------------------------------------------------

def validate_propagation_spec(spec: dict[str, Any], *, namespaced: bool,
                              request_namespace: str = "") -> list[FieldError]:
    errors: list[FieldError] = []
    errors += _placement_errors(spec.get("placement", {}), "spec.placement")
    failover = spec.get("failover")
    if failover is not None and failover.get("application") is not None and not spec.get("propagateDeps"):
        errors.append(invalid("spec.propagateDeps", "false",
                              "application failover is set, propagateDeps must be true"))
    if failover is not None:
        errors += _failover_errors(failover, "spec.failover")
    selectors = spec.get("resourceSelectors") or []
    if namespaced:
        for i, selector in enumerate(selectors):
            namespace = selector.get("namespace", "")
            if namespace != request_namespace:
                errors.append(invalid(f"spec.resourceSelectors[{i}].namespace", render(namespace),
                                      "namespace of resource selector must be the same as the "
                                      "namespace of the policy"))
    if spec.get("preemption", "") == "Always":
        for i, selector in enumerate(selectors):
            name = selector.get("name", "")
            if not name:
                errors.append(invalid(f"spec.resourceSelectors[{i}].name", render(name),
                                      "name cannot be empty if preemption is Always, the empty name may "
                                      "cause unexpected resources preemption"))
    suspension = spec.get("suspension")
    if suspension is not None and suspension.get("dispatching") is True:
        on_clusters = suspension.get("dispatchingOnClusters")
        if on_clusters is not None and on_clusters.get("clusterNames"):
            # The repeated "suspension" in the path is Karmada's (validateSuspension).
            errors.append(invalid("spec.suspension.suspension", render(suspension, schema.SUSPENSION),
                                  "suspension dispatching cannot co-exist with "
                                  "dispatchingOnClusters.clusterNames"))
    return errors


def _overflow_allowed(placement: dict[str, Any]) -> bool:
    strategy = placement.get("replicaScheduling")
    if strategy is None or strategy.get("replicaSchedulingType", "") != "Divided":
        return False
    preference = strategy.get("replicaDivisionPreference", "")
    if preference == "Aggregated":
        return True
    if preference == "Weighted":
        weights = strategy.get("weightPreference")
        return weights is not None and bool(weights.get("dynamicWeight"))
    return False


def _field_selector_error(affinity: dict[str, Any], path: str) -> list[FieldError]:
    selector = affinity.get("fieldSelector")
    if selector is None:
        return []
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key", "")
        if key not in SUPPORTED_FIELD_SELECTOR_KEYS:
            return [invalid(path, render(selector, schema.FIELD_SELECTOR),
                            f"unsupported key {render(key)}, must be provider, region, or zone")]
        operator = expression.get("operator", "")
        if operator not in SUPPORTED_FIELD_SELECTOR_OPERATORS:
            return [invalid(path, render(selector, schema.FIELD_SELECTOR),
                            f"unsupported operator {render(operator)}, must be In or NotIn")]
    return []


def _label_key_errors(path: str, value: str) -> list[FieldError]:
    return [invalid(path, render(value), message) for message in label_key_messages(value)]


def _inline_affinity_empty(term: dict[str, Any]) -> bool:
    return (term.get("labelSelector") is None and term.get("fieldSelector") is None
            and not term.get("clusterNames") and not term.get("exclude"))


def _placement_errors(placement: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    affinity = placement.get("clusterAffinity")
    terms = placement.get("clusterAffinities")
    if affinity is not None and terms is not None:
        errors.append(invalid(path, render(placement, schema.PLACEMENT),
                              "clusterAffinities cannot co-exist with clusterAffinity"))
    overflow_type = schema.Slice(schema.OVERFLOW_CLUSTER_AFFINITY)
    terms = terms or []
    if not _overflow_allowed(placement):
        for i, term in enumerate(terms):
            if term.get("overflowAffinities") is not None:
                errors.append(invalid(f"{path}.clusterAffinities[{i}].overflowAffinities",
                                      render(term["overflowAffinities"], overflow_type),
                                      "overflowAffinities can only be used together with dynamic weight "
                                      "or aggregated scheduling"))
    if affinity is not None:
        errors += _field_selector_error(affinity, f"{path}.clusterAffinity.fieldSelector")

    terms_type = schema.Slice(schema.CLUSTER_AFFINITY_TERM)
    duplicate_name: list[FieldError] = []  # built once: it quotes the whole list
    seen_names: set[str] = set()
    for i, term in enumerate(terms):
        term_path = f"{path}.clusterAffinities[{i}]"
        name = term.get("affinityName", "")
        # The index path without ".affinityName" is Karmada's (ValidateClusterAffinities in
        # pkg/util/validation/validation.go); overflow names below do carry the field name.
        errors += _label_key_errors(term_path, name)
        if name in seen_names:
            if not duplicate_name:
                duplicate_name.append(invalid(f"{path}.clusterAffinities",
                                              render(placement["clusterAffinities"], terms_type),
                                              "each affinity term in a policy must have a unique name"))
            errors.append(duplicate_name[0])
        seen_names.add(name)
        errors += _field_selector_error(term, f"{term_path}.fieldSelector")
        overflows = term.get("overflowAffinities")
        if overflows is None:
            continue
        if _inline_affinity_empty(term):
            errors.append(invalid(f"{term_path}.overflowAffinities", render(overflows, overflow_type),
                                  "overflowAffinities can only be used together with the inline "
                                  "ClusterAffinity"))
        tier_names = {name}
        for j, overflow in enumerate(overflows):
            overflow_path = f"{term_path}.overflowAffinities[{j}]"
            overflow_name = overflow.get("affinityName", "")
            errors += _label_key_errors(f"{overflow_path}.affinityName", overflow_name)
            if overflow_name in tier_names:
                errors.append(invalid(f"{overflow_path}.affinityName", render(overflow_name),
                                      "overflow affinity name must be unique and must not duplicate the "
                                      "primary group's affinityName"))
            tier_names.add(overflow_name)
            errors += _field_selector_error(overflow, f"{overflow_path}.fieldSelector")

    errors += _spread_constraint_errors(placement.get("spreadConstraints") or [], f"{path}.spreadConstraints")
    errors += _workload_affinity_errors(placement.get("workloadAffinity"), f"{path}.workloadAffinity")
    for i, toleration in enumerate(placement.get("clusterTolerations") or []):
        operator = toleration.get("operator", "")
        if operator in REJECTED_TOLERATION_OPERATORS:
            errors.append(not_supported(f"{path}.clusterTolerations[{i}].operator", operator,
                                        SUPPORTED_TOLERATION_OPERATORS))
    return errors


def _spread_constraint_errors(constraints: list[dict[str, Any]], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    rendered: list[str] = []

    def whole() -> str:  # the whole list is quoted by two rules; render it at most once, only if needed
        if not rendered:
            rendered.append(render(constraints, schema.Slice(schema.SPREAD_CONSTRAINT)))
        return rendered[0]

    reported: dict[str, bool] = {}
    for i, constraint in enumerate(constraints):
        item_path = f"{path}[{i}]"
        value = render(constraint, schema.SPREAD_CONSTRAINT)
        by_field = constraint.get("spreadByField", "")
        by_label = constraint.get("spreadByLabel", "")
        min_groups = constraint.get("minGroups", 0)
        max_groups = constraint.get("maxGroups", 0)
        if by_field and by_label:
            errors.append(invalid(item_path, value, "spreadByLabel should not co-exist with spreadByField"))
        if min_groups < 0:
            errors.append(invalid(item_path, value, "minGroups lower than 0 is not allowed"))
        if max_groups < 0:
            errors.append(invalid(item_path, value, "maxGroups lower than 0 is not allowed"))
        if max_groups > 0 and max_groups < min_groups:
            errors.append(invalid(item_path, value, "maxGroups lower than minGroups is not allowed"))
        if by_field:
            if by_field in reported:
                if not reported[by_field]:
                    errors.append(invalid(path, whole(),
                                          f"multiple {by_field} spread constraints are not allowed"))
                    reported[by_field] = True
            else:
                reported[by_field] = False
    if reported and "cluster" not in reported:
        errors.append(invalid(path, whole(), "the cluster spread constraint must be enabled in one of the "
                                           "constraints in case of SpreadByField is enabled"))
    return errors


def _workload_affinity_errors(workload: dict[str, Any] | None, path: str) -> list[FieldError]:
    if workload is None:
        return []
    errors: list[FieldError] = []
    affinity = workload.get("affinity")
    anti = workload.get("antiAffinity")
    if affinity is not None:
        errors += _label_key_errors(f"{path}.affinity.groupByLabelKey", affinity.get("groupByLabelKey", ""))
    if anti is not None:
        errors += _label_key_errors(f"{path}.antiAffinity.groupByLabelKey", anti.get("groupByLabelKey", ""))
    if (affinity is not None and anti is not None
            and affinity.get("groupByLabelKey", "") == anti.get("groupByLabelKey", "")):
        errors.append(invalid(path, render(workload, schema.WORKLOAD_AFFINITY),
                              "affinity and antiAffinity must not use the same groupByLabelKey"))
    return errors


def _state_preservation_errors(behavior: dict[str, Any], path: str) -> list[FieldError]:
    preservation = behavior.get("statePreservation")
    if preservation is None:
        return []
    errors: list[FieldError] = []
    for k, rule in enumerate(preservation.get("rules") or []):
        errors += _label_key_errors(f"{path}.statePreservation.rules[{k}].aliasLabelName",
                                    rule.get("aliasLabelName", ""))
    return errors


def _failover_errors(failover: dict[str, Any], path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    application = failover.get("application")
    if application is not None:
        app_path = f"{path}.application"
        toleration = application.get("decisionConditions", {}).get("tolerationSeconds",
                                                                    CRD_DEFAULT_TOLERATION_SECONDS)
        if toleration < 0:
            errors.append(invalid(f"{app_path}.decisionConditions.tolerationSeconds", render(toleration),
                                  "must be greater than or equal to 0"))
        gracefully = application.get("purgeMode", "") == "Gracefully"
        grace = application.get("gracePeriodSeconds")
        grace_path = f"{app_path}.gracePeriodSeconds"
        if not gracefully and grace is not None:
            errors.append(invalid(grace_path, render(grace),
                                  "only takes effect when purgeMode is gracefully"))
        if gracefully and grace is None:
            errors.append(invalid(grace_path, "null", "should not be empty when purgeMode is gracefully"))
        if grace is not None and grace <= 0:
            errors.append(invalid(grace_path, render(grace), "must be greater than 0"))
        errors += _state_preservation_errors(application, app_path)
    cluster = failover.get("cluster")
    if cluster is not None:
        errors += _state_preservation_errors(cluster, f"{path}.cluster")
    return errors


# --- mutation (M1-M8) ----------------------------------------------------------------------

def mutate_policy(kind: PolicyKind, *, operation: str, obj: dict[str, Any], request_namespace: str,
                  permanent_id: str) -> dict[str, Any]:
    """The decoded policy after Karmada's defaults; the input is not changed."""
    policy = copy.deepcopy(obj)
    spec = policy.setdefault("spec", {})
    selectors = spec.get("resourceSelectors") or []
    if kind.namespaced:
        for selector in selectors:
            if not selector.get("namespace"):
                selector["namespace"] = request_namespace
    placement = spec.setdefault("placement", {})
    for constraint in placement.get("spreadConstraints") or []:
        if not constraint.get("spreadByLabel") and not constraint.get("spreadByField"):
            constraint["spreadByField"] = "cluster"
        if constraint.get("minGroups", 0) == 0:
            constraint["minGroups"] = 1
    if any(s.get("apiVersion") == SERVICE_IMPORT_API_VERSION and s.get("kind") == SERVICE_IMPORT_KIND
           for s in selectors):
        spec["propagateDeps"] = True
    strategy = placement.get("replicaScheduling")
    if (strategy is not None and strategy.get("replicaSchedulingType") == "Divided"
            and not strategy.get("replicaDivisionPreference")):
        strategy["replicaDivisionPreference"] = "Weighted"
    application = (spec.get("failover") or {}).get("application")
    if (application is not None and application.get("purgeMode") == "Gracefully"
            and application.get("gracePeriodSeconds") is None):
        application["gracePeriodSeconds"] = DEFAULT_GRACE_PERIOD_SECONDS
    if operation == "CREATE":
        metadata = policy.setdefault("metadata", {})
        metadata.setdefault("labels", {})[kind.permanent_id_label] = permanent_id
        finalizers = metadata.setdefault("finalizers", [])
        if kind.finalizer not in finalizers:
            finalizers.append(kind.finalizer)
    return policy


# --- bindings (M9, M10, R1, R3, R4) --------------------------------------------------------

RESOURCE_BINDING_PERMANENT_ID = "resourcebinding.karmada.io/permanent-id"
CLUSTER_RESOURCE_BINDING_PERMANENT_ID = "clusterresourcebinding.karmada.io/permanent-id"
DEPENDENCIES_ANNOTATION = "resourcebinding.karmada.io/dependencies"


def mutate_binding(*, label: str, operation: str, obj: dict[str, Any], permanent_id: str) -> dict[str, Any]:
    binding = copy.deepcopy(obj)
    if operation == "CREATE":
        labels = binding.setdefault("metadata", {}).setdefault("labels", {})
        if not labels.get(label):
            labels[label] = permanent_id
    return binding


def validate_binding(obj: dict[str, Any], *, multiple_pod_templates: bool = False) -> str | None:
    """R1, and R3/R4 when the ``MultiplePodTemplatesScheduling`` gate is on (R2, the quota
    check, needs the control plane and is not done here)."""
    annotations = obj.get("metadata", {}).get("annotations") or {}
    if DEPENDENCIES_ANNOTATION in annotations:
        value = annotations[DEPENDENCIES_ANNOTATION]
        if not _valid_dependencies(value):
            return str(invalid(f"metadata.annotations.{DEPENDENCIES_ANNOTATION}", render(value),
                               "annotation value must be a valid JSON"))
    if multiple_pod_templates:
        errors: list[FieldError] = []
        names: set[str] = set()
        for i, component in enumerate(obj.get("spec", {}).get("components") or []):
            name = component.get("name", "")
            if not name:
                errors.append(invalid(f"spec.components[{i}].name", render(name),
                                      "component names must be non-empty"))
            elif name in names:
                errors.append(invalid(f"spec.components[{i}].name", render(name),
                                      "component names must be unique"))
            names.add(name)
        if errors:
            return aggregate(errors)
    return None


def _valid_dependencies(value: str) -> bool:
    try:
        parsed = gojson.loads(value)
        schema.decode({"deps": parsed}, _DEPENDENCIES_HOLDER)
    except (ValueError, RecursionError, schema.DecodeError):
        return False
    return True


_DEPENDENCIES_HOLDER = schema.Struct("holder", "holder", (schema.Field("deps", schema.DEPENDENCIES),))
