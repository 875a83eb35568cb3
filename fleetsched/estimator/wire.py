"""Conversion between the protobuf messages and the estimator's plain values (spec sections 2.2-2.4).

Encoding starts from the Kubernetes JSON form Karmada's API uses (``resourceRequest``, ``nodeClaim``
with ``nodeSelector``/``hardNodeAffinity``/``tolerations``), as the scheduler and the offline command hold
it. Kubernetes payloads are written the way Go writes them: every string field of a Toleration or
NodeSelectorRequirement is present, a Quantity is its canonical text in field 1, empty affinity,
toleration lists and request maps are left unset.

Decoding reads the bytes fields and, when they are empty, the legacy field numbers of Karmada <= 1.17,
whose payload bytes are identical (2.4). A corrupt payload or unparsable quantity raises
:class:`EstimatorError` (gRPC UNKNOWN, like Karmada's plain errors). Quantity text over
``MAX_QUANTITY_LENGTH`` characters (Karmada parses any length) is INVALID_ARGUMENT naming the field:
``replicaRequirements.resourceRequest[cpu]: quantity is 5000 characters long, more than 1000``.

Given :class:`~fleetsched.estimator.limits.RequestLimits`, decoding also checks every count against them
as soon as it is known (a node affinity's terms right after its bytes are parsed, before any value is
built) and raises :class:`~fleetsched.estimator.limits.LimitExceeded` naming the field; without limits
(``fleetsched estimate`` reading the user's own files) nothing is bounded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from google.protobuf.message import DecodeError

from fleetsched.api.quantity import Quantity, QuantityError, QuantityTooLong, check_length, parse_quantity
from fleetsched.estimator import limits as bounds
from fleetsched.estimator import model
from fleetsched.estimator.pb import compat_pb2, estimator_pb2, k8s_types_pb2

__all__ = [
    "GO_QUANTITY_ERROR",
    "GO_SUFFIX_ERROR",
    "add_legacy_fields",
    "component_sets_request_from_pb",
    "component_sets_request_to_pb",
    "decode_quantity",
    "encode_quantity",
    "go_parse_quantity",
    "replicas_request_from_pb",
    "replicas_request_to_pb",
    "requirements_to_pb",
    "unschedulable_request_from_pb",
    "unschedulable_request_to_pb",
]

pb = estimator_pb2

GO_QUANTITY_ERROR = ("quantities must match the regular expression "
                     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
GO_SUFFIX_ERROR = "unable to parse quantity's suffix"

_DIGITS = frozenset("0123456789")
_SUFFIX_LETTERS = frozenset("eEinumkKMGTP")
_KNOWN_SUFFIXES = frozenset({"", "n", "u", "m", "k", "M", "G", "T", "P", "E",
                             "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"})
# Exponents beyond these change nothing the estimator can tell apart (every amount is below 10**40 and a
# positive amount below 1n rounds up to 1n); clamping keeps exact arithmetic from expanding 10**999999999.
_EXPONENT_CAP = 40
_INT64_MAX = 2**63 - 1


# ---------------------------------------------------------------------------------------------- encoding
def _quantity_text(raw: Any) -> str:
    if isinstance(raw, Quantity):
        return str(raw)
    text = repr(raw) if isinstance(raw, float) else str(raw)
    if isinstance(raw, bool) or raw is None:
        return text
    try:
        return str(go_parse_quantity(text))
    except (model.EstimatorError, QuantityTooLong):
        return text  # sent as written; the estimator rejects it as Karmada's would (or as too long)


def encode_quantity(raw: Any) -> bytes:
    return k8s_types_pb2.Quantity(string=_quantity_text(raw)).SerializeToString()


def _requirement_to_pb(raw: Mapping[str, Any], out: Any) -> None:
    out.key = str(raw.get("key", "") or "")
    out.operator = str(raw.get("operator", "") or "")
    out.values.extend(str(v) for v in raw.get("values") or ())


def encode_node_selector(raw: Mapping[str, Any] | None) -> bytes:
    if not raw:
        return b""
    selector = k8s_types_pb2.NodeSelector()
    for term in raw.get("nodeSelectorTerms") or ():
        term_pb = selector.nodeSelectorTerms.add()
        for requirement in (term or {}).get("matchExpressions") or ():
            _requirement_to_pb(requirement, term_pb.matchExpressions.add())
        for requirement in (term or {}).get("matchFields") or ():
            _requirement_to_pb(requirement, term_pb.matchFields.add())
    return selector.SerializeToString()


def encode_toleration(raw: Mapping[str, Any]) -> bytes:
    toleration = k8s_types_pb2.Toleration(
        key=str(raw.get("key", "") or ""), operator=str(raw.get("operator", "") or ""),
        value=str(raw.get("value", "") or ""), effect=str(raw.get("effect", "") or ""))
    seconds = raw.get("tolerationSeconds")
    if seconds is not None:
        toleration.tolerationSeconds = int(seconds)
    return toleration.SerializeToString()


def _node_claim_to_pb(raw: Mapping[str, Any], out: Any) -> None:
    out.SetInParent()
    for key, value in (raw.get("nodeSelector") or {}).items():
        out.nodeSelector[str(key)] = str(value)
    affinity = encode_node_selector(raw.get("hardNodeAffinity"))
    if affinity:
        out.nodeAffinityBytes = affinity
    out.tolerationsBytes.extend(encode_toleration(t) for t in raw.get("tolerations") or ())


def requirements_to_pb(raw: Mapping[str, Any], out: Any, *, component: bool = False) -> None:
    """Fill a ReplicaRequirements (or ComponentReplicaRequirements) message from the JSON form."""
    out.SetInParent()
    claim = raw.get("nodeClaim")
    if claim is not None:
        _node_claim_to_pb(claim, out.nodeClaim)
    if not component:
        out.namespace = str(raw.get("namespace", "") or "")
    out.priorityClassName = str(raw.get("priorityClassName", "") or "")
    for name, quantity in (raw.get("resourceRequest") or {}).items():
        out.resourceRequestBytes[str(name)] = encode_quantity(quantity)


def _components_to_pb(raw: Iterable[Mapping[str, Any]], out: Any) -> None:
    for item in raw:
        component = out.add()
        component.name = str(item.get("name", "") or "")
        component.replicas = int(item.get("replicas", 0) or 0)
        requirements = item.get("replicaRequirements")
        if requirements is not None:
            requirements_to_pb(requirements, component.replicaRequirements, component=True)


def _assumed_to_pb(raw: Iterable[Mapping[str, Any]] | None, out: Any) -> None:
    for item in raw or ():
        workload = out.add()
        workload.namespace = str(item.get("namespace", "") or "")
        _components_to_pb(item.get("components") or (), workload.components)


def replicas_request_to_pb(raw: Mapping[str, Any]) -> Any:
    request = pb.MaxAvailableReplicasRequest(cluster=str(raw.get("cluster", "") or ""))
    requirements = raw.get("replicaRequirements")
    if requirements is not None:
        requirements_to_pb(requirements, request.replicaRequirements)
    _assumed_to_pb(raw.get("assumedWorkloads"), request.assumedWorkloads)
    return request


def component_sets_request_to_pb(raw: Mapping[str, Any]) -> Any:
    request = pb.MaxAvailableComponentSetsRequest(cluster=str(raw.get("cluster", "") or ""),
                                                  namespace=str(raw.get("namespace", "") or ""))
    _components_to_pb(raw.get("components") or (), request.components)
    _assumed_to_pb(raw.get("assumedWorkloads"), request.assumedWorkloads)
    return request


def unschedulable_request_to_pb(raw: Mapping[str, Any]) -> Any:
    request = pb.UnschedulableReplicasRequest(
        cluster=str(raw.get("cluster", "") or ""),
        unschedulableThreshold=int(raw.get("unschedulableThreshold", 0) or 0))
    resource = raw.get("resource")
    if resource is not None:
        request.resource.SetInParent()
        request.resource.apiVersion = str(resource.get("apiVersion", "") or "")
        request.resource.kind = str(resource.get("kind", "") or "")
        request.resource.namespace = str(resource.get("namespace", "") or "")
        request.resource.name = str(resource.get("name", "") or "")
    return request


def _legacy_copy(requirements: Any, legacy_type: Any) -> bytes:
    legacy = legacy_type()
    for name, data in requirements.resourceRequestBytes.items():
        legacy.resourceRequest[name] = data
    if requirements.HasField("nodeClaim"):
        claim = requirements.nodeClaim
        if claim.nodeAffinityBytes:
            legacy.nodeClaim.nodeAffinity = claim.nodeAffinityBytes
        legacy.nodeClaim.tolerations.extend(claim.tolerationsBytes)
    return bytes(legacy.SerializeToString())


def add_legacy_fields(request: Any) -> Any:
    """Also write Karmada <= 1.17's field numbers (spec 2.4 dual-write), for old estimators; current ones
    ignore them as unknown fields. Returns the same message."""
    def dual(requirements: Any, legacy_type: Any) -> None:
        requirements.MergeFromString(_legacy_copy(requirements, legacy_type))

    if request.DESCRIPTOR.fields_by_name.get("replicaRequirements") is not None and \
            request.HasField("replicaRequirements"):
        dual(request.replicaRequirements, compat_pb2.LegacyReplicaRequirements)
    components = list(getattr(request, "components", ()))
    for workload in getattr(request, "assumedWorkloads", ()):
        components.extend(workload.components)
    for component in components:
        if component.HasField("replicaRequirements"):
            dual(component.replicaRequirements, compat_pb2.LegacyComponentReplicaRequirements)
    return request


# ---------------------------------------------------------------------------------------------- decoding
def _scan_quantity(text: str) -> tuple[str, str, str, str]:
    """Split quantity text the way Kubernetes' parser scans it: (sign, integer digits, fraction digits,
    suffix). Like Go, a missing integer part reads as 0, so "-", "." and a bare suffix ("m") are zero."""
    if not text:
        raise model.EstimatorError(GO_QUANTITY_ERROR)
    pos, end = 0, len(text)
    sign = ""
    if text[0] in "+-":
        sign = "-" if text[0] == "-" else ""
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    whole = text[start:pos] or "0"
    fraction = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        fraction = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_LETTERS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise model.EstimatorError(GO_QUANTITY_ERROR)
    return sign, whole, fraction, text[suffix_start:]


def go_parse_quantity(text: str) -> Quantity:
    """Quantity text as Kubernetes' ParseQuantity reads it, with its error texts (spec 2.3: an unparsable
    string fails the RPC). Raises ``QuantityTooLong`` before reading text over ``MAX_QUANTITY_LENGTH``."""
    check_length(text)
    sign, whole, fraction, suffix = _scan_quantity(text)
    if suffix not in _KNOWN_SUFFIXES:
        exponent_text = suffix[1:]
        if len(suffix) < 2 or suffix[0] not in "eE" or exponent_text[0:1] not in _DIGITS | {"+", "-"} \
                or not exponent_text.lstrip("+-").isdigit() or not -(2**31) <= int(exponent_text) < 2**31:
            raise model.EstimatorError(GO_SUFFIX_ERROR)
        exponent = max(-_EXPONENT_CAP - len(whole) - len(fraction), min(int(exponent_text), _EXPONENT_CAP))
        suffix = f"e{exponent}"
    try:
        quantity = parse_quantity(f"{sign}{whole}{'.' + fraction if fraction else ''}{suffix}")
    except QuantityError as exc:  # not expected after the scan; keep Go's text
        raise model.EstimatorError(GO_QUANTITY_ERROR) from exc
    if suffix.endswith("i") and abs(quantity.value_exact) > _INT64_MAX:
        # Kubernetes caps binary-suffixed amounts at the largest int64 (16Ei reads as 2^63 - 1)
        quantity = Quantity(_INT64_MAX if quantity.value_exact > 0 else -_INT64_MAX, quantity.format)
    return quantity


def decode_quantity(data: bytes, path: str = "quantity") -> Quantity:
    try:
        message = k8s_types_pb2.Quantity.FromString(data)
    except DecodeError as exc:
        raise model.EstimatorError(f"failed to unmarshal quantity: {exc}") from exc
    if not message.HasField("string"):
        return Quantity(0)
    try:
        return go_parse_quantity(message.string)
    except QuantityTooLong as exc:
        raise model.EstimatorError(f"{path}: {exc}", code="InvalidArgument") from None


def _map_key(name: str) -> str:
    """A map key for a field path, cut short: the key is the sender's text and may be megabytes."""
    return name if len(name) <= 64 else f"{name[:61]}..."


class _Budget:
    """The limits of one request and what it has spent of its request-wide ones."""

    def __init__(self, limits: bounds.RequestLimits | None) -> None:
        self.limits = limits
        self.expressions = 0

    def check(self, field_path: str, count: int, limit: str, *, what: str = "entries") -> None:
        if self.limits is not None:
            bounds.check(field_path, count, self.limits, limit, what=what)

    def spend_expressions(self, count: int) -> None:
        self.expressions += count
        self.check("request", self.expressions, "max_affinity_total_expressions",
                   what="node affinity expressions")


_UNBOUNDED = _Budget(None)


def _requirements_of(selector: Any, path: str, budget: _Budget) -> tuple[model.NodeSelectorRequirement, ...]:
    budget.check(path, len(selector), "max_affinity_expressions")
    budget.spend_expressions(len(selector))
    for index, r in enumerate(selector):
        budget.check(f"{path}[{index}].values", len(r.values), "max_affinity_values")
    return tuple(model.NodeSelectorRequirement(r.key, r.operator, tuple(r.values)) for r in selector)


def decode_node_selector(data: bytes, path: str = "nodeAffinity",
                         budget: _Budget = _UNBOUNDED) -> tuple[model.NodeSelectorTerm, ...] | None:
    if not data:
        return None
    try:
        selector = k8s_types_pb2.NodeSelector.FromString(data)
    except DecodeError as exc:
        raise model.EstimatorError(f"failed to unmarshal node affinity: {exc}") from exc
    terms = selector.nodeSelectorTerms
    budget.check(path, len(terms), "max_affinity_terms", what="terms")
    return tuple(model.NodeSelectorTerm(
        _requirements_of(t.matchExpressions, f"{path}.nodeSelectorTerms[{i}].matchExpressions", budget),
        _requirements_of(t.matchFields, f"{path}.nodeSelectorTerms[{i}].matchFields", budget))
        for i, t in enumerate(terms))


def decode_toleration(data: bytes) -> model.Toleration:
    try:
        t = k8s_types_pb2.Toleration.FromString(data)
    except DecodeError as exc:
        raise model.EstimatorError(f"failed to unmarshal toleration: {exc}") from exc
    return model.Toleration(t.key, t.operator, t.value, t.effect,
                            t.tolerationSeconds if t.HasField("tolerationSeconds") else None)


def _claim_from_pb(message: Any, legacy: Any | None, path: str, budget: _Budget) -> model.NodeClaim:
    affinity_bytes = message.nodeAffinityBytes
    toleration_bytes = list(message.tolerationsBytes)
    if legacy is not None:
        affinity_bytes = affinity_bytes or legacy.nodeAffinity
        toleration_bytes = toleration_bytes or list(legacy.tolerations)
    budget.check(f"{path}.nodeSelector", len(message.nodeSelector), "max_node_selector")
    budget.check(f"{path}.tolerations", len(toleration_bytes), "max_tolerations")
    return model.NodeClaim(
        node_selector=tuple(sorted(message.nodeSelector.items())),
        node_affinity=decode_node_selector(affinity_bytes, f"{path}.nodeAffinity", budget),
        tolerations=tuple(decode_toleration(b) for b in toleration_bytes),
    )


def _requirements_from_pb(message: Any, *, component: bool, path: str,
                          budget: _Budget) -> model.ReplicaRequirements:
    request_bytes = dict(message.resourceRequestBytes)
    legacy = None
    if not request_bytes or (message.HasField("nodeClaim") and not message.nodeClaim.nodeAffinityBytes
                             and not message.nodeClaim.tolerationsBytes):
        legacy_type = (compat_pb2.LegacyComponentReplicaRequirements if component
                       else compat_pb2.LegacyReplicaRequirements)
        legacy = legacy_type.FromString(message.SerializeToString())
        if not request_bytes:
            request_bytes = dict(legacy.resourceRequest)
    budget.check(f"{path}.resourceRequest", len(request_bytes), "max_resource_entries")
    claim = None
    if message.HasField("nodeClaim"):
        claim = _claim_from_pb(message.nodeClaim, legacy.nodeClaim if legacy is not None else None,
                               f"{path}.nodeClaim", budget)
    elif legacy is not None and legacy.HasField("nodeClaim"):
        claim = _claim_from_pb(pb.NodeClaim(), legacy.nodeClaim, f"{path}.nodeClaim", budget)
    return model.ReplicaRequirements(
        node_claim=claim,
        resource_request=tuple((name, decode_quantity(data, f"{path}.resourceRequest[{_map_key(name)}]"))
                               for name, data in sorted(request_bytes.items())),
        namespace="" if component else message.namespace,
        priority_class_name=message.priorityClassName,
    )


def _components_from_pb(messages: Any, path: str, budget: _Budget) -> tuple[model.Component, ...]:
    budget.check(path, len(messages), "max_components")
    return tuple(
        model.Component(
            name=c.name, replicas=c.replicas,
            requirements=(_requirements_from_pb(c.replicaRequirements, component=True,
                                                path=f"{path}[{i}].replicaRequirements", budget=budget)
                          if c.HasField("replicaRequirements") else None))
        for i, c in enumerate(messages))


def _assumed_from_pb(messages: Any, budget: _Budget) -> tuple[model.AssumedWorkload, ...]:
    budget.check("assumedWorkloads", len(messages), "max_assumed_workloads")
    return tuple(model.AssumedWorkload(w.namespace, _components_from_pb(
        w.components, f"assumedWorkloads[{i}].components", budget)) for i, w in enumerate(messages))


def replicas_request_from_pb(message: Any,
                             limits: bounds.RequestLimits | None = None) -> model.MaxAvailableReplicasRequest:
    budget = _Budget(limits)
    return model.MaxAvailableReplicasRequest(
        cluster=message.cluster,
        replica_requirements=(_requirements_from_pb(message.replicaRequirements, component=False,
                                                    path="replicaRequirements", budget=budget)
                              if message.HasField("replicaRequirements") else None),
        assumed_workloads=_assumed_from_pb(message.assumedWorkloads, budget),
    )


def component_sets_request_from_pb(
        message: Any, limits: bounds.RequestLimits | None = None) -> model.MaxAvailableComponentSetsRequest:
    budget = _Budget(limits)
    return model.MaxAvailableComponentSetsRequest(
        cluster=message.cluster,
        components=_components_from_pb(message.components, "components", budget),
        namespace=message.namespace,
        assumed_workloads=_assumed_from_pb(message.assumedWorkloads, budget),
    )


def unschedulable_request_from_pb(message: Any) -> model.UnschedulableReplicasRequest:
    resource = None
    if message.HasField("resource"):
        r = message.resource
        resource = model.ObjectReference(r.apiVersion, r.kind, r.namespace, r.name)
    return model.UnschedulableReplicasRequest(message.cluster, resource, message.unschedulableThreshold)
