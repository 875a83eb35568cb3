"""Go field tables for the objects the webhook decodes, and the decoding itself.

Karmada decodes an admission object into its Go types before any rule runs, and re-encodes the
mutated object to compute its patch. Three Go behaviours follow from that and are reproduced
here from one table per type:

* a JSON value of the wrong type is a decode error (``json: cannot unmarshal ...``) and the
  request is answered with code 400; ``null`` is the zero value; unknown keys are ignored and
  keys match case-sensitively (the apimachinery decoder);
* values quoted in messages are printed as ``json.Marshal`` prints the Go value: fields in
  declaration order, ``omitempty`` dropping empty strings/numbers/lists/maps, pointers dropped
  only when nil, non-pointer structs always printed;
* the mutating patch is the difference between the request object and that re-encoding.

A decoded value is plain data: a struct is a dict holding only keys whose JSON value was
present and not null; lists and maps keep the empty/nil distinction (``[]`` is present, absent
is nil). Nothing here knows a validation rule.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

from fleetsched.webhook.gojson import GoFloat

__all__ = [
    "CLUSTER_PROPAGATION_POLICY",
    "CLUSTER_RESOURCE_BINDING",
    "PLACEMENT",
    "PROPAGATION_POLICY",
    "RESOURCE_BINDING",
    "DecodeError",
    "Field",
    "Map",
    "Raw",
    "Scalar",
    "Slice",
    "Struct",
    "decode",
    "json_kind",
    "to_go",
]


@dataclass(frozen=True, slots=True)
class Scalar:
    kind: str  # "string" | "bool" | "int"
    go_name: str
    bits: int = 64


@dataclass(frozen=True, slots=True)
class Slice:
    elem: Any

    @property
    def go_name(self) -> str:
        return "[]" + self.elem.go_name


@dataclass(frozen=True, slots=True)
class Map:
    value: Any

    @property
    def go_name(self) -> str:
        return "map[string]" + self.value.go_name


@dataclass(frozen=True, slots=True)
class Raw:
    """Any JSON (RawExtension, FieldsV1): not checked, kept as sent."""

    go_name: str = "runtime.RawExtension"


@dataclass(frozen=True, slots=True)
class Time:
    """metav1.Time: an RFC 3339 string or null."""

    go_name: str = "v1.Time"


@dataclass(frozen=True, slots=True)
class Field:
    json: str
    type: Any
    omitempty: bool = True
    pointer: bool = False
    omitzero: bool = False


@dataclass(frozen=True)
class Struct:
    name: str
    go_name: str
    fields: tuple[Field, ...]
    by_json: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_json", {f.json: f for f in self.fields})


STRING = Scalar("string", "string")
BOOL = Scalar("bool", "bool")
INT = Scalar("int", "int", 64)
INT32 = Scalar("int", "int32", 32)
INT64 = Scalar("int", "int64", 64)


def _s(go_name: str) -> Scalar:
    return Scalar("string", go_name)


# --- apimachinery / core types -----------------------------------------------------------

LABEL_SELECTOR_REQUIREMENT = Struct("LabelSelectorRequirement", "v1.LabelSelectorRequirement", (
    Field("key", STRING, omitempty=False),
    Field("operator", _s("v1.LabelSelectorOperator"), omitempty=False),
    Field("values", Slice(STRING)),
))
LABEL_SELECTOR = Struct("LabelSelector", "v1.LabelSelector", (
    Field("matchLabels", Map(STRING)),
    Field("matchExpressions", Slice(LABEL_SELECTOR_REQUIREMENT)),
))
NODE_SELECTOR_REQUIREMENT = Struct("NodeSelectorRequirement", "v1.NodeSelectorRequirement", (
    Field("key", STRING, omitempty=False),
    Field("operator", _s("v1.NodeSelectorOperator"), omitempty=False),
    Field("values", Slice(STRING)),
))
TOLERATION = Struct("Toleration", "v1.Toleration", (
    Field("key", STRING),
    Field("operator", _s("v1.TolerationOperator")),
    Field("value", STRING),
    Field("effect", _s("v1.TaintEffect")),
    Field("tolerationSeconds", INT64, pointer=True),
))
OWNER_REFERENCE = Struct("OwnerReference", "v1.OwnerReference", (
    Field("apiVersion", STRING, omitempty=False),
    Field("kind", STRING, omitempty=False),
    Field("name", STRING, omitempty=False),
    Field("uid", _s("types.UID"), omitempty=False),
    Field("controller", BOOL, pointer=True),
    Field("blockOwnerDeletion", BOOL, pointer=True),
))
MANAGED_FIELDS_ENTRY = Struct("ManagedFieldsEntry", "v1.ManagedFieldsEntry", (
    Field("manager", STRING),
    Field("operation", _s("v1.ManagedFieldsOperationType")),
    Field("apiVersion", STRING),
    Field("time", Time(), pointer=True),
    Field("fieldsType", STRING),
    Field("fieldsV1", Raw("v1.FieldsV1"), pointer=True),
    Field("subresource", STRING),
))
OBJECT_META = Struct("ObjectMeta", "v1.ObjectMeta", (
    Field("name", STRING),
    Field("generateName", STRING),
    Field("namespace", STRING),
    Field("selfLink", STRING),
    Field("uid", _s("types.UID")),
    Field("resourceVersion", STRING),
    Field("generation", INT64),
    Field("creationTimestamp", Time(), omitzero=True),
    Field("deletionTimestamp", Time(), pointer=True),
    Field("deletionGracePeriodSeconds", INT64, pointer=True),
    Field("labels", Map(STRING)),
    Field("annotations", Map(STRING)),
    Field("ownerReferences", Slice(OWNER_REFERENCE)),
    Field("finalizers", Slice(STRING)),
    Field("managedFields", Slice(MANAGED_FIELDS_ENTRY)),
))

# --- policy.karmada.io/v1alpha1 ----------------------------------------------------------

FIELD_SELECTOR = Struct("FieldSelector", "v1alpha1.FieldSelector", (
    Field("matchExpressions", Slice(NODE_SELECTOR_REQUIREMENT)),
))
_AFFINITY_FIELDS = (
    Field("labelSelector", LABEL_SELECTOR, pointer=True),
    Field("fieldSelector", FIELD_SELECTOR, pointer=True),
    Field("clusterNames", Slice(STRING)),
    Field("exclude", Slice(STRING)),
)
CLUSTER_AFFINITY = Struct("ClusterAffinity", "v1alpha1.ClusterAffinity", _AFFINITY_FIELDS)
OVERFLOW_CLUSTER_AFFINITY = Struct("OverflowClusterAffinity", "v1alpha1.OverflowClusterAffinity", (
    Field("affinityName", STRING, omitempty=False),
    *_AFFINITY_FIELDS,
))
CLUSTER_AFFINITY_TERM = Struct("ClusterAffinityTerm", "v1alpha1.ClusterAffinityTerm", (
    Field("affinityName", STRING, omitempty=False),
    *_AFFINITY_FIELDS,
    Field("overflowAffinities", Slice(OVERFLOW_CLUSTER_AFFINITY)),
))
SPREAD_CONSTRAINT = Struct("SpreadConstraint", "v1alpha1.SpreadConstraint", (
    Field("spreadByField", _s("v1alpha1.SpreadFieldValue")),
    Field("spreadByLabel", STRING),
    Field("maxGroups", INT),
    Field("minGroups", INT),
))
STATIC_CLUSTER_WEIGHT = Struct("StaticClusterWeight", "v1alpha1.StaticClusterWeight", (
    Field("targetCluster", CLUSTER_AFFINITY, omitempty=False),
    Field("weight", INT64, omitempty=False),
))
CLUSTER_PREFERENCES = Struct("ClusterPreferences", "v1alpha1.ClusterPreferences", (
    Field("staticWeightList", Slice(STATIC_CLUSTER_WEIGHT)),
    Field("dynamicWeight", _s("v1alpha1.DynamicWeightFactor")),
))
REPLICA_SCHEDULING_STRATEGY = Struct("ReplicaSchedulingStrategy", "v1alpha1.ReplicaSchedulingStrategy", (
    Field("replicaSchedulingType", _s("v1alpha1.ReplicaSchedulingType")),
    Field("replicaDivisionPreference", _s("v1alpha1.ReplicaDivisionPreference")),
    Field("weightPreference", CLUSTER_PREFERENCES, pointer=True),
))
WORKLOAD_AFFINITY_TERM = Struct("WorkloadAffinityTerm", "v1alpha1.WorkloadAffinityTerm", (
    Field("groupByLabelKey", STRING, omitempty=False),
))
WORKLOAD_ANTI_AFFINITY_TERM = Struct("WorkloadAntiAffinityTerm", "v1alpha1.WorkloadAntiAffinityTerm", (
    Field("groupByLabelKey", STRING, omitempty=False),
))
WORKLOAD_AFFINITY = Struct("WorkloadAffinity", "v1alpha1.WorkloadAffinity", (
    Field("affinity", WORKLOAD_AFFINITY_TERM, pointer=True),
    Field("antiAffinity", WORKLOAD_ANTI_AFFINITY_TERM, pointer=True),
))
PLACEMENT = Struct("Placement", "v1alpha1.Placement", (
    Field("clusterAffinity", CLUSTER_AFFINITY, pointer=True),
    Field("clusterAffinities", Slice(CLUSTER_AFFINITY_TERM)),
    Field("clusterTolerations", Slice(TOLERATION)),
    Field("spreadConstraints", Slice(SPREAD_CONSTRAINT)),
    Field("replicaScheduling", REPLICA_SCHEDULING_STRATEGY, pointer=True),
    Field("workloadAffinity", WORKLOAD_AFFINITY, pointer=True),
))
RESOURCE_SELECTOR = Struct("ResourceSelector", "v1alpha1.ResourceSelector", (
    Field("apiVersion", STRING, omitempty=False),
    Field("kind", STRING, omitempty=False),
    Field("namespace", STRING),
    Field("name", STRING),
    Field("labelSelector", LABEL_SELECTOR, pointer=True),
))
STATE_PRESERVATION_RULE = Struct("StatePreservationRule", "v1alpha1.StatePreservationRule", (
    Field("aliasLabelName", STRING, omitempty=False),
    Field("jsonPath", STRING, omitempty=False),
))
STATE_PRESERVATION = Struct("StatePreservation", "v1alpha1.StatePreservation", (
    Field("rules", Slice(STATE_PRESERVATION_RULE), omitempty=False),
))
DECISION_CONDITIONS = Struct("DecisionConditions", "v1alpha1.DecisionConditions", (
    Field("tolerationSeconds", INT32, pointer=True),
))
APPLICATION_FAILOVER = Struct("ApplicationFailoverBehavior", "v1alpha1.ApplicationFailoverBehavior", (
    Field("decisionConditions", DECISION_CONDITIONS, omitempty=False),
    Field("purgeMode", _s("v1alpha1.PurgeMode")),
    Field("gracePeriodSeconds", INT32, pointer=True),
    Field("statePreservation", STATE_PRESERVATION, pointer=True),
))
CLUSTER_FAILOVER = Struct("ClusterFailoverBehavior", "v1alpha1.ClusterFailoverBehavior", (
    Field("purgeMode", _s("v1alpha1.PurgeMode")),
    Field("statePreservation", STATE_PRESERVATION, pointer=True),
))
FAILOVER_BEHAVIOR = Struct("FailoverBehavior", "v1alpha1.FailoverBehavior", (
    Field("application", APPLICATION_FAILOVER, pointer=True),
    Field("cluster", CLUSTER_FAILOVER, pointer=True),
))
SUSPEND_CLUSTERS = Struct("SuspendClusters", "v1alpha1.SuspendClusters", (
    Field("clusterNames", Slice(STRING)),
))
SUSPENSION = Struct("Suspension", "v1alpha1.Suspension", (
    Field("dispatching", BOOL, pointer=True),
    Field("dispatchingOnClusters", SUSPEND_CLUSTERS, pointer=True),
))
SCHEDULE_PRIORITY = Struct("SchedulePriority", "v1alpha1.SchedulePriority", (
    Field("priorityClassSource", _s("v1alpha1.PriorityClassSource")),
    Field("priorityClassName", STRING, omitempty=False),
))
PROPAGATION_SPEC = Struct("PropagationSpec", "v1alpha1.PropagationSpec", (
    Field("resourceSelectors", Slice(RESOURCE_SELECTOR), omitempty=False),
    Field("association", BOOL),
    Field("propagateDeps", BOOL),
    Field("placement", PLACEMENT),
    Field("priority", INT32, pointer=True),
    Field("preemption", _s("v1alpha1.PreemptionBehavior")),
    Field("dependentOverrides", Slice(STRING)),
    Field("schedulerName", STRING),
    Field("failover", FAILOVER_BEHAVIOR, pointer=True),
    Field("conflictResolution", _s("v1alpha1.ConflictResolution")),
    Field("activationPreference", _s("v1alpha1.ActivationPreference")),
    Field("suspension", SUSPENSION, pointer=True),
    Field("preserveResourcesOnDeletion", BOOL, pointer=True),
    Field("schedulePriority", SCHEDULE_PRIORITY, pointer=True),
))


def _object(name: str, go_name: str, *rest: Field) -> Struct:
    return Struct(name, go_name, (
        Field("kind", STRING),
        Field("apiVersion", STRING),
        Field("metadata", OBJECT_META),
        *rest,
    ))


PROPAGATION_POLICY = _object("PropagationPolicy", "v1alpha1.PropagationPolicy",
                             Field("spec", PROPAGATION_SPEC, omitempty=False))
CLUSTER_PROPAGATION_POLICY = _object("ClusterPropagationPolicy", "v1alpha1.ClusterPropagationPolicy",
                                     Field("spec", PROPAGATION_SPEC, omitempty=False))

# --- work.karmada.io/v1alpha2 ------------------------------------------------------------
# Bindings are written by controllers; the webhook only labels them and checks component names,
# so quantities, node selectors, eviction tasks and status are carried as raw JSON.

OBJECT_REFERENCE = Struct("ObjectReference", "v1alpha2.ObjectReference", (
    Field("apiVersion", STRING, omitempty=False),
    Field("kind", STRING, omitempty=False),
    Field("namespace", STRING),
    Field("name", STRING, omitempty=False),
    Field("uid", _s("types.UID")),
    Field("resourceVersion", STRING),
))
NODE_CLAIM = Struct("NodeClaim", "v1alpha2.NodeClaim", (
    Field("hardNodeAffinity", Raw("v1.NodeSelector"), pointer=True),
    Field("nodeSelector", Map(STRING)),
    Field("tolerations", Slice(TOLERATION)),
))
REPLICA_REQUIREMENTS = Struct("ReplicaRequirements", "v1alpha2.ReplicaRequirements", (
    Field("nodeClaim", NODE_CLAIM, pointer=True),
    Field("resourceRequest", Map(Raw("resource.Quantity"))),
    Field("namespace", STRING),
    Field("priorityClassName", STRING),
))
COMPONENT_REPLICA_REQUIREMENTS = Struct("ComponentReplicaRequirements",
                                        "v1alpha2.ComponentReplicaRequirements", (
    Field("nodeClaim", NODE_CLAIM, pointer=True),
    Field("resourceRequest", Map(Raw("resource.Quantity"))),
    Field("priorityClassName", STRING),
))
COMPONENT = Struct("Component", "v1alpha2.Component", (
    Field("name", STRING, omitempty=False),
    Field("replicas", INT32, omitempty=False),
    Field("replicaRequirements", COMPONENT_REPLICA_REQUIREMENTS, pointer=True),
))
TARGET_CLUSTER = Struct("TargetCluster", "v1alpha2.TargetCluster", (
    Field("name", STRING, omitempty=False),
    Field("replicas", INT32),
    Field("components", Slice(Struct("ComponentReplicas", "v1alpha2.ComponentReplicas", (
        Field("name", STRING, omitempty=False),
        Field("replicas", INT32),
    )))),
))
BINDING_SUSPENSION = Struct("Suspension", "v1alpha2.Suspension", (
    *SUSPENSION.fields,
    Field("scheduling", BOOL, pointer=True),
))
BINDING_SPEC = Struct("ResourceBindingSpec", "v1alpha2.ResourceBindingSpec", (
    Field("resource", OBJECT_REFERENCE, omitempty=False),
    Field("propagateDeps", BOOL),
    Field("replicaRequirements", REPLICA_REQUIREMENTS, pointer=True),
    Field("replicas", INT32),
    Field("components", Slice(COMPONENT)),
    Field("clusters", Slice(TARGET_CLUSTER)),
    Field("placement", PLACEMENT, pointer=True),
    Field("gracefulEvictionTasks", Slice(Raw("v1alpha2.GracefulEvictionTask"))),
    Field("requiredBy", Slice(Raw("v1alpha2.BindingSnapshot"))),
    Field("schedulerName", STRING),
    Field("failover", FAILOVER_BEHAVIOR, pointer=True),
    Field("conflictResolution", _s("v1alpha1.ConflictResolution")),
    Field("rescheduleTriggeredAt", Time(), pointer=True),
    Field("suspension", BINDING_SUSPENSION, pointer=True),
    Field("preserveResourcesOnDeletion", BOOL, pointer=True),
    Field("schedulePriority", Struct("SchedulePriority", "v1alpha2.SchedulePriority", (
        Field("priority", INT32),
    )), pointer=True),
    Field("workloadAffinityGroups", Struct("WorkloadAffinityGroups", "v1alpha2.WorkloadAffinityGroups", (
        Field("affinityGroup", STRING),
        Field("antiAffinityGroup", STRING),
    )), pointer=True),
))
RESOURCE_BINDING = _object("ResourceBinding", "v1alpha2.ResourceBinding",
                           Field("spec", BINDING_SPEC, omitempty=False), Field("status", Raw()))
CLUSTER_RESOURCE_BINDING = _object("ClusterResourceBinding", "v1alpha2.ClusterResourceBinding",
                                   Field("spec", BINDING_SPEC, omitempty=False), Field("status", Raw()))

DEPENDENT_OBJECT_REFERENCE = Struct("DependentObjectReference", "v1alpha2.DependentObjectReference", (
    Field("apiVersion", STRING, omitempty=False),
    Field("kind", STRING, omitempty=False),
    Field("namespace", STRING),
    Field("name", STRING),
    Field("labelSelector", LABEL_SELECTOR, pointer=True),
))
DEPENDENCIES = Slice(DEPENDENT_OBJECT_REFERENCE)


# --- decoding ----------------------------------------------------------------------------

class DecodeError(Exception):
    """The object does not fit the Go type; the text follows Go's decoder."""


_INT_RANGE = {32: (-(2**31), 2**31 - 1), 64: (-(2**63), 2**63 - 1)}
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def json_kind(value: Any) -> str:
    """The JSON type word Go's decoder uses in its messages."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "null" if value is None else "object"


def _valid_time(value: str) -> bool:
    """What Go's time.Parse(time.RFC3339, ...) accepts: the shape and real calendar/clock values."""
    match = _RFC3339.fullmatch(value)
    if match is None:
        return False
    if match.group(2) != "Z" and int(match.group(2)[1:3]) > 23:
        return False
    try:
        datetime.datetime.fromisoformat(value[:19])
    except ValueError:
        return False
    return True


class _Decoder:
    """Walks a JSON value against a type, keeping Go's first error and the decoded value."""

    def __init__(self) -> None:
        self.first_error: str | None = None
        self.stack: list[str] = []
        self.struct_name = ""

    def fail(self, what: str, typ: Any) -> None:
        if self.first_error is not None:
            return
        if self.stack:
            self.first_error = (f"json: cannot unmarshal {what} into Go struct field "
                                f"{self.struct_name}.{'.'.join(self.stack)} of type {typ.go_name}")
        else:
            self.first_error = f"json: cannot unmarshal {what} into Go value of type {typ.go_name}"

    def zero(self, typ: Any) -> Any:
        if isinstance(typ, Scalar):
            return {"string": "", "bool": False, "int": 0}[typ.kind]
        if isinstance(typ, Struct):
            return {}
        return None

    def decode(self, value: Any, typ: Any) -> Any:
        """Return the decoded value; ``None`` stands for absent/nil."""
        if value is None:
            return None
        if isinstance(typ, Raw):
            return value
        if isinstance(typ, Time):
            if not isinstance(value, str):
                self.fail(json_kind(value), STRING)
                return None
            if not _valid_time(value) and self.first_error is None:
                self.first_error = (f'parsing time "{value}" as "2006-01-02T15:04:05Z07:00": '
                                    "cannot parse as RFC 3339")
            return value
        if isinstance(typ, Scalar):
            return self._scalar(value, typ)
        if isinstance(typ, Slice):
            if not isinstance(value, list):
                self.fail(json_kind(value), typ)
                return None
            out = []
            for item in value:
                d = self.decode(item, typ.elem)
                out.append(self.zero(typ.elem) if d is None else d)
            return out
        if isinstance(typ, Map):
            if not isinstance(value, dict):
                self.fail(json_kind(value), typ)
                return None
            result: dict[str, Any] = {}
            for k, item in value.items():
                d = self.decode(item, typ.value)
                result[k] = self.zero(typ.value) if d is None else d
            return result
        if isinstance(typ, Struct):
            if not isinstance(value, dict):
                self.fail(json_kind(value), typ)
                return None
            decoded: dict[str, Any] = {}
            for k, item in value.items():
                f = typ.by_json.get(k)
                if f is None:
                    continue  # unknown keys are dropped, as the non-strict decoder does
                saved_name = self.struct_name
                self.stack.append(k)
                self.struct_name = typ.name
                d = self.decode(item, f.type)
                self.stack.pop()
                self.struct_name = saved_name
                if d is None:
                    decoded.pop(k, None)
                else:
                    decoded[k] = d
            return decoded
        raise TypeError(f"unknown type descriptor {typ!r}")

    def _scalar(self, value: Any, typ: Scalar) -> Any:
        if typ.kind == "string":
            if isinstance(value, str):
                return value
        elif typ.kind == "bool":
            if isinstance(value, bool):
                return value
        elif isinstance(value, bool):
            pass
        elif isinstance(value, float):
            self.fail(f"number {value.literal if isinstance(value, GoFloat) else repr(value)}", typ)
            return None
        elif isinstance(value, int):
            lo, hi = _INT_RANGE[typ.bits]
            if lo <= value <= hi:
                return value
            self.fail(f"number {value}", typ)
            return None
        self.fail(json_kind(value), typ)
        return None


def decode(value: Any, typ: Struct) -> Any:
    """Decode a JSON value into ``typ``; raise ``DecodeError`` with Go's first error."""
    decoder = _Decoder()
    decoded = decoder.decode(value, typ)
    if decoder.first_error is not None:
        raise DecodeError(decoder.first_error)
    return {} if decoded is None else decoded


# --- encoding (json.Marshal of the decoded Go value) ---------------------------------------

def _go_time(value: Any) -> Any:
    """metav1.Time prints in UTC with whole seconds."""
    if not isinstance(value, str) or not _valid_time(value):
        return value
    offset = _RFC3339.fullmatch(value).group(2)  # type: ignore[union-attr]
    base = datetime.datetime.fromisoformat(value[:19]).replace(tzinfo=datetime.UTC)
    if offset != "Z":
        sign = 1 if offset[0] == "+" else -1
        base -= sign * datetime.timedelta(hours=int(offset[1:3]), minutes=int(offset[4:6]))
    return base.strftime("%Y-%m-%dT%H:%M:%SZ")


def _is_zero_scalar(value: Any, typ: Scalar) -> bool:
    if typ.kind == "string":
        return value == ""
    if typ.kind == "bool":
        return value is False
    return value == 0


def to_go(value: Any, typ: Any) -> Any:
    """What Go's ``json.Marshal`` prints for a decoded value, as plain data in print order."""
    if isinstance(typ, Scalar):
        return value if value is not None else {"string": "", "bool": False, "int": 0}[typ.kind]
    if isinstance(typ, Time):
        return _go_time(value)
    if isinstance(typ, Raw):
        return value
    if isinstance(typ, Slice):
        return None if value is None else [to_go(v, typ.elem) for v in value]
    if isinstance(typ, Map):
        return None if value is None else {k: to_go(value[k], typ.value) for k in sorted(value)}
    if isinstance(typ, Struct):
        value = value or {}
        out: dict[str, Any] = {}
        for f in typ.fields:
            present = f.json in value
            v = value.get(f.json)
            ft = f.type
            if f.pointer:
                if present:
                    out[f.json] = to_go(v, ft)
                elif not f.omitempty:
                    out[f.json] = None
            elif isinstance(ft, Struct):
                if f.omitzero and not v:
                    continue
                out[f.json] = to_go(v, ft)
            elif isinstance(ft, Slice | Map):
                if not present:
                    if not f.omitempty:
                        out[f.json] = None
                elif f.omitempty and len(v) == 0:
                    continue
                else:
                    out[f.json] = to_go(v, ft)
            elif isinstance(ft, Scalar):
                sv = v if present else to_go(None, ft)
                if f.omitempty and _is_zero_scalar(sv, ft):
                    continue
                out[f.json] = sv
            else:  # Raw / Time values
                if present:
                    out[f.json] = to_go(v, ft)
                elif not (f.omitempty or f.omitzero):
                    out[f.json] = None
        return out
    raise TypeError(f"unknown type descriptor {typ!r}")
